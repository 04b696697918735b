"""Exponential mechanism, Algorithms 1-4, Mitrovic's greedy, the exact privacy audit (spec 8.2, 8.3, 8.4)."""

import math

import numpy as np
import pytest
from scipy.stats import chisquare

from dpmodels import instances
from dpmodels.core.errors import DataValidationError, PrivacyParameterError
from dpmodels.submodular.accounting import PrivacyAccountant, alg2_step_epsilon
from dpmodels.submodular.algorithms import continuous_greedy, greedy, k_greedy
from dpmodels.submodular.matroids import UniformMatroid
from dpmodels.submodular.mechanism.continuous import (
    alg2_sample_size,
    improved_private_continuous_greedy,
    private_continuous_greedy,
)
from dpmodels.submodular.mechanism.exponential import em_choice, em_probabilities
from dpmodels.submodular.mechanism.greedy import (
    alg4_subset_size,
    mitrovic_private_greedy,
    private_k_greedy,
    private_k_greedy_sampled,
)
from dpmodels.submodular.objectives import multilinear
from dpmodels.submodular.privacy_audit import alg1_distribution, alg3_distribution, privacy_loss


@pytest.fixture(scope="module")
def trap():
    return instances.load("submodular/trap")


@pytest.fixture(scope="module")
def ex2():
    return instances.load("submodular/k-coverage-example")


def test_em_probabilities_and_sampler():
    p = em_probabilities([2, 1, 2, 2, 1, 3], 0.5)  # spec 8.4 Example 2, step 1, eps = 1
    assert np.round(p, 4).tolist() == [0.1706, 0.1035, 0.1706, 0.1706, 0.1035, 0.2813]
    rng = np.random.default_rng(0)
    draws = 5000
    counts = np.bincount([em_choice([2, 1, 2, 2, 1, 3], 0.5, rng)[0] for _ in range(draws)], minlength=6)
    assert chisquare(counts, p * draws).pvalue > 1e-3
    assert np.allclose(em_probabilities([1, 5, 5], 0.0), 1 / 3)
    assert em_choice([1, 5, 5], math.inf, rng)[0] == 1  # argmax, lowest index on ties


def test_em_utility_tail():
    q = np.random.default_rng(1).random(50) * 10
    beta, inv_temp = 0.05, 0.7
    p = em_probabilities(q, inv_temp)
    gap = q.max() - math.log(q.size / beta) / inv_temp
    assert p[q < gap].sum() <= beta


@pytest.mark.parametrize(("eps", "realised"), [(0.1, 0.102), (0.5, 0.553), (1.0, 1.205)])
def test_exact_privacy_audit_of_algorithm_1_on_example_1(trap, eps, realised):
    P = alg1_distribution(trap.function, trap.matroid, eps, T=2)
    Q = alg1_distribution(trap.neighbour, trap.matroid, eps, T=2)
    loss = privacy_loss(P, Q)
    assert loss == pytest.approx(realised, abs=5e-4)
    acc = private_continuous_greedy(trap.function, trap.matroid, eps, T=2, seed=0).accountant
    assert acc.basic()[0] == pytest.approx(2 * eps * 2 * 2)  # 2 eps r T
    assert loss <= acc.basic()[0]


def test_algorithm_1_output_distribution_of_the_spec(trap):
    P = alg1_distribution(trap.function, trap.matroid, 1.0, T=2)
    assert P[(1.0, 0.0, 1.0)] == pytest.approx(0.2307, abs=1e-4)
    assert P[(0.5, 0.5, 1.0)] == pytest.approx(0.5012, abs=1e-4)
    assert P[(0.0, 1.0, 1.0)] == pytest.approx(0.2680, abs=1e-4)
    for eps, mean in [(0.1, 1.5517), (0.5, 1.5584), (1.0, 1.5668)]:
        P = alg1_distribution(trap.function, trap.matroid, eps, T=2)
        assert sum(p * multilinear(trap.function, np.array(x)) for x, p in P.items()) == pytest.approx(mean, abs=1e-4)


def test_exact_privacy_audit_with_the_grid_cover(trap):
    for eps in (0.1, 0.5):
        P = alg1_distribution(trap.function, trap.matroid, eps, T=2, cover="grid", q=2)
        Q = alg1_distribution(trap.neighbour, trap.matroid, eps, T=2, cover="grid", q=2)
        assert 0 < privacy_loss(P, Q) <= 2 * eps * 2 * 2


