"""The data of one TopDown node solve: what the solve for one parent sees, and nothing else.

One :class:`NodeProblem` describes the solve for the children of one node (or the root solve,
which has no parent and a fixed total): the node's *active* cells (the cells with a positive
parent count that are not structural zeros, spec 3.3 shortcuts), every child's noisy answers
(:class:`WeightedQuery`) and public knowledge (:class:`ChildSpec`), the parent histogram, the
edits and the free marginal of the failsafe.  No true data goes in.  :func:`split_floor` splits
an L2 solution into the floor and the fraction the rounding starts from.

Plain NumPy/SciPy data, no Pyomo: the Pyomo builders (:mod:`.models`, :mod:`.failsafe_models`),
the matrix-form solves (:mod:`.compiled`), the flow rounder (:mod:`.flow`) and the driver all
read it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from dpmodels.core.errors import DataValidationError

from .child_rows import ChildRows
from .data import Edit, FlowData

__all__ = ["WeightedQuery", "ChildSpec", "NodeProblem", "split_floor"]


@dataclass(eq=False)
class WeightedQuery:
    """Noisy answers ``values`` of ``matrix @ h`` (columns = the node's active cells), weight ``w``."""

    name: str
    matrix: sp.csr_matrix
    values: np.ndarray
    weight: float
    identity: bool = False


@dataclass(eq=False)
class ChildSpec:
    """One child (or the root itself) of a solve: its measurements and public knowledge."""

    node: int
    queries: list[WeightedQuery]
    total: int | None = None
    flows: FlowData | None = None


@dataclass(eq=False)
class NodeProblem:
    """Everything a TopDown solve for one parent sees: no true data, only noisy answers and
    public knowledge.  ``parent`` is ``None`` for the root solve, whose total is ``root_total``.

    Parameters
    ----------
    cells : numpy.ndarray
        The active cells (the others are zero in every child).
    children : list of ChildSpec
        Every child's noisy answers, invariant total and flow data.
    parent : numpy.ndarray, optional
        The parent's released histogram on the active cells (None at the root).
    root_total : int, optional
        The root's invariant total (root solve only).
    cell_type : numpy.ndarray, optional
        The GQ type of every cell.
    edits : tuple of Edit, optional
        The linear edits.
    free_marginal : scipy.sparse matrix, optional
        The marginal the failsafe keeps exact.
    rows : tuple of ChildRows, optional
        Production rows on the children (earlier passes' answers, group totals, occupancy caps;
        :mod:`.child_rows`); hard, kept by the failsafe.
    info : dict, optional
        Free-form metadata for logs.
    """

    cells: np.ndarray
    children: list[ChildSpec]
    parent: np.ndarray | None = None
    root_total: int | None = None
    cell_type: np.ndarray | None = None
    edits: tuple[Edit, ...] = ()
    free_marginal: sp.csr_matrix | None = None
    info: dict = field(default_factory=dict)
    rows: tuple[ChildRows, ...] = ()

    def __post_init__(self):
        if (self.parent is None) == (self.root_total is None):
            raise DataValidationError("problem", "give a parent histogram (child solve) or a root total, not both")
        if self.parent is not None and len(self.parent) != len(self.cells):
            raise DataValidationError("parent", "needs one value per active cell")
        if self.parent is None and len(self.children) != 1:
            raise DataValidationError("children", "the root solve has exactly one 'child': the root")

    @property
    def m(self) -> int:
        return len(self.children)

    @property
    def n(self) -> int:
        return len(self.cells)

    def types(self) -> np.ndarray:
        """GQ type of every active cell."""
        return self.cell_type[self.cells]


def split_floor(hstar: np.ndarray, tol: float = 1e-8) -> tuple[np.ndarray, np.ndarray]:
    """``(floor, fraction)`` of an L2 solution after snapping near-integers and tiny negatives."""
    h = np.where(np.abs(hstar - np.round(hstar)) <= tol, np.round(hstar), hstar)
    h = np.where((h < 0) & (h > -1e-6), 0.0, h)
    if (h < 0).any():
        raise DataValidationError("hstar", f"L2 solution has negative values down to {h.min()}")
    low = np.floor(h)
    return low.astype(np.int64), h - low
