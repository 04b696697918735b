"""The children's data of TopDown solves, built a parent (or a level) at a time (issue 25).

The driver hands every solve a :class:`~dpmodels.topdown.node_data.NodeProblem` whose children each
carry their noisy answers restricted to the parent's active cells and the combination network of
their group-quarters facts.  Built child by child, that was most of the run's time (a profile of the
state preset: 31% slicing the same sparse query matrices once per child, 9% the combination
networks, ``np.unique`` per child).  Here:

* :class:`LevelSpecs` slices each query matrix to a parent's active cells **once per parent** and
  gives every child the same sliced matrix (the matrix depends only on the parent's cells; only the
  answers differ between children);
* :func:`level_flow_data` builds the combination networks of every node of a level in one pass over
  the leaves (a group-by on (node, support) keys), equal to
  :meth:`~dpmodels.topdown.knowledge.PublicKnowledge.flow_data` node by node (tested).

Only noisy answers and public knowledge are read.
"""

from __future__ import annotations

import numpy as np

from dpmodels.core.hierarchy import Hierarchy

from .knowledge import FlowData, PublicKnowledge
from .node_data import ChildSpec, WeightedQuery

__all__ = ["level_flow_data", "LevelSpecs"]


def _ancestors_at(geography: Hierarchy, nodes: np.ndarray, level: int) -> np.ndarray:
    """Each node's ancestor at ``level`` (a node at or above ``level`` is its own)."""
    out = np.array(nodes, dtype=np.int64, copy=True)
    while True:
        deep = geography.level[out] > level
        if not deep.any():
            return out
        out[deep] = geography.parent[out[deep]]


def _support_codes(present: np.ndarray) -> np.ndarray:
    """Each support (bool row over types) as an integer that sorts like ``np.unique(axis=0)`` (first type
    most significant, False before True)."""
    n_types = present.shape[1]
    if n_types > 62:  # beyond int64 keys: the row-wise unique, slower but the same order
        return np.unique(present, axis=0, return_inverse=True)[1].ravel()
    weights = np.left_shift(np.int64(1), np.arange(n_types - 1, -1, -1, dtype=np.int64))
    return present.astype(np.int64) @ weights


def level_flow_data(knowledge: PublicKnowledge, geography: Hierarchy, level: int) -> dict[int, FlowData] | None:
    """The combination network (spec 3.5) of every node of ``level``, as ``flow_data`` gives it node by node.

    Units are the leaves under a node, or, at levels whose totals are invariant, the leaves' ancestors
    at the invariant level (erratum 8); units with the same support merge into one combination (sorted
    like ``np.unique(axis=0)``), lower bounds and populations adding up.

    Parameters
    ----------
    knowledge : PublicKnowledge
        The public knowledge (None is returned without GQ facts).
    geography : Hierarchy
        The geography tree.
    level : int
        The level (1 = the root).

    Returns
    -------
    dict or None
        Node -> :class:`~dpmodels.topdown.knowledge.FlowData`.
    """
    gq = knowledge.gq
    if gq is None:
        return None
    leaves = geography.leaves
    owner = _ancestors_at(geography, leaves, level)
    under = geography.level[owner] == level  # leaves shallower than the level belong to none of its nodes
    leaves, owner = leaves[under], owner[under]
    present, lower = gq.present[under], gq.lower[under].astype(np.int64)
    fixed = level <= knowledge.total_level
    if fixed:  # units: the leaves' regions at the invariant level, with their public totals
        unit = _ancestors_at(geography, leaves, knowledge.total_level)
        keys, inverse = np.unique(unit, return_inverse=True)
        inverse = inverse.ravel()
        unit_present = np.zeros((len(keys), gq.n_types), dtype=bool)
        unit_lower = np.zeros((len(keys), gq.n_types), dtype=np.int64)
        np.logical_or.at(unit_present, inverse, present)
        np.add.at(unit_lower, inverse, lower)
        unit_owner = np.zeros(len(keys), dtype=np.int64)
        unit_owner[inverse] = owner
        unit_total = knowledge.invariant_totals[keys].astype(np.int64)
        present, lower, owner = unit_present, unit_lower, unit_owner
    code = _support_codes(present)
    order = np.lexsort((code, owner))
    owner, code, present, lower = owner[order], code[order], present[order], lower[order]
    new_group = np.ones(len(order), dtype=bool)
    new_group[1:] = (owner[1:] != owner[:-1]) | (code[1:] != code[:-1])
    group = np.cumsum(new_group) - 1
    starts = np.flatnonzero(new_group)
    combos = present[starts]
    flow_lower = np.zeros((len(starts), gq.n_types), dtype=np.int64)
    np.add.at(flow_lower, group, lower)
    population = np.full(len(starts), -1, dtype=np.int64)
    if fixed:
        population[:] = 0
        np.add.at(population, group, unit_total[order])
    group_owner = owner[starts]
    bounds = np.flatnonzero(np.r_[True, group_owner[1:] != group_owner[:-1], True])
    out = {}
    for a, b in zip(bounds[:-1], bounds[1:], strict=True):
        out[int(group_owner[a])] = FlowData(combos[a:b], flow_lower[a:b], population[a:b])
    return out


class LevelSpecs:
    """Builds the children's :class:`~dpmodels.topdown.node_data.ChildSpec` of the parents of one level.

    Parameters
    ----------
    measurements : Measurements
        The noisy answers (``by_node``).
    knowledge : PublicKnowledge
        Invariant totals and GQ facts.
    geography : Hierarchy
        The geography tree.
    mats : dict
        Query-set name -> its matrix (CSR, cells as columns).
    identity : dict
        Query-set name -> whether it is the identity (detailed) query.
    level : int
        The level of the children (1 = the root).
    """

    def __init__(self, measurements, knowledge: PublicKnowledge, geography: Hierarchy, mats, identity, level: int):
        self.measurements, self.knowledge, self.geography = measurements, knowledge, geography
        self.mats, self.identity = mats, identity
        self.flows = level_flow_data(knowledge, geography, level)

    def specs(self, kids: np.ndarray, cells: np.ndarray) -> list[ChildSpec]:
        """The specs of ``kids`` (children of one parent) on the parent's active ``cells``.

        Parameters
        ----------
        kids : numpy.ndarray
            The children.
        cells : numpy.ndarray
            The parent's active cells.
        """
        sliced = {}
        for name, mat in self.mats.items():  # once per parent: every child shares the sliced matrix
            sub = mat[:, cells]
            rows = np.flatnonzero(np.diff(sub.indptr) > 0)
            sliced[name] = (sub[rows], rows)
        geo, kn = self.geography, self.knowledge
        out = []
        for c in kids:
            queries = [
                WeightedQuery(
                    meas.query,
                    sliced[meas.query][0],
                    meas.values[sliced[meas.query][1]],
                    1.0 / meas.variance,
                    self.identity[meas.query],
                )
                for meas in self.measurements.by_node[c]
            ]
            flows = None if self.flows is None else self.flows[int(c)]
            out.append(ChildSpec(int(c), queries, kn.invariant_total(geo, int(c)), flows))
        return out