@pytest.mark.parametrize(
    ("eps", "realised", "mean"),
    [(0.1, 0.091, 3.0349), (0.5, 0.433, 3.1842), (1.0, 0.815, 3.3922), (2.0, 1.589, 3.8470)],
)
def test_exact_privacy_audit_of_algorithm_3_on_example_2(ex2, eps, realised, mean):
    P = alg3_distribution(ex2.function, ex2.matroid, eps)
    Q = alg3_distribution(ex2.neighbour, ex2.matroid, eps)
    loss = privacy_loss(P, Q)
    assert loss == pytest.approx(realised, abs=5e-4)
    assert loss <= eps * ex2.matroid.r
    assert sum(p * ex2.function(np.array(s)) for s, p in P.items()) == pytest.approx(mean, abs=1e-4)
    acc = private_k_greedy(ex2.function, ex2.matroid, eps, seed=0).accountant
    assert acc.basic()[0] == pytest.approx(eps * ex2.matroid.r)


def test_epsilon_infinity_equals_the_non_private_algorithms(trap, ex2):
    inst = instances.generate("submodular/coverage", seed=4, n=12, users=40, rank=3, matroid="partition", blocks=3)
    for F, M in ((trap.function, trap.matroid), (inst.function, inst.matroid)):
        a = private_continuous_greedy(F, M, math.inf, T=5, seed=0, rounding="none", diagnostic=True)
        b = continuous_greedy(F, M, T=5, rounding="none")
        assert np.allclose(a.x, b.x)
        assert np.array_equal(mitrovic_private_greedy(F, M, math.inf, diagnostic=True).S, greedy(F, M).S)
    small = private_continuous_greedy(
        trap.function, trap.matroid, math.inf, T=3, cover="grid", q=2, rounding="none", diagnostic=True
    )
    assert np.allclose(small.x, continuous_greedy(trap.function, trap.matroid, T=3, rounding="none").x)
    assert np.array_equal(
        private_k_greedy(ex2.function, ex2.matroid, math.inf, diagnostic=True).S, k_greedy(ex2.function, ex2.matroid).S
    )
    # gamma = 1e-9: R = all free elements
    full = private_k_greedy_sampled(ex2.function, ex2.matroid, math.inf, gamma=1e-9, diagnostic=True)
    assert np.array_equal(full.S, k_greedy(ex2.function, ex2.matroid).S)


def test_epsilon_zero_is_uniform(trap, ex2):
    """eps = 0 (a diagnostic limit: private runs refuse it) ignores the data."""
    draws = 600
    k3 = ex2.function, ex2.matroid
    firsts = [private_k_greedy(*k3, 0.0, seed=s, diagnostic=True).order[0] for s in range(draws)]
    pairs = [(e, i) for e in range(3) for i in (1, 2)]
    counts = np.array([firsts.count(p) for p in pairs])
    assert chisquare(counts).pvalue > 1e-3
    run = lambda s: private_continuous_greedy(  # noqa: E731
        trap.function, trap.matroid, 0.0, T=1, seed=s, rounding="none", diagnostic=True
    )
    dirs = [tuple(run(s).x) for s in range(300)]
    assert chisquare([dirs.count((1.0, 0.0, 1.0)), dirs.count((0.0, 1.0, 1.0))]).pvalue > 1e-3


def test_only_the_mechanism_draws_see_the_data(trap):
    """At eps = 0 the EM ignores the scores, so D and D' give identical runs from one seed
    (gradient samples, rounding are data-independent streams)."""
    opts = {"gradient_mode": "sampled", "samples": 5, "diagnostic": True}
    for seed in range(5):
        a = private_continuous_greedy(trap.function, trap.matroid, 0.0, seed=seed, **opts)
        b = private_continuous_greedy(trap.neighbour, trap.matroid, 0.0, seed=seed, **opts)
        assert np.array_equal(a.x, b.x) and np.array_equal(a.S, b.S)


