"""Weighted post-processing (issue 24): every PGSR post-processing weighs each value by its weight.

Oracles: brute-force enumeration of the feasible releases under the weighted objective; SCIP on the
weighted Pyomo Models 1, 2 and 3 (integer), HiGHS on the weighted chord MILP (linear), Clarabel on the
weighted Models 1-R and A2 (QPs); the exchange argument of parametric optimisation (down-weighting a
measurement can never bring the optimum closer to it); and the unweighted algorithms themselves, which
equal weights (powers of two: exact in floating point) must reproduce bit for bit.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pgsr_oracles import brute_force, consistent, small_instances

from dpmodels.core.errors import DataValidationError
from dpmodels.core.facade import solve
from dpmodels.instances.pgsr import random_tree
from dpmodels.pgsr import models as M
from dpmodels.pgsr.algorithms import (
    chain_tables,
    largest_remainder,
    relaxed_values,
    solve_chain,
    solve_cumulative_dp,
    solve_exact,
    solve_hierarchical,
    solve_isotonic,
    solve_topdown_baseline,
)
from dpmodels.pgsr.algorithms.op import solve_hierarchical_op
from dpmodels.pgsr.data import NoisyGroupSizes, chain_cumulative, cumulative
from dpmodels.pgsr.domains import Domains
from dpmodels.pgsr.mechanism import measure
from dpmodels.pgsr.postprocessing import MECHANISMS, postprocess
from dpmodels.pgsr.weights import inverse_variance_weights

#: Weights drawn for cells: 1 / variance for variances 1, 2, 3, 8, 25 and 400 (non-dyadic on purpose).
WEIGHTS = st.sampled_from([1.0, 0.5, 1 / 3, 0.125, 0.04, 0.0025])
#: Seconds a backend may take as an oracle on these tiny models.
LIMIT = 30


def tiers(few: int, many: int) -> list:
    """Draws of a property test: ``few`` in the default tier (about a second), ``many`` in the slow tier."""
    return [pytest.param(few, id=f"{few}-draws"), pytest.param(many, id=f"{many}-draws", marks=pytest.mark.slow)]


@st.composite
def weighted_instances(draw):
    """A tiny instance (:func:`pgsr_oracles.small_instances`) and one drawn weight per cell."""
    data, values = draw(small_instances())
    weights = np.array(draw(st.lists(WEIGHTS, min_size=values.size, max_size=values.size))).reshape(values.shape)
    return data, values, weights


def _noisy(data, values, weights, kind="counts"):
    return NoisyGroupSizes(data.hierarchy, values, data.G, kind, weights=weights)


def _optimal(solver_result):
    assert solver_result.termination_condition.name == "convergenceCriteriaSatisfied"
    return solver_result.incumbent_objective


# ---------------------------------------------------------------- brute force (the tiniest)
@pytest.mark.parametrize("draws", tiers(4, 40))
def test_model_1_algorithms_equal_the_weighted_brute_force(draws):
    @settings(max_examples=draws, deadline=None)
    @given(weighted_instances())
    def check(instance):
        data, values, weights = instance
        noisy = _noisy(data, values, weights)
        best, optima = brute_force(data.hierarchy, values, data.G, "hierarchical", weights=weights)
        for sol in (solve_exact(noisy), solve_hierarchical(noisy, "full")):
            assert sol.objective == pytest.approx(best, abs=1e-9)
            assert any((sol.counts == o).all() for o in optima)
            assert consistent(data.hierarchy, sol.counts, data.G)

    check()


@settings(max_examples=12, deadline=None)
@given(weighted_instances())
def test_chain_dp_and_pava_equal_the_weighted_brute_force(instance):
    data, values, weights = instance
    h = data.hierarchy
    chain = chain_cumulative(h, values)
    noisy = _noisy(data, chain, weights, "chain")
    best, optima = brute_force(h, chain, data.G, "chain", weights=weights)
    for method in ("dp", "pava"):
        sol = solve_chain(noisy, method=method)
        assert sol.objective == pytest.approx(best, abs=1e-9)
        assert any((sol.counts == o).all() for o in optima)
    last_lo, last = chain_tables(noisy, Domains.full(noisy))[-1]
    assert last[data.G - last_lo] == pytest.approx(best, abs=1e-9)  # the readable reference tables agree


@pytest.mark.parametrize("draws", tiers(2, 12))
def test_model_1_by_sub_model_solves_equals_the_weighted_brute_force(draws):
    @settings(max_examples=draws, deadline=None)
    @given(weighted_instances())
    def check(instance):
        data, values, weights = instance
        best, _ = brute_force(data.hierarchy, values, data.G, "hierarchical", weights=weights)
        assert solve_hierarchical_op(_noisy(data, values, weights)).objective == pytest.approx(best, abs=1e-7)

    check()


# ---------------------------------------------------------------- the same weighted Pyomo model, other solvers
@pytest.mark.parametrize("draws", tiers(3, 25))
def test_weighted_model_1_plugins_equal_scip_and_highs_on_the_same_model(draws):
    @settings(max_examples=draws, deadline=None)
    @given(weighted_instances())
    def check(instance):
        data, values, weights = instance
        noisy = _noisy(data, values, weights)
        reference = _optimal(solve(M.build_hierarchical_qip(noisy), "scip", time_limit=LIMIT))
        for solver in ("pgsr_dp", "pgsr_dp_op"):
            assert _optimal(solve(M.build_hierarchical_qip(noisy), solver)) == pytest.approx(reference, abs=1e-6)
        milp = M.build_hierarchical_milp(noisy)
        assert _optimal(solve(milp, "highs", time_limit=LIMIT)) == pytest.approx(reference, abs=1e-6)
        assert _optimal(solve(M.build_hierarchical_milp(noisy), "pgsr_dp")) == pytest.approx(reference, abs=1e-6)

    check()


@pytest.mark.parametrize("draws", tiers(4, 25))
def test_weighted_relaxation_equals_clarabel_on_model_1r(draws):
    @settings(max_examples=draws, deadline=None)
    @given(weighted_instances())
    def check(instance):
        data, values, weights = instance
        noisy = _noisy(data, values, weights)
        x = relaxed_values(noisy)
        reference = _optimal(solve(M.build_hierarchical_qip(noisy, relax=True), "clarabel", time_limit=LIMIT))
        assert noisy.squared_error(x) == pytest.approx(reference, rel=1e-6, abs=1e-6)
        assert _optimal(solve(M.build_hierarchical_qip(noisy, relax=True), "pgsr_relax")) == pytest.approx(
            reference, rel=1e-6, abs=1e-6
        )
        assert np.abs(data.hierarchy.consistency_residual(x)).max(initial=0) < 1e-7 and x[0].sum() == pytest.approx(
            data.G
        )

    check()


@settings(max_examples=8, deadline=None)
@given(weighted_instances())
def test_weighted_isotonic_pava_equals_clarabel_on_model_a2(instance):
    data, values, weights = instance
    noisy = _noisy(data, cumulative(values), weights, "cumulative")
    iso = solve_isotonic(noisy)
    reference = _optimal(solve(M.build_isotonic_qp(noisy), "clarabel", time_limit=LIMIT))
    assert noisy.squared_error(iso) == pytest.approx(reference, rel=1e-6, abs=1e-6)
    assert _optimal(solve(M.build_isotonic_qp(noisy), "isotonic_pava")) == pytest.approx(reference, rel=1e-6, abs=1e-6)
    assert (np.diff(iso, axis=1) >= 0).all()


@settings(max_examples=8, deadline=None)
@given(weighted_instances())
def test_weighted_chain_plugin_equals_scip_on_model_3(instance):
    data, values, weights = instance
    noisy = _noisy(data, chain_cumulative(data.hierarchy, values), weights, "chain")
    reference = _optimal(solve(M.build_chain_qip(noisy), "scip", time_limit=LIMIT))
    assert _optimal(solve(M.build_chain_qip(noisy), "pgsr_chain")) == pytest.approx(reference, abs=1e-6)


@pytest.mark.parametrize("draws", tiers(3, 20))
def test_algorithm_2_with_region_weights_is_feasible_and_never_below_scip(draws):
    """M_c^dp is a heuristic for Model 2: its weighted objective can never beat the exact optimum."""

    @settings(max_examples=draws, deadline=None)
    @given(small_instances(), st.integers(0, 10**6))
    def check(instance, seed):
        data, values = instance
        rng = np.random.default_rng(seed)
        weights = np.repeat(rng.choice([1.0, 0.25, 0.04], size=(data.hierarchy.n_regions, 1)), data.N, axis=1)
        noisy = _noisy(data, cumulative(values), weights, "cumulative")
        sol = solve_cumulative_dp(noisy, "full")
        assert consistent(data.hierarchy, sol.counts, data.G)
        best = _optimal(solve(M.build_cumulative_qip(noisy), "scip", time_limit=LIMIT))
        assert sol.objective >= best - 1e-6
        assert sol.objective == pytest.approx(noisy.squared_error(cumulative(sol.counts)))
        model = M.build_cumulative_qip(noisy)
        result = solve(model, "pgsr_cdp")
        assert result.incumbent_objective == pytest.approx(sol.objective) and result.solution_status.name == "feasible"

    check()


def test_algorithm_2_refuses_weights_that_vary_within_a_region(running_example, f2_noisy):
    weights = np.ones(f2_noisy.shape)
    weights[1, 2] = 0.5
    noisy = NoisyGroupSizes(running_example.hierarchy, cumulative(f2_noisy), 6, "cumulative", weights=weights)
    with pytest.raises(DataValidationError, match="weights.*region 'GA' differ between sizes"):
        solve_cumulative_dp(noisy, "full")
    with pytest.raises(DataValidationError, match="weights"):
        postprocess("M_c^dp", noisy, domains="full")
    assert solve_isotonic(noisy).shape == f2_noisy.shape  # PAVA takes any weight per cell


# ---------------------------------------------------------------- properties
@pytest.mark.parametrize("draws", tiers(4, 30))
def test_weights_scaled_by_a_constant_keep_the_argmin(draws):
    """The solution under ``c w`` is optimal under ``w`` (ties may pick another optimum)."""

    @settings(max_examples=draws, deadline=None)
    @given(weighted_instances(), st.sampled_from([1e-2, 3.7, 1e3]))
    def check(instance, factor):
        data, values, weights = instance
        h = data.hierarchy
        noisy, scaled = _noisy(data, values, weights), _noisy(data, values, factor * weights)
        best = solve_exact(noisy).objective
        assert noisy.squared_error(solve_exact(scaled).counts) == pytest.approx(best, abs=1e-9)
        chain, chain_scaled = (
            _noisy(data, chain_cumulative(h, values), w, "chain") for w in (weights, factor * weights)
        )
        assert chain.squared_error(solve_chain(chain_scaled).chain) == pytest.approx(
            solve_chain(chain).objective, abs=1e-9
        )
        iso, iso_scaled = (_noisy(data, cumulative(values), w, "cumulative") for w in (weights, factor * weights))
        np.testing.assert_allclose(solve_isotonic(iso_scaled), solve_isotonic(iso), atol=1e-9)

    check()


def _distances(noisy, estimate, picked):
    """Unweighted squared distance of ``estimate`` to the picked cells' values and to the others'."""
    squared = (estimate - noisy.values) ** 2
    return squared[picked].sum(), squared[~picked].sum()


@pytest.mark.parametrize("draws", tiers(6, 40))
def test_a_noisier_measurement_pulls_the_estimate_less(draws):
    """Down-weighting some cells 100-fold (variance x 100) never brings the optimum closer to them,
    nor farther from the others: if ``x_1`` minimises ``f + w_1 g`` and ``x_2`` minimises ``f + w_2 g``
    with ``w_1 > w_2``, adding the two optimality inequalities gives ``g(x_1) <= g(x_2)``.  A weight
    applied the wrong way round (or not at all, where it matters) fails it."""

    @settings(max_examples=draws, deadline=None)
    @given(small_instances(), st.integers(0, 10**6))
    def check(instance, seed):
        data, values = instance
        picked = np.random.default_rng(seed).random(values.shape) < 0.4
        weights = np.where(picked, 0.01, 1.0)
        for kind, transform, run in (
            ("counts", lambda v: v, lambda n: solve_hierarchical(n, "full").counts),
            ("counts", lambda v: v, relaxed_values),
            ("chain", lambda v: chain_cumulative(data.hierarchy, v), lambda n: solve_chain(n).chain),
            ("cumulative", cumulative, solve_isotonic),
        ):
            plain = NoisyGroupSizes(data.hierarchy, transform(values), data.G, kind)
            noisier = plain.with_weights(weights)
            near_plain, rest_plain = _distances(plain, run(plain), picked)
            near_noisier, rest_noisier = _distances(plain, run(noisier), picked)
            assert near_noisier >= near_plain - 1e-7
            assert rest_noisier <= rest_plain + 1e-7

    check()


def test_two_measurements_of_one_count_meet_nearer_the_precise_one():
    """A root with one child: both measure the same counts; the estimate follows the precise one."""
    from dpmodels.core.hierarchy import Hierarchy

    h = Hierarchy.from_parent_table({"R": None, "C": "R"})
    values = np.array([[10.0, 30.0], [30.0, 10.0]])  # root says (10, 30), child says (30, 10); G = 40
    for precise, noisy_row in ((0, 1), (1, 0)):
        weights = np.ones(values.shape)
        weights[noisy_row] = 1 / 100
        noisy = NoisyGroupSizes(h, values, 40, weights=weights)
        for estimate in (solve_exact(noisy).counts, relaxed_values(noisy)):
            assert np.abs(estimate[0] - values[precise]).sum() < np.abs(estimate[0] - values[noisy_row]).sum()
        assert np.abs(solve_exact(noisy).counts[0] - values[precise]).max() <= 1  # 100:1 pulls it within a unit


# ---------------------------------------------------------------- equal weights change nothing
def _at(noisy, counts) -> float:
    """The unweighted objective of ``noisy``'s model at released ``counts``."""
    if noisy.kind == "cumulative":
        return noisy.squared_error(cumulative(counts))
    if noisy.kind == "chain":
        return noisy.squared_error(chain_cumulative(noisy.hierarchy, counts))
    return noisy.squared_error(counts)


