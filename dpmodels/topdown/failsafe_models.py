"""Pyomo models of TopDown's failsafe (spec 3.8), for a child solve whose constraints fail.

When the parent histogram cannot be split among the children under every constraint (the L2
solve or the rounding is infeasible), the failsafe relaxes the parent sums into a distance
``sum s`` to the parent, keeping the marginal over the unconstrained attributes exact:

* phase 1 minimises the distance, giving ``d*``;
* phase 2 minimises the original objective (L2, or the rounding's ``sum (1 - 2 phi) y``) with the
  distance at most ``d* + 1``.

Formulations: ``topdown.failsafe_l2.phase1`` (LP) and ``.phase2`` (QP) with
:class:`FailsafeL2Payload`, ``topdown.failsafe_l1.phase1`` / ``.phase2`` (MILPs) with
:class:`FailsafeL1Payload`; :func:`build_failsafe_l2` and :func:`build_failsafe_l1` pick the
phase.  Built from the shared blocks of :mod:`.model_blocks`, like the L2 and rounding models of
:mod:`.models` (which imports this module, so the failsafe formulations register with them).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyomo.environ as pyo
import scipy.sparse as sp

from dpmodels.core.errors import DataValidationError
from dpmodels.core.formulations import register_formulation
from dpmodels.core.marker import attach_marker

from .model_blocks import (
    add_flows,
    add_rows,
    add_totals,
    base_model,
    cell_keys,
    check_weights,
    l2_objective_terms,
    relation,
)
from .node_data import NodeProblem, split_floor

__all__ = [
    "build_failsafe_l2",
    "build_failsafe_l1",
    "build_failsafe_l2_phase1",
    "build_failsafe_l2_phase2",
    "build_failsafe_l1_phase1",
    "build_failsafe_l1_phase2",
    "FailsafeL2Payload",
    "FailsafeL1Payload",
]


@dataclass(frozen=True, eq=False)
class FailsafeL2Payload:
    """Payload of the L2 failsafe phases: the node problem, and for phase 2 ``d_star`` and the
    weights of the L2 objective (None in phase 1)."""

    problem: NodeProblem
    phase: int
    d_star: float | None
    weights: str | None


@dataclass(frozen=True, eq=False)
class FailsafeL1Payload:
    """Payload of the rounding failsafe phases: the node problem, ``hstar``, its ``floor`` and
    ``fraction``, and ``d_star`` (phase 2)."""

    problem: NodeProblem
    phase: int
    hstar: np.ndarray
    floor: np.ndarray
    fraction: np.ndarray
    d_star: float | None


def _failsafe_common(m, problem: NodeProblem, hist, integer: bool) -> dict[str, list]:
    parent = dict(zip((int(x) for x in problem.cells), problem.parent.tolist(), strict=True))
    m.s = pyo.Var(
        m.cells,
        domain=pyo.NonNegativeIntegers if integer else pyo.NonNegativeReals,
        doc="|sum of children - parent| per cell",
    )
    m.fs_slack_pos = pyo.Constraint(
        m.cells, rule=lambda m, x: m.s[x] >= pyo.quicksum(hist(t, x) for t in m.children) - parent[x]
    )
    m.fs_slack_neg = pyo.Constraint(
        m.cells, rule=lambda m, x: m.s[x] >= parent[x] - pyo.quicksum(hist(t, x) for t in m.children)
    )
    marg = problem.free_marginal
    if marg is None:
        raise DataValidationError("free_marginal", "the failsafe needs the marginal over the unconstrained attributes")
    sub = sp.csr_matrix(marg[:, problem.cells])
    sub.eliminate_zeros()
    target = sub @ problem.parent
    cells = list(m.cells)
    rows = [z for z in range(sub.shape[0]) if sub.indptr[z + 1] > sub.indptr[z]]

    def marginal_row(m, z):
        lo, hi = sub.indptr[z], sub.indptr[z + 1]
        lhs = pyo.quicksum(
            float(v) * hist(t, cells[c])
            for t in m.children
            for c, v in zip(sub.indices[lo:hi], sub.data[lo:hi], strict=True)
        )
        return relation(lhs, "==", float(target[z]), f"fs_marg[{z}]")

    m.fs_marg = pyo.Constraint(rows, rule=marginal_row)
    add_totals(m, problem, hist)
    add_rows(m, problem, hist, failsafe=True)  # the production rows are hard: the failsafe keeps them
    return {"s": list(m.cells), **add_flows(m, problem, hist)}


def _failsafe_budget(m, d_star: float) -> None:
    m.fs_budget = pyo.Constraint(
        rule=lambda m: relation(pyo.quicksum(m.s.values()), "<=", d_star + 1, "fs_budget"),
        doc="phase 2: distance to the parent at most d* + 1",
    )


def _failsafe_child(problem: NodeProblem) -> None:
    if problem.parent is None:
        raise DataValidationError("problem", "the failsafe applies to child solves")


def _l2_failsafe_model(problem: NodeProblem, phase: int):
    _failsafe_child(problem)
    m = base_model(problem, f"TopDown L2 failsafe phase {phase}")
    m.H = pyo.Var(m.children, m.cells, domain=pyo.NonNegativeReals)

    def hist(t, x):
        return m.H[t, x]

    layout = {"H": cell_keys(problem), **_failsafe_common(m, problem, hist, integer=False)}
    return m, hist, layout


@register_formulation(
    "topdown.failsafe_l2.phase1",
    payload=FailsafeL2Payload,
    integer=False,
    objective="linear",
    doc="TopDown L2 failsafe phase 1: least L1 distance to the parent, free marginal exact (LP)",
)
def build_failsafe_l2_phase1(problem: NodeProblem, *, fingerprint: bool = True) -> pyo.ConcreteModel:
    """Phase 1 of the L2 failsafe (spec 3.8): minimise the distance ``sum s`` of the children's
    sums to the parent, with the marginal over the unconstrained attributes kept exact."""
    m, _, layout = _l2_failsafe_model(problem, 1)
    m.objective = pyo.Objective(expr=pyo.quicksum(m.s.values()), sense=pyo.minimize)
    payload = FailsafeL2Payload(problem, 1, None, None)
    attach_marker(m, "topdown.failsafe_l2.phase1", payload, {"relax": True}, layout, fingerprint)
    return m


@register_formulation(
    "topdown.failsafe_l2.phase2",
    payload=FailsafeL2Payload,
    integer=False,
    objective="quadratic",
    doc="TopDown L2 failsafe phase 2: the L2 objective within distance d* + 1 of the parent (QP)",
)
def build_failsafe_l2_phase2(
    problem: NodeProblem, d_star: float, *, weights: str = "inverse_variance", fingerprint: bool = True
) -> pyo.ConcreteModel:
    """Phase 2 of the L2 failsafe (spec 3.8): minimise the L2 objective with ``sum s <= d* + 1``."""
    check_weights(weights)
    m, hist, layout = _l2_failsafe_model(problem, 2)
    _failsafe_budget(m, d_star)
    m.objective = pyo.Objective(expr=l2_objective_terms(m, problem, hist, weights), sense=pyo.minimize)
    payload = FailsafeL2Payload(problem, 2, float(d_star), weights)
    attach_marker(m, "topdown.failsafe_l2.phase2", payload, {"relax": True}, layout, fingerprint)
    return m


def build_failsafe_l2(
    problem: NodeProblem,
    phase: int,
    d_star: float | None = None,
    *,
    weights: str = "inverse_variance",
    fingerprint: bool = True,
) -> pyo.ConcreteModel:
    """Failsafe for the L2 solve of a child problem: phase 1 minimises the distance to the
    parent (``sum s``) with the marginal over unconstrained attributes kept exact; phase 2
    minimises the L2 objective with ``sum s <= d* + 1`` (spec 3.8).  Builds
    ``topdown.failsafe_l2.phase1`` or ``.phase2``.

    Parameters
    ----------
    problem : NodeProblem
        The node solve's data (noisy answers and public knowledge only).
    phase : {1, 2}
        The phase.
    d_star : float, optional
        Phase 1's optimum ``d*`` (phase 2 only).
    weights : {"inverse_variance", "paper"}, default "inverse_variance"
        The query weights of the L2 objective (``"paper"``: 1).
    fingerprint : bool, default True
        Record the model's structural hash in its marker.
    """
    check_weights(weights)
    if phase == 1:
        return build_failsafe_l2_phase1(problem, fingerprint=fingerprint)
    if phase == 2 and d_star is not None:
        return build_failsafe_l2_phase2(problem, d_star, weights=weights, fingerprint=fingerprint)
    raise DataValidationError("phase", f"must be 1, or 2 with d_star; got {phase}, {d_star}")


def _l1_failsafe_model(problem: NodeProblem, hstar: np.ndarray, phase: int):
    _failsafe_child(problem)
    hstar = np.asarray(hstar, dtype=np.float64).reshape(problem.m, problem.n)
    low, phi = split_floor(hstar)
    m = base_model(problem, f"TopDown L1 failsafe phase {phase}")
    m.y = pyo.Var(m.children, m.cells, domain=pyo.Binary)
    col = {int(x): j for j, x in enumerate(problem.cells)}

    def hist(t, x):
        return int(low[t, col[x]]) + m.y[t, x]

    layout = {"y": cell_keys(problem), **_failsafe_common(m, problem, hist, integer=True)}
    if hasattr(m, "GQ"):
        for v in (m.GQ, m.F, m.CB):
            v.domain = pyo.NonNegativeIntegers if v is not m.F else pyo.Integers
    return m, hstar, low, phi, col, layout


@register_formulation(
    "topdown.failsafe_l1.phase1",
    payload=FailsafeL1Payload,
    integer=True,
    objective="linear",
    doc="TopDown rounding failsafe phase 1: least L1 distance to the parent, y binary (MILP)",
)
def build_failsafe_l1_phase1(problem: NodeProblem, hstar: np.ndarray, *, fingerprint: bool = True) -> pyo.ConcreteModel:
    """Phase 1 of the rounding failsafe: ``H = floor(H*) + y`` with binary ``y`` and integer
    slacks, minimising the distance ``sum s`` to the parent."""
    m, hstar, low, phi, _, layout = _l1_failsafe_model(problem, hstar, 1)
    m.objective = pyo.Objective(expr=pyo.quicksum(m.s.values()), sense=pyo.minimize)
    payload = FailsafeL1Payload(problem, 1, hstar, low, phi, None)
    attach_marker(m, "topdown.failsafe_l1.phase1", payload, {"relax": False}, layout, fingerprint)
    return m


@register_formulation(
    "topdown.failsafe_l1.phase2",
    payload=FailsafeL1Payload,
    integer=True,
    objective="linear",
    doc="TopDown rounding failsafe phase 2: the rounding objective within distance d* + 1 (MILP)",
)
def build_failsafe_l1_phase2(
    problem: NodeProblem, hstar: np.ndarray, d_star: float, *, fingerprint: bool = True
) -> pyo.ConcreteModel:
    """Phase 2 of the rounding failsafe: minimise ``sum (1 - 2 phi) y`` with ``sum s <= d* + 1``."""
    m, hstar, low, phi, col, layout = _l1_failsafe_model(problem, hstar, 2)
    _failsafe_budget(m, d_star)
    m.objective = pyo.Objective(
        expr=pyo.quicksum(float(1 - 2 * phi[t, col[x]]) * m.y[t, x] for t in m.children for x in m.cells),
        sense=pyo.minimize,
    )
    payload = FailsafeL1Payload(problem, 2, hstar, low, phi, float(d_star))
    attach_marker(m, "topdown.failsafe_l1.phase2", payload, {"relax": False}, layout, fingerprint)
    return m


def build_failsafe_l1(
    problem: NodeProblem, hstar: np.ndarray, phase: int, d_star: float | None = None, *, fingerprint: bool = True
) -> pyo.ConcreteModel:
    """Failsafe for the rounding: ``H = floor(H*) + y`` with binary ``y`` and integer slacks
    (phase 1: distance to the parent; phase 2: the rounding objective within ``d* + 1``).
    Builds ``topdown.failsafe_l1.phase1`` or ``.phase2``.

    Parameters
    ----------
    problem : NodeProblem
        The node solve's data (noisy answers and public knowledge only).
    hstar : numpy.ndarray
        The L2 solution (children x active cells) to round.
    phase : {1, 2}
        The phase.
    d_star : float, optional
        Phase 1's optimum ``d*`` (phase 2 only).
    fingerprint : bool, default True
        Record the model's structural hash in its marker.
    """
    if phase == 1:
        return build_failsafe_l1_phase1(problem, hstar, fingerprint=fingerprint)
    if phase == 2 and d_star is not None:
        return build_failsafe_l1_phase2(problem, hstar, d_star, fingerprint=fingerprint)
    raise DataValidationError("phase", f"must be 1, or 2 with d_star; got {phase}, {d_star}")