def test_outputs_are_feasible_and_counts_match(trap, ex2):
    inst = instances.generate("submodular/coverage", seed=2, n=15, users=40, rank=5, matroid="graphic")
    F, M = inst.function, inst.matroid
    res = private_continuous_greedy(F, M, 1.0, seed=1, gradient_mode="sampled", samples=3)
    assert M.contains(res.x) and M.is_independent(res.S) and res.S.sum() == M.r
    assert np.allclose(res.x, np.mean(res.directions, axis=0)) and res.x.sum() <= M.r + 1e-9
    assert res.calls == M.r * 3 * (F.n + 1)  # T m (|E| + 1)
    r3 = private_k_greedy(ex2.function, ex2.matroid, 1.0, seed=2)
    assert (r3.S != 0).sum() == ex2.matroid.r and r3.calls == (2 * 3 + 1) + (2 * 2 + 1)
    big = instances.generate("submodular/k-coverage", seed=0, n=12, users=30, k=3, rank=4)
    r4 = private_k_greedy_sampled(big.function, big.matroid, 1.0, gamma=0.2, seed=3)
    assert (r4.S != 0).sum() == 4 and set(np.unique(r4.S)) <= {0, 1, 2, 3}
    assert r4.calls == sum(3 * c + 1 for c in r4.info["candidates"])
    assert [alg4_subset_size(12, 4, t, 0.2) for t in (1, 4)] == [min(math.ceil(12 / 4 * math.log(20)), 12), 9]


def test_algorithm_2_quantised_em_and_accounting(trap):
    F, M = trap.function, trap.matroid
    res = improved_private_continuous_greedy(F, M, 1.0, T=2, seed=0, sample_size=50)
    assert M.contains(res.x) and M.is_independent(res.S)
    assert res.accountant.basic()[0] == pytest.approx(2 * alg2_step_epsilon(1.0, 2, 1.0, 1.0))  # width ln(1+mu) = eps
    N, K_L = alg2_sample_size(F.n, M.r, F.max_value, 1.0)
    assert K_L == math.ceil(2 * F.max_value) + 1 and N == math.ceil(math.log(2 * K_L * 9) / (2 / 3))
    # quantised EM = layer formula: layer i with prob |L_i| (1+mu)^{eps'(i-1)} / Z, uniform inside
    scores = np.array([0.3, 1.7, 1.2, 2.9, 0.1, 1.9])
    width, inv_temp = math.log(1 + (math.e - 1)), 0.5
    em = em_probabilities(width * np.floor(scores / width), inv_temp)
    layer = np.floor(scores / width).astype(int)
    weight = np.array([(1 + (math.e - 1)) ** (inv_temp * i) for i in layer])
    sizes = np.bincount(layer)
    layered = weight / np.sum(sizes[np.unique(layer)] * np.unique(weight))
    assert np.allclose(em, layered)
    with pytest.raises(PrivacyParameterError, match="finite positive"):
        improved_private_continuous_greedy(F, M, math.inf)


def test_accountant_advanced_composition():
    acc = PrivacyAccountant()
    for _ in range(10):
        acc.charge("step", 0.1)
    eps_z, delta_z = acc.zcdp(1e-5)
    assert eps_z == pytest.approx(0.5 * 10 * 0.01 + 0.1 * math.sqrt(2 * 10 * math.log(1e5)))
    eps_d, _ = acc.drv(1e-5)
    assert eps_d == pytest.approx(0.1 * math.sqrt(20 * math.log(1e5)) + 10 * 0.1 * math.expm1(0.1))
    assert acc.total(1e-5)[0] == pytest.approx(min(1.0, eps_z, eps_d)) and acc.total()[0] == pytest.approx(1.0)
    with pytest.raises(PrivacyParameterError, match="delta_prime"):
        acc.zcdp(0)


def test_bad_privacy_inputs(trap, ex2):
    for bad in (-1.0, float("nan"), "x"):
        with pytest.raises(PrivacyParameterError, match="epsilon"):
            private_continuous_greedy(trap.function, trap.matroid, bad)
    with pytest.raises(PrivacyParameterError, match="epsilon"):
        private_k_greedy(ex2.function, ex2.matroid, -0.5)
    with pytest.raises(DataValidationError, match="matroid"):
        private_k_greedy(ex2.function, UniformMatroid(4, 2), 1.0)
    with pytest.raises(DataValidationError, match="cover"):
        private_continuous_greedy(trap.function, trap.matroid, 1.0, cover="yoshida")


