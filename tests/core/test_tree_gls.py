"""The tree GLS (dpmodels.core.tree_gls) against a dense GLS solved by numpy, its intervals'
coverage in simulation, and its refusals.

Oracle: :func:`gls_oracle.dense_gls` (weighted least squares on the leaves' cells with the totals
eliminated through a null-space basis, ``numpy.linalg.lstsq``), on random trees with random
variances: estimates, cell variances and total variances agree to 1e-8 relative.  Coverage: with
Gaussian noise the GLS estimate is exactly normal, so the normal 95% interval covers one
randomly chosen (region, cell) per run with probability 0.95 exactly (runs are independent: a
binomial test); the Chebyshev interval covers at least 95% whatever the noise (Laplace here).
"""

from __future__ import annotations

import numpy as np
import pytest
from gls_oracle import dense_gls, kron_marginal, noisy_queries, random_tree
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from dpmodels.core.errors import DataValidationError
from dpmodels.core.tree_gls import GLSQuery, TreeGLSProblem, solve_tree_gls

SEEDS = st.integers(0, 2**32 - 1)
SHAPE = (2, 3)
MARGINALS = [kron_marginal(SHAPE, keep) for keep in ({0, 1}, {0}, {1}, set())]


def _close(ours: np.ndarray, oracle: np.ndarray) -> None:
    scale = max(1.0, float(np.abs(oracle).max()))
    np.testing.assert_allclose(ours, oracle, rtol=1e-8, atol=1e-8 * scale)


def _agree(problem: TreeGLSProblem) -> dict:
    result = solve_tree_gls(problem)
    est, var, total_var = dense_gls(problem)
    _close(result.estimate, est)
    _close(result.variance, var)
    _close(result.total_variance, total_var)
    return result.info


def _instance(seed: int, zeros=(), unmeasured: float = 0.0, ratios: str = "any", identity_only: bool = False):
    """A random tree, truth, Gaussian answers to the marginals (or the identity) and random totals."""
    rng = np.random.default_rng(seed)
    tree = random_tree(rng, int(rng.integers(2, 9)))
    truth = rng.integers(0, 12, (len(tree.leaves), 6)).astype(float)
    truth[:, list(zeros)] = 0.0
    full = tree.aggregate(truth)
    matrices = MARGINALS[:1] if identity_only else MARGINALS
    per_query = rng.uniform(0.5, 4.0, len(matrices))
    per_region = rng.uniform(0.5, 4.0, tree.n_regions)
    variances = []
    for k in range(len(matrices)):
        var = per_query[k] * per_region if ratios == "proportional" else rng.uniform(0.5, 4.0, tree.n_regions)
        if k > 0:  # some internal regions lack a marginal
            var = np.where(~tree.is_leaf & (rng.random(tree.n_regions) < unmeasured), np.inf, var)
        variances.append(var)
    queries = noisy_queries(rng, tree, full, matrices, variances)
    totals = {int(v): float(full[v].sum()) for v in range(tree.n_regions) if rng.random() < 0.4}
    return TreeGLSProblem(tree, 6, queries, totals, np.array(zeros, dtype=np.int64))


@settings(max_examples=15, deadline=None)
@given(SEEDS, st.sampled_from([(), (1,), (0, 5)]))
def test_counts_with_any_variances_equal_the_dense_gls(seed, zeros):
    """Identity answers, every region its own variance, unmeasured internal regions, zeros, totals."""
    problem = _instance(seed, zeros, identity_only=True)
    assert _agree(problem)["basis"] == "cells"


@settings(max_examples=15, deadline=None)
@given(SEEDS)
def test_marginals_with_any_variances_equal_the_dense_gls(seed):
    """Kronecker marginals, any variances, some missing: the totals lie along a basis coordinate."""
    info = _agree(_instance(seed, unmeasured=0.3))
    assert info["totals"] == "fixed coordinate"


@settings(max_examples=15, deadline=None)
@given(SEEDS, st.sampled_from([(1,), (0, 4), (2, 3)]))
def test_zeros_with_proportional_variances_equal_the_dense_gls(seed, zeros):
    """Structural zeros break the Kronecker structure; equal variance ratios keep one eigenbasis."""
    info = _agree(_instance(seed, zeros, ratios="proportional"))
    assert info["basis"] == "eigenvectors"


@settings(max_examples=10, deadline=None)
@given(SEEDS, st.sampled_from([(1,), (0, 4)]))
def test_precisions_without_a_common_basis_take_the_matrix_passes_and_equal_the_dense_gls(seed, zeros):
    """Zeros with variance ratios that differ between regions: no eigenbasis, the passes run on matrices."""
    info = _agree(_instance(seed, zeros, unmeasured=0.5))
    assert info["basis"] in ("none (matrix passes)", "eigenvectors")  # a tree of one pattern still commutes


def test_the_matrix_passes_are_capped(monkeypatch):
    import dpmodels.core.tree_gls_dense as dense

    problem = _instance(3, zeros=(1,), unmeasured=1.0)  # the marginals missing at every internal region
    assert solve_tree_gls(problem).info["basis"] == "none (matrix passes)"
    monkeypatch.setattr(dense, "MAX_DENSE_ENTRIES", 10)
    with pytest.raises(DataValidationError, match="share no eigenbasis"):
        solve_tree_gls(problem)


