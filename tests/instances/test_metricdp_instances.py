"""Metric-DP instance generators and loaders (spec 8.2)."""

import numpy as np
import pandas as pd
import pytest
from scipy.sparse.csgraph import dijkstra

from dpmodels import instances
from dpmodels.core.errors import DataValidationError
from dpmodels.instances.metricdp import road_from_files, text_embeddings
from dpmodels.metricdp.data import haversine_km


def test_paper_grid_has_the_issue_sizes():
    inst = instances.generate("mdp/paper-grid", seed=0)
    assert (inst.N, inst.K, inst.eta, inst.epsilon) == (500, 100, 2.0, 10.0)
    assert inst.graph.n_pairs == 5554  # 2,777 unordered pairs within 2 km on a 1 km 20 x 25 grid
    assert inst.graph.n_pairs * inst.K == 555_400
    assert inst.info["M"] == 25
    assert np.isclose(inst.prior.sum(), 1) and np.allclose(inst.prior, 1 / 500)


def test_grid_costs_follow_eq_67():
    inst = instances.generate("mdp/grid", seed=2, rows=3, cols=4, K=5, destinations=4)
    outs, dest = inst.info["outputs"], inst.info["destinations"]
    path = dijkstra(np.where(inst.d_rr <= inst.eta, inst.d_rr, 0), directed=False)
    for i in range(inst.N):
        for k, o in enumerate(outs):
            expected = np.mean([abs(path[i, t] - path[o, t]) for t in dest])
            assert inst.cost[i, k] == pytest.approx(expected, abs=1e-12)
    assert np.array_equal(inst.d_ro, inst.d_rr[:, outs])


def test_generators_are_seeded_and_valid():
    for name, shape in (
        ("mdp/grid", {"rows": 5, "cols": 6, "K": 10}),
        ("mdp/gaussian", {"N": 40, "K": 8}),
        ("mdp/road-like", {"N": 60, "K": 9}),
    ):
        a = instances.generate(name, seed=7, **shape)
        b = instances.generate(name, seed=7, **shape)
        c = instances.generate(name, seed=8, **shape)
        assert np.array_equal(a.cost, b.cost) and not np.array_equal(a.cost, c.cost), name
        assert a.cost.shape == (a.N, a.K) and (a.cost >= 0).all()


def test_gaussian_costs_are_euclidean():
    inst = instances.generate("mdp/gaussian", seed=1, N=30, K=5, dim=3)
    x = inst.features
    outs = inst.info["outputs"]
    np.testing.assert_allclose(inst.cost, np.linalg.norm(x[:, None, :] - x[None, outs, :], axis=2), atol=1e-9)


def test_haversine_known_distance():
    # Rome (Colosseum) to Milan (Duomo): about 477 km great-circle
    assert haversine_km(41.8902, 12.4922, 45.4642, 9.1900) == pytest.approx(477, abs=3)
    # one degree of latitude is R * pi / 180
    assert haversine_km(0.0, 0.0, 1.0, 0.0) == pytest.approx(6371 * np.pi / 180, rel=1e-12)


def _write_road(tmp_path, nodes, edges):
    n, e = tmp_path / "nodes.csv", tmp_path / "edges.csv"
    pd.DataFrame(nodes).to_csv(n, index=False)
    pd.DataFrame(edges).to_csv(e, index=False)
    return n, e


