"""Facility-location instances: worked examples, generators, lower-bound families, user files."""

import math

import numpy as np
import pytest

from dpmodels import instances
from dpmodels.core.errors import DataValidationError
from dpmodels.facility.data import HSTInstance, UFLInstance
from dpmodels.facility.hst import leaf_distances
from dpmodels.facility.models import build_tree_model, build_ufl_mip, solve_reference
from dpmodels.instances.facility import from_files, star_opt


def test_names_are_registered():
    names = instances.available()
    for name in (
        "facility/example-a",
        "facility/example-b",
        "facility/example-e",
        "facility/example-d",
        "facility/random-hst",
        "facility/plane",
        "facility/points",
        "facility/graph",
        "facility/two-point",
        "facility/star",
        "facility/star-metric",
    ):
        assert name in names


def test_example_a_distances():
    tree = instances.load("facility/example-a").tree
    d = leaf_distances(tree)
    assert d[0, 1] == 2 and d[0, 2] == 5 and d[0, 7] == 9.5


@pytest.mark.parametrize(
    "name, shape",
    [
        ("facility/random-hst", {"depth": 3}),
        ("facility/plane", {"n": 30, "clusters": 3}),
        ("facility/points", {"n": 20, "dim": 4}),
        ("facility/graph", {"n": 30}),
        ("facility/star", {"m": 9, "n": 5}),
        ("facility/star-metric", {"m": 9, "n": 5}),
    ],
)
def test_generators_are_seeded_and_valid(name, shape):
    a = instances.generate(name, seed=3, **shape)
    b = instances.generate(name, seed=3, **shape)
    assert isinstance(a, UFLInstance | HSTInstance)
    np.testing.assert_array_equal(a.N, b.N)
    if isinstance(a, UFLInstance):
        np.testing.assert_array_equal(a.distances, b.distances)
        UFLInstance(d=a.distances, f=a.f, N=a.N)  # a full metric check passes


def test_graph_metric_is_the_shortest_path_metric():
    from scipy.sparse.csgraph import dijkstra
    from scipy.spatial.distance import cdist

    inst = instances.generate("facility/graph", seed=2, n=25, radius=0.4)
    pos = inst.info["points"]
    length = cdist(pos, pos)
    graph = np.where(length <= inst.info["radius"], length, 0.0)
    np.testing.assert_allclose(inst.d, dijkstra(graph, directed=False), rtol=1e-12, atol=1e-12)
    UFLInstance(d=inst.d, f=1.0, N=inst.N)  # triangle inequality holds


@pytest.mark.parametrize("seed", range(4))
def test_star_closed_form_optimum_matches_the_mip(seed):
    hst = instances.generate("facility/star", seed=seed, m=16, n=8)
    assert hst.f == pytest.approx(19.0)  # f = g_3 √m at λ = 1.5, L = 3
    assert solve_reference(build_tree_model(hst, sites="all_nodes")) == pytest.approx(hst.info["opt"])
    metric = instances.generate("facility/star-metric", seed=seed, m=16, n=8, f=2.0)
    assert solve_reference(build_ufl_mip(metric)) == pytest.approx(metric.info["opt"])


def test_star_distribution_and_bad_counts():
    rng = np.random.default_rng(0)
    m = 16
    draws = np.concatenate([instances.generate("facility/star", seed=rng, m=m, n=50).N for _ in range(40)])
    assert set(np.unique(draws)) <= {1, m}
    assert abs((draws == m).mean() - 1 / (math.sqrt(m) + 1)) < 0.04
    with pytest.raises(DataValidationError, match="^N: "):
        star_opt([1, 2], m, 1.0, 0.25)


def test_points_without_dense_matrix_for_large_n():
    inst = instances.generate("facility/plane", seed=0, n=50, dense=False)
    assert inst.d is None and inst.points.shape == (50, 2)
    assert inst.cost([0, 1]) == pytest.approx(
        inst.f * 2
        + (inst.N * np.minimum(*(np.linalg.norm(inst.points - inst.points[k], axis=1) for k in (0, 1)))).sum()
    )


def test_user_files(tmp_path):
    pts = tmp_path / "points.csv"
    pts.write_text("x,y\n0,0\n1,0\n0,2\n")
    counts = tmp_path / "counts.txt"
    counts.write_text("3\n0\n1\n")
    inst = from_files(pts, counts, f=0.5)
    assert inst.n == 3 and inst.N.tolist() == [3, 0, 1] and inst.cost([0]) == pytest.approx(0.5 + 2)
    both = tmp_path / "both.txt"
    both.write_text("0 0 3\n1 0 0\n0 2 1\n")
    assert from_files(both, f=0.5).N.tolist() == [3, 0, 1]
    counts.write_text("3\n-1\n1\n")
    with pytest.raises(DataValidationError, match="^N: must be >= 0"):
        from_files(pts, counts)
    counts.write_text("3\n1\n")
    with pytest.raises(DataValidationError, match="^counts: 2 counts for 3 points"):
        from_files(pts, counts)
    with pytest.raises(DataValidationError, match="^points: no such file"):
        from_files(tmp_path / "missing.csv", counts)


def test_example_d_star_is_registered_with_its_optimum():
    """Spec 7.5: m = 16, f = 1, r = 0.25, centre b plus 8 leaves, N = (1,1,16,1,1,16,1,1); opt = MIP = LP = 4.5."""
    d = instances.load("facility/example-d")
    assert d.N.tolist() == [0, 1, 1, 16, 1, 1, 16, 1, 1] and d.f == 1.0
    assert d.distances[0, 1] == 0.25 and d.distances[1, 2] == 0.5
    assert d.info["opt"] == pytest.approx(4.5) == star_opt(d.N[1:], 16, 1.0, 0.25)
    assert solve_reference(build_ufl_mip(d)) == pytest.approx(4.5)
    assert solve_reference(build_ufl_mip(d, relax=True)) == pytest.approx(4.5)


def test_example_e_accepts_only_the_spec_budgets():
    """Spec 7.6 fixes f for ε = 1 (L' = 10) and ε = 0.5 (L' = 13) only; another ε must not get ε = 0.5's f."""
    assert instances.load("facility/example-e").f == pytest.approx(1.5**9 * 1.0001)
    assert instances.load("facility/example-e", epsilon=0.5).f == pytest.approx(2 * 1.5**12 * 1.0001)
    for eps in (0.25, 2.0, 0.0):
        with pytest.raises(DataValidationError, match="^epsilon"):
            instances.load("facility/example-e", epsilon=eps)
