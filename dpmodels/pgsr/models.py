"""Pyomo models of PGSR post-processing (spec section 3), one builder per formulation.

Each ``build_*`` returns a complete ``ConcreteModel`` (objective, variables with domains,
every constraint) and attaches a structure marker so that the structure plugins
(``pgsr_dp``, ``pgsr_chain``, ``isotonic_pava``, ``pgsr_cdp``, ``pgsr_dp_op``) can solve
the same object.  Relaxations come from ``relax=True`` (or
:func:`dpmodels.core.relax_integer_vars`).

Variables are indexed by ``(region name, size)`` with sizes ``1..N``.  Models 1, 1 as a MILP
and 4 are built here; Models 2, A2 and 3 (on cumulative values) in
:mod:`dpmodels.pgsr.cumulative_models`, imported here so that every PGSR formulation is registered
by importing this module; the shared blocks and the solution readers are in
:mod:`dpmodels.pgsr.model_parts`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyomo.environ as pyo

from dpmodels.core.errors import DataValidationError
from dpmodels.core.formulations import register_formulation
from dpmodels.core.marker import attach_marker

from .cumulative_models import build_chain_qip, build_cumulative_qip, build_isotonic_qp
from .data import NoisyGroupSizes
from .domains import resolve_domains
from .model_parts import (
    GroupSizePayload,
    NodeSubproblemPayload,
    add_cell_vars,
    base_model,
    cell_keys,
    children_names,
    released_counts,
    squared_error,
    variable_values,
)

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
    of their children (H3), ``n`` in its domain (H4); with ``noisy.weights`` the weighted
    ``sum w (n - noisy)^2`` (:mod:`dpmodels.pgsr.weights`).  ``redundant_levels=False`` keeps H2
    only for the root level (the others follow from H3).  ``fingerprint=False`` skips hashing
    the model for one that only a general solver will see (structure plugins then refuse it).

    Parameters
    ----------
    noisy : NoisyGroupSizes
        Noisy counts (``kind="counts"``) and the public hierarchy and ``G``.
    relax : bool
        Continuous variables: Model 1-R.
    domains : str or Domains
        ``"full"`` (``[0, G]``), ``"truncated"`` (the paper's ``noisy +- delta``) or explicit
        :class:`~dpmodels.pgsr.domains.Domains` (:func:`~dpmodels.pgsr.domains.resolve_domains`).
    delta : int or sequence of int, optional
        The truncation's half-width per level (default: from the noise scales).
    on_infeasible : str
        ``"raise"`` or ``"widen"`` (double a truncation the model cannot satisfy).
    redundant_levels : bool
        State H2 for every level (True) or the root only.
    fingerprint : bool
        Hash the model for the structure plugins.

    Returns
    -------
    pyomo.environ.ConcreteModel
        The model, with its structure marker (formulation ``pgsr.hierarchical_qip``).
    """
    noisy.require_kind("counts", "build_hierarchical_qip")
    dom = resolve_domains(noisy, domains, delta, on_infeasible)
    m = base_model(noisy, "PGSR Model 1 (hierarchical QIP)" + (" relaxed" if relax else ""))
    n = add_cell_vars(m, "n", noisy, dom, relax, "released group-size counts n_s^r")
    _add_hierarchy_constraints(m, n, noisy, redundant_levels)
    keys = cell_keys(noisy)
    m.objective = pyo.Objective(expr=squared_error(n, noisy, keys), sense=pyo.minimize)
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
    children = children_names(noisy)
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

    At every integer ``n`` the largest chord equals ``(n - noisy)^2`` (times the cell's weight
    when ``noisy`` is weighted), so the optimum is the QIP optimum; it needs ``|D| - 1`` cuts per
    variable, so keep domains small.

    Parameters
    ----------
    noisy : NoisyGroupSizes
        Noisy counts (``kind="counts"``) and the public hierarchy and ``G``.
    domains : str or Domains
        ``"full"`` (``[0, G]``), ``"truncated"`` (the paper's ``noisy +- delta``) or explicit
        :class:`~dpmodels.pgsr.domains.Domains` (:func:`~dpmodels.pgsr.domains.resolve_domains`).
    delta : int or sequence of int, optional
        The truncation's half-width per level (default: from the noise scales).
    on_infeasible : str
        ``"raise"`` or ``"widen"`` (double a truncation the model cannot satisfy).
    redundant_levels : bool
        State H2 for every level (True) or the root only.
    max_cuts : int
        Refuse domains that would need more chord cuts than this.
    """
    noisy.require_kind("counts", "build_hierarchical_milp")
    dom = resolve_domains(noisy, domains, delta, on_infeasible)
    cuts = int(np.maximum(dom.hi - dom.lo, 1).sum())  # one per domain step, one for a fixed cell
    if cuts > max_cuts:
        raise DataValidationError(
            "domains",
            f"the chord MILP needs {cuts} cuts (> max_cuts={max_cuts}); use truncated domains or raise max_cuts",
        )
    m = base_model(noisy, "PGSR Model 1 (chord-epigraph MILP)")
    n = add_cell_vars(m, "n", noisy, dom, False, "released group-size counts n_s^r")
    m.t = pyo.Var(m.regions, m.sizes, domain=pyo.NonNegativeReals, doc="epigraph of (n - noisy)^2")
    _add_hierarchy_constraints(m, n, noisy, redundant_levels)
    idx = noisy.hierarchy.index
    # A cell fixed to one value (lo == hi) keeps the chord to lo + 1: at n = lo it is exact, and
    # without it t would be free (an optimum below the QIP's).
    cut_index = [
        (r, s, k)
        for r, s in cell_keys(noisy)
        for k in range(int(dom.lo[idx[r], s - 1]), max(int(dom.hi[idx[r], s - 1]), int(dom.lo[idx[r], s - 1]) + 1))
    ]

    weights = noisy.weights

    def chord(m, r, s, k):
        a = float(noisy.values[idx[r], s - 1])
        f_k, f_next = (k - a) ** 2, (k + 1 - a) ** 2
        if weights is not None:
            w = float(weights[idx[r], s - 1])
            f_k, f_next = w * f_k, w * f_next
        return m.t[r, s] >= f_k + (f_next - f_k) * (n[r, s] - k)

    m.chords = pyo.Constraint(cut_index, rule=chord, doc="t >= chord of w (n - noisy)^2 between k and k+1")
    m.objective = pyo.Objective(expr=pyo.quicksum(m.t.values()), sense=pyo.minimize)
    keys = cell_keys(noisy)
    attach_marker(
        m,
        "pgsr.hierarchical_milp",
        GroupSizePayload(noisy, dom),
        {"relax": False, "redundant_levels": redundant_levels},
        {"n": keys, "t": keys},
    )
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

    Parameters
    ----------
    child_lo : sequence of int
        Each child's lowest value.
    child_tables : sequence of numpy.ndarray
        Each child's convex cost table from ``child_lo[c]`` up.
    target : int
        The parent's value ``v`` (a mutable ``Param``).
    integer : bool
        Integer children's values (False: the relaxation).
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
