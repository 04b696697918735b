"""Pyomo models of PGSR post-processing (spec section 3), one builder per formulation.

Each ``build_*`` returns a complete ``ConcreteModel`` (objective, variables with domains,
every constraint) and attaches a structure marker so that the structure plugins
(``pgsr_dp``, ``pgsr_chain``, ``isotonic_pava``, ``pgsr_cdp``, ``pgsr_dp_op``) can solve
the same object.  Relaxations come from ``relax=True`` (or
:func:`dpmodels.core.relax_integer_vars`).

Variables are indexed by ``(region name, size)`` with sizes ``1..N``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyomo.environ as pyo

from dpmodels.core.errors import DataValidationError
from dpmodels.core.formulations import register_formulation
from dpmodels.core.marker import attach_marker, get_marker

from .data import NoisyGroupSizes, chain_decumulate, chain_order, decumulate
from .domains import Domains, chain_infeasibility, chain_links, resolve_domains

__all__ = [
    "build_hierarchical_qip",
    "build_hierarchical_milp",
    "build_cumulative_qip",
    "build_isotonic_qp",
    "build_chain_qip",
    "build_node_subproblem",
    "released_counts",
    "variable_values",
    "GroupSizePayload",
    "NodeSubproblemPayload",
]


@dataclass(frozen=True)
class GroupSizePayload:
    """Payload of the PGSR models (1, 1 as MILP, 2, A2, 3): the noisy counts and the domains."""

    noisy: NoisyGroupSizes
    domains: Domains


@dataclass(frozen=True)
class NodeSubproblemPayload:
    """Payload of Model 4: the children's lowest values and convex cost tables."""

    child_lo: list[int]
    child_tables: list[np.ndarray]


# ---------------------------------------------------------------------- helpers
def _keys(noisy: NoisyGroupSizes) -> list[tuple[str, int]]:
    return [(name, s) for name in noisy.hierarchy.names for s in range(1, noisy.N + 1)]


def _base_model(noisy: NoisyGroupSizes, title: str) -> pyo.ConcreteModel:
    m = pyo.ConcreteModel(name=title)
    m.regions = pyo.Set(initialize=list(noisy.hierarchy.names), ordered=True, doc="regions R")
    m.sizes = pyo.RangeSet(1, noisy.N, doc="group sizes 1..N")
    m.levels = pyo.RangeSet(1, noisy.L, doc="levels 1..L")
    return m


def _add_cell_vars(m, name: str, noisy: NoisyGroupSizes, domains: Domains, relax: bool, doc: str):
    index = noisy.hierarchy.index
    lo, hi = domains.lo, domains.hi

    def bounds(_, r, s):
        i = index[r]
        return int(lo[i, s - 1]), int(hi[i, s - 1])

    domain = pyo.NonNegativeReals if relax else pyo.NonNegativeIntegers
    setattr(m, name, pyo.Var(m.regions, m.sizes, domain=domain, bounds=bounds, doc=doc))
    return getattr(m, name)


def _squared_error(var, noisy: NoisyGroupSizes, keys) -> pyo.Expression:
    flat = noisy.values.ravel()
    return pyo.quicksum((var[k] - float(a)) ** 2 for k, a in zip(keys, flat, strict=True))


def _children_names(noisy: NoisyGroupSizes) -> dict[str, list[str]]:
    h = noisy.hierarchy
    return {h.names[r]: [h.names[c] for c in h.children(r)] for r in h.internal}


