"""Pyomo models of the TopDown solves (spec section 3), with the component names of spec 7.

One :class:`~dpmodels.topdown.node_data.NodeProblem` describes the solve for the children of one
node (or the root solve, which has no parent and a fixed total).  From it:

* :func:`build_l2` - least squares on the noisy measurements (Eqs. 6/9, with flows 20/23);
* :func:`build_l1` - the rounding in its implementable form ``H = floor(H*) + y`` (Eqs.
  7/11, 22/25; spec erratum 1: the box is ``[floor, floor + 1]``, not ``|H - H*| <= 1``);
* the failsafe builders of spec 3.8 (phase 1: distance to feasibility; phase 2: objective within
  ``d* + 1``) live in :mod:`.failsafe_models`, which this module imports so that importing it
  registers every TopDown formulation.

Formulations (registered with their marker payloads): ``topdown.l2`` (QP, :class:`L2Payload`),
``topdown.l1`` (MILP, or its LP with ``relax=True``; :class:`RoundingPayload`), and the
``topdown.failsafe_*`` phases of :mod:`.failsafe_models`, and ``topdown.gls`` (the tree GLS of
every region's histogram, a QP; :mod:`.gls_model`).  The models are assembled from the
shared blocks of :mod:`.model_blocks`: no model carries a constraint without variables.
:func:`histogram_values` reads the solved child histograms off any of them.

Histogram variables exist only for the node's *active* cells: the cells with a positive
parent count that are not structural zeros (spec 3.3 shortcuts); the rest are 0.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyomo.environ as pyo

from dpmodels.core.errors import DataValidationError
from dpmodels.core.formulations import register_formulation
from dpmodels.core.marker import attach_marker, get_marker

from . import failsafe_models as _failsafe_models  # noqa: F401  (registers the failsafe formulations)
from . import gls_model as _gls_model  # noqa: F401  (registers topdown.gls, the tree GLS)
from .model_blocks import (
    add_edits,
    add_flows,
    add_parent_sum,
    add_rows,
    add_totals,
    base_model,
    cell_keys,
    check_weights,
    l2_objective_terms,
)
from .node_data import NodeProblem, split_floor
from .query_rounder import add_query_penalties, cell_costs

__all__ = ["build_l2", "build_l1", "histogram_values", "L2Payload", "RoundingPayload", "ROUNDING_OBJECTIVES"]

#: The rounding objectives: the cells' L1 distance, the paper's ``-phi``, the 2020 query rounder.
ROUNDING_OBJECTIVES = ("l1", "paper", "queries")


# ---------------------------------------------------------------------- marker payloads
@dataclass(frozen=True, eq=False)
class L2Payload:
    """Payload of ``topdown.l2``: the node problem and the build choices the L2 solve uses."""

    problem: NodeProblem
    weights: str
    edits: bool


@dataclass(frozen=True, eq=False)
class RoundingPayload:
    """Payload of ``topdown.l1``: the node problem, the L2 solution ``hstar`` (children x active
    cells), its ``floor`` and ``fraction``, the rounding objective (``"l1"`` or ``"paper"``),
    whether edits are rows of the model, and ``l1_constant`` (objective + constant =
    ``||H - H*||_1`` for ``objective="l1"``; None for ``"paper"``)."""

    problem: NodeProblem
    hstar: np.ndarray
    floor: np.ndarray
    fraction: np.ndarray
    objective: str
    edits: bool
    l1_constant: float | None


# ---------------------------------------------------------------------- L2
@register_formulation(
    "topdown.l2",
    payload=L2Payload,
    integer=False,
    objective="quadratic",
    doc="TopDown L2 solve: weighted least squares under parent sums, totals, flows and edits (QP)",
)
def build_l2(
    problem: NodeProblem, *, weights: str = "inverse_variance", edits: bool = True, fingerprint: bool = True
) -> pyo.ConcreteModel:
    """The L2 solve: the closest non-negative histograms to the measurements that satisfy the
    parent sums (or the root total), the flow constraints, invariant totals and edits.

    Parameters
    ----------
    problem : NodeProblem
        The node solve's data (noisy answers and public knowledge only).
    weights : {"inverse_variance", "paper"}, default "inverse_variance"
        The query weights of the L2 objective (``"paper"``: 1).
    edits : bool, default True
        Keep the linear edits.
    fingerprint : bool, default True
        Record the model's structural hash in its marker.
    """
    check_weights(weights)
    m = base_model(problem, "TopDown L2" + (" (root)" if problem.parent is None else ""))
    m.H = pyo.Var(m.children, m.cells, domain=pyo.NonNegativeReals, doc="child histograms H*_t[x]")

    def hist(t, x):
        return m.H[t, x]

    add_parent_sum(m, problem, hist)
    add_totals(m, problem, hist)
    add_rows(m, problem, hist)
    flow_layout = add_flows(m, problem, hist)
    add_edits(m, problem, hist, edits)
    m.objective = pyo.Objective(expr=l2_objective_terms(m, problem, hist, weights), sense=pyo.minimize)
    attach_marker(
        m,
        "topdown.l2",
        L2Payload(problem, weights, edits),
        {"relax": True, "weights": weights, "edits": edits},
        {"H": cell_keys(problem), **flow_layout, "resid": list(m.resid.index_set())},
        fingerprint,
    )
    return m


# ---------------------------------------------------------------------- L1
def _rounding_rhs(problem: NodeProblem, low: np.ndarray) -> np.ndarray | None:
    if problem.parent is None:
        return None
    rhs = problem.parent - low.sum(axis=0)
    if (rhs < 0).any() or (rhs > problem.m).any():
        raise DataValidationError("hstar", "floors do not fit the parent: the L2 solution does not sum to the parent")
    return rhs


@register_formulation(
    "topdown.l1",
    payload=RoundingPayload,
    integer=True,
    objective="linear",
    doc="TopDown L1 rounding H = floor(H*) + y, y binary (MILP; relax=True: its LP)",
)
def build_l1(
    problem: NodeProblem,
    hstar: np.ndarray,
    *,
    relax: bool = False,
    objective: str = "l1",
    edits: bool = True,
    fingerprint: bool = True,
) -> pyo.ConcreteModel:
    """The rounding solve: ``H = floor(H*) + y`` with ``y`` binary, minimising
    ``sum (1 - 2 phi) y`` (exactly ``||H - H*||_1`` up to a constant; ``objective="paper"``
    uses ``-phi``), subject to the same constraints as L2 on ``H``.

    Only cells whose parent is not already met by the floors get a ``y``; a row left with no
    ``y`` is checked on the floors and omitted (``InfeasibleDomainError`` if they violate it).

    Parameters
    ----------
    problem : NodeProblem
        The node solve's data (noisy answers and public knowledge only).
    hstar : numpy.ndarray
        The L2 solution (children x active cells) to round.
    relax : bool, default False
        The LP relaxation (``y`` in [0, 1]).
    objective : {"l1", "paper", "queries"}, default "l1"
        The rounding objective: the cells' L1 distance to ``H*``, the paper's ``-phi``, or the 2020
        production's query rounder (:mod:`.query_rounder`: ``|Q_r y - round(Q_r phi)|`` per measured
        marginal row, plus the cell term when the detailed query is measured).
    edits : bool, default True
        Keep the linear edits.
    fingerprint : bool, default True
        Record the model's structural hash in its marker.
    """
    if objective not in ROUNDING_OBJECTIVES:
        raise DataValidationError("objective", f"must be one of {ROUNDING_OBJECTIVES}, got {objective!r}")
    hstar = np.asarray(hstar, dtype=np.float64).reshape(problem.m, problem.n)
    low, phi = split_floor(hstar)
    rhs = _rounding_rhs(problem, low)
    m = base_model(
        problem, "TopDown L1 rounding" + (" (root)" if problem.parent is None else "") + (" LP" if relax else "")
    )
    col = {int(x): j for j, x in enumerate(problem.cells)}
    movable = [(t, x) for t in range(problem.m) for x in m.cells if rhs is None or rhs[col[x]] > 0]
    m.y = pyo.Var(movable, domain=pyo.UnitInterval if relax else pyo.Binary, doc="round up: H = floor(H*) + y")
    ymove = set(movable)

    def hist(t, x):
        base = int(low[t, col[x]])
        return base + m.y[t, x] if (t, x) in ymove else base

    add_parent_sum(m, problem, hist)
    add_totals(m, problem, hist)
    add_rows(m, problem, hist)
    flow_layout = add_flows(m, problem, hist)
    add_edits(m, problem, hist, edits)
    if not relax and hasattr(m, "GQ"):
        for v in (m.GQ, m.F, m.CB):
            v.domain = pyo.NonNegativeIntegers if v is not m.F else pyo.Integers
    cost = {"l1": lambda: 1 - 2 * phi, "paper": lambda: -phi, "queries": lambda: cell_costs(problem, phi)}[objective]()
    penalties = add_query_penalties(m, problem, phi, hist, low) if objective == "queries" else 0
    m.objective = pyo.Objective(
        expr=pyo.quicksum(float(cost[t, col[x]]) * m.y[t, x] for t, x in movable) + penalties, sense=pyo.minimize
    )
    constant = float(phi.sum()) if objective == "l1" else None  # objective + constant = ||H - H*||_1
    attach_marker(
        m,
        "topdown.l1",
        RoundingPayload(problem, hstar, low, phi, objective, edits, constant),
        {"relax": relax, "objective": objective, "edits": edits},
        {"y": movable, **flow_layout},
        fingerprint,
    )
    return m


# ---------------------------------------------------------------------- solutions
def histogram_values(model) -> np.ndarray:
    """The solved child histograms as a (children x active cells) array.

    Parameters
    ----------
    model : pyomo.environ.ConcreteModel
        A solved model of :func:`build_l2`, :func:`build_l1` or a failsafe builder.
    """
    marker = get_marker(model)
    payload = marker.data
    problem: NodeProblem = payload.problem
    col = {int(x): j for j, x in enumerate(problem.cells)}
    if "H" in marker.layout:
        out = np.zeros((problem.m, problem.n))
        for t, x in marker.layout["H"]:
            out[t, col[x]] = pyo.value(model.H[t, x])
        return out
    out = payload.floor.astype(np.float64).copy()
    for t, x in marker.layout["y"]:
        out[t, col[x]] += pyo.value(model.y[t, x])
    return out
