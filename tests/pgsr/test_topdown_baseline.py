"""The TopDown baseline of Table 7 (spec 3.8): each step against an independent oracle.

Projections against HiGHS solving the same QP as a Pyomo model (and the KKT conditions),
roundings against enumeration of every {floor, floor + 1} vector, and whole releases
re-checked top-down with those oracles; plus the PGSR invariants on random hierarchies.
"""

import inspect
import itertools

import numpy as np
import pyomo.environ as pyo
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from pyomo.contrib.solver.common.factory import SolverFactory

from dpmodels.core.errors import DataValidationError
from dpmodels.core.metrics import release_metrics
from dpmodels.instances.pgsr import random_tree
from dpmodels.pgsr.algorithms.topdown_baseline import largest_remainder, project_simplex, solve_topdown_baseline
from dpmodels.pgsr.data import NoisyGroupSizes
from dpmodels.pgsr.mechanism import measure, run_mechanism
from dpmodels.pgsr.postprocessing import MECHANISMS, postprocess


# ---------------------------------------------------------------------- oracles
def highs_projection(values: np.ndarray, total: float) -> np.ndarray:
    """``argmin ||x - values||^2`` s.t. ``x >= 0``, ``sum x = total`` by HiGHS on a Pyomo QP."""
    m = pyo.ConcreteModel()
    m.I = pyo.RangeSet(0, len(values) - 1)
    m.x = pyo.Var(m.I, domain=pyo.NonNegativeReals)
    m.sum = pyo.Constraint(expr=sum(m.x[i] for i in m.I) == total)
    m.obj = pyo.Objective(expr=sum((m.x[i] - float(values[i])) ** 2 for i in m.I))
    # no proximal regularisation: HiGHS's default (1e-7) moved x_0 of (0, 41) -> 41 to 1.025e-6
    res = SolverFactory("highs").solve(m, solver_options={"qp_regularization_value": 0.0})
    assert res.termination_condition.name == "convergenceCriteriaSatisfied"
    return np.array([pyo.value(m.x[i]) for i in m.I])


def brute_force_rounding(x: np.ndarray, total: int) -> tuple[float, list[np.ndarray]]:
    """Least L1 distance over every integer vector in the box [floor x - 1, ceil x + 1] summing to
    ``total`` (a box wider than largest remainder's, so it also tests that its box suffices),
    and the optimal vectors, in the order that raises earlier entries first."""
    lo = np.floor(x - 1e-7).astype(int) - 1
    best, optima = np.inf, []
    for steps in itertools.product(range(4), repeat=len(x)):
        y = lo + np.array(steps)
        if (y < 0).any() or y.sum() != total:
            continue
        cost = float(np.abs(y - x).sum())
        if cost < best - 1e-9:
            best, optima = cost, [y]
        elif cost <= best + 1e-9:
            optima.append(y)
    return best, sorted(optima, key=lambda y: tuple(-y))


def assert_pgsr_feasible(h, counts, G):
    assert np.issubdtype(counts.dtype, np.integer)
    assert (counts >= 0).all()
    assert not h.consistency_residual(counts).any()
    assert counts[0].sum() == G


# ---------------------------------------------------------------------- the projection
@settings(max_examples=40)
@given(
    st.lists(st.integers(-40, 80), min_size=1, max_size=7),
    st.integers(0, 60),
    st.sampled_from([1.0, 4.0]),
)
@example(values=[0, 41], total=41, denominator=1.0)
def test_projection_equals_highs_and_satisfies_kkt(values, total, denominator):
    m = np.array(values) / denominator  # integers, or quarters
    x = project_simplex(m[:, None], np.array([total]))[:, 0]
    np.testing.assert_allclose(x, highs_projection(m, total), atol=1e-6)
    assert (x >= 0).all() and x.sum() == pytest.approx(total)
    lam = (m - x)[x > 0]  # KKT: x = m - lam where positive, m <= lam where zero
    if len(lam):
        assert np.ptp(lam) < 1e-9
        assert (m[x == 0] <= lam[0] + 1e-9).all()


