"""Greedy, continuous greedy and rounding on the trap instance and random instances (spec 8.1.1, 8.3.3, 8.4)."""

import numpy as np
import pytest

import dpmodels
from dpmodels import instances
from dpmodels.core.errors import DataValidationError
from dpmodels.submodular.accounting import NonPrivateComponentError, PrivacyAccountant
from dpmodels.submodular.algorithms import (
    brute_force_opt,
    continuous_greedy,
    greedy,
    k_greedy,
    lp_direction,
    pipage_rounding,
    swap_rounding,
)
from dpmodels.submodular.bounds import continuous_greedy_discrete_bound
from dpmodels.submodular.matroids import PartitionMatroid
from dpmodels.submodular.models import build_coverage_milp
from dpmodels.submodular.objectives import gradient, multilinear

EXACT = {"mip_rel_gap": 0.0}  # prove optimality, not HiGHS's default 1e-4 gap


@pytest.fixture(scope="module")
def trap():
    return instances.load("submodular/trap")


def test_trap_greedy_is_055_opt_and_continuous_greedy_beats_it(trap):
    F, M = trap.function, trap.matroid
    g = greedy(F, M)
    assert g.order == [0, 2] and g.value == pytest.approx(1.1) and g.value / 2.0 == pytest.approx(0.55)
    cg = continuous_greedy(F, M, T=2, seed=0)
    assert np.allclose(cg.x, [0.5, 0.5, 1.0]) and cg.value == pytest.approx(1.55, abs=1e-12)
    assert cg.value / 2.0 >= 0.775 - 1e-12
    for T, expected in [(4, 1.775), (10, 1.82), (100, 1.901), (1000, 1.9091)]:
        res = continuous_greedy(F, M, T=T, rounding="none")
        assert res.value == pytest.approx(expected, abs=1e-9)
        assert np.array_equal(res.x, np.sum(res.directions, axis=0) / T)  # no x + y/T drift (review F8)


def test_lp_direction_equals_matroid_greedy_along_the_run(trap):
    F, M = trap.function, trap.matroid
    w = gradient(F, np.zeros(3))
    assert np.allclose(lp_direction(M, w), [1, 0, 1])  # spec: LP at x = 0 gives (1, 0, 1), value 2.1
    a = continuous_greedy(F, M, T=10, direction="greedy", rounding="none")
    b = continuous_greedy(F, M, T=10, direction="highs", rounding="none")
    assert M.contains(b.x) and all(M.is_independent(y > 0.5) for y in b.directions)
    for t in range(10):
        x = np.sum(a.directions[:t], axis=0) / 10 if t else np.zeros(3)
        w = gradient(F, x)
        assert w @ lp_direction(M, w) == pytest.approx(w @ M.max_weight_base(w), abs=1e-9)


def test_swap_rounding_of_the_trap_gives_each_base_with_probability_half(trap):
    F, M = trap.function, trap.matroid
    bases = M.bases()
    rng = np.random.default_rng(0)
    runs = 2000
    values = np.array([F(swap_rounding(M, bases, [0.5, 0.5], rng)) for _ in range(runs)])
    se = values.std() / np.sqrt(runs)
    assert abs(values.mean() - 1.55) <= 3 * se + 1e-12


def test_rounding_preserves_marginals_on_the_spec_partition_example():
    M = PartitionMatroid([0, 0, 1, 1, 1], [1, 2])
    x = np.array([0.4, 0.6, 0.8, 0.5, 0.7])
    rng = np.random.default_rng(1)
    runs = 2000
    from dpmodels.submodular.rounding import decompose

    bases, coef = decompose(M, [x])
    swap = np.array([swap_rounding(M, bases, coef, rng) for _ in range(runs)])
    pipage = np.array([pipage_rounding(M, x, rng) for _ in range(runs)])
    for S in (swap, pipage):
        assert all(M.is_independent(s) and s.sum() == M.r for s in S)
        se = np.sqrt(x * (1 - x) / runs)
        assert np.all(np.abs(S.mean(axis=0) - x) <= 3.5 * se)


