"""Solving one TopDown node: L2, then L1, with the fallback chain and verification (spec 4.2).

``solve_node(problem)`` runs, for the children of one parent (or the root):

1. the L2 solve with the full constraint set, then without edits, then the failsafe;
2. the L1 rounding with the constraint set L2 used, then without edits, then the failsafe
   (always the failsafe if L2 needed it, since then ``H*`` no longer sums to the parent);
   each rounding first solves the LP relaxation with a vertex method and keeps it when it is
   integral (an integral optimum of the relaxation is optimal for the MIP), else solves the MIP;
   the total-unimodularity certificate, recorded in the log, says when the LP is sure to be
   integral (before issue 25 only certified roundings tried the LP: on the state preset the
   edits break the certificate everywhere, yet many roundings have integral LP optima, found in a
   fraction of the MIP's time; ``dpmodels bench topdown --solver-settings`` counts them and times both);
3. verification of every constraint on the result.

Every step is recorded (path, method, status, d*, time) in the returned log.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace

import numpy as np
from pyomo.contrib.solver.common.results import TerminationCondition

from dpmodels.core.errors import DataValidationError, ModelStructureError
from dpmodels.core.facade import solve

from .compiled import l1_system, l2_system, solve_l1_highs, stack_rows
from .failsafe_models import build_failsafe_l1, build_failsafe_l2
from .flow import solve_flow_rounding  # the plugins' algorithms, on plain data
from .forced_zeros import expanded, without_forced_zeros  # the exact presolve of the matrix path
from .l2_matrix import CLARABEL_ATTEMPTS, l2_matrix, matrix_l2_backend
from .models import build_l1, build_l2, histogram_values
from .node_data import NodeProblem, split_floor
from .node_options import NodeOptions  # re-exported: solve_node's options
from .tree_l2 import solve_tree_l2, tree_objective
from .tum import matrix_certificate, tum_certificate
from .verify import verify_children  # re-exported: the solve and its check, one import

__all__ = ["NodeOptions", "NodeSolution", "solve_node", "fit_l2", "round_l2", "failsafe_solution", "verify_children"]

OK = TerminationCondition.convergenceCriteriaSatisfied
#: Clarabel's settings for the L2 solves through Pyomo: those of the matrix path (:func:`_clarabel`).
CLARABEL_TIGHT = {"tol_gap_abs": 1e-10, "tol_gap_rel": 1e-10, "tol_feas": 1e-10, "direct_solve_method": "qdldl"}
#: How far from an integer an LP vertex's histogram value may be and still count as integral.
INTEGRAL_TOL = 1e-6


def integral_vertex(values: np.ndarray) -> bool:
    """Whether an LP vertex's histogram values are all integers (within :data:`INTEGRAL_TOL`): then the
    vertex is the rounding MIP's optimum too, and the MIP is skipped."""
    return bool(np.abs(values - np.round(values)).max(initial=0) <= INTEGRAL_TOL)


@dataclass
class NodeSolution:
    """Integer child histograms (children x active cells) and the log of how they were found.

    Parameters
    ----------
    values : numpy.ndarray
        Integer child histograms (children x active cells).
    failsafe : bool
        Whether the failsafe produced them.
    log : list of dict, optional
        One entry per solve attempted.
    d_star : float, optional
        The failsafe's distance to the parent.
    """

    values: np.ndarray
    failsafe: bool
    log: list[dict] = field(default_factory=list)
    d_star: float | None = None


# ---------------------------------------------------------------------- L2
def _solve_l2(problem: NodeProblem, opts: NodeOptions, edits: bool) -> tuple[np.ndarray | None, dict]:
    tick = time.perf_counter()
    backend = opts.l2
    if backend == "auto":
        backend = "topdown_tree_l2" if _tree_ok(problem, edits) else matrix_l2_backend(opts)
    values, status, objective, method = _l2_attempt(problem, opts, edits, backend)
    checked = values is not None and _verified(problem, values, edits, opts)
    if values is not None and not checked and method == "active_set":  # certified, yet the checks refuse it
        values, status, objective, _ = _l2_attempt(problem, opts, edits, "clarabel")
        method = "clarabel (active set: checks)"
        checked = values is not None and _verified(problem, values, edits, opts)
    if values is not None and not checked:
        status, values = "verification failed", None
    return values, {
        "stage": "L2",
        "edits": edits,
        "method": method,
        "status": status,
        "objective": objective,
        "seconds": time.perf_counter() - tick,
    }


