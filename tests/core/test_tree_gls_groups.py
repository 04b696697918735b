"""Group totals in the tree GLS (issue 25): the sum of several regions' totals held to an exact value.

Oracle: :func:`gls_oracle.kkt_gls`, the KKT system of the weighted least squares over every region's
histogram with every equality at once (tree sums, region totals, group totals; redundant rows dropped by
a pivoted QR), solved by numpy: no tree passes, no basis change, no rank-J correction.  On random trees
with random groups, every route of :func:`solve_tree_gls` (cells, eigenvectors with totals along a
coordinate or not, matrix passes) gives its estimates, cell variances and total variances to 1e-8
relative, and the group totals hold to 1e-8.

Variances in simulation: with Gaussian noise an estimate is exactly normal, so over ``R`` independent
draws ``(R - 1) s^2 / sigma^2`` is chi-square with ``R - 1`` degrees of freedom for the stated variance
``sigma^2``; a two-sided test at 1e-3 per statistic fails a stated variance 0.65 or 1.6 times the true one
with probability above 0.98 at ``R = 300``.  On the tree of the test, leaving the group out of the
variances would state 2.4 times the true variance of region 1's total.
"""

from __future__ import annotations

import numpy as np
import pytest
from gls_oracle import kkt_gls, kron_marginal, noisy_queries, random_tree
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from dpmodels.core.errors import DataValidationError
from dpmodels.core.hierarchy import Hierarchy
from dpmodels.core.tree_gls import GLSQuery, TreeGLSProblem, solve_tree_gls

SEEDS = st.integers(0, 2**32 - 1)
SHAPE = (2, 3)
MARGINALS = [kron_marginal(SHAPE, keep) for keep in ({0, 1}, {0}, {1}, set())]
ROUTES = {
    # name: (zeros, marginals?, variance ratios equal across regions?)
    "cells": ((), False, False),
    "fixed coordinate": ((), True, False),
    "eigenvectors": ((0, 4), True, True),
    "matrix passes": ((1,), True, False),
}

ROUTE_INFO = {
    "cells": [("cells", "rank-J correction")],
    "fixed coordinate": [("eigenvectors", "fixed coordinate")],
    "eigenvectors": [("eigenvectors", "rank-J correction")],
    "matrix passes": [("none (matrix passes)", "rank-J correction"), ("eigenvectors", "rank-J correction")],
}


def _close(ours: np.ndarray, oracle: np.ndarray) -> None:
    scale = max(1.0, float(np.abs(oracle).max()))
    np.testing.assert_allclose(ours, oracle, rtol=1e-8, atol=1e-8 * scale)


def _random_groups(rng, tree, full) -> tuple:
    """Up to three groups: a random subset of one parent's children, or any random regions."""
    groups, used = [], set()
    parents = [int(v) for v in tree.internal if len(tree.children(v)) >= 2]
    for _ in range(int(rng.integers(1, 4))):
        if parents and rng.random() < 0.7:
            kids = tree.children(int(rng.choice(parents)))
            pick = rng.choice(kids, int(rng.integers(1, len(kids) + 1)), replace=False)
        else:
            pick = rng.choice(tree.n_regions, int(rng.integers(1, min(3, tree.n_regions) + 1)), replace=False)
        pick = tuple(sorted(int(r) for r in pick if int(r) not in used))
        if pick:
            used.update(pick)
            groups.append((pick, float(full[list(pick)].sum())))
    return tuple(groups)


