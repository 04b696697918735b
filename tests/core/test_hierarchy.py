"""Region hierarchies: builders, canonical order, aggregation and validation."""

import networkx as nx
import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dpmodels.core.errors import DataValidationError
from dpmodels.core.hierarchy import Hierarchy


@st.composite
def parent_tables(draw):
    """A random tree given as (region, parent) pairs in a shuffled order."""
    n = draw(st.integers(1, 40))
    parents = [None] + [draw(st.integers(0, i - 1)) for i in range(1, n)]
    pairs = [(f"r{i}", None if p is None else f"r{p}") for i, p in enumerate(parents)]
    return draw(st.permutations(pairs))


@given(parent_tables())
def test_canonical_order(pairs):
    h = Hierarchy.from_parent_table(pairs)
    assert h.parent[0] == -1 and h.level[0] == 1
    assert np.all(np.diff(h.level) >= 0)  # levels are contiguous slices
    for r in range(h.n_regions):
        kids = h.children(r)
        assert np.all(h.parent[kids] == r) and np.all(h.level[kids] == h.level[r] + 1)
    assert h.child_count.sum() == h.n_regions - 1
    # post-order restricted to a level keeps the level's canonical order (the chain relies on it)
    post = h.postorder
    for lvl in range(1, h.n_levels + 1):
        idx = np.arange(*h.level_slice(lvl).indices(h.n_regions))
        assert post[np.isin(post, idx)].tolist() == idx.tolist()
    # the original parent relation survives the reordering
    given_parent = dict(pairs)
    for i, name in enumerate(h.names):
        expected = given_parent[name]
        assert (h.names[h.parent[i]] if h.parent[i] >= 0 else None) == expected


@given(parent_tables(), st.integers(0, 1000))
def test_aggregate_is_consistent(pairs, seed):
    h = Hierarchy.from_parent_table(pairs)
    leaf = np.random.default_rng(seed).integers(0, 9, (len(h.leaves), 3))
    full = h.aggregate(leaf)
    assert not h.consistency_residual(full).any()
    np.testing.assert_array_equal(full[0], leaf.sum(axis=0))


def test_builders_agree():
    table = {"US": None, "GA": "US", "NY": "US", "Fulton": "GA", "Kings": "NY"}
    a = Hierarchy.from_parent_table(table)
    b = Hierarchy.from_parent_table(pd.DataFrame({"region": list(table), "parent": list(table.values())}))
    g = nx.DiGraph([("US", "GA"), ("US", "NY"), ("GA", "Fulton"), ("NY", "Kings")])
    c = Hierarchy.from_networkx(g)
    d = Hierarchy.from_networkx(g.to_undirected(), root="US")
    e = Hierarchy.from_levels(
        pd.DataFrame({"nation": ["US", "US"], "state": ["GA", "NY"], "county": ["Fulton", "Kings"]})
    )
    for h in (b, c, d, e):
        assert h.names == a.names and np.array_equal(h.parent, a.parent)
    assert a.level_sizes().tolist() == [1, 2, 2] and a.is_uniform_depth
    assert nx.is_isomorphic(a.to_networkx(), g)


@pytest.mark.parametrize(
    "table, message",
    [
        ({"A": None, "B": None}, "exactly one root"),
        ({"A": None, "B": "C"}, "not a region"),
        ([("A", None), ("B", "C"), ("C", "B")], "not a tree"),
        ([("A", None), ("A", None)], "appear twice"),
        ({"A": None, "B": "B"}, "own parent|not a tree"),
    ],
)
def test_bad_parent_tables(table, message):
    with pytest.raises(DataValidationError, match=message):
        Hierarchy.from_parent_table(table)


def test_bad_graphs_and_levels():
    with pytest.raises(DataValidationError, match="not a tree"):
        Hierarchy.from_networkx(nx.cycle_graph(3), root=0)
    with pytest.raises(DataValidationError, match="arborescence"):
        Hierarchy.from_networkx(nx.DiGraph([(0, 1), (2, 1)]))
    frame = pd.DataFrame({"state": ["GA", "NY"], "county": ["Washington", "Washington"]})
    with pytest.raises(DataValidationError, match="two parents"):
        Hierarchy.from_levels(frame, root="US")
    with pytest.raises(DataValidationError, match="name a root"):
        Hierarchy.from_levels(pd.DataFrame({"state": ["GA", "NY"]}))


def test_non_uniform_depth_is_reported():
    h = Hierarchy.from_parent_table({"R": None, "A": "R", "B": "R", "A1": "A"})
    assert not h.is_uniform_depth
    with pytest.raises(DataValidationError, match="'B'"):
        h.require_uniform_depth()
    full = h.aggregate(np.array([[2], [3]]))  # leaves in canonical order: B, A1
    assert full[:, 0].tolist() == [5, 3, 2, 3]
