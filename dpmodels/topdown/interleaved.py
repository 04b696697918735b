"""Interleaved multi-pass solves: the 2020 production's ``L2PlusRounder_interleaved`` design (issue 25).

The 2019 algorithm solves each parent's children once: the L2 fit of every query set, then the
rounding.  The production TopDown of 2020 declares a *pass sequence* instead, coarse query sets
first (e.g. pass 1: the total; pass 2: everything else).  For each pass, in order:

1. the L2 solve of that pass's query sets alone, under every constraint of the solve and the
   rounded answers of the earlier passes held exactly;
2. the rounding of its solution, under the same constraints;
3. the rounded histograms' answers to the pass's query sets become equality rows
   (:class:`~dpmodels.topdown.child_rows.ChildRows`) of every later pass.

The result is the last pass's rounding.  Each pass is an ordinary node solve
(:func:`~dpmodels.topdown.solve.solve_node`: the same backends, the same fallback chain and failsafe,
the same verification), so each pass is a Pyomo model (``build_l2`` / ``build_l1`` with the earlier
answers as ``production_row`` constraints) that the existing plugins or any QP/MILP solver can take.

Differences from the production code, by design: the rounder is the 2019 rounding ``floor + y`` with the
cells' L1 objective unless ``NodeOptions(objective="queries")`` selects the production's query rounder
(:mod:`.query_rounder`, one rounder pass over the pass's queries, where the production may split its
rounder into inner passes of its own); the L2 of a pass is one
solve rather than the production's inner passes with optimality tolerances; the pass sequence is
the same at every level (a pass none of whose query sets is measured at a solve is skipped there).
The production raises when a pass fails (its interleaved optimizer has no failsafe); here a pass's
solve keeps the 2019 failsafe, and if even that fails (the earlier answers leave no rounding in the
``floor + {0, 1}`` box) the previous pass's histograms are kept, which satisfy every constraint and
every earlier answer; the log says so (method ``"earlier pass kept"``).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import scipy.sparse as sp

from dpmodels.core.errors import DataValidationError, ModelStructureError

from .child_rows import GROUP_TOTAL, ChildRows
from .node_data import NodeProblem
from .queries import is_identity
from .solve import NodeOptions, NodeSolution, solve_node

__all__ = ["REST", "check_passes", "solve_passes", "run_passes", "PassResult", "pass_problem", "HeldRows"]

#: In a pass declaration, every query set that no other pass names.
REST = "rest"


def check_passes(passes, queries) -> tuple[tuple[str, ...], ...]:
    """The pass sequence with ``"rest"`` expanded, after checking it against the strategy's query sets.

    Every name must be a query set of the strategy, named in one pass only; every query set must be
    in some pass (``"rest"``, allowed in the last pass only, takes those no other pass names).  Given
    the query sets themselves, the detailed one (an identity) is refused outside the last pass: its
    rounded answers fix every cell and leave nothing to later passes.

    Parameters
    ----------
    passes : sequence of sequence of str
        The passes, coarse first; ``()`` for the 2019 single solve.
    queries : sequence of QuerySet or str
        The strategy's query sets (or their names).

    Returns
    -------
    tuple of tuple of str
    """
    if isinstance(passes, str) or any(isinstance(p, str) for p in passes):
        raise DataValidationError("passes", "must be a sequence of passes, each a sequence of query-set names")
    passes = tuple(tuple(p) for p in passes)
    if not passes:
        return ()
    known = [getattr(q, "name", q) for q in queries]
    detailed = [q.name for q in queries if hasattr(q, "matrix") and is_identity(q.matrix, q.matrix.shape[1])]
    named = [q for p in passes for q in p if q != REST]
    unknown = sorted(set(named) - set(known))
    if unknown:
        raise DataValidationError("passes", f"{unknown} are not query sets of the strategy {known}")
    twice = sorted({q for q in named if named.count(q) > 1})
    if twice:
        raise DataValidationError("passes", f"{twice} are named in more than one pass")
    if any(REST in p for p in passes[:-1]):
        raise DataValidationError("passes", f"{REST!r} (the query sets no other pass names) goes in the last pass only")
    if any(not p for p in passes):
        raise DataValidationError("passes", "a pass names no query set")
    rest = [q for q in known if q not in named]
    if REST in passes[-1]:
        passes = (*passes[:-1], tuple(q for q in passes[-1] if q != REST) + tuple(rest))
    elif rest:
        raise DataValidationError("passes", f"the query sets {rest} are in no pass: add them or end with {REST!r}")
    early = sorted(set(detailed).intersection(q for p in passes[:-1] for q in p))
    if early:
        raise DataValidationError("passes", f"{early} fix every cell: the detailed query set goes in the last pass")
    return passes


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


class PassResult:
    """One pass of a solve: its problem (with the earlier answers as rows) and its solution."""

    def __init__(self, number: int, names: tuple[str, ...], problem: NodeProblem, solution: NodeSolution):
        self.number, self.names, self.problem, self.solution = number, names, problem, solution


def run_passes(problem: NodeProblem, opts: NodeOptions) -> tuple[list[PassResult], list[dict]]:
    """Every pass of one solve, in order: ``(passes solved, log rows of the passes that failed or were skipped)``.

    Parameters
    ----------
    problem : NodeProblem
        The whole solve (every query set).
    opts : NodeOptions
        The node options; ``opts.passes`` the checked pass sequence (:func:`check_passes`).
    """
    done: list[PassResult] = []
    notes: list[dict] = []
    fixed: tuple[ChildRows, ...] = ()
    held = HeldRows(problem)
    for number, names in enumerate(opts.passes, start=1):
        sub = pass_problem(problem, names, fixed, totals_held=bool(done) and held.totals_held())
        if sub is None:
            notes.append(_note(number, "skipped", "no query set of the pass is measured here"))
            continue
        try:
            sol = solve_node(sub, opts)
        except ModelStructureError as err:
            if not done:  # the first pass solved is the 2019 problem on fewer queries: nothing to keep
                raise
            notes.append(_note(number, "earlier pass kept", f"{err}"[:200]))
            break
        done.append(PassResult(number, tuple(names), sub, sol))
        if number < len(opts.passes):
            fixed = fixed + held.answers(sub, sol.values, f"pass {number} answers", exact_parent=not sol.failsafe)
    if not done:
        raise DataValidationError("passes", "no pass has a query set measured at this solve")
    return done, notes


def solve_passes(problem: NodeProblem, opts: NodeOptions | None = None) -> NodeSolution:
    """The solve of one parent's children by interleaved passes (``opts.passes``); without passes,
    exactly :func:`~dpmodels.topdown.solve.solve_node` (the 2019 solve).

    Every log row carries its ``pass``; the solution is the last pass solved, failsafe if any pass
    needed the failsafe.

    Parameters
    ----------
    problem : NodeProblem
        The whole solve (every query set).
    opts : NodeOptions, optional
        The node options with the checked pass sequence (:func:`check_passes`).

    Returns
    -------
    NodeSolution
    """
    opts = opts or NodeOptions()
    if not opts.passes:
        return solve_node(problem, opts)
    done, notes = run_passes(problem, opts)
    log = [dict(rec, **{"pass": r.number}) for r in done for rec in r.solution.log]
    log += notes
    last = done[-1].solution
    failsafe = any(r.solution.failsafe for r in done)
    d_star = max((r.solution.d_star for r in done if r.solution.d_star is not None), default=None)
    return NodeSolution(last.values, failsafe, log, d_star)


def _note(number: int, method: str, status: str) -> dict:
    return {"pass": number, "stage": "pass", "edits": False, "method": method, "status": status, "seconds": 0.0}