# ---------------------------------------------------------------------- Model 1
@register_formulation(
    "pgsr.hierarchical_qip",
    payload=GroupSizePayload,
    integer=True,
    objective="quadratic",
    doc="Model 1: hierarchical QIP of M_H (relax=True: Model 1-R of M_H^r)",
)
def build_hierarchical_qip(
    noisy: NoisyGroupSizes,
    *,
    relax: bool = False,
    domains="full",
    delta=None,
    on_infeasible: str = "raise",
    redundant_levels: bool = True,
    fingerprint: bool = True,
) -> pyo.ConcreteModel:
    """Model 1 (spec 3.1): least-squares consistent, faithful, integral group-size counts.

    ``min sum_r ||n^r - noisy^r||^2`` s.t. every level sums to G (H2), parents equal the sum
    of their children (H3), ``n`` in its domain (H4).  ``redundant_levels=False`` keeps H2
    only for the root level (the others follow from H3).  ``fingerprint=False`` skips hashing
    the model for one that only a general solver will see (structure plugins then refuse it).
    """
    noisy.require_kind("counts", "build_hierarchical_qip")
    dom = resolve_domains(noisy, domains, delta, on_infeasible)
    m = _base_model(noisy, "PGSR Model 1 (hierarchical QIP)" + (" relaxed" if relax else ""))
    n = _add_cell_vars(m, "n", noisy, dom, relax, "released group-size counts n_s^r")
    _add_hierarchy_constraints(m, n, noisy, redundant_levels)
    keys = _keys(noisy)
    m.objective = pyo.Objective(expr=_squared_error(n, noisy, keys), sense=pyo.minimize)
    attach_marker(
        m,
        "pgsr.hierarchical_qip",
        GroupSizePayload(noisy, dom),
        {"relax": relax, "redundant_levels": redundant_levels},
        {"n": keys},
        fingerprint,
    )
    return m


def _add_hierarchy_constraints(m, n, noisy: NoisyGroupSizes, redundant_levels: bool) -> None:
    h = noisy.hierarchy
    names_at = {lvl: h.names[h.level_slice(lvl)] for lvl in range(1, h.n_levels + 1)}
    kept = list(m.levels) if redundant_levels else [1]
    m.faithfulness = pyo.Constraint(
        kept,
        rule=lambda m, lvl: pyo.quicksum(n[r, s] for r in names_at[lvl] for s in m.sizes) == noisy.G,
        doc="(H2) every level sums to G",
    )
    children = _children_names(noisy)
    m.internal_regions = pyo.Set(initialize=list(children), ordered=True)
    m.consistency = pyo.Constraint(
        m.internal_regions,
        m.sizes,
        rule=lambda m, r, s: pyo.quicksum(n[c, s] for c in children[r]) == n[r, s],
        doc="(H3) a parent equals the sum of its children",
    )


@register_formulation(
    "pgsr.hierarchical_milp",
    payload=GroupSizePayload,
    integer=True,
    objective="linear",
    doc="Model 1 as an exact MILP with chord epigraphs (spec 3.9)",
)
def build_hierarchical_milp(
    noisy: NoisyGroupSizes,
    *,
    domains="full",
    delta=None,
    on_infeasible: str = "raise",
    redundant_levels: bool = True,
    max_cuts: int = 500_000,
) -> pyo.ConcreteModel:
    """Model 1 as an exact MILP (spec 3.9): an epigraph ``t >= chord_k(n)`` per domain step.

    At every integer ``n`` the largest chord equals ``(n - noisy)^2``, so the optimum is the
    QIP optimum; it needs ``|D| - 1`` cuts per variable, so keep domains small.
    """
    noisy.require_kind("counts", "build_hierarchical_milp")
    dom = resolve_domains(noisy, domains, delta, on_infeasible)
    if dom.size() - dom.lo.size > max_cuts:
        raise DataValidationError(
            "domains",
            f"the chord MILP needs {dom.size() - dom.lo.size} cuts (> max_cuts={max_cuts}); "
            "use truncated domains or raise max_cuts",
        )
    m = _base_model(noisy, "PGSR Model 1 (chord-epigraph MILP)")
    n = _add_cell_vars(m, "n", noisy, dom, False, "released group-size counts n_s^r")
    m.t = pyo.Var(m.regions, m.sizes, domain=pyo.NonNegativeReals, doc="epigraph of (n - noisy)^2")
    _add_hierarchy_constraints(m, n, noisy, redundant_levels)
    idx = noisy.hierarchy.index
    cut_index = [
        (r, s, k) for r, s in _keys(noisy) for k in range(int(dom.lo[idx[r], s - 1]), int(dom.hi[idx[r], s - 1]))
    ]

    def chord(m, r, s, k):
        a = float(noisy.values[idx[r], s - 1])
        f_k, f_next = (k - a) ** 2, (k + 1 - a) ** 2
        return m.t[r, s] >= f_k + (f_next - f_k) * (n[r, s] - k)

    m.chords = pyo.Constraint(cut_index, rule=chord, doc="t >= chord of (n - noisy)^2 between k and k+1")
    m.objective = pyo.Objective(expr=pyo.quicksum(m.t.values()), sense=pyo.minimize)
    keys = _keys(noisy)
    attach_marker(
        m,
        "pgsr.hierarchical_milp",
        GroupSizePayload(noisy, dom),
        {"relax": False, "redundant_levels": redundant_levels},
        {"n": keys, "t": keys},
    )
    return m


