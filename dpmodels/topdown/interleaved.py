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

Within a pass, the production's inner passes are options (:mod:`.inner_passes`):
``NodeOptions(l2_passes=...)`` solves the pass's L2 in L2 passes, each minimising its own query sets'
squared error with every answer of the earlier L2 passes held within ``l2_tolerance`` of its estimate
(linear rows); ``NodeOptions(rounder_passes=...)`` (with the query rounder, ``objective="queries"``)
rounds in rounder passes, each judged by its own query sets with the earlier rounder passes' rounded
answers held exactly.  Both are declared once over the strategy's query sets and restricted to each
pass's; inner passes without ``passes`` make one pass of every query set, which is the production's
PL94 configuration (:data:`~dpmodels.topdown.budget_presets.PL94_2020_INNER_PASSES`: the total first,
then the rest, in both).  With neither declared, a pass is one L2 solve and one rounding, as before.

Differences from the production code, by design: the rounder is the 2019 rounding ``floor + y`` with
the cells' L1 objective unless ``NodeOptions(objective="queries")`` selects the production's query
rounder (:mod:`.query_rounder`); the L2 tolerance is declared, not the production's LP optimum plus a
slack (that optimum is zero but for the solver's residual, :mod:`.inner_passes`); the passes and inner
passes are the same at every level (a pass none of whose query sets is measured at a solve is skipped
there).  The production raises when a pass fails (its interleaved optimizer has no failsafe); here a
pass's solve keeps the 2019 failsafe, and if even that fails (the earlier answers leave no rounding in
the ``floor + {0, 1}`` box) the previous pass's histograms are kept, which satisfy every constraint and
every earlier answer; the log says so (method ``"earlier pass kept"``).
"""

from __future__ import annotations

from dataclasses import replace

from dpmodels.core.errors import DataValidationError, ModelStructureError

from .child_rows import ChildRows
from .inner_passes import solve_inner
from .node_data import NodeProblem
from .pass_rows import REST, HeldRows, pass_problem
from .queries import is_identity
from .solve import NodeOptions, NodeSolution, solve_node

__all__ = [
    "REST",
    "check_passes",
    "check_options",
    "solve_passes",
    "run_passes",
    "PassResult",
    "pass_problem",
    "HeldRows",
]


def check_passes(passes, queries, field: str = "passes") -> tuple[tuple[str, ...], ...]:
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
    field : str, default "passes"
        The declaration's name in errors (``"l2_passes"``, ``"rounder_passes"`` for the inner passes).

    Returns
    -------
    tuple of tuple of str
    """
    if isinstance(passes, str) or any(isinstance(p, str) for p in passes):
        raise DataValidationError(field, "must be a sequence of passes, each a sequence of query-set names")
    passes = tuple(tuple(p) for p in passes)
    if not passes:
        return ()
    known = [getattr(q, "name", q) for q in queries]
    detailed = [q.name for q in queries if hasattr(q, "matrix") and is_identity(q.matrix, q.matrix.shape[1])]
    named = [q for p in passes for q in p if q != REST]
    unknown = sorted(set(named) - set(known))
    if unknown:
        raise DataValidationError(field, f"{unknown} are not query sets of the strategy {known}")
    twice = sorted({q for q in named if named.count(q) > 1})
    if twice:
        raise DataValidationError(field, f"{twice} are named in more than one pass")
    if any(REST in p for p in passes[:-1]):
        raise DataValidationError(field, f"{REST!r} (the query sets no other pass names) goes in the last pass only")
    if any(not p for p in passes):
        raise DataValidationError(field, "a pass names no query set")
    rest = [q for q in known if q not in named]
    if REST in passes[-1]:
        passes = (*passes[:-1], tuple(q for q in passes[-1] if q != REST) + tuple(rest))
    elif rest:
        raise DataValidationError(field, f"the query sets {rest} are in no pass: add them or end with {REST!r}")
    early = sorted(set(detailed).intersection(q for p in passes[:-1] for q in p))
    if early:
        raise DataValidationError(field, f"{early} fix every cell: the detailed query set goes in the last pass")
    return passes


def check_options(options: NodeOptions, queries) -> NodeOptions:
    """``options`` with its passes, L2 passes and rounder passes checked (:func:`check_passes`, each
    error naming its field) and ``"rest"`` expanded; inner passes without passes make one pass of
    every query set.

    Parameters
    ----------
    options : NodeOptions
        The declared options.
    queries : sequence of QuerySet or str
        The strategy's query sets (or their names).

    Returns
    -------
    NodeOptions
    """
    passes = check_passes(options.passes, queries)
    l2 = check_passes(options.l2_passes, queries, "l2_passes")
    rounder = check_passes(options.rounder_passes, queries, "rounder_passes")
    if (l2 or rounder) and not passes:
        passes = (tuple(getattr(q, "name", q) for q in queries),)
    return replace(options, passes=passes, l2_passes=l2, rounder_passes=rounder)


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
        The node options; ``opts.passes`` the checked pass sequence (:func:`check_options`).
    """
    done: list[PassResult] = []
    notes: list[dict] = []
    fixed: tuple[ChildRows, ...] = ()
    held = HeldRows(problem)
    passes = opts.passes or (tuple(dict.fromkeys(q.name for c in problem.children for q in c.queries)),)
    for number, names in enumerate(passes, start=1):
        sub = pass_problem(problem, names, fixed, totals_held=bool(done) and held.totals_held())
        if sub is None:
            notes.append(_note(number, "skipped", "no query set of the pass is measured here"))
            continue
        try:
            sol = solve_inner(sub, held, opts)
        except ModelStructureError as err:
            if not done:  # the first pass solved is the 2019 problem on fewer queries: nothing to keep
                raise
            notes.append(_note(number, "earlier pass kept", f"{err}"[:200]))
            break
        done.append(PassResult(number, tuple(names), sub, sol))
        if number < len(passes):
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
        The node options with the checked pass sequences (:func:`check_options`).

    Returns
    -------
    NodeSolution
    """
    opts = opts or NodeOptions()
    if not (opts.passes or opts.l2_passes or opts.rounder_passes):
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