def _instance(seed: int, route: str) -> TreeGLSProblem:
    """A random tree (3-9 regions), Gaussian answers, random region totals and random groups."""
    zeros, marginals, proportional = ROUTES[route]
    rng = np.random.default_rng(seed)
    tree = random_tree(rng, int(rng.integers(3, 10)))
    truth = rng.integers(0, 12, (len(tree.leaves), 6)).astype(float)
    truth[:, list(zeros)] = 0.0
    full = tree.aggregate(truth)
    matrices = MARGINALS if marginals else MARGINALS[:1]
    per_region = rng.uniform(0.5, 4.0, tree.n_regions)
    variances = []
    for k in range(len(matrices)):
        var = rng.uniform(0.5, 4.0) * per_region if proportional else rng.uniform(0.5, 4.0, tree.n_regions)
        if k > 0 and route == "matrix passes":  # marginals missing at some internal regions: no common basis
            var = np.where(~tree.is_leaf & (rng.random(tree.n_regions) < 0.5), np.inf, var)
        variances.append(var)
    queries = noisy_queries(rng, tree, full, matrices, variances)
    totals = {int(v): float(full[v].sum()) for v in range(tree.n_regions) if rng.random() < 0.3}
    return TreeGLSProblem(tree, 6, queries, totals, np.array(zeros, dtype=np.int64), _random_groups(rng, tree, full))


@settings(max_examples=40, deadline=None)
@given(SEEDS, st.sampled_from(sorted(ROUTES)))
def test_group_totals_give_the_kkt_gls_on_every_route(seed, route):
    problem = _instance(seed, route)
    result = solve_tree_gls(problem)
    est, var, total_var = kkt_gls(problem)
    _close(result.estimate, est)
    _close(result.variance, var)
    _close(result.total_variance, total_var)
    for regions, total in problem.group_totals:
        assert result.totals[list(regions)].sum() == pytest.approx(total, abs=1e-8)
    assert result.info["group totals"] == "rank-J correction"
    assert (result.info["basis"], result.info["totals"]) in ROUTE_INFO[route]


def test_a_group_the_fixed_totals_imply_changes_nothing():
    """The root's and one child's totals fixed in the passes imply the other child's: a group of it alone has
    a covariance of rounding only, which must count as zero (dividing by it turned rounding into variance)."""
    rng = np.random.default_rng(2)
    tree = Hierarchy.from_parent_table([("r0", None), ("r1", "r0"), ("r2", "r0"), ("r3", "r1"), ("r4", "r3")])
    full = tree.aggregate(rng.integers(0, 12, (len(tree.leaves), 6)).astype(float))
    variances = [rng.uniform(0.5, 4.0, tree.n_regions) for _ in MARGINALS]
    queries = noisy_queries(rng, tree, full, MARGINALS, variances)
    totals = {0: float(full[0].sum()), 1: float(full[1].sum())}
    implied = (((2,), float(full[2].sum())),)
    plain = solve_tree_gls(TreeGLSProblem(tree, 6, queries, totals))
    grouped = solve_tree_gls(TreeGLSProblem(tree, 6, queries, totals, group_totals=implied))
    assert grouped.info["totals"] == "fixed coordinate"
    _close(grouped.estimate, plain.estimate)
    _close(grouped.variance, plain.variance)
    _close(grouped.total_variance, plain.total_variance)
    _, var, _ = kkt_gls(TreeGLSProblem(tree, 6, queries, totals, group_totals=implied))
    _close(grouped.variance, var)


def test_a_group_total_the_free_estimate_meets_keeps_it_and_narrows_its_regions():
    """Two siblings held to the sum of their free estimates: the estimate stays, their variances drop."""
    problem = _instance(5, "cells")
    tree = problem.hierarchy
    parent = next(int(v) for v in tree.internal if len(tree.children(v)) >= 2)
    pair = [int(c) for c in tree.children(parent)[:2]]
    loose = solve_tree_gls(TreeGLSProblem(tree, 6, problem.queries))
    group = ((tuple(pair), float(loose.totals[pair].sum())),)
    grouped = solve_tree_gls(TreeGLSProblem(tree, 6, problem.queries, group_totals=group))
    np.testing.assert_allclose(grouped.estimate, loose.estimate, atol=1e-9)
    assert (grouped.total_variance[pair] < loose.total_variance[pair]).all()
    assert grouped.total_variance[pair].sum() > 0  # each region stays uncertain, only their sum is exact