# ---------------------------------------------------------------------- Model 2 and A2
def _add_monotone(m, c, n_sizes: int, doc: str) -> None:
    """Each region's cumulative vector never decreases: ``c[r, i] <= c[r, i + 1]``."""
    m.steps = pyo.RangeSet(1, n_sizes - 1) if n_sizes > 1 else pyo.Set(initialize=[])
    m.monotone = pyo.Constraint(m.regions, m.steps, rule=lambda m, r, i: c[r, i] <= c[r, i + 1], doc=doc)


def _cumulative_check(noisy: NoisyGroupSizes, dom: Domains) -> str | None:
    """Necessary conditions for Model 2 (exact feasibility is a flow problem left to the solver)."""
    empty = np.argwhere(dom.lo > dom.hi)
    if len(empty):
        r, s = empty[0]
        return f"region {noisy.hierarchy.names[r]!r}, size {s + 1} has an empty domain"
    if not dom.lo[0, -1] <= noisy.G <= dom.hi[0, -1]:
        return f"the root's cumulative count of size N must equal G = {noisy.G}, outside its domain"
    return None


@register_formulation(
    "pgsr.cumulative_qip",
    payload=GroupSizePayload,
    integer=True,
    objective="quadratic",
    doc="Model 2: cumulative QIP of M_c (relax=True: Model 2-R of M_c^r)",
)
def build_cumulative_qip(
    noisy: NoisyGroupSizes,
    *,
    relax: bool = False,
    domains="full",
    delta=None,
    on_infeasible: str = "raise",
    fingerprint: bool = True,
) -> pyo.ConcreteModel:
    """Model 2 (spec 3.4): least squares on per-region cumulative counts ``c^r = (+)n^r``.

    C2 fixes the root's last cumulative count to G, C3 keeps each region's cumulative
    vector non-decreasing, C4 keeps parents equal to the sum of their children.
    ``fingerprint=False``: as in :func:`build_hierarchical_qip`.
    """
    noisy.require_kind("cumulative", "build_cumulative_qip")
    dom = resolve_domains(noisy, domains, delta, on_infeasible, check=_cumulative_check)
    h = noisy.hierarchy
    m = _base_model(noisy, "PGSR Model 2 (cumulative QIP)" + (" relaxed" if relax else ""))
    c = _add_cell_vars(m, "c", noisy, dom, relax, "released cumulative counts c_i^r")
    m.total = pyo.Constraint(expr=c[h.names[0], noisy.N] == noisy.G, doc="(C2) root's c_N equals G")
    _add_monotone(m, c, noisy.N, "(C3) cumulative counts never decrease")
    children = _children_names(noisy)
    m.internal_regions = pyo.Set(initialize=list(children), ordered=True)
    m.consistency = pyo.Constraint(
        m.internal_regions,
        m.sizes,
        rule=lambda m, r, i: pyo.quicksum(c[k, i] for k in children[r]) == c[r, i],
        doc="(C4) a parent equals the sum of its children",
    )
    keys = _keys(noisy)
    m.objective = pyo.Objective(expr=_squared_error(c, noisy, keys), sense=pyo.minimize)
    payload = GroupSizePayload(noisy, dom)
    attach_marker(m, "pgsr.cumulative_qip", payload, {"relax": relax}, {"c": keys}, fingerprint)
    return m


