"""Pyomo models of PGSR on cumulative values (spec 3.4, 3.6, 3.7): Model 2, Model A2 and Model 3.

Each objective is least squares against the noisy values, weighted by ``noisy.weights`` when the
values carry weights (:mod:`dpmodels.pgsr.weights`).

Registered on import; :mod:`dpmodels.pgsr.models` imports this module, so every PGSR
formulation is registered by importing ``models``.
"""

from __future__ import annotations

import numpy as np
import pyomo.environ as pyo

from dpmodels.core.formulations import register_formulation
from dpmodels.core.marker import attach_marker

from .data import NoisyGroupSizes, chain_order
from .domains import Domains, chain_infeasibility, chain_links, resolve_domains
from .model_parts import GroupSizePayload, add_cell_vars, base_model, cell_keys, children_names, squared_error

__all__ = ["build_cumulative_qip", "build_isotonic_qp", "build_chain_qip"]


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

    Parameters
    ----------
    noisy : NoisyGroupSizes
        Noisy cumulative counts (``kind="cumulative"``) and the public hierarchy and ``G``.
    relax : bool
        Continuous variables: Model 2-R.
    domains : str or Domains
        ``"full"`` (``[0, G]``), ``"truncated"`` (the paper's ``noisy +- delta``) or explicit
        :class:`~dpmodels.pgsr.domains.Domains` (:func:`~dpmodels.pgsr.domains.resolve_domains`).
    delta : int or sequence of int, optional
        The truncation's half-width per level (default: from the noise scales).
    on_infeasible : str
        ``"raise"`` or ``"widen"`` (double a truncation the model cannot satisfy).
    fingerprint : bool
        Hash the model for the structure plugins (skip it for a model only a backend solves).
    """
    noisy.require_kind("cumulative", "build_cumulative_qip")
    dom = resolve_domains(noisy, domains, delta, on_infeasible, check=_cumulative_check)
    h = noisy.hierarchy
    m = base_model(noisy, "PGSR Model 2 (cumulative QIP)" + (" relaxed" if relax else ""))
    c = add_cell_vars(m, "c", noisy, dom, relax, "released cumulative counts c_i^r")
    m.total = pyo.Constraint(expr=c[h.names[0], noisy.N] == noisy.G, doc="(C2) root's c_N equals G")
    _add_monotone(m, c, noisy.N, "(C3) cumulative counts never decrease")
    children = children_names(noisy)
    m.internal_regions = pyo.Set(initialize=list(children), ordered=True)
    m.consistency = pyo.Constraint(
        m.internal_regions,
        m.sizes,
        rule=lambda m, r, i: pyo.quicksum(c[k, i] for k in children[r]) == c[r, i],
        doc="(C4) a parent equals the sum of its children",
    )
    keys = cell_keys(noisy)
    m.objective = pyo.Objective(expr=squared_error(c, noisy, keys), sense=pyo.minimize)
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
    """Model A2 (spec 3.6): per region, the closest non-decreasing vector in ``[0, G]`` (weighted
    distance when ``noisy`` has weights).

    The regions are independent; one model holds them all.  Continuous by definition.

    Parameters
    ----------
    noisy : NoisyGroupSizes
        Noisy cumulative counts (``kind="cumulative"``); the domain is the full ``[0, G]``.
    """
    noisy.require_kind("cumulative", "build_isotonic_qp")
    dom = Domains.full(noisy)
    m = base_model(noisy, "PGSR Model A2 (per-region isotonic QP)")
    c = add_cell_vars(m, "c", noisy, dom, True, "isotonic estimate of the cumulative counts")
    _add_monotone(m, c, noisy.N, "cumulative counts never decrease")
    keys = cell_keys(noisy)
    m.objective = pyo.Objective(expr=squared_error(c, noisy, keys), sense=pyo.minimize)
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

    Parameters
    ----------
    noisy : NoisyGroupSizes
        Noisy chain-cumulative values (``kind="chain"``) and the public hierarchy and ``G``.
    relax : bool
        Continuous variables.
    literal : bool
        The paper's printed constraints instead of the corrected ones.
    domains : str or Domains
        ``"full"`` (``[0, G]``), ``"truncated"`` (the paper's ``noisy +- delta``) or explicit
        :class:`~dpmodels.pgsr.domains.Domains` (:func:`~dpmodels.pgsr.domains.resolve_domains`).
    delta : int or sequence of int, optional
        The truncation's half-width per level (default: from the noise scales).
    on_infeasible : str
        ``"raise"`` or ``"widen"`` (double a truncation the model cannot satisfy).
    """
    noisy.require_kind("chain", "build_chain_qip")
    check = (lambda nz, d: None) if literal else chain_infeasibility
    dom = resolve_domains(noisy, domains, delta, on_infeasible, check=check)
    h = noisy.hierarchy
    m = base_model(noisy, "PGSR Model 3 (chain QIP)" + (" literal" if literal else "") + (" relaxed" if relax else ""))
    c = add_cell_vars(m, "c", noisy, dom, relax, "released chain-cumulative values c_i")
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
    keys = cell_keys(noisy)
    m.objective = pyo.Objective(expr=squared_error(c, noisy, keys), sense=pyo.minimize)
    attach_marker(m, "pgsr.chain_qip", GroupSizePayload(noisy, dom), {"relax": relax, "literal": literal}, {"c": keys})
    return m
