"""Inner passes within one interleaved pass: the 2020 production's L2 passes and rounder passes (issue 25).

Within one pass of :mod:`.interleaved`, the production's ``L2PlusRounderWithBackup_interleaved``
(``programs/optimization/sequential_optimizers.py``) solves the L2 in inner passes, then rounds,
possibly in inner passes too.  Both are declared once over the strategy's query sets
(``NodeOptions(l2_passes=..., rounder_passes=...)``, coarse first, ``"rest"`` last) and restricted to
each outer pass's query sets (an inner pass with none of them is dropped there).

* **L2 passes** (its ``DataIndQueriesL2NPass``, ``l2_dataIndep_npass_optimizer.py``, with
  ``DataIndNPass_toleranceType = opt_tol``): L2 pass ``k`` minimises the weighted squared error of
  its own query sets only, under every constraint of the solve; every answer of an earlier L2 pass's
  query sets is then held within ``tol`` of that pass's estimate, ``|Q_r H_t - Q_r H*_t| <= tol`` for
  each child ``t`` and row ``r`` (:func:`tolerance_rows`: two linear rows per answer, so every L2
  backend takes them, the matrix form as the Pyomo model).  The production's tolerance is the least
  uniform one at which those rows are feasible, found by an LP, plus ``opt_tol_slack`` (0.1 in its
  PL94 configuration); the earlier pass's own estimate meets the rows at tolerance 0, so that LP's
  optimum is 0 but for the solver's residual.  Here ``tol`` is the declared
  ``NodeOptions.l2_tolerance`` (default 0.1, the production's slack).
* **Rounder passes** (its ``DataIndependentNpassRound``, ``multipass_rounder.py``): each rounder pass
  rounds the last L2 pass's ``H*`` in the same box ``floor(H*) + {0, 1}``, minimising the query
  rounder's penalties (:mod:`.query_rounder`) of its own query sets, plus the cell term when the
  detailed query is among them; every earlier rounder pass's rounded answers are held exactly
  (equality rows, :class:`~dpmodels.topdown.pass_rows.HeldRows`).  Only the query rounder
  (``objective="queries"``) has query-set penalties to split, so rounder passes need it.

The L2 tolerance rows bind the L2 only: the rounding sees the pass's constraints, as the production's.
If the first L2 pass fails, the pass goes to the failsafe (as :func:`~dpmodels.topdown.solve.solve_node`);
if a later one fails, the earlier L2 pass's estimate is rounded (it meets every constraint); if a
later rounder pass fails, the earlier rounder pass's histograms are kept (they meet every
constraint and every earlier answer).  The log says so.

Differences from the production, by design: rounder passes judge the measured query sets only
(the production's rounder also takes unmeasured rounder queries, such as hhgq x hispanic); the
held answers of an L2 pass are those of its own query sets (the production can declare a separate
constrain-to ordering; its PL94 configuration declares the same); the same inner passes at every level.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .child_rows import ChildRows
from .node_data import NodeProblem
from .pass_rows import REST, HeldRows, pass_problem
from .solve import NodeOptions, NodeSolution, failsafe_solution, fit_l2, round_l2, solve_node

__all__ = ["InnerResult", "inner_groups", "tolerance_rows", "run_l2_passes", "run_rounder_passes", "solve_inner"]


class InnerResult:
    """One inner pass: its number, query sets, problem (with the earlier inner passes' rows) and result
    (the L2 estimate of an L2 pass, the rounded histograms of a rounder pass)."""

    def __init__(self, number: int, names: tuple[str, ...], problem: NodeProblem, values: np.ndarray):
        self.number, self.names, self.problem, self.values = number, names, problem, values


def inner_groups(names, declared) -> list[tuple[str, ...]]:
    """The declared inner passes restricted to one pass's query sets ``names``, empty ones dropped;
    one inner pass of ``names`` when none are declared.

    Parameters
    ----------
    names : sequence of str
        The query sets of the (outer) pass.
    declared : tuple of tuple of str
        The checked inner passes (:func:`~dpmodels.topdown.interleaved.check_passes`).
    """
    if not declared:
        return [tuple(names)]
    named = {q for group in declared for q in group}
    rest = tuple(q for q in names if q not in named)  # what "rest" stands for, if still unexpanded
    keep = set(names)
    groups = (tuple(x for q in group for x in (rest if q == REST else (q,)) if x in keep) for group in declared)
    return [g for g in groups if g]


def tolerance_rows(problem: NodeProblem, hstar: np.ndarray, tol: float, label: str) -> tuple[ChildRows, ...]:
    """Every child's answers to ``problem``'s query sets held within ``tol`` of their values at ``hstar``:
    a ``>=`` block at ``answer - tol`` and a ``<=`` block at ``answer + tol``.

    Parameters
    ----------
    problem : NodeProblem
        The L2 pass's solve (its children's query sets).
    hstar : numpy.ndarray
        The pass's L2 estimate (children x active cells).
    tol : float
        The tolerance, positive.
    label : str
        The rows' name in logs and errors.
    """
    m, n = problem.m, problem.n
    blocks = []
    for t, child in enumerate(problem.children):
        if child.queries:
            coo = sp.vstack([q.matrix for q in child.queries], format="coo")
            blocks.append(sp.csr_matrix((coo.data, (coo.row, coo.col + t * n)), shape=(coo.shape[0], m * n)))
    if not blocks:
        return ()
    matrix = sp.vstack(blocks, format="csr")
    answer = matrix @ np.asarray(hstar, dtype=np.float64).ravel()
    return (
        ChildRows(f"{label} (at least)", matrix, answer - tol, ">="),
        ChildRows(f"{label} (at most)", matrix, answer + tol, "<="),
    )


def run_l2_passes(sub: NodeProblem, opts: NodeOptions) -> tuple[list[InnerResult], bool | None, list[dict]]:
    """The L2 passes of one pass: ``(passes solved, edits used, log)``; no pass solved if the first fails.

    Parameters
    ----------
    sub : NodeProblem
        The pass's solve (:func:`~dpmodels.topdown.pass_rows.pass_problem`).
    opts : NodeOptions
        ``opts.l2_passes`` and ``opts.l2_tolerance``.
    """
    groups = inner_groups(_names(sub), opts.l2_passes)
    done: list[InnerResult] = []
    log: list[dict] = []
    used, rows = None, ()
    for number, names in enumerate(groups, start=1):
        problem = pass_problem(sub, names, rows)
        if problem is None:
            continue  # the pass measures a query set at some child: an empty group is never the only one
        hstar, edits, recs = fit_l2(problem, opts, None if used is None else [used])
        log += [dict(rec, **{"l2 pass": number}) for rec in recs]
        if hstar is None:
            if done:
                log.append(_note("l2 pass", number, "earlier L2 pass kept", recs[-1]["status"]))
            break
        done.append(InnerResult(number, names, problem, hstar))
        used = edits
        if number < len(groups):
            rows = rows + tolerance_rows(problem, hstar, opts.l2_tolerance, f"L2 pass {number} answers")
    return done, used, log


def run_rounder_passes(
    sub: NodeProblem, hstar: np.ndarray, used: bool, held: HeldRows, opts: NodeOptions
) -> tuple[list[InnerResult], list[dict]]:
    """The rounder passes of one pass, each rounding ``hstar``: ``(passes solved, log)``.

    Parameters
    ----------
    sub : NodeProblem
        The pass's solve.
    hstar : numpy.ndarray
        The last L2 pass's estimate.
    used : bool
        Whether the L2 kept the edits (the rounding tries no more than it).
    held : HeldRows
        The rows each child is held to before this pass (copied, not changed).
    opts : NodeOptions
        ``opts.rounder_passes``.
    """
    groups = inner_groups(_names(sub), opts.rounder_passes)
    held = held.copy()
    done: list[InnerResult] = []
    log: list[dict] = []
    rows: tuple[ChildRows, ...] = ()
    for number, names in enumerate(groups, start=1):
        problem = pass_problem(sub, names, rows, totals_held=bool(rows) and held.totals_held())
        if problem is None:
            continue
        values, recs = round_l2(problem, hstar, used, opts)
        log += [dict(rec, **{"rounder pass": number}) for rec in recs]
        if values is None:
            if done:
                log.append(_note("rounder pass", number, "earlier rounder pass kept", recs[-1]["status"]))
            break
        done.append(InnerResult(number, names, problem, values))
        if number < len(groups):
            rows = rows + held.answers(problem, values, f"rounder pass {number} answers")
    return done, log


def solve_inner(sub: NodeProblem, held: HeldRows, opts: NodeOptions) -> NodeSolution:
    """One pass's solve: its L2 passes, then its rounder passes; without inner passes declared,
    exactly :func:`~dpmodels.topdown.solve.solve_node`.

    Parameters
    ----------
    sub : NodeProblem
        The pass's solve (:func:`~dpmodels.topdown.pass_rows.pass_problem`).
    held : HeldRows
        The rows each child is held to before this pass.
    opts : NodeOptions
        The node options.

    Returns
    -------
    NodeSolution
    """
    if not (opts.l2_passes or opts.rounder_passes):
        return solve_node(sub, opts)
    fits, used, log = run_l2_passes(sub, opts)
    if not fits:
        return failsafe_solution(sub, opts, None, log)
    hstar = fits[-1].values
    rounded, more = run_rounder_passes(sub, hstar, used, held, opts)
    log += more
    if not rounded:
        return failsafe_solution(sub, opts, hstar, log)
    return NodeSolution(rounded[-1].values, False, log)


def _names(problem: NodeProblem) -> list[str]:
    """The query sets some child of ``problem`` measures, in first-seen order."""
    return list(dict.fromkeys(q.name for c in problem.children for q in c.queries))


def _note(key: str, number: int, method: str, status: str) -> dict:
    return {key: number, "stage": "pass", "edits": False, "method": method, "status": f"{status}"[:200], "seconds": 0.0}