def _kinds(data, counts_values, epsilon=None, seed=0) -> dict:
    """The three measured vectors of one instance: F2's values with scale-2 levels, or measured at ``epsilon``."""
    if epsilon is not None:
        return {kind: measure(data, epsilon, kind, rng=seed)[0] for kind in ("counts", "cumulative", "chain")}
    h = data.hierarchy
    values = {"counts": counts_values, "cumulative": cumulative(counts_values)}
    values["chain"] = chain_cumulative(h, counts_values)
    scales = (Fraction(2),) * h.n_levels  # the truncated domains every mechanism uses by default
    return {kind: NoisyGroupSizes(h, v, data.G, kind, scales) for kind, v in values.items()}


def _check_equal_weights(noisy_of_kind, name):
    """Powers of two scale every floating-point step exactly: the same counts, the objective times the
    weight.  A MIP solver (SCIP in M_H and M_c, HiGHS in M_dp^OP's sub-models) may return another optimum
    of a tie: its counts are then optimal unweighted too."""
    plain_noisy = noisy_of_kind[MECHANISMS[name].kind]
    plain = postprocess(name, plain_noisy)
    for scale in (0.25,) if name == "M_dp^OP" else (1.0, 0.25, 8.0):  # one HiGHS solve per table entry: slow
        weighted = postprocess(name, plain_noisy.with_weights(np.full(plain_noisy.values.shape, scale)))
        if plain.solver in ("scip", "pgsr_dp_op"):
            assert _at(plain_noisy, weighted.counts) == pytest.approx(_at(plain_noisy, plain.counts), abs=1e-6)
        else:
            assert np.array_equal(plain.counts, weighted.counts)
        if plain.solver in ("scip", "clarabel", "pgsr_dp_op"):
            assert weighted.objective == pytest.approx(scale * plain.objective, rel=1e-6, abs=1e-6)
        else:
            assert weighted.objective == scale * plain.objective