def test_projection_is_column_wise():
    m = np.array([[3.0, -1.0], [1.0, 5.0], [0.0, 2.0]])
    x = project_simplex(m, np.array([2.0, 9.0]))
    np.testing.assert_allclose(x[:, 0], highs_projection(m[:, 0], 2.0), atol=1e-6)
    np.testing.assert_allclose(x[:, 1], highs_projection(m[:, 1], 9.0), atol=1e-6)


# ---------------------------------------------------------------------- the rounding
@st.composite
def fractional_columns(draw):
    """Quarter-valued non-negative columns summing to an integer (remainders tie often)."""
    k = draw(st.integers(1, 6))
    quarters = draw(st.lists(st.integers(0, 40), min_size=k, max_size=k))
    quarters[-1] += -sum(quarters) % 4  # the column sums to a whole number, as a projection does
    x = np.array(quarters) / 4.0
    return x, int(x.sum())


@given(fractional_columns())
def test_largest_remainder_equals_brute_force_with_ties_to_the_smaller_index(column):
    x, total = column
    y = largest_remainder(x[:, None], np.array([total]))[:, 0]
    best, optima = brute_force_rounding(x, total)
    assert y.sum() == total and ((y == np.floor(x)) | (y == np.floor(x) + 1)).all()
    assert float(np.abs(y - x).sum()) == pytest.approx(best)
    np.testing.assert_array_equal(y, optima[0])  # among the optima, the one raising earlier entries


def test_largest_remainder_breaks_float_noise_ties_by_index():
    """Equal remainders computed at different magnitudes (0.7 vs 1e8 + 0.7) still tie."""
    x = np.array([[1e8 + 0.7], [5.7], [0.7]])
    y = largest_remainder(x, np.array([int(1e8) + 5 + 0 + 2]))
    np.testing.assert_array_equal(y[:, 0], [int(1e8) + 1, 6, 0])


def test_largest_remainder_refuses_a_column_that_does_not_sum_to_its_total():
    with pytest.raises(ValueError, match="sum to their totals"):
        largest_remainder(np.array([[0.5], [0.5]]), np.array([5]))


# ---------------------------------------------------------------------- whole releases
@st.composite
def small_hierarchies(draw):
    """A random uniform-depth tree (depth 1-4), N <= 4, G <= 30, integer noise around the truth."""
    depth = draw(st.integers(1, 4))
    data = random_tree(
        seed=draw(st.integers(0, 10**6)),
        depth=depth,
        branching=(1, 3 if depth < 4 else 2),
        N=draw(st.integers(1, 4)),
        G=draw(st.integers(0, 30)),
    )
    noise = draw(st.lists(st.integers(-6, 6), min_size=data.counts.size, max_size=data.counts.size))
    return data, data.counts + np.array(noise).reshape(data.counts.shape)


@given(small_hierarchies())
def test_release_is_integral_consistent_nonnegative_and_sums_to_g(instance):
    data, values = instance
    sol = solve_topdown_baseline(NoisyGroupSizes(data.hierarchy, values, data.G))
    assert_pgsr_feasible(data.hierarchy, sol.counts, data.G)
    metrics = release_metrics(data.hierarchy, data.counts, sol.counts, data.G)
    assert metrics["#CV"] == metrics["#faithfulness"] == metrics["#negative"] == metrics["#non-integral"] == 0
    assert sol.objective == pytest.approx(float(((sol.counts - values) ** 2).sum()))