def test_maurey_cover_and_budget_calibration(trap):
    from dpmodels.submodular.accounting import calibrate_alg1, calibrate_greedy

    F, M = trap.function, trap.matroid
    res = private_continuous_greedy(F, M, 1.0, T=3, cover="maurey", maurey_m=4, seed=2)
    assert M.contains(res.x) and M.is_independent(res.S) and res.S.sum() == M.r
    assert res.accountant.basic()[0] == pytest.approx(2 * 1.0 * 2 * 3)  # still 2 eps r per step
    assert all(np.allclose(4 * y, np.round(4 * y)) for y in res.directions)  # averages of 4 bases
    inf = private_continuous_greedy(F, M, math.inf, T=3, cover="maurey", maurey_m=4, rounding="none", diagnostic=True)
    assert np.allclose(inf.x, continuous_greedy(F, M, T=3, rounding="none").x)
    with pytest.raises(DataValidationError, match="maurey_m"):
        private_continuous_greedy(F, M, 1.0, cover="maurey")
    eps = calibrate_alg1(8.0, T=2, r=2)
    assert private_continuous_greedy(F, M, eps, T=2, seed=0).accountant.basic()[0] == pytest.approx(8.0)
    assert calibrate_greedy(2.0, 4) == 0.5


def test_algorithm_3_utility_bound_with_large_epsilon():
    """Spec 8.3.4: with eps / Delta >= 50, F(x) >= OPT/2 - (r Delta / eps) ln(k |E|^3) except with
    probability about r / |E|^2."""
    from dpmodels.submodular.algorithms import k_brute_force_opt
    from dpmodels.submodular.bounds import alg3_bound

    inst = instances.generate("submodular/k-coverage", seed=5, n=6, users=15, k=2, rank=3)
    F, M = inst.function, inst.matroid
    opt, _ = k_brute_force_opt(F, M)
    eps = 50.0 * F.sensitivity
    bound, allowed = alg3_bound(opt, M.r, F.k, F.n, eps, F.sensitivity)
    assert bound == pytest.approx(opt / 2 - M.r * F.sensitivity / eps * math.log(F.k * F.n**3))
    fails = sum(private_k_greedy(F, M, eps, seed=s).value < bound for s in range(200))
    assert fails / 200 <= allowed + 3 * math.sqrt(allowed * (1 - allowed) / 200)


@pytest.mark.parametrize("eps", [0.2, 1.0, 3.0])
def test_exact_privacy_audit_of_algorithm_2(trap, eps):
    """Conditional on data-independent sub-samples of the grid cover, the realised loss of Alg. 2 on
    neighbours stays within the accounted ``T (2 eps r + eps ln(1+mu) / Delta)`` (A7 v)."""
    from dpmodels.submodular.mechanism import grid_cover
    from dpmodels.submodular.privacy_audit import alg2_distribution

    F, M = trap.function, trap.matroid
    cover = grid_cover(M, 2)
    rng = np.random.default_rng(7)
    for _ in range(3):
        subsamples = [cover[rng.integers(len(cover), size=6)] for _ in range(2)]
        P = alg2_distribution(F, M, eps, subsamples)
        Q = alg2_distribution(trap.neighbour, M, eps, subsamples)
        assert sum(P.values()) == pytest.approx(1.0)
        assert privacy_loss(P, Q) <= 2 * alg2_step_epsilon(eps, M.r, eps, F.sensitivity) + 1e-9


# ----------------------------------------------------------------------------- shipped samplers vs exact laws


def _sampler_case():
    """Coverage on U(4, 2) with singleton values 3, 2, 2, 1 (Delta = 1): score gaps of a few units, so
    at eps = 1 a doubled inverse temperature moves the output law far beyond sampling noise."""
    from dpmodels.submodular.objectives import WeightedCoverage

    inc = np.zeros((4, 6))
    for e, users in enumerate([(0, 1, 2), (2, 3), (3, 4), (5,)]):
        inc[e, list(users)] = 1
    return WeightedCoverage(inc, sensitivity=1.0), UniformMatroid(4, 2)


