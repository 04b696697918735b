"""Pyomo models of facility location (spec 5.1, 5.4).

* :func:`build_ufl_mip` - the strong UFL MIP on a general metric (or an HST in either site mode):
  ``min sum_i f_i y_i + sum_ij N_j c_ij x_ij`` s.t. ``sum_i x_ij = 1``, ``x_ij <= y_i``,
  ``y`` binary (``relax=True``: ``0 <= y <= 1``, the LP relaxation).  Formulation ``facility.ufl``;
  the ``facility_mechanism`` plugin solves its general-metric form by the FRT pipeline.
* :func:`build_tree_model` - the same algebra on an HST metric ``d_T`` (formulation
  ``facility.tree``): sites are the leaves (default) or all tree nodes.  The exact tree DP
  (``facility_tree_dp``, leaves) and the mechanism (``facility_mechanism``) solve it.
* :func:`build_lb9_lp` - Claim 9's bound as an LP: ``max sum_u B_u z_u`` s.t. for every leaf
  ``sum_{u in anc(v) ∪ {v}} z_u <= 1``, ``0 <= z <= 1`` (an interval matrix: its optimum is the
  best antichain, LB9).

Formulations (registered with their marker payloads): ``facility.ufl`` and ``facility.tree``
(MILPs, LPs with ``relax=True``; :class:`UFLPayload`), ``facility.lb9`` (LP, :class:`AntichainPayload`).
Reference optima: :func:`solve_reference` solves with ``mip_rel_gap = 0`` and checks optimality.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyomo.environ as pyo

from dpmodels.core.errors import DataValidationError
from dpmodels.core.formulations import register_formulation
from dpmodels.core.marker import attach_marker

from .data import HSTInstance, UFLInstance
from .hst import leaf_distances, node_distance, subtree_counts

__all__ = [
    "build_ufl_mip",
    "build_tree_model",
    "build_lb9_lp",
    "solve_reference",
    "open_sites",
    "ufl_arrays",
    "UFLPayload",
    "AntichainPayload",
]


@dataclass(frozen=True, eq=False)
class UFLPayload:
    """Payload of ``facility.ufl`` and ``facility.tree``: the instance and the model's arrays.

    ``I`` site labels (locations, or HST node ids with ``sites="all_nodes"``), ``J`` client
    locations (``N > 0``), ``f`` site costs, ``N`` client counts of ``J``, ``c`` the
    ``|I| x |J|`` distances; ``sites`` is ``"leaves"``, ``"all_nodes"`` (HST instances) or
    ``"locations"`` (general metrics); ``forced_open`` the sites fixed open (sorted).
    """

    instance: UFLInstance | HSTInstance
    I: np.ndarray  # noqa: E741  (the spec's name)
    J: np.ndarray
    f: np.ndarray
    N: np.ndarray
    c: np.ndarray
    sites: str
    forced_open: tuple = ()


@dataclass(frozen=True, eq=False)
class AntichainPayload:
    """Payload of ``facility.lb9``: the HST instance and the node weights ``B_u = min(f, N_u λ^ℓ(u))``."""

    instance: HSTInstance
    B: np.ndarray


def ufl_arrays(instance, sites: str = "leaves") -> dict:
    """Site labels I, clients J (locations with ``N > 0``), costs ``f_i``, counts ``N_j`` and ``c_ij``."""
    if isinstance(instance, UFLInstance):
        I = np.arange(instance.n)
        J = np.flatnonzero(instance.N > 0)
        c = instance.distances[:, J]
        f = instance.f_vector
    elif isinstance(instance, HSTInstance):
        tree = instance.tree
        J = np.flatnonzero(instance.N > 0)
        if sites == "leaves":
            I = np.arange(tree.n)  # sites labelled by location index
            c = leaf_distances(tree)[:, J]
        elif sites == "all_nodes":
            I = np.arange(tree.n_nodes)  # sites labelled by node id
            uu, jj = np.meshgrid(I, tree.leaf_node[J], indexing="ij")
            c = node_distance(tree, uu.ravel(), jj.ravel()).reshape(uu.shape)
        else:
            raise DataValidationError("sites", f"must be 'leaves' or 'all_nodes', got {sites!r}")
        f = np.full(I.size, instance.f)
    else:
        raise DataValidationError("instance", f"must be a UFLInstance or HSTInstance, got {type(instance).__name__}")
    return {"I": I, "J": J, "f": f, "N": instance.N[J].astype(float), "c": c}


def _ufl_algebra(m: pyo.ConcreteModel, arr: dict, relax: bool, forced_open) -> dict:
    I, J, c = arr["I"].tolist(), arr["J"].tolist(), arr["c"]
    m.I = pyo.Set(initialize=I, ordered=True, doc="candidate sites")
    m.J = pyo.Set(initialize=J, ordered=True, doc="client locations (N_j > 0)")
    f = dict(zip(I, arr["f"].tolist(), strict=True))
    N = dict(zip(J, arr["N"].tolist(), strict=True))
    cost = {(i, j): float(c[a, b]) for a, i in enumerate(I) for b, j in enumerate(J)}
    m.y = pyo.Var(m.I, domain=pyo.UnitInterval if relax else pyo.Binary, doc="site i open")
    m.x = pyo.Var(m.I, m.J, domain=pyo.NonNegativeReals, doc="client j served by i")
    m.assign = pyo.Constraint(m.J, rule=lambda m, j: pyo.quicksum(m.x[i, j] for i in m.I) == 1)
    m.link = pyo.Constraint(m.I, m.J, rule=lambda m, i, j: m.x[i, j] <= m.y[i])
    m.obj = pyo.Objective(
        expr=pyo.quicksum(f[i] * m.y[i] for i in m.I)
        + pyo.quicksum(N[j] * cost[i, j] * m.x[i, j] for i in m.I for j in m.J if N[j] * cost[i, j] != 0),
        sense=pyo.minimize,
    )
    for i in forced_open or ():
        if i not in m.I:
            raise DataValidationError("forced_open", f"{i!r} is not a site")
        m.y[i].fix(1)
    return {"y": I, "x": [(i, j) for i in I for j in J]}


@register_formulation(
    "facility.ufl",
    payload=UFLPayload,
    integer=True,
    objective="linear",
    doc="strong UFL MIP on a general metric or an HST (relax=True: its LP relaxation)",
)
def build_ufl_mip(
    instance, *, relax: bool = False, sites: str = "leaves", forced_open=None, fingerprint: bool = True
) -> pyo.ConcreteModel:
    """The strong UFL MIP (or its LP relaxation with ``relax=True``) of spec 5.1.

    For an :class:`HSTInstance` the metric is ``d_T`` and ``sites`` chooses the leaves (labelled by
    location) or all nodes (labelled by node id).  ``forced_open`` fixes ``y_i = 1``.

    Parameters
    ----------
    instance : UFLInstance or HSTInstance
        The instance (its metric: ``d``, or ``d_T`` on an HST).
    relax : bool, default False
        The LP relaxation instead of the MIP.
    sites : {"leaves", "all_nodes"}, default "leaves"
        On an HST: facilities at the leaves or at every node.
    forced_open : iterable, optional
        Sites fixed open (``y_i = 1``).
    fingerprint : bool, default True
        Record the model's structural hash in its marker.
    """
    arr = ufl_arrays(instance, sites)
    m = pyo.ConcreteModel(name="UFL LP relaxation" if relax else "UFL MIP")
    layout = _ufl_algebra(m, arr, relax, forced_open)
    mode = sites if isinstance(instance, HSTInstance) else "locations"
    payload = UFLPayload(instance, **arr, sites=mode, forced_open=tuple(sorted(forced_open or ())))
    attach_marker(m, "facility.ufl", payload, {"relax": relax}, layout, fingerprint=fingerprint)
    return m


@register_formulation(
    "facility.tree",
    payload=UFLPayload,
    integer=True,
    objective="linear",
    doc="UFL MIP on an HST metric, sites at the leaves or at all nodes (relax=True: its LP)",
)
def build_tree_model(instance: HSTInstance, *, sites: str = "leaves", relax: bool = False) -> pyo.ConcreteModel:
    """UFL on the HST metric ``d_T`` (formulation ``facility.tree``), solved exactly by MIP solvers and
    ``facility_tree_dp`` (leaves), or privately by ``facility_mechanism`` (both site modes).

    Parameters
    ----------
    instance : HSTInstance
        The tree, the facility cost ``f`` and the client counts ``N`` (private).
    sites : {"leaves", "all_nodes"}, default "leaves"
        Where facilities open: ``rep`` of the serving node, or the tree node itself.
    relax : bool, default False
        The LP relaxation instead of the MIP.
    """
    if not isinstance(instance, HSTInstance):
        raise DataValidationError("instance", f"the tree model needs an HSTInstance, got {type(instance).__name__}")
    arr = ufl_arrays(instance, sites)
    m = pyo.ConcreteModel(name=f"UFL on an HST ({sites})")
    layout = _ufl_algebra(m, arr, relax, None)
    attach_marker(m, "facility.tree", UFLPayload(instance, **arr, sites=sites), {"relax": relax}, layout)
    return m


@register_formulation(
    "facility.lb9",
    payload=AntichainPayload,
    integer=False,
    objective="linear",
    doc="Claim 9's antichain LP: its optimum is the lower bound LB9",
)
def build_lb9_lp(instance: HSTInstance) -> pyo.ConcreteModel:
    """Claim 9's antichain LP (spec 5.4): its optimum is LB9 <= opt (facilities anywhere in V_T).

    Parameters
    ----------
    instance : HSTInstance
        The tree, the facility cost ``f`` and the client counts ``N`` (private).
    """
    tree = instance.tree
    counts = subtree_counts(tree, instance.N).astype(float)
    B = np.minimum(instance.f, counts * tree.lam ** tree.level.astype(float))
    nodes = np.arange(tree.n_nodes).tolist()
    m = pyo.ConcreteModel(name="Claim-9 antichain LP")
    m.U = pyo.Set(initialize=nodes, ordered=True, doc="tree nodes")
    m.V = pyo.Set(initialize=list(range(tree.n)), ordered=True, doc="leaves (locations)")
    m.z = pyo.Var(m.U, bounds=(0, 1))
    anc = tree.ancestors  # (L+1) x n: every leaf's ancestors-or-self
    m.path = pyo.Constraint(m.V, rule=lambda m, v: pyo.quicksum(m.z[int(u)] for u in anc[:, v]) <= 1)
    m.obj = pyo.Objective(expr=pyo.quicksum(float(B[u]) * m.z[u] for u in m.U if B[u] > 0), sense=pyo.maximize)
    attach_marker(m, "facility.lb9", AntichainPayload(instance, B), {"relax": True}, {"z": nodes})
    return m


def solve_reference(model, solver: str = "highs", time_limit: float | None = None) -> float:
    """Optimum of a facility model with a zero MIP gap; raises unless the solver proved optimality.

    Parameters
    ----------
    model : pyomo.environ.ConcreteModel
        A model of this family.
    solver : str, default "highs"
        The backend (``highs``, ``scip``, ...).
    time_limit : float, optional
        Seconds.

    Returns
    -------
    float
        The proven optimum.
    """
    from pyomo.contrib.solver.common.results import TerminationCondition

    from dpmodels.core.facade import solve

    options = {"mip_rel_gap": 0.0} if solver == "highs" else {"limits/gap": 0.0} if solver.startswith("scip") else {}
    res = solve(model, solver, time_limit=time_limit, options=options)
    if res.termination_condition != TerminationCondition.convergenceCriteriaSatisfied:
        raise RuntimeError(f"{solver} stopped with {res.termination_condition.name} on {model.name}")
    return float(res.incumbent_objective)


def open_sites(model) -> list:
    """Site labels with ``y_i > 0.5`` after a solve.

    Parameters
    ----------
    model : pyomo.environ.ConcreteModel
        A solved facility model.
    """
    return [i for i in model.I if (model.y[i].value or 0) > 0.5]
