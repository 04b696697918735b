"""The rows one pass of an interleaved solve hands to the later passes (issue 25).

:func:`pass_problem` builds the solve of one pass (the children keep only the pass's query sets, the
earlier passes' answers join the rows); :class:`HeldRows` turns a pass's rounded answers into equality
rows, only those independent of the rows each child is already held to (a redundant equality stalls
the interior-point L2).  Used by the outer passes (:mod:`.interleaved`) and by the rounder passes
within one (:mod:`.inner_passes`).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import scipy.sparse as sp

from .child_rows import GROUP_TOTAL, ChildRows
from .node_data import NodeProblem

__all__ = ["REST", "pass_problem", "HeldRows"]

#: In a pass declaration, every query set that no other pass names.
REST = "rest"


def pass_problem(problem: NodeProblem, names, fixed: tuple[ChildRows, ...], totals_held: bool = False):
    """The solve of one pass: the children keep only the pass's query sets; the earlier passes'
    answers ``fixed`` join the problem's rows.  None when no child measured any of them.

    Parameters
    ----------
    problem : NodeProblem
        The whole solve.
    names : sequence of str
        The pass's query sets.
    fixed : tuple of ChildRows
        The earlier passes' rounded answers.
    totals_held : bool, default False
        Every child's total is already held (by ``fixed`` and the parent sums): the group totals are
        then implied, and marked so (a redundant equality stalls the interior-point L2).
    """
    names = set(names)
    children = [replace(c, queries=[q for q in c.queries if q.name in names]) for c in problem.children]
    if not any(c.queries for c in children):
        return None
    rows = problem.rows
    if totals_held:
        rows = tuple(replace(r, implied=True) if r.name == GROUP_TOTAL else r for r in rows)
    return replace(problem, children=children, rows=rows + tuple(fixed))


class HeldRows:
    """Per child of a solve, an orthonormal basis of the equality rows it is held to (its total when
    invariant, the earlier passes' answers): a pass's answers enter as rows only where independent.

    Parameters
    ----------
    problem : NodeProblem
        The whole solve.
    """

    def __init__(self, problem: NodeProblem):
        n = problem.n
        self.problem = problem
        held = {True: np.full((1, n), 1 / np.sqrt(n)), False: np.zeros((0, n))}  # shared: one selection for all
        self.bases = [
            held[problem.parent is None or c.total is not None or (c.flows is not None and c.flows.fixed)]
            for c in problem.children
        ]

    def copy(self) -> HeldRows:
        """An independent copy (the rounder passes of one pass extend their own, :mod:`.inner_passes`)."""
        out = HeldRows.__new__(HeldRows)
        out.problem, out.bases = self.problem, list(self.bases)
        return out

    def totals_held(self) -> bool:
        """Whether every child's total lies in the span of its held rows."""
        ones = np.ones(self.problem.n) / np.sqrt(self.problem.n)
        return all(np.linalg.norm(ones - b.T @ (b @ ones)) <= 1e-9 for b in self.bases)

    def answers(self, sub: NodeProblem, values: np.ndarray, label: str, exact_parent: bool = True):
        """The rounded answers of ``values`` to the pass's query sets (``sub``'s), as equality rows: those
        independent of the rows each child is already held to; the last child's as an implied block
        when the parent sums hold them (its siblings hold the same rows and ``values`` meet the parent
        exactly, i.e. the pass did not need the failsafe)."""
        m, n = sub.m, sub.n
        blocks, cache = [], {}
        for t, child in enumerate(sub.children):
            if not child.queries:
                cache[None] = None  # a child without answers: its siblings' rows do not imply the last one's
                continue
            rows = sp.vstack([q.matrix for q in child.queries], format="csr")
            key = (rows.shape, rows.indices.tobytes(), rows.indptr.tobytes(), rows.data.tobytes(), id(self.bases[t]))
            if key not in cache:
                cache[key] = _extend(self.bases[t], rows.toarray())
            keep, self.bases[t] = cache[key]
            kept = rows[np.flatnonzero(keep)]
            coo = kept.tocoo()
            block = sp.csr_matrix((coo.data, (coo.row, coo.col + t * n)), shape=(kept.shape[0], m * n))
            blocks.append((block, kept @ np.asarray(values[t], dtype=np.float64)))
        if not blocks:
            return ()
        if (
            exact_parent and sub.parent is not None and len(cache) == 1 and m > 1
        ):  # siblings alike: the parent sums imply the last
            *first, (block, answer) = blocks
            last = (ChildRows(f"{label} (last child)", block, answer, "==", implied=True),)
        else:
            first, last = blocks, ()
        if not first:
            return last
        matrix = sp.vstack([b for b, _ in first], format="csr")
        return (ChildRows(label, matrix, np.concatenate([a for _, a in first])), *last)


def _extend(basis: np.ndarray, rows: np.ndarray, tol: float = 1e-9) -> tuple[np.ndarray, np.ndarray]:
    """Gram-Schmidt (twice, for stability): which ``rows`` are independent of ``basis`` and of the rows
    kept before them, and the basis extended by them."""
    out = np.zeros((basis.shape[0] + len(rows), rows.shape[1]))
    out[: basis.shape[0]] = basis
    r = basis.shape[0]
    keep = np.zeros(len(rows), dtype=bool)
    for i, a in enumerate(rows):
        v = a - out[:r].T @ (out[:r] @ a)
        v -= out[:r].T @ (out[:r] @ v)
        norm = np.linalg.norm(v)
        if norm > tol * max(1.0, np.linalg.norm(a)):
            out[r] = v / norm
            r += 1
            keep[i] = True
    return keep, out[:r]