def test_the_estimate_is_consistent_and_keeps_the_facts():
    problem = _instance(11, zeros=(1,), ratios="proportional")
    result = solve_tree_gls(problem)
    h = problem.hierarchy
    np.testing.assert_allclose(h.consistency_residual(result.estimate), 0.0, atol=1e-9)
    assert (result.estimate[:, 1] == 0).all() and (result.variance[:, 1] == 0).all()
    for region, total in problem.totals.items():
        assert result.totals[region] == pytest.approx(total, abs=1e-9)
        assert result.total_variance[region] == pytest.approx(0.0, abs=1e-9)


def _coverage_runs(runs: int, noise: str, method: str, seed: int) -> int:
    """How many of ``runs`` independent draws cover one (region, cell) chosen at random per run."""
    rng = np.random.default_rng(seed)
    tree = random_tree(np.random.default_rng(7), 12)
    truth = np.random.default_rng(8).integers(0, 20, (len(tree.leaves), 6)).astype(float)
    full = tree.aggregate(truth)
    variances = [np.full(tree.n_regions, v) * (1 + tree.level) for v in (2.0, 4.0, 4.0, 8.0)]
    exact = [full @ matrix.T.toarray() for matrix in MARGINALS]
    hits = 0
    for _ in range(runs):
        queries = []
        for k, (matrix, var, answers) in enumerate(zip(MARGINALS, variances, exact, strict=True)):
            sd = np.sqrt(var)[:, None]
            draw = rng.standard_normal(answers.shape) if noise == "gaussian" else rng.laplace(size=answers.shape)
            noise_sd = 1.0 if noise == "gaussian" else np.sqrt(2.0)
            queries.append(GLSQuery(f"q{k}", matrix, answers + sd * draw / noise_sd, var))
        result = solve_tree_gls(TreeGLSProblem(tree, 6, tuple(queries), {0: float(full[0].sum())}))
        low, high = result.intervals(0.95, method)
        region, cell = int(rng.integers(1, tree.n_regions)), int(rng.integers(0, 6))
        hits += bool(low[region, cell] <= full[region, cell] <= high[region, cell])
    return hits


def test_normal_intervals_cover_at_the_nominal_rate_under_gaussian_noise():
    runs = 200
    hits = _coverage_runs(runs, "gaussian", "normal", seed=1)
    assert stats.binomtest(hits, runs, 0.95).pvalue > 1e-3, hits


@pytest.mark.slow
def test_normal_and_chebyshev_coverage_in_a_long_simulation():
    runs = 6000
    hits = _coverage_runs(runs, "gaussian", "normal", seed=2)
    assert stats.binomtest(hits, runs, 0.95).pvalue > 1e-3, hits
    hits = _coverage_runs(2000, "laplace", "chebyshev", seed=3)
    assert stats.binomtest(hits, 2000, 0.95, alternative="less").pvalue > 1e-3, hits


def test_bad_inputs_are_refused_naming_the_field():
    tree = random_tree(np.random.default_rng(0), 4)
    ident = MARGINALS[0]
    good = GLSQuery("q", ident, np.zeros((4, 6)), np.ones(4))
    with pytest.raises(DataValidationError, match="variances must be > 0"):
        TreeGLSProblem(tree, 6, (GLSQuery("q", ident, np.zeros((4, 6)), np.array([1, 0, 1, 1.0])),))
    with pytest.raises(DataValidationError, match="values need shape"):
        TreeGLSProblem(tree, 6, (GLSQuery("q", ident, np.zeros((4, 5)), np.ones(4)),))
    with pytest.raises(DataValidationError, match="missing or infinite"):
        TreeGLSProblem(tree, 6, (GLSQuery("q", ident, np.full((4, 6), np.nan), np.ones(4)),))
    with pytest.raises(DataValidationError, match="zeros"):
        TreeGLSProblem(tree, 6, (good,), zeros=[6])
    with pytest.raises(DataValidationError, match="totals"):
        TreeGLSProblem(tree, 6, (good,), totals={9: 1.0})
    with pytest.raises(DataValidationError, match="level"):
        solve_tree_gls(TreeGLSProblem(tree, 6, (good,))).intervals(1.5)


def test_an_unmeasured_leaf_and_contradicting_totals_are_refused():
    tree = random_tree(np.random.default_rng(0), 5)
    leaf = int(tree.leaves[0])
    var = np.ones(5)
    var[leaf] = np.inf
    problem = TreeGLSProblem(tree, 6, (GLSQuery("q", MARGINALS[0], np.zeros((5, 6)), var),))
    with pytest.raises(DataValidationError, match=f"{tree.names[leaf]}.*not identified"):
        solve_tree_gls(problem)
    chain = random_tree(np.random.default_rng(0), 2)  # a root and its only child: the totals must agree
    counts = GLSQuery("q", MARGINALS[0], np.zeros((2, 6)), np.ones(2))
    with pytest.raises(DataValidationError, match="contradict"):
        solve_tree_gls(TreeGLSProblem(chain, 6, (counts,), totals={0: 5.0, 1: 4.0}))