def _l2_attempt(problem: NodeProblem, opts: NodeOptions, edits: bool, backend: str):
    """One L2 solve by ``backend``: ``(H* or None, status, objective, method)``, unchecked."""
    objective = None
    try:
        if backend == "topdown_tree_l2":  # the plugin's algorithm on plain data: no Pyomo model needed
            values = solve_tree_l2(problem, opts.weights, edits)
            return values, OK.name, tree_objective(problem, values, opts.weights), backend
        if backend in ("clarabel", "topdown_active_set_l2") and opts.path == "compiled":
            system = _builders(opts)[0](problem, opts.weights, edits)
            x, status, objective, backend = l2_matrix(system, opts, backend)
            values = None if x is None else x[: system.n_hist].reshape(problem.m, problem.n)
            return values, (OK.name if x is not None else status), objective, backend
        model = build_l2(problem, weights=opts.weights, edits=edits, fingerprint=backend.startswith("topdown_"))
        res = _solve_l2_model(model, backend, opts)
        values = histogram_values(model) if res.termination_condition == OK else None
        return values, res.termination_condition.name, res.incumbent_objective, backend
    except Exception as err:  # a backend failure is a failed solve, to be escalated
        return None, f"error: {type(err).__name__}: {err}"[:200], objective, backend


def _verified(problem: NodeProblem, values: np.ndarray, edits: bool, opts: NodeOptions) -> bool:
    """Whether an L2 solution passes the driver's checks (:func:`verify_children`)."""
    return verify_children(problem, values, integral=False, edits=edits, assembly=opts.assembly).ok


def _solve_l2_model(model, backend: str, opts: NodeOptions):
    """The Pyomo L2 model solved by ``backend``; Clarabel tries the matrix path's
    :data:`CLARABEL_ATTEMPTS` (as :data:`CLARABEL_TIGHT` options), then its own defaults."""
    if backend != "clarabel" or opts.assembly == "previous":
        return solve(model, backend, time_limit=opts.time_limit)
    for tol, refine in CLARABEL_ATTEMPTS:
        options = {**CLARABEL_TIGHT, "tol_gap_abs": tol, "tol_gap_rel": tol, "tol_feas": tol}
        res = solve(
            model, backend, time_limit=opts.time_limit, options={**options, "iterative_refinement_enable": refine}
        )
        if res.termination_condition == OK:
            return res
    return solve(model, backend, time_limit=opts.time_limit)


def _tree_ok(problem: NodeProblem, edits: bool) -> bool:
    return all(
        c.queries
        and all(q.identity for q in c.queries)
        and c.flows is None
        and (c.total is None or problem.parent is None)
        for c in problem.children
    ) and not (edits and problem.edits or problem.rows)


def _builders(opts: NodeOptions):
    """The matrix-form builders ``(l2_system, l1_system)`` of ``opts.assembly``."""
    if opts.assembly == "previous":
        from .previous import previous_l1_system, previous_l2_system

        return previous_l2_system, previous_l1_system
    return l2_system, l1_system


# ---------------------------------------------------------------------- L1
def _solve_l1(
    problem: NodeProblem, hstar: np.ndarray, opts: NodeOptions, edits: bool
) -> tuple[np.ndarray | None, dict]:
    tick = time.perf_counter()
    record = {"stage": "L1", "edits": edits}
    try:
        values, method, status, cert = _round(problem, hstar, opts, edits)
    except Exception as err:
        values, method, status, cert = None, opts.l1, f"error: {type(err).__name__}: {err}"[:200], None
    if (
        values is not None
        and not verify_children(problem, values, integral=True, edits=edits, assembly=opts.assembly).ok
    ):
        values, status = None, "verification failed"
    distance = float(np.abs(values - hstar).sum()) if values is not None else None  # ||H - H*||_1
    record.update(
        method=method, status=status, certificate=cert, objective=distance, seconds=time.perf_counter() - tick
    )
    return values, record