@pytest.mark.parametrize("name", list(MECHANISMS))
def test_equal_weights_give_the_unweighted_release(running_example, f2_noisy, name):
    _check_equal_weights(_kinds(running_example, f2_noisy), name)


@pytest.mark.slow
@pytest.mark.parametrize("name", list(MECHANISMS))
def test_equal_weights_give_the_unweighted_release_on_measured_trees(name):
    for seed in range(3):
        _check_equal_weights(_kinds(random_tree(seed=seed, depth=3, N=3, G=12), None, 1.0, seed), name)


@settings(max_examples=5, deadline=None)
@given(st.integers(0, 10**6), st.sampled_from([0.5, 3.0]))
def test_equal_weights_reproduce_the_compiled_kernels_bit_for_bit(seed, epsilon):
    """On measured trees (float truncations, wide domains): ones as weights run the same floating-point
    operations as no weights, so relaxation, windows, tables, chain and PAVA give identical arrays."""
    data = random_tree(seed=seed, depth=3, N=4, G=40)
    noisy, _ = measure(data, epsilon, "counts", rng=seed)
    ones = noisy.with_weights(np.ones(noisy.values.shape))
    assert relaxed_values(ones).tobytes() == relaxed_values(noisy).tobytes()
    for solver in (solve_exact, solve_hierarchical):
        a, b = solver(noisy, "truncated", None, "widen"), solver(ones, "truncated", None, "widen")
        assert np.array_equal(a.counts, b.counts) and a.objective == b.objective
    chain, _ = measure(data, epsilon, "chain", rng=seed)
    for method in ("dp", "pava"):
        a = solve_chain(chain, "truncated", None, "widen", method)
        b = solve_chain(chain.with_weights(np.ones(chain.values.shape)), "truncated", None, "widen", method)
        assert np.array_equal(a.chain, b.chain) and a.objective == b.objective
    base = solve_topdown_baseline(noisy)
    assert np.array_equal(base.counts, solve_topdown_baseline(ones).counts)


