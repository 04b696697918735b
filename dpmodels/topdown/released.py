"""The released histograms of a TopDown run, kept sparse level by level (issue 25).

The driver used to hold every region's histogram in one dense ``regions x cells`` array (int64):
0.23 GB at the state preset, about 12 GB at the largest state's 740,000 regions and 2,016 cells,
although a block has a few dozen persons.  :class:`ReleasedLevels` keeps each finished level as a
sparse matrix and the level being solved as the (region, cell, count) triplets of its solves; a
parent's histogram is read back as a dense vector when its children are solved.  The released
values are the same; only their storage changed.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from dpmodels.core.hierarchy import Hierarchy

__all__ = ["ReleasedLevels"]


class ReleasedLevels:
    """Released histograms by level: finished levels as CSR, the current one as triplets.

    Parameters
    ----------
    geography : Hierarchy
        The geography tree (every level a contiguous slice of regions).
    n_cells : int
        The schema's cells.
    """

    def __init__(self, geography: Hierarchy, n_cells: int):
        self.geography, self.n_cells = geography, n_cells
        self.done: dict[int, sp.csr_matrix] = {}
        self.parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []

    def row(self, region: int) -> np.ndarray:
        """The released histogram of ``region`` (a finished level), dense int64 over every cell."""
        level = int(self.geography.level[region])
        mat = self.done[level]
        k = int(region) - int(self.geography.level_bounds[level - 1])
        out = np.zeros(self.n_cells, dtype=np.int64)
        lo, hi = mat.indptr[k], mat.indptr[k + 1]
        out[mat.indices[lo:hi]] = mat.data[lo:hi]
        return out

    def put(self, regions, cells: np.ndarray, values: np.ndarray) -> None:
        """Release ``values`` (regions x cells, cast to int64 as a dense int64 array would) for ``regions``
        of the level being solved, on ``cells``; the other cells are 0."""
        values = np.asarray(values).astype(np.int64).reshape(len(regions), len(cells))
        r, c = np.nonzero(values)
        self.parts.append((np.asarray(regions, dtype=np.int64)[r], np.asarray(cells, dtype=np.int64)[c], values[r, c]))

    def finish(self, level: int) -> None:
        """Close ``level``: its triplets become its sparse matrix (regions of the level x cells)."""
        start, stop = (int(b) for b in self.geography.level_bounds[level - 1 : level + 1])
        if self.parts:
            rows, cols, vals = (np.concatenate(p) for p in zip(*self.parts, strict=True))
        else:
            rows, cols, vals = (np.zeros(0, dtype=np.int64) for _ in range(3))
        shape = (stop - start, self.n_cells)
        self.done[level] = sp.csr_matrix((vals, (rows - start, cols)), shape=shape, dtype=np.int64)
        self.parts = []

    def matrix(self) -> sp.csr_matrix:
        """Every region's histogram (rows in hierarchy order), once every level is finished."""
        levels = range(1, self.geography.n_levels + 1)
        return sp.vstack([self.done[level] for level in levels], format="csr", dtype=np.int64)