@settings(max_examples=12)
@given(small_hierarchies())
def test_every_step_is_a_projection_then_an_l1_nearest_rounding(instance):
    """Replay the release top-down with HiGHS projections and enumerated roundings."""
    data, values = instance
    h = data.hierarchy
    y = solve_topdown_baseline(NoisyGroupSizes(h, values, data.G)).counts
    steps = [(values[0], y[0], data.G)]  # (noisy, released, total) per projected vector
    for parent in h.internal:
        kids = h.children(parent)
        steps += [(values[kids, s], y[kids, s], y[parent, s]) for s in range(data.N)]
    for noisy, released, total in steps:
        x = highs_projection(noisy, total)
        best, _ = brute_force_rounding(x, int(total))
        assert float(np.abs(released - x).sum()) == pytest.approx(best, abs=1e-5)


def test_worked_example_f2(f2_noisy):
    """Spec 4.8 F2 by hand: the root [2,1,4,0,-2] projects onto sum 6 at lam = 1/3 to
    [5/3, 2/3, 11/3, 0, 0]; its three equal remainders raise sizes 1 and 2.  The children
    then split each size: s=1 [3,0] -> [2,0], s=2 [-1,2] -> [0,1], s=3 [2,1] -> [2,1],
    s=4 [1,-1] -> [0,0] (the parent has 0)."""
    from dpmodels.core.hierarchy import Hierarchy

    h = Hierarchy.from_parent_table({"US": None, "GA": "US", "NY": "US"})
    sol = solve_topdown_baseline(NoisyGroupSizes(h, f2_noisy, 6))
    np.testing.assert_array_equal(sol.counts, [[2, 1, 3, 0, 0], [2, 0, 2, 0, 0], [0, 1, 1, 0, 0]])
    assert sol.objective == float(((sol.counts - f2_noisy) ** 2).sum()) == 11.0  # 5 + 3 + 3 by rows


def test_ties_between_children_go_to_the_earlier_child():
    from dpmodels.core.hierarchy import Hierarchy

    h = Hierarchy.from_parent_table({"R": None, "A": "R", "B": "R", "C": "R"})
    values = np.array([[4.0], [1.0], [1.0], [1.0]])  # children 1/3 short each of the parent's 4
    sol = solve_topdown_baseline(NoisyGroupSizes(h, values, 4))
    np.testing.assert_array_equal(sol.counts[:, 0], [4, 2, 1, 1])


# ---------------------------------------------------------------------- the mechanism
def test_registered_as_a_counts_mechanism_that_only_sees_noisy_values():
    spec = MECHANISMS["TopDown"]
    assert spec.kind == "counts" and spec.options == []
    assert list(inspect.signature(spec.post).parameters) == ["noisy"]


def test_release_is_a_function_of_the_noisy_values_and_g():
    """Post-processing: a copy of the noisy input gives the same release, and the public G
    is what the root sums to (a G the truth does not have is followed)."""
    data = random_tree(seed=1, depth=3, N=3, G=20)
    noisy, _ = measure(data, 1.0, "counts", rng=0)
    first = postprocess("TopDown", noisy).counts
    again = postprocess("TopDown", NoisyGroupSizes(noisy.hierarchy, noisy.values.copy(), noisy.G)).counts
    np.testing.assert_array_equal(first, again)
    other = postprocess("TopDown", NoisyGroupSizes(noisy.hierarchy, noisy.values, 35)).counts
    assert other[0].sum() == 35


def test_end_to_end_on_the_taxi_shape():
    from dpmodels.instances.pgsr import taxi_like

    data = taxi_like(seed=2, scale=0.1, N=8)
    run = run_mechanism("TopDown", data, 0.5, seed=3)
    assert run.epsilon_spent == pytest.approx(0.5)
    assert run.noisy.level_scales == tuple(2 * data.L / run.epsilon for _ in range(data.L))  # M_H's noise
    assert run.release.status == "feasible" and run.release.seconds > 0
    assert_pgsr_feasible(data.hierarchy, run.release.counts, data.G)


def test_refuses_other_measurements():
    data = random_tree(seed=0, depth=2, N=2, G=5)
    noisy, _ = measure(data, 1.0, "cumulative", rng=0)
    with pytest.raises(DataValidationError, match="needs 'counts'"):
        postprocess("TopDown", noisy)