# ---------------------------------------------------------------- building blocks
@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 6, allow_nan=False), WEIGHTS), min_size=1, max_size=6), st.integers(0, 6))
def test_weighted_largest_remainder_is_the_nearest_rounding(cells, raises):
    """Against enumeration of every rounding (each entry to its floor or the next integer) with the
    column's total: none is nearer in ``sum w |y - x|``, nor in ``sum w (y - x)^2``."""
    import itertools

    x = np.array([c[0] for c in cells])
    w = np.array([c[1] for c in cells])
    floors = np.floor(x).astype(np.int64)
    total = int(floors.sum()) + min(raises, len(x))
    y = largest_remainder(x[:, None], np.array([total]), w[:, None])[:, 0]
    assert y.sum() == total and ((y == floors) | (y == floors + 1)).all()
    for power in (1, 2):
        cost = float((w * np.abs(y - x) ** power).sum())
        for raised in itertools.product((0, 1), repeat=len(x)):
            other = floors + np.array(raised)
            if other.sum() == total:
                assert cost <= float((w * np.abs(other - x) ** power).sum()) + 1e-9


def test_weights_are_checked_by_name(running_example, f2_noisy):
    h = running_example.hierarchy
    for bad, message in (
        (np.zeros(f2_noisy.shape), "finite and > 0"),
        (np.full(f2_noisy.shape, np.nan), "finite and > 0"),
        (-np.ones(f2_noisy.shape), "region 'US', size 1"),
        (np.ones((2, 5)), "shape"),
    ):
        with pytest.raises(DataValidationError, match=message) as err:
            NoisyGroupSizes(h, f2_noisy, 6, weights=bad)
        assert err.value.field == "weights"
    frame = NoisyGroupSizes(h, f2_noisy, 6).to_frame().drop(columns="level")
    frame.loc[:, :] = np.arange(1.0, 16.0).reshape(3, 5)
    shuffled = NoisyGroupSizes(h, f2_noisy, 6, weights=frame.iloc[::-1])  # read by its labels
    np.testing.assert_array_equal(shuffled.weights, np.arange(1.0, 16.0).reshape(3, 5))


def test_inverse_variance_weights():
    assert inverse_variance_weights([4.0, 4.0]) is None
    np.testing.assert_array_equal(inverse_variance_weights([[2.0, 8.0], [4.0, 2.0]]), [[1, 0.25], [0.5, 1]])
    for bad in ([1.0, 0.0], [np.inf, 1.0], []):
        with pytest.raises(DataValidationError, match="variance"):
            inverse_variance_weights(bad)