@register_formulation(
    "pgsr.isotonic_qp",
    payload=GroupSizePayload,
    integer=False,
    objective="quadratic",
    doc="Model A2: per-region bounded isotonic QP of Algorithm 2",
)
def build_isotonic_qp(noisy: NoisyGroupSizes) -> pyo.ConcreteModel:
    """Model A2 (spec 3.6): per region, the closest non-decreasing vector in ``[0, G]``.

    The regions are independent; one model holds them all.  Continuous by definition.
    """
    noisy.require_kind("cumulative", "build_isotonic_qp")
    dom = Domains.full(noisy)
    m = _base_model(noisy, "PGSR Model A2 (per-region isotonic QP)")
    c = _add_cell_vars(m, "c", noisy, dom, True, "isotonic estimate of the cumulative counts")
    _add_monotone(m, c, noisy.N, "cumulative counts never decrease")
    keys = _keys(noisy)
    m.objective = pyo.Objective(expr=_squared_error(c, noisy, keys), sense=pyo.minimize)
    attach_marker(m, "pgsr.isotonic_qp", GroupSizePayload(noisy, dom), {"relax": True}, {"c": keys})
    return m


# ---------------------------------------------------------------------- Model 3
@register_formulation(
    "pgsr.chain_qip",
    payload=GroupSizePayload,
    integer=True,
    objective="quadratic",
    doc="Model 3: chain cumulative QIP of M_c^ch (corrected C8; literal=True for the paper's)",
)
def build_chain_qip(
    noisy: NoisyGroupSizes,
    *,
    relax: bool = False,
    literal: bool = False,
    domains="full",
    delta=None,
    on_infeasible: str = "raise",
) -> pyo.ConcreteModel:
    """Model 3 (spec 3.7): least squares on the chain (post-order) cumulative values.

    Along the chain ``a_1..a_{|R|N}``: ``c_i <= c_{i+1}`` (C8) unless the next node is
    shallower, where ``c_i = c_{i+1}`` (C9); the last node equals G (C7).  ``literal=True``
    builds the paper's printed C8 (same-level steps only), which admits invalid solutions
    (erratum A3); no plugin solves it.
    """
    noisy.require_kind("chain", "build_chain_qip")
    check = (lambda nz, d: None) if literal else chain_infeasibility
    dom = resolve_domains(noisy, domains, delta, on_infeasible, check=check)
    h = noisy.hierarchy
    m = _base_model(noisy, "PGSR Model 3 (chain QIP)" + (" literal" if literal else "") + (" relaxed" if relax else ""))
    c = _add_cell_vars(m, "c", noisy, dom, relax, "released chain-cumulative values c_i")
    regions, sizes = chain_order(h, noisy.N)
    chain = [(h.names[r], int(s) + 1) for r, s in zip(regions, sizes, strict=True)]
    links = chain_links(h, noisy.N, literal)
    m.chain_steps = pyo.RangeSet(1, len(chain) - 1) if len(chain) > 1 else pyo.Set(initialize=[])
    m.last = pyo.Constraint(expr=c[chain[-1]] == noisy.G, doc="(C7) the last chain node equals G")
    m.monotone = pyo.Constraint(
        [i for i in m.chain_steps if links[i - 1] == 1],
        rule=lambda m, i: c[chain[i - 1]] <= c[chain[i]],
        doc="(C8) non-decreasing along the chain",
    )
    m.equal = pyo.Constraint(
        [i for i in m.chain_steps if links[i - 1] == 2],
        rule=lambda m, i: c[chain[i - 1]] == c[chain[i]],
        doc="(C9) a last child equals its parent",
    )
    keys = _keys(noisy)
    m.objective = pyo.Objective(expr=_squared_error(c, noisy, keys), sense=pyo.minimize)
    attach_marker(m, "pgsr.chain_qip", GroupSizePayload(noisy, dom), {"relax": relax, "literal": literal}, {"c": keys})
    return m


