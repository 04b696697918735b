"""The banded Newton system of ``mdp_ipm`` against dense linear algebra, the dense path and HiGHS."""

import numpy as np
import pyomo.environ as pyo
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from pyomo.contrib.solver.common.factory import SolverFactory

from dpmodels import instances
from dpmodels.metricdp.ipm import structured_ipm
from dpmodels.metricdp.ipm.band import band_cholesky, band_inverse_sum, band_solve
from dpmodels.metricdp.ipm.linalg import NumericalBreakdown, Rows, band_order, newton_system
from dpmodels.metricdp.lp import full_lp
from dpmodels.metricdp.models import build_full_lp, perturbation_matrix
from dpmodels.metricdp.privacy_audit import is_exactly_mdp, max_mdp_violation, row_sum_error


def random_banded(seed: int, K: int, n: int, b: int):
    """K random SPD matrices with half-bandwidth b, dense and in the kernels' band layout."""
    rng = np.random.default_rng(seed)
    dense = np.zeros((K, n, n))
    for k in range(K):
        a = np.tril(rng.standard_normal((n, n)) * (rng.random((n, n)) < 0.7), -1)
        a = np.tril(a, -1) - np.tril(a, -b - 1)
        dense[k] = a + a.T
        dense[k] += np.diag(np.abs(dense[k]).sum(axis=1) + rng.random(n) + 1e-3)
    band = np.zeros((K, n, b + 1))
    for d in range(b + 1):
        band[:, d:, d] = np.diagonal(dense, offset=-d, axis1=1, axis2=2)
    return dense, band


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10**6), st.integers(1, 4), st.integers(1, 40), st.integers(0, 12), st.integers(1, 40))
def test_band_kernels_match_dense_linear_algebra(seed, K, n, b, rows_per_step):
    """Every kernel, the blocked inverse sum at any step size (below, at and above the band)."""
    b = min(b, n - 1)
    dense, band = random_banded(seed, K, n, b)
    failed = np.zeros(K, dtype=bool)
    band_cholesky(band, failed)
    assert not failed.any()
    for k in range(K):
        low = np.zeros((n, n))
        for d in range(b + 1):
            low[np.arange(d, n), np.arange(n - d)] = band[k, d:, d]
        np.testing.assert_allclose(low, np.linalg.cholesky(dense[k]), rtol=1e-9, atol=1e-12)
    rhs = np.random.default_rng(seed).standard_normal((K, n))
    solved = band_solve(band, rhs, np.empty((K, n)))
    np.testing.assert_allclose(solved, np.linalg.solve(dense, rhs[:, :, None])[:, :, 0], rtol=1e-9, atol=1e-12)
    total = sum(np.linalg.inv(h) for h in dense)
    lower = band_inverse_sum(band, rows_per_step)  # the lower triangle, zeros above
    np.testing.assert_allclose(lower, np.tril(total), rtol=1e-9, atol=1e-12)


def test_band_cholesky_flags_indefinite_blocks_and_the_system_ridges_or_breaks_down():
    band = np.array(
        [[[1.0, 0.0], [2.0, 1.0]], [[-1.0, 0.0], [1.0, 0.0]]]
    )  # rows (diagonal, sub-diagonal); block 1: pivot -1
    failed = np.zeros(2, dtype=bool)
    band_cholesky(band, failed)
    assert failed.tolist() == [False, True]
    rows = Rows(np.array([0]), np.array([1]), np.array([2.0]), 2)
    system = newton_system(rows, 1, "band")
    with pytest.raises(NumericalBreakdown):
        system.factor(np.array([[np.nan]]), np.array([[1.0, 1.0]]))


def test_grid_order_gives_a_band_about_twice_the_short_side():
    inst = instances.generate("mdp/grid", seed=0, rows=10, cols=25, K=5, epsilon=1.0)
    g = inst.graph
    _, b = band_order(Rows(g.src, g.dst, g.coef, inst.N))
    assert b <= 2 * 10 + 4  # eta = 2 km: neighbours two rows away; the ordering runs along the long side
    assert newton_system(Rows(g.src, g.dst, g.coef, inst.N), inst.K).name == "band"


def grid_instance(seed, rows, cols, K, eps, eta):
    return instances.generate("mdp/grid", seed=seed, rows=rows, cols=cols, K=K, epsilon=eps, eta=eta)


@settings(max_examples=12, deadline=None)
@given(
    st.integers(0, 10**4),
    st.integers(2, 6),
    st.integers(2, 7),
    st.integers(2, 6),
    st.sampled_from([0.5, 1.0, 3.0]),
    st.sampled_from([1.0, 1.5, 2.0]),
)
def test_band_and_dense_paths_agree_and_bracket_highs(seed, rows, cols, K, eps, eta):
    assume(rows * cols >= K)
    inst = grid_instance(seed, rows, cols, K, eps, eta)
    band = structured_ipm(inst, gap=1e-6, system="band")
    dense = structured_ipm(inst, gap=1e-6, system="dense")
    assert band.info["Newton system"] == "band" and dense.info["Newton system"] == "dense"
    # the same iterates up to rounding: the same bounds after the same number of iterations
    assert band.iterations == pytest.approx(dense.iterations, abs=1)
    assert band.upper_bound == pytest.approx(dense.upper_bound, rel=1e-5)
    assert band.lower_bound == pytest.approx(dense.lower_bound, rel=1e-5, abs=1e-9)
    opt = full_lp(inst).solve().objective
    tol = 1e-9 * max(1.0, abs(opt))
    assert band.lower_bound <= opt + tol and band.upper_bound >= opt - tol
    assert is_exactly_mdp(inst, band.z) and max_mdp_violation(inst, band.z) == 0.0
    assert row_sum_error(band.z) <= 1e-12
    assert float((inst.weighted_cost * band.z).sum()) == pytest.approx(band.upper_bound, rel=1e-12)


@pytest.mark.parametrize("eps", [1.0, 4.0])
def test_band_path_through_the_plugin_reaches_the_highs_optimum(eps):
    """The plugin with ``system="band"`` (its duals are checked in test_ipm.py)."""
    inst = grid_instance(0, 5, 8, 6, eps, 2.0)
    model = build_full_lp(inst)
    res = SolverFactory("mdp_ipm").solve(model, gap=1e-5, system="band")
    assert res.extra_info["Newton system"] == "band"
    ref = build_full_lp(inst)
    pyo.SolverFactory("appsi_highs").solve(ref)
    opt = pyo.value(ref.objective)
    assert res.objective_bound <= opt + 1e-9 and opt <= res.incumbent_objective + 1e-9
    assert res.incumbent_objective == pytest.approx(opt, rel=1e-5)
    assert is_exactly_mdp(inst, perturbation_matrix(model, inst))


def test_randomized_response_on_the_band_path():
    """Spec worked example A (two records, one pair: a band of width 1)."""
    d = np.array([[0.0, 1.0], [1.0, 0.0]])
    from dpmodels.metricdp.data import MDPInstance

    inst = MDPInstance(d, np.array([[0.0, 1.0], [1.0, 0.0]]), np.array([0.5, 0.5]), float(np.log(3)), 1.0)
    res = structured_ipm(inst, gap=1e-9, system="band")
    assert res.lower_bound <= 0.25 + 1e-12 <= res.upper_bound + 2e-12
    assert res.upper_bound == pytest.approx(0.25, rel=1e-8)
