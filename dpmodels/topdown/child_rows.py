"""Linear rows on the children of one TopDown solve: the production options' constraints (issue 25).

The 2020 production TopDown adds constraints that the 2019 solve does not have, all of them linear
rows on the children's histograms of one solve:

* the rounded answers of an earlier pass of the interleaved solve (:mod:`.interleaved`), held exactly;
* a group of children held to one public total (the AIAN and non-AIAN parts of a state);
* an occupancy cap on the persons of a group-quarters type in a child (:mod:`.production`).

A :class:`ChildRows` holds a block of such rows ``A @ vec(H) op rhs`` on the child-major histogram
vector of the solve (``H[t, j]`` at column ``t * n + j``; ``j`` indexes the solve's active cells).
Every solve path takes them: the Pyomo builders (:func:`dpmodels.topdown.model_blocks.add_rows`),
the matrix form (:mod:`.compiled`), the failsafe (which keeps them: they are hard) and
:func:`~dpmodels.topdown.solve.verify_children`; the closed-form L2 and the flow rounder refuse a
problem that has any.

A block marked ``implied`` holds whenever the parent sums and the other rows do (the last child's
answers of a pass, given its siblings'); the L2 and rounding models leave it out, since a redundant
equality stalls an interior-point solver (Clarabel stops at ``AlmostSolved``), while the failsafe,
which relaxes the parent sums, and the verification keep it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from dpmodels.core.errors import DataValidationError

__all__ = ["ChildRows", "GROUP_TOTAL", "linear_rows", "rows_hold"]

OPS = ("==", "<=", ">=")
#: The name of the grouped child totals' block.
GROUP_TOTAL = "group total"


@dataclass(frozen=True, eq=False)
class ChildRows:
    """Rows ``matrix @ H.ravel() op rhs`` on the children of one solve (child-major, active cells).

    Parameters
    ----------
    name : str
        What the rows are (logs, errors): ``"pass 1 answers"``, ``"group total"``, ``"occupancy cap"``.
    matrix : scipy.sparse.csr_matrix
        Rows x (children x active cells).
    rhs : numpy.ndarray
        One right-hand side per row.
    op : {"==", "<=", ">="}
        The comparison of every row.
    implied : bool, default False
        The rows hold whenever the parent sums and the other rows hold: the L2 and rounding models
        leave them out (no redundant equality), the failsafe and the verification keep them.
    """

    name: str
    matrix: sp.csr_matrix
    rhs: np.ndarray
    op: str = "=="
    implied: bool = False

    def __post_init__(self):
        if self.op not in OPS:
            raise DataValidationError(f"rows {self.name!r}", f"op must be one of {OPS}, got {self.op!r}")
        matrix = sp.csr_matrix(self.matrix, dtype=np.float64)
        rhs = np.asarray(self.rhs, dtype=np.float64).ravel()
        if matrix.shape[0] != len(rhs):
            raise DataValidationError(f"rows {self.name!r}", f"{matrix.shape[0]} rows but {len(rhs)} right-hand sides")
        if not np.isfinite(rhs).all() or not np.isfinite(matrix.data).all():
            raise DataValidationError(f"rows {self.name!r}", "coefficients and right-hand sides must be finite")
        object.__setattr__(self, "matrix", matrix)
        object.__setattr__(self, "rhs", rhs)

    def __len__(self) -> int:
        return len(self.rhs)

    def check_shape(self, m: int, n: int) -> None:
        """Refuse rows whose columns are not the ``m x n`` histograms of the solve."""
        if self.matrix.shape[1] != m * n:
            raise DataValidationError(
                f"rows {self.name!r}",
                f"need {m} children x {n} active cells = {m * n} columns, got {self.matrix.shape[1]}",
            )

    def residual(self, values: np.ndarray) -> np.ndarray:
        """``matrix @ vec(values) - rhs``.

        Parameters
        ----------
        values : numpy.ndarray
            Child histograms (children x active cells).
        """
        return self.matrix @ np.asarray(values, dtype=np.float64).ravel() - self.rhs

    def holds(self, values: np.ndarray, tol: float = 1e-6) -> bool:
        """Whether ``values`` (children x active cells) satisfy every row within ``tol`` (scaled by the row's size)."""
        v = np.asarray(values, dtype=np.float64).ravel()
        r = self.matrix @ v - self.rhs
        scale = tol * (1 + abs(self.matrix) @ np.abs(v))
        if self.op == "==":
            return bool((np.abs(r) <= scale).all())
        return bool((r <= scale).all()) if self.op == "<=" else bool((r >= -scale).all())

    def terms(self):
        """Per row: ``(columns, coefficients, rhs)``."""
        a = self.matrix
        for k in range(a.shape[0]):
            lo, hi = a.indptr[k], a.indptr[k + 1]
            yield a.indices[lo:hi], a.data[lo:hi], float(self.rhs[k])


def linear_rows(problem, base: np.ndarray):
    """The rows of ``problem.rows`` (but the implied ones) on ``base + x`` in the matrix form, for
    :mod:`.compiled`: ``(op, columns, values, rhs)`` with ``op`` ``"=="`` or ``"<="`` (``>=`` negated).

    Parameters
    ----------
    problem : NodeProblem
        The solve (its ``rows``, ``m`` and ``n``).
    base : numpy.ndarray
        The fixed part of the histograms (0 for L2, the floors for the rounding).
    """
    flat = np.asarray(base, dtype=np.float64).ravel()
    for rows in problem.rows:
        rows.check_shape(problem.m, problem.n)
        if rows.implied:  # the parent sums imply them (the matrix form is never a failsafe)
            continue
        for cols, vals, rhs in rows.terms():
            shifted = rhs - float(vals @ flat[cols])
            if rows.op == ">=":
                yield "<=", cols, -vals, -shifted
            else:
                yield rows.op, cols, vals, shifted


def rows_hold(problem, values: np.ndarray, tol: float = 1e-6) -> list[str]:
    """The names of the row blocks of ``problem.rows`` that ``values`` break (empty: all hold).

    Parameters
    ----------
    problem : NodeProblem
        The solve.
    values : numpy.ndarray
        Child histograms (children x active cells).
    tol : float, default 1e-6
        Tolerance, scaled by each row's size.
    """
    return [rows.name for rows in problem.rows if not rows.holds(values, tol)]