def _round(problem, hstar, opts, edits):
    """The rounding of one node: trivial, min-cost flow, LP-integral (certificate) or MIP."""
    if opts.l1 not in ("highs", "topdown_flow"):
        raise DataValidationError("l1", f"must be 'highs' or 'topdown_flow', got {opts.l1!r}")
    low, _ = split_floor(np.asarray(hstar, dtype=np.float64))
    if problem.parent is not None and (low.sum(axis=0) == problem.parent).all():
        return low, "already integral", "trivial", None  # every cell's floors already meet its parent
    if opts.l1 == "topdown_flow" and not (edits and problem.edits or problem.rows):  # the plugin's algorithm
        values, _ = solve_flow_rounding(replace(problem, edits=()), hstar, opts.objective)
        return values.astype(np.int64), "flow", OK.name, None
    if opts.path == "compiled":
        return _round_compiled(problem, hstar, opts, edits)
    lp = build_l1(problem, hstar, relax=True, objective=opts.objective, edits=edits, fingerprint=False)
    cert = tum_certificate(lp).holds
    res = solve(lp, "highs", time_limit=opts.time_limit, options={"solver": "simplex"})
    if res.termination_condition == OK:
        values = histogram_values(lp)
        if integral_vertex(values):
            return np.round(values).astype(np.int64), "lp-integral", res.termination_condition.name, cert
    mip = build_l1(problem, hstar, relax=False, objective=opts.objective, edits=edits, fingerprint=False)
    res = solve(mip, "highs", time_limit=opts.time_limit, options={"mip_rel_gap": 0.0})  # as the matrix path
    values = np.round(histogram_values(mip)).astype(np.int64) if res.termination_condition == OK else None
    return values, "mip", res.termination_condition.name, cert


def _round_compiled(problem, hstar, opts, edits):
    """The LP-first protocol on the matrix form: simplex, integrality check, else the MIP."""
    system, low = _builders(opts)[1](problem, hstar, opts.objective, edits)
    a = stack_rows([system.a_eq, system.a_ub], system.n)
    bounds = np.concatenate([system.lb, system.ub])
    cert = matrix_certificate(a, np.concatenate([system.b_eq, system.b_ub]), bounds).holds
    certified_only = opts.assembly == "previous"  # before issue 25, only a certified LP was tried
    solved, keep = (system, np.arange(system.n)) if certified_only else without_forced_zeros(system)
    x = None
    if cert or not certified_only:
        x, status, _ = solve_l1_highs(solved, integer=False, simplex=True, time_limit=opts.time_limit)
        x = expanded(x, keep, system.n)
    if x is not None:
        y = x[: system.n_hist]
        if integral_vertex(y):
            return low + np.round(y).reshape(low.shape).astype(np.int64), "lp-integral", OK.name, cert
    x, status, _ = solve_l1_highs(solved, integer=True, time_limit=opts.time_limit, lean=not certified_only)
    x = expanded(x, keep, system.n)
    if x is None:
        return None, "mip", status, cert
    return low + np.round(x[: system.n_hist]).reshape(low.shape).astype(np.int64), "mip", OK.name, cert


# ---------------------------------------------------------------------- failsafe
def _failsafe(problem: NodeProblem, opts: NodeOptions, hstar: np.ndarray | None) -> tuple[np.ndarray, float, dict]:
    """Phase 1 and 2 of the L2 (``hstar is None``) or L1 failsafe, without edits."""
    tick = time.perf_counter()
    plain = replace(problem, edits=())
    if hstar is None:
        p1 = build_failsafe_l2(plain, 1, fingerprint=False)
        r1 = solve(p1, "highs", time_limit=opts.time_limit)
        _require(r1, "L2 failsafe phase 1")
        d_star = float(r1.incumbent_objective)
        p2 = build_failsafe_l2(plain, 2, d_star, weights=opts.weights, fingerprint=False)
        _require(solve(p2, "clarabel", time_limit=opts.time_limit), "L2 failsafe phase 2")
        values = histogram_values(p2)
    else:
        p1 = build_failsafe_l1(plain, hstar, 1, fingerprint=False)
        r1 = solve(p1, "highs", time_limit=opts.time_limit)
        _require(r1, "L1 failsafe phase 1")
        d_star = float(round(r1.incumbent_objective))
        p2 = build_failsafe_l1(plain, hstar, 2, d_star, fingerprint=False)
        _require(solve(p2, "highs", time_limit=opts.time_limit), "L1 failsafe phase 2")
        values = np.round(histogram_values(p2)).astype(np.int64)
    stage = "L2" if hstar is None else "L1"
    return (
        values,
        d_star,
        {
            "stage": stage,
            "edits": False,
            "method": "failsafe",
            "status": "ok",
            "d_star": d_star,
            "seconds": time.perf_counter() - tick,
        },
    )