def test_road_network_from_files(tmp_path):
    nodes = {"id": [10, 20, 30, 40], "lat": [41.90, 41.91, 41.92, 41.90], "lon": [12.49, 12.49, 12.49, 12.50]}
    edges = {"source": [10, 20, 30], "target": [20, 30, 40]}
    n, e = _write_road(tmp_path, nodes, edges)
    inst = road_from_files(n, e, K=2, destinations=4, epsilon=1.0, eta=2.0)
    assert inst.N == 4 and inst.K == 2
    assert inst.d_rr[0, 1] == pytest.approx(haversine_km(41.90, 12.49, 41.91, 12.49), rel=1e-12)
    # road distance 10 -> 40 runs along the path 10-20-30-40, longer than the straight line
    road = inst.d_rr[0, 1] + inst.d_rr[1, 2] + inst.d_rr[2, 3]
    outs, dest = inst.info["outputs"], inst.info["destinations"]
    assert road > inst.d_rr[0, 3] and len(outs) == 2 and sorted(dest) == [0, 1, 2, 3]
    pd_ = np.cumsum([0, inst.d_rr[0, 1], inst.d_rr[1, 2], inst.d_rr[2, 3]])
    pd_ = np.abs(pd_[:, None] - pd_[None, :])  # road distances along the path
    expected = np.abs(pd_[:, None, dest] - pd_[None, outs][:, :, dest]).mean(axis=2)
    np.testing.assert_allclose(inst.cost, expected, atol=1e-12)


def test_road_files_with_lengths_use_them(tmp_path):
    nodes = {"id": ["a", "b", "c"], "lat": [41.9, 41.9, 41.9], "lon": [12.40, 12.41, 12.42]}
    edges = {"source": ["a", "b"], "target": ["b", "c"], "length_km": [5.0, 7.0]}
    n, e = _write_road(tmp_path, nodes, edges)
    inst = road_from_files(n, e, K=3, destinations=3)
    # outputs are all three nodes; destinations too: c_ik = mean_t |pd(i,t) - pd(k,t)| with pd from lengths
    pd_ = np.array([[0, 5, 12], [5, 0, 7], [12, 7, 0]], float)
    outs, dest = inst.info["outputs"], inst.info["destinations"]
    expected = np.abs(pd_[:, None, dest] - pd_[None, outs][:, :, dest]).mean(axis=2)
    np.testing.assert_allclose(inst.cost, expected, atol=1e-12)


@pytest.mark.parametrize(
    "nodes, edges, match",
    [
        ({"id": [1, 2], "lat": [41.9, 41.9]}, {"source": [1], "target": [2]}, "missing columns"),
        ({"id": [1, 1], "lat": [41.9, 41.9], "lon": [12.4, 12.5]}, {"source": [1], "target": [1]}, "repeat"),
        ({"id": [1, 2], "lat": [91.0, 41.9], "lon": [12.4, 12.5]}, {"source": [1], "target": [2]}, "lat"),
        ({"id": [1, 2], "lat": [41.9, 41.9], "lon": [12.4, 12.5]}, {"source": [1], "target": [3]}, "unknown nodes"),
        (
            {"id": [1, 2], "lat": [41.9, 41.9], "lon": [12.4, 12.5]},
            {"source": [1], "target": [2], "length_km": [-1.0]},
            "length_km",
        ),
    ],
)
def test_bad_road_files_name_the_problem(tmp_path, nodes, edges, match):
    n, e = _write_road(tmp_path, nodes, edges)
    with pytest.raises(DataValidationError, match=match):
        road_from_files(n, e, K=1, destinations=1)


def test_text_embeddings_from_a_user_matrix():
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(50, 300))
    inst = text_embeddings(vectors, N=20, K=5, epsilon=0.1, eta=25.0)
    assert inst.N == 20 and inst.K == 5 and inst.features.shape == (20, 300)
    picked = [np.flatnonzero((vectors == row).all(axis=1))[0] for row in inst.features]
    assert len(set(picked)) == 20
    with pytest.raises(DataValidationError, match="vectors"):
        text_embeddings(np.array([[np.nan, 1.0]]))
    with pytest.raises(DataValidationError, match="N"):
        text_embeddings(vectors, N=51)


def test_bad_shapes_are_refused():
    with pytest.raises(DataValidationError, match="K"):
        instances.generate("mdp/grid", rows=2, cols=2, K=5)
    with pytest.raises(DataValidationError, match="destinations"):
        instances.generate("mdp/grid", rows=2, cols=2, K=2, destinations=9)
    with pytest.raises(DataValidationError, match="grid"):
        instances.generate("mdp/grid", rows=0, cols=3)
    with pytest.raises(DataValidationError, match="N"):
        instances.generate("mdp/gaussian", N=3000)
