"""The L2 objective's marginal queries as sums of finer query rows: a smaller, equivalent QP.

The L2 solve weighs every noisy answer ``m`` of a query row ``Q_r h`` by ``w (Q_r h - m)^2``.  The
residual form of :func:`dpmodels.topdown.compiled.l2_system` gives every row a variable tied to the
row's cells; at the county level a "total" row then touches all of a child's active cells, the
``votingage`` rows half of them, and so on: seven rows per cell.  The PL94 marginals are nested
(``total`` = the sum of the ``votingage`` rows, which are sums of ``votingage x hispanic`` rows, ...),
so this module writes each row as the sum of the rows of the finest *other* query that partitions it
(:func:`sum_plan`), and only the finest rows touch cells.  A row that is a single cell (most rows at
the block level, where a block group has about 60 active cells) or a single finer row gets no
variable: its weight and answer go onto that cell's or row's own term.  The optimum is the same:
only the algebra of the objective changes.  On 60 block-level solves captured from a state-preset
run (issue 25, a one-off script; no bench prints it): 1,753 variables instead of 3,177 and 432
equality rows instead of 1,856, on average.

A query qualifies when its matrix is a 0/1 partition of cells (every cell in at most one row), as
every marginal is; any other query keeps its rows on cells.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

__all__ = ["SumPlan", "sum_plan", "QueryTerms", "query_terms"]


@dataclass(frozen=True)
class SumPlan:
    """How each of one child's non-identity queries is written, for every child sharing its matrices.

    Parameters
    ----------
    handle_is_cell : list of numpy.ndarray
        Per query, per row: whether the row's term sits on a cell (else on a sum variable).
    handle : list of numpy.ndarray
        Per query, per row: that cell (active-cell index) or sum variable (index among the child's).
    n_sums : int
        Sum variables per child.
    rows : tuple of numpy.ndarray
        The equality rows ``s_k - sum(members) = 0`` of one child: the row lengths (sum variable
        included), whether each entry is a cell, its index (cell or sum variable) and its coefficient.
    """

    handle_is_cell: list[np.ndarray]
    handle: list[np.ndarray]
    n_sums: int
    rows: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def _partition_labels(mat: sp.csr_matrix) -> np.ndarray | None:
    """The row of every cell (-1: in no row), or None when ``mat`` is not a 0/1 partition of cells."""
    if mat.nnz and not np.all(mat.data == 1.0):
        return None
    if len(np.unique(mat.indices)) != mat.nnz:
        return None
    labels = np.full(mat.shape[1], -1, dtype=np.int64)
    labels[mat.indices] = np.repeat(np.arange(mat.shape[0]), np.diff(mat.indptr))
    return labels


def _row_of_finer(coarse: np.ndarray, fine: np.ndarray, n_fine: int) -> np.ndarray | None:
    """The coarse row holding every fine row (-1: outside the coarse query's cells) when the fine
    query partitions every coarse row exactly, else None."""
    if (fine[coarse >= 0] < 0).any():  # a coarse cell in no fine row
        return None
    inside = fine >= 0
    hi = np.full(n_fine, -2, dtype=np.int64)
    lo = np.full(n_fine, np.iinfo(np.int64).max, dtype=np.int64)
    np.maximum.at(hi, fine[inside], coarse[inside])
    np.minimum.at(lo, fine[inside], coarse[inside])
    return hi if np.array_equal(hi, lo) else None  # every fine row within one coarse row, or outside all


def sum_plan(mats: list[sp.csr_matrix]) -> SumPlan:
    """Write each query's rows over the cells or over the rows of the finest other query that
    partitions them (the one giving the fewest terms); single-term rows get no variable.

    Parameters
    ----------
    mats : list of scipy.sparse.csr_matrix
        The non-identity queries of one child, on the solve's active cells (rows with no cell dropped).
    """
    labels = [_partition_labels(m) for m in mats]
    order = sorted(range(len(mats)), key=lambda i: (-mats[i].shape[0], i))  # finest first: no cycles
    is_cell, handle = [None] * len(mats), [None] * len(mats)
    lengths, entry_cell, entry_idx, entry_coef = [], [], [], []
    n_sums, done = 0, []
    for i in order:
        mat, best = mats[i], None
        if labels[i] is not None:
            for j in done:
                if labels[j] is not None:
                    row_of = _row_of_finer(labels[i], labels[j], mats[j].shape[0])
                    if row_of is not None and (best is None or (row_of >= 0).sum() < (best[1] >= 0).sum()):
                        best = (j, row_of)
        if best is None or (best[1] >= 0).sum() >= mat.nnz:  # the row's own cells
            counts, members = np.diff(mat.indptr), mat.indices.astype(np.int64)
            member_cell, coef = np.ones(mat.nnz, dtype=bool), mat.data.astype(np.float64)
        else:
            j, row_of = best
            fine = np.flatnonzero(row_of >= 0)
            fine = fine[np.argsort(row_of[fine], kind="stable")]
            counts = np.bincount(row_of[row_of >= 0], minlength=mat.shape[0])
            members, member_cell, coef = handle[j][fine], is_cell[j][fine], np.ones(len(fine))
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
        single = (counts == 1) & (coef[np.minimum(starts, max(len(coef) - 1, 0))] == 1.0)
        is_cell[i] = np.where(single, member_cell[np.minimum(starts, max(len(members) - 1, 0))], False)
        handle[i] = np.empty(mat.shape[0], dtype=np.int64)
        handle[i][single] = members[starts[single]]
        new = np.flatnonzero(~single)
        handle[i][new] = n_sums + np.arange(len(new))
        n_sums += len(new)
        _sum_rows(
            new, handle[i], starts, counts, members, member_cell, coef, (lengths, entry_cell, entry_idx, entry_coef)
        )
        done.append(i)
    rows = tuple(np.concatenate(x) if x else np.zeros(0) for x in (lengths, entry_cell, entry_idx, entry_coef))
    rows = (rows[0].astype(np.int64), rows[1].astype(bool), rows[2].astype(np.int64), rows[3].astype(np.float64))
    return SumPlan(is_cell, handle, n_sums, rows)


def _sum_rows(new, handle, starts, counts, members, member_cell, coef, out) -> None:
    """Append the rows ``s - sum(coef * member) = 0`` of the rows ``new`` (each its sum variable first)."""
    if not len(new):
        return
    lengths, entry_cell, entry_idx, entry_coef = out
    take = np.concatenate([np.arange(starts[r], starts[r] + counts[r]) for r in new])
    first = np.concatenate([[0], np.cumsum(counts[new] + 1)[:-1]])
    size = int((counts[new] + 1).sum())
    cell, idx, val = np.zeros(size, dtype=bool), np.empty(size, dtype=np.int64), np.empty(size)
    idx[first], val[first] = handle[new], 1.0
    rest = np.setdiff1d(np.arange(size), first, assume_unique=True)  # the members, row after row
    cell[rest], idx[rest], val[rest] = member_cell[take], members[take], -coef[take]
    lengths.append(counts[new] + 1)
    entry_cell.append(cell)
    entry_idx.append(idx)
    entry_coef.append(val)


@dataclass
class QueryTerms:
    """The query part of an L2 QP: curvature and linear terms on the histogram and the sum variables,
    the constant, and the sum rows (``lengths``, ``cols``, ``vals``; right-hand sides 0)."""

    hist_diag: np.ndarray
    hist_lin: np.ndarray
    sum_diag: np.ndarray
    sum_lin: np.ndarray
    const: float
    lengths: np.ndarray
    cols: np.ndarray
    vals: np.ndarray


def query_terms(problem, weights: str, first: int) -> QueryTerms:
    """Every child's query terms, the sum variables numbered from column ``first`` child by child.

    Children sharing their query matrices (every child of one solve, :mod:`.specs`) share one
    :func:`sum_plan`, instantiated for all of them at once.

    Parameters
    ----------
    problem : NodeProblem
        The solve.
    weights : {"inverse_variance", "paper"}
        The query weights (``"paper"``: all 1).
    first : int
        The column of the first sum variable.
    """
    m, n = problem.m, problem.n
    hist_diag, hist_lin, const = np.zeros(m * n), np.zeros(m * n), 0.0
    groups: dict[tuple, list[int]] = {}
    for t, child in enumerate(problem.children):
        for q in child.queries:
            w = _weight(q, weights)
            const += w * float(q.values @ q.values)
            if q.identity:
                hist_diag[t * n : (t + 1) * n] += 2 * w
                hist_lin[t * n : (t + 1) * n] -= 2 * w * q.values
        groups.setdefault(tuple(id(q.matrix) for q in child.queries if not q.identity), []).append(t)
    per_child = [None] * m  # (plan, first sum column) of every child
    plans = {}
    for key, kids in groups.items():
        others = [q for q in problem.children[kids[0]].queries if not q.identity]
        plans[key] = sum_plan([q.matrix.tocsr() for q in others])
        for t in kids:
            per_child[t] = plans[key]
    offsets = np.concatenate([[0], np.cumsum([p.n_sums for p in per_child])]).astype(np.int64)
    sum_diag, sum_lin = np.zeros(offsets[-1]), np.zeros(offsets[-1])
    for key, kids in groups.items():
        _group_terms(problem, np.asarray(kids), plans[key], offsets, weights, (hist_diag, hist_lin, sum_diag, sum_lin))
    lengths = [per_child[t].rows[0] for t in range(m)]
    cols = [
        np.where(per_child[t].rows[1], t * n + per_child[t].rows[2], first + offsets[t] + per_child[t].rows[2])
        for t in range(m)
    ]
    vals = [per_child[t].rows[3] for t in range(m)]
    cat = lambda parts, dtype: np.concatenate(parts).astype(dtype) if parts else np.zeros(0, dtype=dtype)  # noqa: E731
    return QueryTerms(
        hist_diag,
        hist_lin,
        sum_diag,
        sum_lin,
        const,
        cat(lengths, np.int64),
        cat(cols, np.int64),
        cat(vals, np.float64),
    )


def _weight(query, weights: str) -> float:
    return query.weight if weights == "inverse_variance" else 1.0


def _group_terms(problem, kids: np.ndarray, plan: SumPlan, offsets: np.ndarray, weights: str, out) -> None:
    """Add the terms of the children ``kids`` (one shared plan) to ``out``, all of them at once."""
    hist_diag, hist_lin, sum_diag, sum_lin = out
    n = problem.n
    for k, (on_cell, handle) in enumerate(zip(plan.handle_is_cell, plan.handle, strict=True)):
        queries = [[q for q in problem.children[t].queries if not q.identity][k] for t in kids]
        w = np.array([_weight(q, weights) for q in queries])[:, None]
        values = np.stack([q.values for q in queries])
        cells = kids[:, None] * n + handle[None, on_cell]
        np.add.at(hist_diag, cells, np.broadcast_to(2 * w, cells.shape))
        np.add.at(hist_lin, cells, -2 * w * values[:, on_cell])
        sums = offsets[kids][:, None] + handle[None, ~on_cell]
        np.add.at(sum_diag, sums, np.broadcast_to(2 * w, sums.shape))
        np.add.at(sum_lin, sums, -2 * w * values[:, ~on_cell])