def _assert_law(draw, law: dict, n: int, key=lambda o: o):
    """Chi-square of ``n`` draws (seeds 0..n-1) against ``law``; cells with expected < 5 are pooled.
    ``law`` may be a callable ``seed -> dict`` (a mixture over data-independent randomness)."""
    counts: dict = {}
    expected: dict = {}
    for s in range(n):
        o = key(draw(s))
        counts[o] = counts.get(o, 0) + 1
        for k, p in (law(s) if callable(law) else law).items():
            expected[k] = expected.get(k, 0.0) + p
    assert set(counts) <= {k for k, p in expected.items() if p > 0}, "an outcome of probability 0 was drawn"
    keys = sorted(expected)
    obs = np.array([counts.get(k, 0) for k in keys], float)
    exp = np.array([expected[k] for k in keys])
    big = exp >= 5
    obs, exp = np.append(obs[big], obs[~big].sum()), np.append(exp[big], exp[~big].sum())
    if exp[-1] == 0:
        obs, exp = obs[:-1], exp[:-1]
    assert chisquare(obs, exp).pvalue > 1e-4


def _x_key(res):
    return tuple(np.round(res.x, 9))


def _law_keys(law):
    return {tuple(np.round(np.array(k, float), 9)): p for k, p in law.items()}


@pytest.mark.parametrize(("cover", "q", "n"), [("bases", None, 1000), ("grid", 1, 1000)])
def test_algorithm_1_sampler_matches_its_exact_law(cover, q, n):
    """Review F5: the shipped Alg. 1 sampler (exact base sampler, or the exact core EM over the grid)
    at eps = 1, T = 2 against the enumerated law of x_T (spec 8.2.1)."""
    F, M = _sampler_case()
    law = _law_keys(alg1_distribution(F, M, 1.0, T=2, cover=cover, q=q))
    run = lambda s: private_continuous_greedy(F, M, 1.0, T=2, cover=cover, q=q, seed=s, rounding="none")  # noqa: E731
    _assert_law(run, law, n, _x_key)


@pytest.mark.parametrize("path", ["partition", "graphic enumerated", "graphic sequential"])
def test_algorithm_1_base_sampler_paths_match_the_exact_law(path, monkeypatch):
    """Alg. 1 (cover = bases) at eps = 0.7 (inverse temperature 7/20, not dyadic) against
    ``alg1_distribution``: the trap's partition matroid (one conditional Poisson per block), and a
    graphic matroid through the enumerated bases or, forced, the exact sequential forest sampler."""
    from dpmodels.submodular.exact import bases as exact_bases
    from dpmodels.submodular.matroids import GraphicMatroid
    from dpmodels.submodular.objectives import WeightedCoverage

    if path == "partition":
        trap = instances.load("submodular/trap")
        F, M = trap.function, trap.matroid
    else:
        inc = np.zeros((5, 6))
        for e, users in enumerate([(0, 1, 2), (2, 3), (3, 4), (5,), (0, 5)]):
            inc[e, list(users)] = 1
        F, M = WeightedCoverage(inc, sensitivity=1.0), GraphicMatroid(4, [(0, 1), (1, 2), (2, 3), (3, 0), (0, 2)])
    if path.endswith("sequential"):
        monkeypatch.setattr(exact_bases, "ENUMERATE_MAX", 0)
    law = _law_keys(alg1_distribution(F, M, 0.7, T=2))
    run = lambda s: private_continuous_greedy(F, M, 0.7, T=2, seed=s, rounding="none")  # noqa: E731
    _assert_law(run, law, 800, _x_key)


def test_algorithm_2_sampler_matches_its_law_given_the_subsamples():
    """Review F5: Alg. 2 at eps = 1 against the mixture over seeds of its exact law conditional on the
    (data-independent, re-drawn here from the same stream) cover sub-samples."""
    from dpmodels.submodular.mechanism import grid_cover
    from dpmodels.submodular.mechanism.continuous import ALG2_STREAMS, _uniform_cover_sample
    from dpmodels.submodular.mechanism.randomness import streams as _streams
    from dpmodels.submodular.privacy_audit import alg2_distribution

    F, M = _sampler_case()
    cover = grid_cover(M, 1)

    def law(s):
        rng = _streams(s, ALG2_STREAMS)["subsample"]
        subs = [_uniform_cover_sample(M, cover, 4, rng) for _ in range(2)]
        return _law_keys(alg2_distribution(F, M, 1.0, subs))

    run = lambda s: improved_private_continuous_greedy(  # noqa: E731
        F, M, 1.0, T=2, cover="grid", q=1, sample_size=4, seed=s, rounding="none"
    )
    assert len(cover) == 11
    _assert_law(run, law, 800, _x_key)