def _stated_and_draws(runs: int, seed: int):
    """The stated variances of a tiny tree with two groups, and the estimates of ``runs`` Gaussian draws."""
    tree = random_tree(np.random.default_rng(9), 7)  # the root's children 1, 2, 3; 1 and 2 grouped
    truth = tree.aggregate(np.random.default_rng(4).integers(0, 20, (len(tree.leaves), 6)).astype(float))
    variances = [np.full(tree.n_regions, v) * (5 - tree.level) for v in (2.0, 4.0, 4.0, 8.0)]
    exact = [truth @ matrix.T.toarray() for matrix in MARGINALS]
    kids = tree.children(0)
    groups = ((tuple(int(c) for c in kids[:2]), float(truth[kids[:2]].sum())),)
    rng = np.random.default_rng(seed)
    draws, stated = [], None
    for _ in range(runs):
        queries = tuple(
            GLSQuery(f"q{k}", m, a + np.sqrt(v)[:, None] * rng.standard_normal(a.shape), v)
            for k, (m, v, a) in enumerate(zip(MARGINALS, variances, exact, strict=True))
        )
        result = solve_tree_gls(TreeGLSProblem(tree, 6, queries, {0: float(truth[0].sum())}, group_totals=groups))
        draws.append(np.concatenate([result.estimate.ravel(), result.totals]))
        stated = np.concatenate([result.variance.ravel(), result.total_variance])
    return tree, groups, truth, np.array(draws), stated


def test_the_stated_variances_match_the_spread_of_gaussian_draws():
    runs = 300
    tree, groups, truth, draws, stated = _stated_and_draws(runs, seed=11)
    n_cells = tree.n_regions * 6
    grouped = groups[0][0]
    np.testing.assert_allclose(draws[:, n_cells + np.array(grouped)].sum(axis=1), groups[0][1], atol=1e-8)
    exact = np.concatenate([truth.ravel(), truth.sum(axis=1)])
    picks = [n_cells + grouped[0], n_cells + grouped[1], grouped[0] * 6 + 2]  # the grouped totals, a cell
    for j in picks:
        assert stated[j] > 0
        chi2 = (runs - 1) * draws[:, j].var(ddof=1) / stated[j]
        p = 2 * min(stats.chi2.cdf(chi2, runs - 1), stats.chi2.sf(chi2, runs - 1))
        assert p > 1e-3, (j, chi2)
        mean_z = (draws[:, j].mean() - exact[j]) / np.sqrt(stated[j] / runs)
        assert abs(mean_z) < 3.3, (j, mean_z)  # unbiased: a two-sided normal test at 1e-3


def test_bad_groups_are_refused_naming_the_field():
    tree = random_tree(np.random.default_rng(0), 4)
    counts = GLSQuery("q", MARGINALS[0], np.zeros((4, 6)), np.ones(4))
    for groups, word in [
        ((((1, 1), 2.0),), "distinct region positions"),
        ((((9,), 2.0),), "distinct region positions"),
        ((((), 2.0),), "distinct region positions"),
        ((((1,), np.nan),), "has total"),
        (((1, 2.0),), "entries are"),
    ]:
        with pytest.raises(DataValidationError, match=word) as err:
            TreeGLSProblem(tree, 6, (counts,), group_totals=groups)
        assert err.value.field == "group_totals"


def test_a_group_that_contradicts_the_totals_is_refused():
    tree = random_tree(np.random.default_rng(1), 5)
    kids = tuple(int(c) for c in tree.children(0))
    counts = GLSQuery("q", MARGINALS[0], np.ones((5, 6)), np.ones(5))
    problem = TreeGLSProblem(tree, 6, (counts,), {0: 10.0}, group_totals=((kids, 11.0),))
    with pytest.raises(DataValidationError, match="contradict"):
        solve_tree_gls(problem)
    same = TreeGLSProblem(tree, 6, (counts,), {0: 10.0}, group_totals=((kids, 10.0),))  # implied, consistent
    assert solve_tree_gls(same).totals[0] == pytest.approx(10.0)
