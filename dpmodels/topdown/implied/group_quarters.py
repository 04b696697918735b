"""Implied constraints in the network-flow (group quarters) setting of TopDown, Theorems 4-7.

When the only leaf facts are group-quarters supports, lower bounds and totals, a node's flow
constraints ``NF`` are the complete implied set, and the proof of Theorems 4-7 is constructive:

* :func:`extend_to_leaves` -- ExtendToLeaves (spec 4.4): integer leaf histograms adding up to a
  node histogram that satisfies ``NF``, by a max flow (Theorem 3, :func:`.two_level.maxflow_extension`)
  and northwest-corner splits.
* :func:`type_total_ranges` -- the LP projection of ``NF`` onto the type totals.
* :func:`flows_hold` -- whether a node histogram satisfies ``NF`` (integer totals by a max flow,
  fractional L2 totals by an LP).

Separate from :mod:`.two_level` because it works on the TopDown data types (:class:`FlowData`,
:class:`GQKnowledge`) rather than on plain constraint triples.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import linprog

from dpmodels.core.errors import DataValidationError

from ..data import FlowData, GQKnowledge
from .constraints import int_array
from .two_level import maxflow_extension

__all__ = ["extend_to_leaves", "type_total_ranges", "flows_hold"]


def _northwest(rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """Northwest-corner rule: a non-negative integer matrix with the given (equal-sum) margins."""
    out = np.zeros((len(rows), len(cols)), dtype=np.int64)
    r_left, c_left = rows.astype(np.int64).copy(), cols.astype(np.int64).copy()
    i = j = 0
    while i < len(rows) and j < len(cols):
        step = min(r_left[i], c_left[j])
        out[i, j] = step
        r_left[i] -= step
        c_left[j] -= step
        if r_left[i] == 0:
            i += 1
        else:
            j += 1
    return out


def extend_to_leaves(node_histogram, flow_data: FlowData, gq: GQKnowledge, leaf_totals, leaf_positions, *, flows=None):
    """ExtendToLeaves (spec 4.4): integer leaf histograms that add up to a node histogram.

    ``node_histogram`` is the node's integer histogram over ``gq``'s cells; ``leaf_positions``
    the rows of ``gq.present``/``gq.lower`` of the leaves below the node; ``leaf_totals`` their
    populations ``N_l``, enforced exactly when given (None when they are not invariant: then
    only the supports and lower bounds bind at the leaves).  ``flow_data`` must be the
    leaf-level combination network of the node: ``PublicKnowledge.flow_data`` when the leaves
    are the total-invariant units, or when the node lies below the invariant level; a network
    over larger units (e.g. states, spec 8 item 8) is refused, because the unit totals are not
    arguments here.  ``flows`` optionally gives ``F`` (types x combos); otherwise it is derived
    by a max flow (:func:`maxflow_extension` on types -> combinations).

    Steps (the proof of Theorems 4-7): reserve ``a_{g,l}`` persons of type g in each leaf, route
    the excess ``F_{g,c} - f_{g,c}`` of each combination over its leaves (northwest corner,
    filling each leaf to ``N_l``), then split each leaf's type-g count over the cells of type g
    (northwest corner again).  Returns a ``(leaves, cells)`` int64 array in ``leaf_positions``
    order, or **None when the histogram is not extendable** (it violates the node's flow
    constraints).  Malformed input raises :class:`DataValidationError`.

    Parameters
    ----------
    node_histogram : array_like
        The node's integer histogram over ``gq``'s cells.
    flow_data : FlowData
        The node's leaf-level combination network.
    gq : GQKnowledge
        The leaves' group-quarters facts.
    leaf_totals : array_like or None
        The leaves' populations, when invariant.
    leaf_positions : array_like
        The rows of ``gq.present`` / ``gq.lower`` of the leaves below the node.
    flows : array_like, optional
        ``F`` (types x combinations); derived by a max flow when not given.
    """
    n_types, n_cells = gq.n_types, len(gq.cell_type)
    hist = int_array(node_histogram, "node_histogram", shape=(n_cells,))
    pos = int_array(leaf_positions, "leaf_positions")
    if pos.ndim != 1 or not len(pos) or pos.max() >= gq.present.shape[0] or len(np.unique(pos)) != len(pos):
        raise DataValidationError(
            "leaf_positions", f"must be a nonempty vector of distinct leaf rows < {gq.present.shape[0]}"
        )
    present, a = gq.present[pos], gq.lower[pos].astype(np.int64)
    totals = None if leaf_totals is None else int_array(leaf_totals, "leaf_totals", shape=(len(pos),))
    if totals is not None and (totals < a.sum(axis=1)).any():
        k = int(np.flatnonzero(totals < a.sum(axis=1))[0])
        raise DataValidationError("leaf_totals", f"leaf row {pos[k]} total {totals[k]} is below its lower bounds")
    if totals is not None and (totals[~present.any(axis=1)] != 0).any():
        raise DataValidationError("leaf_totals", "a leaf with no type present must have total 0")
    combos = np.asarray(flow_data.combos, dtype=bool)
    if combos.shape[1] != n_types:
        raise DataValidationError("flow_data", f"has {combos.shape[1]} types, gq has {n_types}")
    match = (present[:, None, :] == combos[None, :, :]).all(axis=2)  # leaves x combos
    if not match.any(axis=1).all() or not match.any(axis=0).all():
        raise DataValidationError(
            "flow_data",
            "its combinations are not the supports of these leaves; build it at the leaf level "
            "(leaves as the total-invariant units, or a node below the invariant level)",
        )
    combo_of = match.argmax(axis=1)
    f = np.zeros((len(combos), n_types), dtype=np.int64)
    np.add.at(f, combo_of, a)
    if not np.array_equal(f, flow_data.lower):
        raise DataValidationError("flow_data", "its flow lower bounds are not the sums of these leaves' lower bounds")
    population = None
    if totals is not None:
        population = np.zeros(len(combos), dtype=np.int64)
        np.add.at(population, combo_of, totals)
        if flow_data.fixed and not np.array_equal(population, flow_data.population):
            raise DataValidationError("flow_data", "its combination populations are not the sums of the leaf totals")
    elif flow_data.fixed:
        population = np.asarray(flow_data.population, dtype=np.int64)

    type_count = np.bincount(gq.cell_type, weights=hist, minlength=n_types).astype(np.int64)
    flow = _node_flows(type_count, combos, f, population, flows)
    if flow is None:
        return None

    # steps 1-2: per leaf and type, reserve the lower bounds and route each combination's excess
    leaf_type = a.copy()
    for c in range(len(combos)):
        leaves = np.flatnonzero(combo_of == c)
        excess = flow[:, c] - f[c]
        if totals is not None:
            room = totals[leaves] - a[leaves].sum(axis=1)
            leaf_type[leaves] += _northwest(room, excess)
        else:
            leaf_type[leaves[0]] += excess
    # step 3: split each leaf's type-g count over the cells of type g
    out = np.zeros((len(pos), n_cells), dtype=np.int64)
    for g in range(n_types):
        cells = np.flatnonzero(gq.cell_type == g)
        if len(cells):
            out[:, cells] = _northwest(leaf_type[:, g], hist[cells])
    return out


def _node_flows(type_count, combos, f, population, flows):
    """The flow ``F`` (types x combos) of the node's network, or None if there is none."""
    allowed = combos.T
    if flows is not None:
        F = int_array(flows, "flows", shape=allowed.shape)
        ok = (
            (F[~allowed] == 0).all()
            and (F >= f.T).all()
            and np.array_equal(F.sum(axis=1), type_count)
            and (population is None or np.array_equal(F.sum(axis=0), population))
        )
        if not ok:
            raise DataValidationError("flows", "do not satisfy the node's flow constraints for this histogram")
        return F
    if population is not None:
        check = maxflow_extension(type_count, population, allowed, lower=f.T)
        return check.extension
    # populations free (node below the invariant level): any combination containing g takes g's excess
    excess = type_count - f.sum(axis=0)
    if (excess < 0).any():
        return None
    F = f.T.copy()
    for g in np.flatnonzero(excess):
        hosts = np.flatnonzero(allowed[g])
        if not len(hosts):
            return None
        F[g, hosts[0]] += excess[g]
    return F