@pytest.mark.parametrize("kind", ["uniform", "partition", "graphic"])
def test_ratio_against_the_milp_on_random_instances(kind):
    """E[F(S)] >= (1 - 1/e - tol) OPT on average; f(x_T) meets the discrete bound deterministically."""
    ratios = []
    rank = 4 if kind == "graphic" else 3
    for seed in range(6):
        inst = instances.generate(
            "submodular/coverage", seed=seed, n=10, users=25, degree=2.0, rank=rank, matroid=kind, blocks=3
        )
        F, M = inst.function, inst.matroid
        opt = dpmodels.solve(build_coverage_milp(F, M), "highs", options=EXACT).incumbent_objective
        T = M.r**2
        cg = continuous_greedy(F, M, T=T, seed=seed)
        bound = continuous_greedy_discrete_bound(opt, T, M.r, F.max_value)
        assert bound == pytest.approx((1 - (1 - 1 / T) ** T) * opt - F.max_value * M.r**2 / (2 * T))
        assert cg.value >= bound - 1e-9
        rng = np.random.default_rng(seed)
        bases = [d > 0.5 for d in cg.directions]
        mean = np.mean([F(swap_rounding(M, bases, cg.coefficients, rng)) for _ in range(200)])
        ratios.append(mean / opt)
        assert greedy(F, M).value >= 0.5 * opt - 1e-9
    assert np.mean(ratios) >= 1 - 1 / np.e - 0.02


def test_k_greedy_on_example_2():
    ex = instances.load("submodular/k-coverage-example")
    res = k_greedy(ex.function, ex.matroid)
    assert res.order == [(2, 2), (1, 2)] and res.value == 5.0
    assert res.calls == 1 + sum(2 * lam for lam in (3, 2))  # F(0), then k |Lambda_t| gains per step


def test_non_private_components_are_refused_in_private_mode(trap):
    acc = PrivacyAccountant(private=True)
    for run in (
        lambda: greedy(trap.function, trap.matroid, accountant=acc),
        lambda: continuous_greedy(trap.function, trap.matroid, accountant=acc),
    ):
        with pytest.raises(NonPrivateComponentError, match="refused in private mode"):
            run()
    assert greedy(trap.function, trap.matroid, accountant=acc, diagnostic=True).value == pytest.approx(1.1)
    assert acc.diagnostics == ["greedy"] and acc.steps == 0


def test_bad_inputs(trap):
    other = instances.generate("submodular/coverage", n=5, rank=2)
    with pytest.raises(DataValidationError, match="matroid"):
        greedy(trap.function, other.matroid)
    with pytest.raises(DataValidationError, match="T"):
        continuous_greedy(trap.function, trap.matroid, T=0)
    with pytest.raises(DataValidationError, match="samples"):
        continuous_greedy(trap.function, trap.matroid, gradient_mode="sampled")
    assert brute_force_opt(trap.function, trap.matroid)[0] == pytest.approx(2.0)
    assert multilinear(trap.function, np.ones(3)) == pytest.approx(2.1)


def test_swap_rounding_expectation_dominates_the_relaxation():
    """E[F(S)] >= f(x_T) - 3 se over 2000 roundings, marginals within 3 se (spec 8.3.3)."""
    inst = instances.generate("submodular/coverage", seed=8, n=8, users=20, degree=2.0, rank=3, matroid="uniform")
    F, M = inst.function, inst.matroid
    cg = continuous_greedy(F, M, T=9, rounding="none")
    bases = [d > 0.5 for d in cg.directions]
    rng = np.random.default_rng(0)
    S = np.array([swap_rounding(M, bases, cg.coefficients, rng) for _ in range(2000)])
    values = np.array([F(s) for s in S])
    assert values.mean() >= cg.value - 3 * values.std() / np.sqrt(len(values))
    se = np.sqrt(cg.x * (1 - cg.x) / len(S)) + 1e-12
    assert np.all(np.abs(S.mean(axis=0) - cg.x) <= 3.5 * se)