def _require(res, what: str) -> None:
    if res.termination_condition != OK:
        raise ModelStructureError(f"{what} failed: {res.termination_condition.name}")


# ---------------------------------------------------------------------- the chain
def _edit_modes(problem: NodeProblem, opts: NodeOptions) -> list[bool]:
    return [True, False] if (opts.edits and problem.edits) else [False]


def fit_l2(problem: NodeProblem, opts: NodeOptions, modes=None) -> tuple[np.ndarray | None, bool | None, list[dict]]:
    """The L2 of a node solve, with the edits then without: ``(H*, edits kept, log)``, ``H*`` None when
    every attempt failed.

    Parameters
    ----------
    problem : NodeProblem
        The node solve.
    opts : NodeOptions
        Backends and modelling choices.
    modes : sequence of bool, optional
        The edit modes to try, in order (default: with the edits when there are any, then without).
    """
    log: list[dict] = []
    for edits in _edit_modes(problem, opts) if modes is None else modes:
        hstar, rec = _solve_l2(problem, opts, edits)
        log.append(rec)
        if hstar is not None:
            return hstar, edits, log
    return None, None, log


def round_l2(problem: NodeProblem, hstar: np.ndarray, used: bool, opts: NodeOptions) -> tuple[np.ndarray | None, list]:
    """The rounding of ``hstar``, with no more edits than the L2 kept (``used``): ``(histograms, log)``,
    the histograms None when every attempt failed (the failsafe is :func:`failsafe_solution`).

    Parameters
    ----------
    problem : NodeProblem
        The node solve.
    hstar : numpy.ndarray
        The L2 estimate (children x active cells).
    used : bool
        Whether the L2 kept the edits.
    opts : NodeOptions
        Backends and modelling choices.
    """
    log: list[dict] = []
    for edits in [m for m in _edit_modes(problem, opts) if m <= used]:
        values, rec = _solve_l1(problem, hstar, opts, edits)
        log.append(rec)
        if values is not None:
            return values, log
    return None, log


def failsafe_solution(problem: NodeProblem, opts: NodeOptions, hstar: np.ndarray | None, log) -> NodeSolution:
    """The failsafe after the attempts in ``log`` failed: of the L2 and the rounding (``hstar`` None),
    or of the rounding of ``hstar``; at the root, where there is no parent to relax, an error.

    Parameters
    ----------
    problem : NodeProblem
        The node solve.
    opts : NodeOptions
        Backends and modelling choices.
    hstar : numpy.ndarray or None
        The L2 estimate, or None when the L2 failed.
    log : list of dict
        The failed attempts (not empty).
    """
    log = list(log)
    if problem.parent is None:
        stage = "L2 solve" if hstar is None else "L1 rounding"
        raise ModelStructureError(f"the root {stage} failed: {log[-1]['status']}")
    if hstar is None:
        hstar, _, rec = _failsafe(problem, opts, None)
        log.append(rec)
    values, d_star, rec = _failsafe(problem, opts, hstar)
    log.append(rec)
    return NodeSolution(values, True, log, d_star)


def solve_node(problem: NodeProblem, opts: NodeOptions | None = None) -> NodeSolution:
    """L2 then L1 for the children of one node, escalating full -> no edits -> failsafe.

    Parameters
    ----------
    problem : NodeProblem
        The node solve's data (noisy answers and public knowledge only).
    opts : NodeOptions, optional
        Backends and modelling choices.

    Returns
    -------
    NodeSolution
    """
    opts = opts or NodeOptions()
    hstar, used, log = fit_l2(problem, opts)
    if hstar is not None:
        values, more = round_l2(problem, hstar, used, opts)
        log += more
        if values is not None:
            return NodeSolution(values, False, log)
    return failsafe_solution(problem, opts, hstar, log)