# ---------------------------------------------------------------------- Model 4
@register_formulation(
    "pgsr.node_subproblem",
    payload=NodeSubproblemPayload,
    integer=True,
    objective="linear",
    doc="Model 4: the DP node subproblem phi(v) of M_dp^OP",
)
def build_node_subproblem(
    child_lo: Sequence[int], child_tables: Sequence[np.ndarray], target: int, integer: bool = True
) -> pyo.ConcreteModel:
    """Model 4 (spec 3.3): ``phi(v) = min sum_c tau_c(x_c)`` s.t. ``sum_c x_c = v``.

    ``child_tables[c][j]`` is ``tau_c(child_lo[c] + j)``; each table must be convex (Theorem 3).
    ``tau_c`` enters as an epigraph of chords through consecutive integer points, exact at
    integers.  ``target`` is a mutable parameter so one model serves every ``v``.
    """
    if len(child_lo) != len(child_tables) or not child_tables:
        raise DataValidationError("child_tables", "need one table per child and at least one child")
    m = pyo.ConcreteModel(name="PGSR Model 4 (DP node subproblem)")
    m.children = pyo.RangeSet(0, len(child_tables) - 1)
    lo = [int(v) for v in child_lo]
    tabs = [np.asarray(t, dtype=np.float64) for t in child_tables]
    m.x = pyo.Var(
        m.children,
        domain=pyo.Integers if integer else pyo.Reals,
        bounds=lambda m, c: (lo[c], lo[c] + len(tabs[c]) - 1),
        doc="value of child c",
    )
    m.t = pyo.Var(m.children, doc="epigraph of tau_c(x_c)")
    m.target = pyo.Param(initialize=int(target), mutable=True, doc="the parent's value v")
    cut_index = [(c, j) for c in m.children for j in range(len(tabs[c]) - 1)]
    m.chords = pyo.Constraint(
        cut_index, rule=lambda m, c, j: m.t[c] >= tabs[c][j] + (tabs[c][j + 1] - tabs[c][j]) * (m.x[c] - lo[c] - j)
    )
    single = [c for c in m.children if len(tabs[c]) == 1]
    m.flat = pyo.Constraint(single, rule=lambda m, c: m.t[c] >= tabs[c][0])
    m.split = pyo.Constraint(expr=pyo.quicksum(m.x[c] for c in m.children) == m.target)
    m.objective = pyo.Objective(expr=pyo.quicksum(m.t[c] for c in m.children), sense=pyo.minimize)
    keys = list(m.children)
    attach_marker(
        m,
        "pgsr.node_subproblem",
        NodeSubproblemPayload(lo, tabs),
        {"relax": not integer},
        {"x": keys, "t": keys},
    )
    return m


# ---------------------------------------------------------------------- reading solutions
def variable_values(model, name: str) -> np.ndarray:
    """Values of variable component ``name`` in the (regions, sizes) layout of the marker."""
    marker = get_marker(model)
    if marker is None:
        raise DataValidationError("model", "has no dpmodels structure marker")
    noisy: NoisyGroupSizes = marker.data.noisy
    var = model.find_component(name)
    vals = np.array([pyo.value(var[k], exception=False) for k in marker.layout[name]], dtype=np.float64)
    return vals.reshape(noisy.values.shape)


def released_counts(model, rounding: str = "none") -> np.ndarray:
    """The group-size counts ``n`` a solved PGSR model releases, in (regions, sizes) layout.

    Cumulative models are de-cumulated ((-) per region, or per level along the chain).
    ``rounding="half_up"`` rounds relaxed solutions with ``floor(x + 1/2)`` first (spec A7),
    as ``M_H^r`` and ``M_c^r`` do.
    """
    formulation = get_marker(model).formulation
    name = "n" if formulation.startswith("pgsr.hierarchical") else "c"
    values = variable_values(model, name)
    if rounding == "half_up":
        values = np.floor(values + 0.5)
    elif rounding != "none":
        raise DataValidationError("rounding", f"must be 'none' or 'half_up', got {rounding!r}")
    if formulation in ("pgsr.cumulative_qip", "pgsr.isotonic_qp"):
        return decumulate(values)
    if formulation == "pgsr.chain_qip":
        return chain_decumulate(get_marker(model).data.noisy.hierarchy, values)
    return values
