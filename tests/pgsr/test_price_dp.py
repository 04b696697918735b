"""The price oracle of Model 1 against brute force, the table DP and the window solver."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pgsr_oracles import brute_force, consistent, small_instances
from pgsr_prices import solve_by_prices

from dpmodels.core.errors import DataValidationError
from dpmodels.instances.pgsr import random_tree
from dpmodels.pgsr.algorithms.hierarchical import solve_hierarchical
from dpmodels.pgsr.algorithms.window import solve_exact
from dpmodels.pgsr.data import NoisyGroupSizes
from dpmodels.pgsr.domains import resolve_domains
from dpmodels.pgsr.mechanism import measure


@given(small_instances())
def test_prices_reach_the_brute_force_optimum(instance):
    data, values = instance
    counts, objective = solve_by_prices(NoisyGroupSizes(data.hierarchy, values, data.G))
    best, optima = brute_force(data.hierarchy, values, data.G, "hierarchical")
    assert objective == pytest.approx(best, abs=1e-9)
    assert any((counts == o).all() for o in optima)
    assert consistent(data.hierarchy, counts, data.G)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10**6), st.integers(2, 4), st.integers(1, 4), st.integers(2, 30), st.sampled_from([0.3, 1.0]))
def test_prices_equal_the_table_dp_on_full_and_truncated_domains(seed, depth, N, G, epsilon):
    """Deeper trees and larger G than brute force reaches; the truncated domains are the paper's
    (widened when infeasible), the full ones [0, G]; the full optimum is never above the truncated one."""
    data = random_tree(seed=seed, depth=depth, N=N, G=G)
    noisy, _ = measure(data, epsilon, "counts", rng=seed)
    full_counts, full = solve_by_prices(noisy, "full")
    assert full == pytest.approx(solve_hierarchical(noisy, "full").objective, abs=1e-9)
    assert full == pytest.approx(solve_exact(noisy, "full").objective, abs=1e-9)
    truncated = resolve_domains(noisy, "truncated", None, "widen")
    counts, objective = solve_by_prices(noisy, truncated)
    assert objective == pytest.approx(solve_hierarchical(noisy, truncated).objective, abs=1e-9)
    assert full <= objective + 1e-9
    assert consistent(data.hierarchy, counts, data.G) and consistent(data.hierarchy, full_counts, data.G)
    assert (counts >= truncated.lo).all() and (counts <= truncated.hi).all()


def test_non_integer_noisy_values_are_refused():
    data = random_tree(seed=0)
    with pytest.raises(DataValidationError, match="integer noisy values"):
        solve_by_prices(NoisyGroupSizes(data.hierarchy, data.counts + 0.5, data.G))
