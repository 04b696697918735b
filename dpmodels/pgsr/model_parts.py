"""Building blocks shared by the PGSR builders (:mod:`dpmodels.pgsr.models`,
:mod:`dpmodels.pgsr.cumulative_models`): the markers' payloads, the cell variables and the
least-squares objective, and reading a solved model back in the (regions, sizes) layout.

Variables are indexed by ``(region name, size)`` with sizes ``1..N``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyomo.environ as pyo

from dpmodels.core.errors import DataValidationError
from dpmodels.core.marker import get_marker

from .data import NoisyGroupSizes, chain_decumulate, decumulate
from .domains import Domains

__all__ = [
    "GroupSizePayload",
    "NodeSubproblemPayload",
    "cell_keys",
    "base_model",
    "add_cell_vars",
    "squared_error",
    "children_names",
    "variable_values",
    "released_counts",
]


@dataclass(frozen=True)
class GroupSizePayload:
    """Payload of the PGSR models (1, 1 as MILP, 2, A2, 3): the noisy counts (with their weights,
    if any) and the domains."""

    noisy: NoisyGroupSizes
    domains: Domains


@dataclass(frozen=True)
class NodeSubproblemPayload:
    """Payload of Model 4: the children's lowest values and convex cost tables."""

    child_lo: list[int]
    child_tables: list[np.ndarray]


# ---------------------------------------------------------------------- building blocks
def cell_keys(noisy: NoisyGroupSizes) -> list[tuple[str, int]]:
    """The variables' index: ``(region name, size)`` for every cell, in the (regions, sizes) order."""
    return [(name, s) for name in noisy.hierarchy.names for s in range(1, noisy.N + 1)]


def base_model(noisy: NoisyGroupSizes, title: str) -> pyo.ConcreteModel:
    """A model named ``title`` with the sets ``regions``, ``sizes`` (1..N) and ``levels`` (1..L)."""
    m = pyo.ConcreteModel(name=title)
    m.regions = pyo.Set(initialize=list(noisy.hierarchy.names), ordered=True, doc="regions R")
    m.sizes = pyo.RangeSet(1, noisy.N, doc="group sizes 1..N")
    m.levels = pyo.RangeSet(1, noisy.L, doc="levels 1..L")
    return m


def add_cell_vars(m, name: str, noisy: NoisyGroupSizes, domains: Domains, relax: bool, doc: str):
    """Add variable ``name[region, size]`` bounded by ``domains`` (integer unless ``relax``); return it."""
    index = noisy.hierarchy.index
    lo, hi = domains.lo, domains.hi

    def bounds(_, r, s):
        i = index[r]
        return int(lo[i, s - 1]), int(hi[i, s - 1])

    domain = pyo.NonNegativeReals if relax else pyo.NonNegativeIntegers
    setattr(m, name, pyo.Var(m.regions, m.sizes, domain=domain, bounds=bounds, doc=doc))
    return getattr(m, name)


def squared_error(var, noisy: NoisyGroupSizes, keys) -> pyo.Expression:
    """``sum (var[k] - noisy_k)^2`` over the cells ``keys`` (in the noisy values' order), or with
    ``noisy.weights`` the weighted ``sum w_k (var[k] - noisy_k)^2`` (:mod:`dpmodels.pgsr.weights`)."""
    flat = noisy.values.ravel()
    if noisy.weights is None:
        return pyo.quicksum((var[k] - float(a)) ** 2 for k, a in zip(keys, flat, strict=True))
    weights = noisy.weights.ravel()
    return pyo.quicksum(float(w) * (var[k] - float(a)) ** 2 for k, a, w in zip(keys, flat, weights, strict=True))


def children_names(noisy: NoisyGroupSizes) -> dict[str, list[str]]:
    """Every internal region's name -> its children's names."""
    h = noisy.hierarchy
    return {h.names[r]: [h.names[c] for c in h.children(r)] for r in h.internal}


# ---------------------------------------------------------------------- reading solutions
def variable_values(model, name: str) -> np.ndarray:
    """Values of variable component ``name`` in the (regions, sizes) layout of the marker.

    Parameters
    ----------
    model : pyomo.environ.ConcreteModel
        A solved PGSR model (with its structure marker).
    name : str
        The variable component (``"n"``, ``"c"``...).
    """
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

    Parameters
    ----------
    model : pyomo.environ.ConcreteModel
        A solved PGSR model (Model 1, 2, A2 or 3).
    rounding : str
        ``"none"`` or ``"half_up"``.
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