def type_total_ranges(flow_data: FlowData) -> np.ndarray:
    """LP projection of a node's flow constraints ``NF`` onto the type totals ``GQ_g``.

    Returns a ``(types, 2)`` array of ``[min, max]`` of every ``GQ_g = sum_c F_{g,c}`` subject to
    ``F_{g,c} >= f_{g,c}`` on legal pairs and ``sum_g F_{g,c} = N_c`` (when fixed); ``inf`` when
    unbounded.  The flow matrix is a network matrix, so the bounds are integers and attained.

    Parameters
    ----------
    flow_data : FlowData
        A node's combination network.
    """
    arcs = flow_data.arcs()
    n_types = flow_data.n_types
    out = np.zeros((n_types, 2))
    if not arcs:
        return out
    lb = [(float(flow_data.lower[c, g]), None) for g, c in arcs]
    fixed = [c for c in range(len(flow_data.combos)) if flow_data.population[c] >= 0]
    a_eq = np.array([[1.0 if arc[1] == c else 0.0 for arc in arcs] for c in fixed]) if fixed else None
    b_eq = np.array([float(flow_data.population[c]) for c in fixed]) if fixed else None
    for g in range(n_types):
        obj = np.array([1.0 if arc[0] == g else 0.0 for arc in arcs])
        if not obj.any():
            continue
        for col, sign in ((0, 1.0), (1, -1.0)):
            res = linprog(sign * obj, A_eq=a_eq, b_eq=b_eq, bounds=lb, method="highs")
            if res.status == 2:
                raise DataValidationError("flow_data", "the flow constraints are infeasible")
            out[g, col] = np.inf if res.status == 3 else sign * res.fun
    return out


