"""Facility data validation, the HST toolkit and the FRT-λ embedding (spec 2, 3.1-3.5, 7.1 oracles 1-5)."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpmodels import instances
from dpmodels.core.errors import DataValidationError, PrivacyParameterError
from dpmodels.facility.checks import check_epsilon, check_lambda
from dpmodels.facility.data import HST, HSTInstance, UFLInstance, euclidean
from dpmodels.facility.frt import distortion_bound, frt_embedding, measured_stretch, stretch_ratios
from dpmodels.facility.general_metric import dp_ufl_general
from dpmodels.facility.hst import (
    is_antichain,
    leaf_distances,
    minset,
    nearest_in,
    nearest_in_naive,
    node_distance,
    pad,
    rep,
    subtree_counts,
)
from dpmodels.facility.hst_optimum import lb9

seeds = st.integers(0, 10_000)


def random_tree(seed, depth=4, lam=1.5, max_branch=3):
    return instances.generate("facility/random-hst", seed=seed, depth=depth, lam=lam, max_branch=max_branch)


def path_distance(tree, x, y):
    """d_T by walking edges (independent of the closed form): climb the deeper node until they meet."""
    total = 0.0
    while x != y:
        if tree.level[x] <= tree.level[y]:
            total += tree.lam ** tree.level[x]
            x = tree.parent[x]
        else:
            total += tree.lam ** tree.level[y]
            y = tree.parent[y]
    return total


# ------------------------------------------------------------------ validation
def test_ufl_instance_rejects_bad_input_naming_the_field():
    ok = np.array([[0, 1, 2], [1, 0, 1], [2, 1, 0]], float)
    with pytest.raises(DataValidationError, match="^d: .*triangle inequality fails"):
        UFLInstance(d=np.array([[0, 1, 5], [1, 0, 1], [5, 1, 0]], float), f=1, N=[1, 1, 1])
    with pytest.raises(DataValidationError, match="^d: is not symmetric"):
        UFLInstance(d=ok + np.triu(np.ones((3, 3)), 1) * 0.5, f=1, N=[1, 1, 1])
    with pytest.raises(DataValidationError, match="^d: the diagonal"):
        UFLInstance(d=ok + np.eye(3), f=1, N=[1, 1, 1])
    with pytest.raises(DataValidationError, match="^N: must be >= 0"):
        UFLInstance(d=ok, f=1, N=[1, -1, 1])
    with pytest.raises(DataValidationError, match="^N: must be integers"):
        UFLInstance(d=ok, f=1, N=[1, 0.5, 1])
    for bad_f in (-1, float("inf"), "3", None):
        with pytest.raises(DataValidationError, match="^f: must be"):
            UFLInstance(d=ok, f=bad_f, N=[1, 1, 1])
    with pytest.raises(DataValidationError, match="^N: must hold one count per location"):
        UFLInstance(d=ok, f=1, N=[1, 1])
    inst = UFLInstance(d=ok, f=1, N=[2.0, 0, 1])
    assert inst.N.dtype == np.int64 and inst.cost([1]) == 1 + 2 + 1


@pytest.mark.parametrize("lam", [1.0, 2.0, 0.5, 2.5, float("nan"), "1.5", True])
def test_lambda_outside_open_interval_is_rejected(lam):
    with pytest.raises(DataValidationError, match="^lam: "):
        check_lambda(lam)
    with pytest.raises(DataValidationError, match="^lam: "):
        frt_embedding(np.array([[0, 1], [1, 0]], float), lam=lam)


@pytest.mark.parametrize("eps", [0, -1, float("inf"), float("nan")])
def test_epsilon_must_be_positive(eps):
    with pytest.raises(PrivacyParameterError, match="^epsilon: "):
        check_epsilon(eps)


def test_hst_validation_against_definition_3():
    with pytest.raises(DataValidationError, match="exactly one root"):
        HST(np.array([-1, -1, 0]), np.array([1, 1, 0]), 1.5)
    with pytest.raises(DataValidationError, match="level"):
        HST(np.array([-1, 0, 0, 1]), np.array([2, 1, 0, 0]), 1.5)  # leaf 2 at depth 1 of an L = 2 tree
    with pytest.raises(DataValidationError, match="has no child"):
        HST(np.array([-1, 0, 0, 1]), np.array([2, 1, 1, 0]), 1.5)
    with pytest.raises(DataValidationError, match="λ > 1"):
        HST(np.array([-1, 0]), np.array([1, 0]), 1.0)
    with pytest.raises(DataValidationError, match="leaf_node"):
        HST(np.array([-1, 0, 0]), np.array([1, 0, 0]), 1.5, np.array([1, 1]))
    with pytest.raises(DataValidationError, match="^N: "):
        HSTInstance(HST(np.array([-1, 0, 0]), np.array([1, 0, 0]), 1.5), 1.0, [1, -2])


# ------------------------------------------------------------------ closed forms, Fact 4, padding
@settings(max_examples=15)
@given(seeds, st.sampled_from([1.2, 1.5, 1.9]))
def test_closed_form_distances_match_path_sums_and_fact_4(seed, lam):
    tree = random_tree(seed, depth=3, lam=lam).tree
    rng = np.random.default_rng(seed)
    xs, ys = rng.integers(0, tree.n_nodes, 30), rng.integers(0, tree.n_nodes, 30)
    closed = node_distance(tree, xs, ys)
    for x, y, c in zip(xs, ys, closed, strict=True):
        assert c == pytest.approx(path_distance(tree, int(x), int(y)), rel=1e-12, abs=1e-12)
    leaf = leaf_distances(tree)
    for a, b in itertools.combinations(range(tree.n), 2):
        assert leaf[a, b] == pytest.approx(path_distance(tree, tree.leaf_node[a], tree.leaf_node[b]))
    for v in range(tree.n_nodes):  # Fact 4 for every non-leaf ancestor u of v
        u, lv = tree.parent[v], tree.level
        while u >= 0:
            d = path_distance(tree, int(u), v)
            assert lam ** (lv[u] - 1) - 1e-12 <= d <= (lam ** lv[u] - 1) / (lam - 1) + 1e-12
            u = tree.parent[u]


def test_padding_adds_unary_roots_and_keeps_leaf_distances():
    tree = instances.load("facility/example-a").tree
    padded = pad(tree, 5)
    assert padded.L == 5 and padded.n_nodes == tree.n_nodes + 2
    assert list(padded.parent[tree.n_nodes :]) == [16, -1] and padded.parent[tree.root] == 15
    np.testing.assert_allclose(leaf_distances(padded), leaf_distances(tree))
    assert pad(tree, 2) is tree


# ------------------------------------------------------------------ toolkit
@settings(max_examples=15)
@given(seeds)
def test_minset_is_an_antichain_and_claim_16_trichotomy(seed):
    tree = random_tree(seed).tree
    rng = np.random.default_rng(seed)
    M = rng.random(tree.n_nodes) < 0.3
    base = set(np.flatnonzero(minset(tree, M)))
    assert is_antichain(tree, sorted(base))
    for v in rng.integers(0, tree.n_nodes, 5):
        M2 = M.copy()
        M2[v] = True
        new = set(np.flatnonzero(minset(tree, M2)))
        anc = set()
        u = tree.parent[v]
        while u >= 0:
            anc.add(int(u))
            u = tree.parent[u]
        if new == base:
            continue  # (16a)
        if new == base | {int(v)} and v not in base:
            continue  # (16b)
        removed = base - new
        assert len(removed) == 1 and removed <= anc and new == (base - removed) | {int(v)}  # (16c)


@settings(max_examples=20)
@given(seeds, st.sampled_from([1.2, 1.5, 1.9]))
def test_nearest_in_two_pass_matches_naive(seed, lam):
    tree = random_tree(seed, lam=lam).tree
    rng = np.random.default_rng(seed)
    R = np.unique(rng.integers(0, tree.n_nodes, int(rng.integers(1, 6))))
    ident, dist = nearest_in(tree, R)
    nid, nd = nearest_in_naive(tree, R)
    np.testing.assert_array_equal(ident[tree.leaf_node], nid)
    np.testing.assert_allclose(dist[tree.leaf_node], nd)


def test_rep_is_smallest_leaf_id_below_and_subtree_counts():
    inst = instances.generate("facility/random-hst", seed=3)
    tree = inst.tree
    r = rep(tree)
    counts = subtree_counts(tree, inst.N)
    for u in range(tree.n_nodes):
        below = [k for k in range(tree.n) if u in tree.ancestors[:, k]]
        assert r[u] == min(tree.leaf_node[below])
        assert counts[u] == inst.N[below].sum()


def test_lb9_of_example_a():
    inst = instances.load("facility/example-a")
    value, chain = lb9(inst.tree, inst.f, inst.N)
    assert value == pytest.approx(6.75) and is_antichain(inst.tree, chain)
    assert lb9(inst.tree, 3.1, inst.N)[0] == pytest.approx(6.85)


# ------------------------------------------------------------------ FRT
def test_frt_example_c():
    d = np.abs(np.subtract.outer([0.0, 1, 3, 7], [0.0, 1, 3, 7]))
    a = frt_embedding(d, beta=1.0, perm=[0, 1, 2, 3])
    assert a.tree.L == 3
    expected = np.full((4, 4), 9.5)
    expected[0, 1] = expected[1, 0] = 5
    np.fill_diagonal(expected, 0)
    np.testing.assert_allclose(a.distances(), expected)
    level2 = sorted(sorted(int(k) for k in np.flatnonzero(a.tree.ancestors[2] == u)) for u in a.tree.by_level[2])
    assert level2 == [[0, 1], [2], [3]]
    b = frt_embedding(d, beta=1.5**-0.5, perm=[3, 2, 1, 0])
    expected = np.full((4, 4), 9.5)
    expected[1, 2] = expected[2, 1] = 5
    np.fill_diagonal(expected, 0)
    np.testing.assert_allclose(b.distances(), expected)


@settings(max_examples=25)
@given(seeds, st.sampled_from(["tight", "geometric"]), st.sampled_from([1.2, 1.5, 1.9]))
def test_frt_never_shrinks_and_has_singleton_bottom_levels(seed, mode, lam):
    rng = np.random.default_rng(seed)
    pts = rng.random((int(rng.integers(2, 25)), 2)) * rng.choice([1.0, 100.0])
    d = euclidean(pts)
    emb = frt_embedding(d, lam=lam, radius_mode=mode, rng=seed)
    assert np.all(emb.distances() >= d * (1 - 1e-12))
    tree = emb.tree
    singleton_levels = [0, 1] if mode == "tight" else [0]
    for lvl in [lvl for lvl in singleton_levels if lvl < tree.L]:
        assert np.unique(tree.ancestors[lvl]).size == tree.n
    check_frt_carving(emb, d / emb.scale, lam, mode)


def check_frt_carving(emb, dprime, lam, mode):
    """Spec 2.2's carving, recomputed from d', β and π alone: at level 0 < i < L, a location joins the
    ball of the first centre w in π (over all of V) with ``d'(w, x) < r(i)``.  So every member of a
    level-i cluster lies within ``< r(i)`` of that one centre, the level-i clusters are exactly the
    (parent cluster, centre) classes, and each cluster's locations are a subset of its parent's."""
    tree = emb.tree
    rank = np.argsort(emb.perm)  # π-position of every location
    for i in range(1, tree.L):
        r = emb.beta * (lam**i - 1) / (lam - 1) if mode == "tight" else emb.beta * lam ** (i - 1)
        within = dprime < r  # within[w, x]
        centre = np.array([emb.perm[np.argmax(within[emb.perm, x])] for x in range(tree.n)])
        assert np.all(within[centre, np.arange(tree.n)])
        assert np.all(rank[centre] <= rank)  # x is its own candidate, so its centre comes no later
        upper = tree.ancestors[i + 1]
        for u in np.unique(tree.ancestors[i]):
            members = np.flatnonzero(tree.ancestors[i] == u)
            w = centre[members[0]]
            assert np.all(dprime[w, members] < r)  # geometric: inside the open ball of its centre
            assert np.all(centre[members] == w)
            same_class = np.flatnonzero((upper == upper[members[0]]) & (centre == w))
            assert np.array_equal(same_class, members)  # the whole (parent, centre) class, nothing else
            parent_members = np.flatnonzero(upper == tree.parent[u])
            assert set(members.tolist()) <= set(parent_members.tolist())  # nested in the parent cluster


def test_frt_points_path_equals_dense_path_and_is_seeded():
    rng = np.random.default_rng(5)
    pts = np.r_[rng.random((300, 2)), rng.normal(0.5, 0.01, (200, 2))]
    dense = frt_embedding(euclidean(pts), rng=11)
    kd = frt_embedding(points=pts, rng=11)
    np.testing.assert_array_equal(dense.tree.parent, kd.tree.parent)
    np.testing.assert_array_equal(dense.tree.leaf_node, kd.tree.leaf_node)
    again = frt_embedding(points=pts, rng=11)
    np.testing.assert_array_equal(again.tree.parent, kd.tree.parent)
    other = frt_embedding(points=pts, rng=12)
    assert not np.array_equal(other.tree.parent, kd.tree.parent) or other.beta != kd.beta


def test_frt_tree_does_not_depend_on_counts():
    inst = instances.generate("facility/plane", seed=2, n=30)
    a = dp_ufl_general(inst, 1.0, rng=4)
    b = dp_ufl_general(inst.with_counts(np.arange(30) % 4), 1.0, rng=4)
    np.testing.assert_array_equal(a.tree.parent, b.tree.parent)
    np.testing.assert_array_equal(a.embedding.perm, b.embedding.perm)


def test_frt_rejects_duplicate_locations():
    d = np.array([[0, 0, 1], [0, 0, 1], [1, 1, 0]], float)
    with pytest.raises(DataValidationError, match="merge them first"):
        frt_embedding(d)
    merged = UFLInstance(d=d, f=1, N=[1, 2, 3]).merged()
    assert merged.n == 2 and list(merged.N) == [3, 3]


def test_frt_measured_stretch_is_within_the_18b_bound():
    d = euclidean(np.random.default_rng(0).random((20, 2)))
    s = measured_stretch(d, trees=100, seed=1)
    assert s["min_ratio"] >= 1 - 1e-12
    assert s["max_pair_mean"] <= s["bound"] == pytest.approx(distortion_bound(1.5, 20))
    assert 1.5 < s["mean"] < 5  # spec 2.2: about 3 in tight mode at λ = 1.5
    geo = measured_stretch(d, radius_mode="geometric", trees=100, seed=1)
    assert geo["max_pair_mean"] <= geo["bound"] and geo["mean"] > s["mean"]
    ratios = stretch_ratios(frt_embedding(d, rng=3), d)
    assert ratios.shape == (190,) and ratios.min() >= 1 - 1e-12