def test_mitrovic_sampler_matches_an_independent_law():
    """Review F5: Mitrovic's private greedy at eps = 1 against a law enumerated here with plain numpy."""
    F, M = _sampler_case()
    law: dict = {}

    def walk(S, p):
        if len(S) == M.r:
            law[tuple(sorted(S))] = law.get(tuple(sorted(S)), 0.0) + p
            return
        cand = [e for e in range(M.n) if e not in S and M.is_independent(sorted(S | {e}))]
        gains = np.array([F(sorted(S | {e})) - F(sorted(S)) for e in cand])
        w = np.exp(0.5 * (gains - gains.max()))  # eps' = eps / (2 Delta) = 0.5
        for e, pe in zip(cand, w / w.sum(), strict=True):
            walk(S | {e}, p * pe)

    walk(frozenset(), 1.0)
    run = lambda s: mitrovic_private_greedy(F, M, 1.0, seed=s)  # noqa: E731
    _assert_law(run, law, 800, lambda res: tuple(np.flatnonzero(res.S).tolist()))


@pytest.mark.parametrize("algorithm", ["alg3", "alg4"])
def test_k_greedy_samplers_match_the_exact_law(ex2, algorithm):
    """Review F5: Alg. 3 and Alg. 4 (gamma = 0.1: s_t covers every free element on Example 2, so its
    law is Alg. 3's) at eps = 1 against the enumerated law, itself pinned by the spec's E F = 3.3922."""
    F, M = ex2.function, ex2.matroid
    law = alg3_distribution(F, M, 1.0)
    assert sum(p * F(np.array(s)) for s, p in law.items()) == pytest.approx(3.3922, abs=1e-4)  # spec 8.4
    assert [alg4_subset_size(3, 2, t, 0.1) for t in (1, 2)] == [3, 2]
    if algorithm == "alg3":
        run = lambda s: private_k_greedy(F, M, 1.0, seed=s)  # noqa: E731
    else:
        run = lambda s: private_k_greedy_sampled(F, M, 1.0, gamma=0.1, seed=s)  # noqa: E731
    _assert_law(run, law, 400, lambda res: tuple(int(v) for v in res.S))


def test_algorithm_2_accountant_fixed_constants(trap):
    """Review F6, derived by hand from spec 1.7 / A7 v: per step 2 eps r + eps w / Delta.
    Trap: r = 2, Delta = 1, T = 2.  eps = 1, mu = e - 1 (w = ln(1 + mu) = 1): 2*1*2 + 1*1/1 = 5 per
    step, 10.0 in total.  eps = 0.5: paper mode w = 0.5 gives 2 + 0.25 = 2.25 (4.5 total); scale mode
    w = Delta = 1 gives 2 eps r + eps = 2.5 (5.0 total).  Scale mode always adds exactly eps per step."""
    F, M = trap.function, trap.matroid
    assert F.sensitivity == 1.0 and M.r == 2
    run = lambda eps, **kw: improved_private_continuous_greedy(  # noqa: E731
        F, M, eps, T=2, seed=0, sample_size=5, rounding="none", **kw
    ).accountant.basic()[0]
    assert run(1.0) == pytest.approx(10.0)
    assert run(1.0, mu=math.e - 1) == pytest.approx(10.0)
    assert run(0.5) == pytest.approx(4.5)
    assert run(0.5, mu_mode="scale") == pytest.approx(5.0)
    assert alg2_step_epsilon(1.0, 2, 1.0, 1.0) == pytest.approx(5.0)
    # Delta = 2, eps = 1: paper w = 1 gives 4 + 1/2 = 4.5 per step (9.0); scale w = 2 gives 4 + 1 (10.0)
    from dpmodels.submodular.objectives import WeightedCoverage

    G = WeightedCoverage(F.incidence, F.weights, sensitivity=2.0)
    run2 = lambda **kw: improved_private_continuous_greedy(  # noqa: E731
        G, M, 1.0, T=2, seed=0, sample_size=5, rounding="none", **kw
    ).accountant.basic()[0]
    assert run2() == pytest.approx(9.0) and run2(mu_mode="scale") == pytest.approx(10.0)


