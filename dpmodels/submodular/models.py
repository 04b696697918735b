"""Pyomo models of the submodular family (spec 6), each with a structure marker.

- :func:`build_matroid_lp`: ``max <w, y>`` over ``P(M)`` or ``B(M)`` (the continuous-greedy direction);
- :func:`build_multilinear_relaxation`: ``max f(y)`` over ``P(M)`` with the closed-form multilinear
  extension as the (non-concave) objective; solved by the continuous-greedy plugin, never by an NLP;
- :func:`build_coverage_milp`, :func:`build_facility_milp`, :func:`build_kcoverage_milp`: exact OPT;
  ``relax=True`` gives the concave-relaxation LP upper bound;
- :func:`build_lift_lp`: the decomposition / lift LP of spec 6.3 over given bases.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyomo.environ as pyo

from dpmodels.core.errors import DataValidationError
from dpmodels.core.formulations import register_formulation
from dpmodels.core.marker import attach_marker

from .matroids import GraphicMatroid, Matroid, check_pair
from .objectives import FacilityLocation, KCoverage, WeightedCoverage, pyomo_multilinear

__all__ = [
    "build_matroid_lp",
    "build_multilinear_relaxation",
    "build_coverage_milp",
    "build_facility_milp",
    "build_kcoverage_milp",
    "build_lift_lp",
    "polytope_block",
    "polytope_layout",
    "martin_values",
    "MatroidLPPayload",
    "SubmodularPayload",
    "LiftLPPayload",
]


@dataclass(frozen=True, eq=False)
class MatroidLPPayload:
    """Payload of the matroid LP: the matroid, the weight vector ``w`` (length ``n``) and whether
    the feasible region is the base polytope ``B(M)`` (else the independence polytope ``P(M)``)."""

    matroid: Matroid
    weights: np.ndarray
    base: bool = False


@dataclass(frozen=True, eq=False)
class SubmodularPayload:
    """Payload of the multilinear relaxation and the exact MILPs: the monotone submodular
    function (coverage, facility location or k-coverage) and the matroid constraint."""

    function: object
    matroid: Matroid


@dataclass(frozen=True, eq=False)
class LiftLPPayload:
    """Payload of the lift LP: the matroid, the point ``y`` and the base columns (0/1 arrays)."""

    matroid: Matroid
    y: np.ndarray
    bases: list


def polytope_block(model, M: Matroid, y, base: bool = False) -> None:
    """``model.polytope``: the constraints of ``y in P(M)`` (or ``B(M)``)."""
    model.polytope = pyo.Block()
    M.add_polytope(model.polytope, y, base=base)


def polytope_layout(M: Matroid) -> dict:
    """Extra variables of the polytope block (Martin's arc flows for graphic matroids)."""
    if isinstance(M, GraphicMatroid):
        return {"polytope.z": [(k, a) for k in range(M.n_vertices) for a in range(2 * M.n)]}
    return {}


def martin_values(M: GraphicMatroid, forest) -> np.ndarray:
    """Martin's ``z_{k,a}`` for a forest, in ``polytope_layout`` order: for each root ``k`` every
    forest edge is oriented towards ``k`` (other components towards their lowest vertex)."""
    import networkx as nx

    forest = np.asarray(forest, bool)
    G = nx.Graph()
    G.add_nodes_from(range(M.n_vertices))
    for e in np.flatnonzero(forest):
        G.add_edge(int(M.edges[e, 0]), int(M.edges[e, 1]), index=int(e))
    z = np.zeros((M.n_vertices, 2 * M.n))
    for k in range(M.n_vertices):
        for comp in nx.connected_components(G):
            root = k if k in comp else min(comp)
            for child, parent in nx.bfs_predecessors(G, root):
                e = G.edges[child, parent]["index"]
                z[k, 2 * e + (0 if int(M.edges[e, 0]) == child else 1)] = 1.0  # arc child -> parent
    return z.ravel()


@register_formulation(
    "submodular.matroid_lp",
    payload=MatroidLPPayload,
    integer=True,  # the 0/1 program; built relaxed by default (relax=True), then an LP
    objective="linear",
    doc="max <w, y> over the matroid or base polytope (relax=False: the 0/1 program)",
)
def build_matroid_lp(M: Matroid, weights, *, base: bool = False, relax: bool = True):
    """``max sum_e w_e y_e`` over the matroid (``base=False``) or base polytope; ``relax=False``
    makes ``y`` binary (the max-weight independent set / base problem).

    Parameters
    ----------
    M : Matroid
        The constraint, on the same ground set.
    weights : array_like
        One weight per element.
    base : bool, default False
        Over the base polytope.
    relax : bool, default True
        Continuous ``y`` (False: binary).
    """
    w = np.asarray(weights, dtype=np.float64)
    if w.shape != (M.n,) or not np.all(np.isfinite(w)):
        raise DataValidationError("weights", f"need {M.n} finite weights, got shape {w.shape}")
    m = pyo.ConcreteModel(name=f"matroid_lp_{M.kind}")
    m.E = pyo.RangeSet(0, M.n - 1)
    m.y = pyo.Var(m.E, within=pyo.UnitInterval if relax else pyo.Binary)
    polytope_block(m, M, m.y, base)
    m.obj = pyo.Objective(expr=sum(float(w[e]) * m.y[e] for e in range(M.n)), sense=pyo.maximize)
    attach_marker(
        m,
        "submodular.matroid_lp",
        MatroidLPPayload(M, w, bool(base)),
        {"base": base, "relax": relax},
        {"y": list(range(M.n)), **polytope_layout(M)},
    )
    return m


@register_formulation(
    "submodular.multilinear",
    payload=SubmodularPayload,
    integer=False,
    objective="polynomial",
    doc="max of the multilinear extension f(y) over the matroid polytope (non-concave polynomial)",
)
def build_multilinear_relaxation(F, M: Matroid):
    """``max f(y)`` over ``y in P(M)``; ``f`` is the closed-form multilinear polynomial (coverage or
    facility location).  The structure plugin ``submodular_cg`` solves it (approximately).

    Parameters
    ----------
    F : WeightedCoverage or FacilityLocation
        An objective with a closed-form multilinear extension.
    M : Matroid
        The constraint, on the same ground set.
    """
    check_pair(F, M)
    m = pyo.ConcreteModel(name="multilinear_relaxation")
    m.E = pyo.RangeSet(0, M.n - 1)
    m.y = pyo.Var(m.E, within=pyo.UnitInterval)
    polytope_block(m, M, m.y)
    m.obj = pyo.Objective(expr=pyomo_multilinear(F, m.y), sense=pyo.maximize)
    attach_marker(
        m, "submodular.multilinear", SubmodularPayload(F, M), {}, {"y": list(range(M.n)), **polytope_layout(M)}
    )
    return m


def _selection(m, M: Matroid, relax: bool) -> None:
    m.E = pyo.RangeSet(0, M.n - 1)
    m.s = pyo.Var(m.E, within=pyo.UnitInterval if relax else pyo.Binary)
    polytope_block(m, M, m.s)


@register_formulation(
    "submodular.coverage_milp",
    payload=SubmodularPayload,
    integer=True,
    objective="linear",
    doc="weighted coverage under a matroid, exact MILP (relax=True: the concave-relaxation LP bound)",
)
def build_coverage_milp(F: WeightedCoverage, M: Matroid, *, relax: bool = False):
    """``max sum_v w_v z_v`` s.t. ``z_v <= sum_{u in N(v)} s_u``, ``z <= 1``, ``s`` independent.

    ``relax=True``: the LP ``max_{y in P(M)} sum_v w_v min(1, y(N(v)))``, an upper bound on OPT.

    Parameters
    ----------
    F : WeightedCoverage
        The objective.
    M : Matroid
        The constraint, on the same ground set.
    relax : bool, default False
        The LP relaxation instead of the MILP.
    """
    if not isinstance(F, WeightedCoverage):
        raise DataValidationError("F", f"the coverage MILP needs a WeightedCoverage, got {type(F).__name__}")
    check_pair(F, M)
    m = pyo.ConcreteModel(name="coverage_milp")
    _selection(m, M, relax)
    inc = F.incidence
    users = [v for v in range(F.n_users) if inc.indptr[v + 1] > inc.indptr[v]]
    m.V = pyo.Set(initialize=users)
    m.z = pyo.Var(m.V, bounds=(0, 1))
    members = {v: inc.indices[inc.indptr[v] : inc.indptr[v + 1]].tolist() for v in users}
    m.cover = pyo.Constraint(m.V, rule=lambda b, v: b.z[v] <= sum(b.s[u] for u in members[v]))
    m.obj = pyo.Objective(expr=sum(float(F.weights[v]) * m.z[v] for v in users), sense=pyo.maximize)
    layout = {"s": list(range(M.n)), "z": users, **polytope_layout(M)}
    attach_marker(m, "submodular.coverage_milp", SubmodularPayload(F, M), {"relax": relax}, layout)
    return m


@register_formulation(
    "submodular.facility_milp",
    payload=SubmodularPayload,
    integer=True,
    objective="linear",
    doc="facility location under a matroid, exact MILP (relax=True: its LP bound)",
)
def build_facility_milp(F: FacilityLocation, M: Matroid, *, relax: bool = False):
    """``max sum c_ij a_ij`` s.t. ``sum_i a_ij <= 1``, ``a_ij <= s_i``, ``s`` independent (sparse ``a``).

    Parameters
    ----------
    F : FacilityLocation
        The objective.
    M : Matroid
        The constraint, on the same ground set.
    relax : bool, default False
        The LP relaxation instead of the MILP.
    """
    if not isinstance(F, FacilityLocation):
        raise DataValidationError("F", f"the facility MILP needs a FacilityLocation, got {type(F).__name__}")
    check_pair(F, M)
    m = pyo.ConcreteModel(name="facility_milp")
    _selection(m, M, relax)
    c = F.benefit.tocoo()
    pairs = [(int(i), int(j)) for i, j in zip(c.row, c.col, strict=True)]
    value = {p: float(v) for p, v in zip(pairs, c.data, strict=True)}
    m.P = pyo.Set(initialize=pairs, dimen=2)
    m.a = pyo.Var(m.P, bounds=(0, 1))
    by_customer: dict[int, list] = {}
    for i, j in pairs:
        by_customer.setdefault(j, []).append(i)
    m.J = pyo.Set(initialize=sorted(by_customer))
    m.assign = pyo.Constraint(m.J, rule=lambda b, j: sum(b.a[i, j] for i in by_customer[j]) <= 1)
    m.open = pyo.Constraint(m.P, rule=lambda b, i, j: b.a[i, j] <= b.s[i])
    m.obj = pyo.Objective(expr=sum(value[p] * m.a[p] for p in pairs), sense=pyo.maximize)
    layout = {"s": list(range(M.n)), "a": pairs, **polytope_layout(M)}
    attach_marker(m, "submodular.facility_milp", SubmodularPayload(F, M), {"relax": relax}, layout)
    return m


@register_formulation(
    "submodular.kcoverage_milp",
    payload=SubmodularPayload,
    integer=True,
    objective="linear",
    doc="k-coverage (k-submodular) under a matroid on the support, exact MILP (spec 6.4)",
)
def build_kcoverage_milp(F: KCoverage, M: Matroid, *, relax: bool = False):
    """Binaries ``s_{e,i}`` with ``sum_i s_{e,i} <= 1``, the matroid on ``u_e = sum_i s_{e,i}``,
    ``z_v <= sum_{(e,i): v in N_i(e)} s_{e,i}``, ``z <= 1``; ``max sum_v w_v z_v`` (spec 6.4).

    Parameters
    ----------
    F : KCoverage
        The objective.
    M : Matroid
        The constraint, on the same ground set.
    relax : bool, default False
        The LP relaxation instead of the MILP.
    """
    if not isinstance(F, KCoverage):
        raise DataValidationError("F", f"the k-coverage MILP needs a KCoverage, got {type(F).__name__}")
    check_pair(F, M)
    m = pyo.ConcreteModel(name="kcoverage_milp")
    m.E = pyo.RangeSet(0, M.n - 1)
    m.K = pyo.RangeSet(1, F.k)
    m.s = pyo.Var(m.E, m.K, within=pyo.UnitInterval if relax else pyo.Binary)
    m.u = pyo.Var(m.E, bounds=(0, 1))
    m.support = pyo.Constraint(m.E, rule=lambda b, e: b.u[e] == sum(b.s[e, i] for i in b.K))
    polytope_block(m, M, m.u)
    rows = F.rows.tocsc()
    users = [v for v in range(rows.shape[1]) if rows.indptr[v + 1] > rows.indptr[v]]
    pairs = {
        v: [(int(r) // F.k, int(r) % F.k + 1) for r in rows.indices[rows.indptr[v] : rows.indptr[v + 1]]] for v in users
    }
    m.V = pyo.Set(initialize=users)
    m.z = pyo.Var(m.V, bounds=(0, 1))
    m.cover = pyo.Constraint(m.V, rule=lambda b, v: b.z[v] <= sum(b.s[e, i] for e, i in pairs[v]))
    m.obj = pyo.Objective(expr=sum(float(F.weights[v]) * m.z[v] for v in users), sense=pyo.maximize)
    layout = {
        "s": [(e, i) for e in range(M.n) for i in range(1, F.k + 1)],
        "u": list(range(M.n)),
        "z": users,
        **polytope_layout(M),
    }
    attach_marker(m, "submodular.kcoverage_milp", SubmodularPayload(F, M), {"relax": relax}, layout)
    return m


@register_formulation(
    "submodular.lift_lp",
    payload=LiftLPPayload,
    integer=False,
    objective="linear",
    doc="the decomposition / lift LP of a polytope point over given bases (spec 6.3)",
)
def build_lift_lp(M: Matroid, y, bases, *, check: bool = True):
    """The decomposition / lift LP of spec 6.3 over the given base columns, with shortfalls:
    ``min sum_e s_e`` s.t. ``sum_{B ni e} lambda_B + s_e >= y_e``, ``sum_B lambda_B = 1``, ``lambda, s >= 0``.

    Its optimum is 0 exactly when the columns dominate ``y`` in convex combination; with all bases
    that holds for every ``y in P(M)``.  Column generation prices a new base by the greedy
    max-weight base under the duals of the ``dominate`` rows.

    Parameters
    ----------
    M : Matroid
        The constraint, on the same ground set.
    y : array_like
        A point of ``P(M)``.
    bases : sequence of array_like
        The base columns (0/1 masks).
    check : bool, default True
        Check that ``y`` lies in ``P(M)``.
    """
    y = np.asarray(y, dtype=np.float64)
    if check and not M.contains(y):
        raise DataValidationError("y", "must lie in the matroid polytope")
    cols = [np.asarray(B, bool) for B in bases]
    if not cols:
        raise DataValidationError("bases", "need at least one base column")
    m = pyo.ConcreteModel(name="lift_lp")
    m.B = pyo.RangeSet(0, len(cols) - 1)
    m.E = pyo.RangeSet(0, M.n - 1)
    m.lam = pyo.Var(m.B, bounds=(0, None))
    m.short = pyo.Var(m.E, bounds=(0, None))
    m.convex = pyo.Constraint(expr=sum(m.lam[b] for b in m.B) == 1)
    members = [[b for b in range(len(cols)) if cols[b][e]] for e in range(M.n)]
    m.dominate = pyo.Constraint(m.E, rule=lambda mm, e: sum(mm.lam[b] for b in members[e]) + mm.short[e] >= float(y[e]))
    m.obj = pyo.Objective(expr=sum(m.short[e] for e in m.E))
    layout = {"lam": list(range(len(cols))), "short": list(range(M.n))}
    attach_marker(m, "submodular.lift_lp", LiftLPPayload(M, y, cols), {}, layout)
    return m