def flows_hold(flows, types: np.ndarray, hist: np.ndarray, tol: float = 1e-6) -> bool:
    """Whether a node histogram can route its GQ type totals through the combination network.

    Parameters
    ----------
    flows : FlowData
        The node's combination network.
    types : numpy.ndarray
        The GQ type of every active cell.
    hist : numpy.ndarray
        The node histogram on the active cells.
    tol : float, default 1e-6
        Absolute tolerance.
    """
    totals = np.array([hist[types == g].sum() for g in range(flows.n_types)])
    allowed = flows.combos.T  # types x combinations
    if (totals[~allowed.any(axis=1)] > tol).any():
        return False
    if not flows.fixed:
        return bool((totals + tol >= flows.lower.sum(axis=0)).all())
    if not np.allclose(totals, np.round(totals), atol=tol):
        return _fractional_flows_hold(flows, totals, tol)
    check = maxflow_extension(np.round(totals).astype(np.int64), flows.population, allowed, lower=flows.lower.T)
    return bool(check.extendable)


def _fractional_flows_hold(flows, totals: np.ndarray, tol: float) -> bool:
    """The same routing question for fractional (L2) type totals: an LP whose least total
    violation must vanish (up to the solver tolerance)."""
    arcs = flows.arcs()
    n_rows = flows.n_types + len(flows.combos)
    a_eq = np.zeros((n_rows, len(arcs) + 2 * n_rows))
    for k, (g, c) in enumerate(arcs):
        a_eq[g, k] = 1
        a_eq[flows.n_types + c, k] = 1
    a_eq[:, len(arcs) :] = np.hstack([np.eye(n_rows), -np.eye(n_rows)])
    b_eq = np.concatenate([totals, flows.population])
    cost = np.concatenate([np.zeros(len(arcs)), np.ones(2 * n_rows)])
    bounds = [(float(flows.lower[c, g]), None) for g, c in arcs] + [(0, None)] * (2 * n_rows)
    res = linprog(cost, A_eq=a_eq, b_eq=b_eq, bounds=bounds, method="highs")
    return res.status == 0 and res.fun <= tol * max(1.0, float(totals.sum()))