def test_algorithm_2_sample_size_is_public(trap, monkeypatch):
    """Review F3 / e4: N and K_L came from the data-derived F.max_value, so D and D' drew different
    numbers of cover points (visible in the output law and in the released info)."""
    inst = instances.generate("submodular/facility", seed=0, n=6, customers=3, nearest=6, rank=2)
    F, Fp, M = inst.function, inst.neighbour, inst.matroid
    a = improved_private_continuous_greedy(F, M, 1.0, seed=0, rounding="none")
    b = improved_private_continuous_greedy(Fp, M, 1.0, seed=0, rounding="none")
    assert a.info == b.info and a.info["value_bound"] == 3.0  # B * customers, both public
    assert (a.info["sample_size"], a.info["K_L"]) == alg2_sample_size(6, 2, 3.0, 1.0)
    # the same seed draws the same sub-samples on D and D' (the exact EM's coins depend on the
    # scores, so the outputs themselves are no longer coupled as they were under Gumbel-max)
    from dpmodels.submodular.mechanism import continuous as continuous_mechanisms

    drawn: list = []
    original = continuous_mechanisms._uniform_cover_sample
    monkeypatch.setattr(
        continuous_mechanisms, "_uniform_cover_sample", lambda *a: drawn.append(original(*a)) or drawn[-1]
    )
    for s in range(3):
        runs = []
        for D in (F, Fp):
            drawn.clear()
            N = improved_private_continuous_greedy(D, M, 1e-12, seed=s, rounding="none").info["sample_size"]
            runs.append([sub.copy() for sub in drawn])
        assert len(runs[0]) == M.r and all(len(sub) == N for sub in runs[0])
        assert all(np.array_equal(u, v) for u, v in zip(*runs, strict=True))
    from dpmodels.submodular.objectives import CallableFunction

    G = CallableFunction(lambda S: float(min(len(S), 2)), 3, sensitivity=1.0)  # max_value read off fn
    with pytest.raises(PrivacyParameterError, match="value_bound"):
        improved_private_continuous_greedy(G, trap.matroid, 1.0)
    ok = improved_private_continuous_greedy(G, trap.matroid, 1.0, value_bound=2.0, rounding="none")
    assert ok.info["value_bound"] == 2.0


def test_algorithm_4_at_eps_inf_is_sampled_greedy_on_the_same_subsets():
    """Spec 8.3.1 / review F7: with gamma = 0.9 the subsets R are strict subsets of the free elements;
    eps = inf must equal the sampled k-greedy (argmax of the gain over (R cap Lambda) x [k], lowest
    index on ties) run here on the same R sequence, re-drawn from Alg. 4's subsets stream."""
    from dpmodels.submodular.algorithms import k_extensions
    from dpmodels.submodular.mechanism.greedy import ALG4_STREAMS
    from dpmodels.submodular.mechanism.randomness import streams as _streams

    inst = instances.generate("submodular/k-coverage", seed=3, n=12, users=30, k=3, rank=4)
    F, M, gamma = inst.function, inst.matroid, 0.9
    full = k_greedy(F, M).S
    differs = 0
    for seed in range(4):
        rng = _streams(seed, ALG4_STREAMS)["subsets"]
        s, strict = np.zeros(F.n, dtype=np.int64), 0
        for t in range(1, M.r + 1):
            lam, free = set(k_extensions(M, s)), np.flatnonzero(s == 0)
            size = alg4_subset_size(F.n, M.r, t, gamma)
            strict += size < free.size
            cand: list = []
            while not cand:
                cand = sorted(int(e) for e in rng.choice(free, size=min(size, free.size), replace=False) if e in lam)
            best, pick = -math.inf, None
            for e in cand:
                for i in range(1, F.k + 1):
                    t_s = s.copy()
                    t_s[e] = i
                    if F(t_s) - F(s) > best:
                        best, pick = F(t_s) - F(s), (e, i)
            s[pick[0]] = pick[1]
        assert strict >= 1
        res = private_k_greedy_sampled(F, M, math.inf, gamma=gamma, seed=seed, diagnostic=True)
        assert np.array_equal(res.S, s)
        differs += not np.array_equal(s, full)
    assert differs >= 2  # the subsets matter: these runs are not the full k-greedy


def test_algorithm_1_at_eps_inf_has_no_step_drift(trap):
    """Review F8: spec 8.4's T = 1000 row (1.9091); accumulating ``x + y/T`` drifted to 1.91."""
    res = private_continuous_greedy(trap.function, trap.matroid, math.inf, T=1000, rounding="none", diagnostic=True)
    assert res.value == pytest.approx(1.9091, abs=1e-9)
