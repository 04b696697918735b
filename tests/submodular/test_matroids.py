"""Matroid axioms, greedy = LP (HiGHS and the greedy plugin), samplers, exchange (spec 8.1.3-8.1.4, 8.1.8)."""

import itertools

import numpy as np
import pyomo.environ as pyo
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import chisquare
from submodular_cases import KINDS, make

import dpmodels
from dpmodels.core.errors import DataValidationError, ModelStructureError
from dpmodels.submodular.data import as_mask
from dpmodels.submodular.matroids import ExplicitMatroid, GraphicMatroid, LaminarMatroid, PartitionMatroid
from dpmodels.submodular.mechanism import grid_cover
from dpmodels.submodular.models import build_matroid_lp


def test_axioms_rank_and_exchange(matroid):
    ind = matroid.independent_sets()
    fam = {tuple(np.flatnonzero(s)) for s in ind}
    assert () in fam
    for S in fam:
        assert all(tuple(x for x in S if x != e) in fam for e in S)
    for A, B in itertools.combinations(fam, 2):
        small, big = sorted((A, B), key=len)
        if len(small) < len(big):
            assert any(tuple(sorted(set(small) | {e})) in fam for e in set(big) - set(small))
    assert matroid.r == max(len(S) for S in fam) == int(matroid.max_weight_base(np.ones(matroid.n)).sum())
    for S in itertools.islice(itertools.product([0, 1], repeat=matroid.n), 0, None, 7):
        mask = np.array(S, bool)
        assert matroid.rank(mask) == max(len(T) for T in fam if set(T) <= set(np.flatnonzero(mask)))
    bases = matroid.bases()
    for B1, B2 in itertools.combinations(bases, 2):
        for i in np.flatnonzero(B1 & ~B2):
            j = matroid.strong_exchange(B1, B2, int(i))
            assert B2[j] and not B1[j]


def test_lemma_5_2_exchange(matroid):
    rng = np.random.default_rng(0)
    for B in matroid.bases()[:5]:
        A = B & (rng.random(matroid.n) < 0.5)
        for e in np.flatnonzero(~A):
            if matroid.is_independent(A | as_mask([e], matroid.n)):
                ok = [
                    f
                    for f in np.flatnonzero(B & ~A)
                    if matroid.is_independent((B & ~as_mask([f], matroid.n)) | as_mask([e], matroid.n))
                ]
                assert ok or B[e]


@pytest.mark.parametrize("base", [False, True])
def test_lp_over_the_polytope_equals_greedy(matroid, base):
    rng = np.random.default_rng(1)
    for _ in range(4):
        w = rng.normal(size=matroid.n)
        greedy = matroid.max_weight_base(w) if base else matroid.max_weight_independent(w)
        model = build_matroid_lp(matroid, w, base=base)
        res = dpmodels.solve(model, "highs")
        assert res.termination_condition.name == "convergenceCriteriaSatisfied"
        y = np.array([pyo.value(model.y[e]) for e in range(matroid.n)])
        assert res.incumbent_objective == pytest.approx(float(w @ greedy), abs=1e-7)
        assert np.allclose(y, np.round(y), atol=1e-7)  # integral vertex for generic w
        plug = dpmodels.solve(model.clone(), "submodular_matroid_greedy")
        assert plug.incumbent_objective == pytest.approx(res.incumbent_objective, abs=1e-7)
        assert plug.objective_bound == pytest.approx(res.incumbent_objective, abs=1e-7)


def test_greedy_plugin_refuses_edited_and_foreign_models():
    M = make("uniform")
    model = build_matroid_lp(M, np.arange(6.0))
    model.extra = pyo.Constraint(expr=model.y[0] <= 0.5)
    with pytest.raises(ModelStructureError, match="edited"):
        dpmodels.solve(model, "submodular_matroid_greedy")
    plain = pyo.ConcreteModel()
    plain.x = pyo.Var()
    plain.o = pyo.Objective(expr=plain.x)
    with pytest.raises(ModelStructureError, match="marker"):
        dpmodels.solve(plain, "submodular_matroid_greedy")


@pytest.mark.parametrize("kind", KINDS)
def test_base_sampler_matches_the_product_weight_distribution(kind):
    M = make(kind)
    rng = np.random.default_rng(3)
    lw = rng.normal(size=M.n)
    bases = M.bases()
    p = np.exp([lw[b].sum() for b in bases])
    p /= p.sum()
    index = {tuple(b): i for i, b in enumerate(bases)}
    draws = 3000
    counts = np.zeros(len(bases))
    for _ in range(draws):
        B = M.sample_base(lw, rng)
        assert M.is_independent(B) and B.sum() == M.r
        counts[index[tuple(B)]] += 1
    big = p * draws >= 5  # pool the cells with tiny expected counts (chi-square needs >= 5)
    obs, exp = counts[big], p[big] * draws
    if not big.all():
        obs, exp = np.append(obs, counts[~big].sum()), np.append(exp, p[~big].sum() * draws)
    assert chisquare(obs, exp).pvalue > 1e-4


def test_grid_cover_points_and_covering_radius():
    M = PartitionMatroid([0, 0, 1], [1, 1])
    sizes = [len(grid_cover(M, q)) for q in (1, 2, 4)]
    assert sizes == [6, 18, 75]  # spec 8.4 Example 1
    C = grid_cover(M, 2)
    assert all(M.contains(z) for z in C)
    assert all(any(np.array_equal(z, s.astype(float)) for z in C) for s in M.independent_sets())
    rng = np.random.default_rng(0)
    bases = np.array(M.bases(), float)
    for _ in range(50):
        x = rng.dirichlet(np.ones(len(bases))) @ bases * rng.random()
        assert np.min(np.linalg.norm(C - x, axis=1)) <= np.sqrt(3) / 2 + 1e-12


def test_polytope_membership(matroid):
    for B in matroid.bases():
        assert matroid.contains(B.astype(float), base=True)
    assert not matroid.contains(np.ones(matroid.n))
    mean = np.mean(matroid.bases(), axis=0)
    assert matroid.contains(mean, base=True) and matroid.contains(mean * 0.5)


def test_bad_matroids_fail_early():
    with pytest.raises(DataValidationError, match="labels"):
        PartitionMatroid([0, 3], [1, 1])
    with pytest.raises(DataValidationError, match="laminar"):
        LaminarMatroid(3, [[0, 1], [1, 2]], [1, 1])
    with pytest.raises(DataValidationError, match="exchange"):
        ExplicitMatroid(3, [(0, 1), (0,), (1,), (2,)])
    with pytest.raises(DataValidationError, match="self-loops"):
        GraphicMatroid(3, [(0, 0)])


def test_graphic_sampler_extreme_weights_stay_exact():
    """A wide conductance range is sampled exactly, never by a (non-private) argmax."""
    M = make("graphic")
    lw = np.array([0.0, 30.0, 0.0, 30.0, 30.0, 0.0, 0.0, 0.0])
    rng = np.random.default_rng(0)
    draws = np.array([M.sample_base(lw, rng) for _ in range(400)])
    assert all(M.is_independent(b) and b.sum() == M.r for b in draws)
    # the triangle's edges (5, 6, 7) have equal weights: each forest drops one of them uniformly
    counts = [(~draws[:, e]).sum() for e in (5, 6, 7)]
    assert chisquare(counts).pvalue > 1e-3


def test_explicit_matroid_with_a_loop():
    """Element 2 is a loop (in no independent set): the rank rows must force y_2 = 0."""
    M = ExplicitMatroid(3, [(0,), (1,)])
    assert M.r == 1 and not M.contains(np.array([0.0, 0.0, 0.5]))
    model = build_matroid_lp(M, np.array([1.0, 2.0, 5.0]))
    res = dpmodels.solve(model, "highs")
    assert res.incumbent_objective == pytest.approx(2.0)


def _exact_spanning_law(M, lw):
    """Product-weight law over the bases by enumeration, in log space (independent oracle)."""
    from scipy.special import logsumexp

    bases = M.bases()
    logw = np.array([lw[b].sum() for b in bases])
    return bases, np.exp(logw - logsumexp(logw))


def test_graphic_effective_conductance_is_exact_at_any_range():
    """Edge marginals lambda_e R_eff(e) from the log-space star-mesh elimination equal the enumerated
    marginals to 1e-9 (relative) even when the conductances span e^80 (float pinv failed past 1e8)."""
    M = GraphicMatroid(5, list(itertools.combinations(range(5), 2)))
    rng = np.random.default_rng(4)
    for scale in (1.0, 20.0, 80.0):
        lw = rng.random(M.n) * scale
        bases, p = _exact_spanning_law(M, lw)
        marg = np.array([sum(pb for B, pb in zip(bases, p, strict=True) if B[e]) for e in range(M.n)])
        label, alive = np.arange(5), np.ones(M.n, bool)
        for e, (u, v) in enumerate(M.edges):
            got = np.exp(lw[e] - M._log_effective_conductance(label, alive, lw, u, v))
            assert got == pytest.approx(marg[e], rel=1e-9, abs=1e-300)


def test_graphic_sampler_matches_the_law_at_a_wide_range():
    M = GraphicMatroid(4, list(itertools.combinations(range(4), 2)))
    lw = np.array([0.0, 25.0, 3.0, 24.0, 26.0, 1.0])
    bases, p = _exact_spanning_law(M, lw)
    index = {tuple(b): i for i, b in enumerate(bases)}
    rng, draws = np.random.default_rng(1), 2000
    counts = np.zeros(len(bases))
    for _ in range(draws):
        counts[index[tuple(M.sample_base(lw, rng))]] += 1
    big = p * draws >= 5  # pool the cells with tiny expected counts
    obs = np.append(counts[big], counts[~big].sum())
    exp = np.append(p[big], p[~big].sum()) * draws
    assert chisquare(obs, exp).pvalue > 1e-4


def test_graphic_sampler_path_does_not_depend_on_the_data():
    """Review F2 / e3: on K7 (21 edges) the old sampler raised on D (conductance range e^18.5) but
    not on the neighbour D' -- an observable difference, i.e. infinite privacy loss."""
    from dpmodels.submodular.mechanism.continuous import private_continuous_greedy
    from dpmodels.submodular.objectives import WeightedCoverage

    M = GraphicMatroid(7, list(itertools.combinations(range(7), 2)))
    inc = np.zeros((21, 37))
    inc[0, :] = 1  # 37 users all cover edge 0
    D = WeightedCoverage(inc, sensitivity=1.0)
    Dp = D.replace_user(36, [])
    for F in (D, Dp):
        for seed in range(2):
            res = private_continuous_greedy(F, M, 1.0, seed=seed, rounding="none")
            assert all(M.is_independent(y > 0.5) and y.sum() == M.r for y in res.directions)
    far = np.zeros(M.n)
    far[:3] = 500.0  # a range far beyond float64 conductances still samples a spanning tree
    B = M.sample_base(far, np.random.default_rng(0))
    assert M.is_independent(B) and B.sum() == M.r and B[:3].all()  # the heavy star (0,1), (0,2), (0,3)


def _laminar_law(M: LaminarMatroid, lw: np.ndarray, base: np.ndarray) -> float:
    """Probability the laminar sampler gives ``base``: the product of its exact conditionals."""
    state, logp = np.zeros(M.n, np.int8), 0.0
    for e in range(M.n):
        state[e] = 1
        z_in = M._log_base_weight(lw, state)
        state[e] = -1
        z_out = M._log_base_weight(lw, state)
        state[e] = 1 if base[e] else -1
        logp += (z_in if base[e] else z_out) - np.logaddexp(z_in, z_out)
    return float(np.exp(logp))


def _random_laminar(rng, n: int) -> LaminarMatroid:
    family, caps = [], []

    def split(elems, depth):
        family.append([int(e) for e in elems])
        caps.append(int(rng.integers(0, len(elems) + 1)))
        if depth < 3 and len(elems) > 1:
            cuts = sorted(rng.choice(np.arange(1, len(elems)), size=min(2, len(elems) - 1), replace=False))
            for part in np.split(np.array(elems), cuts):
                if rng.random() < 0.7:
                    split(list(part), depth + 1)

    split(list(rng.permutation(n))[: int(rng.integers(1, n + 1))], 0)
    return LaminarMatroid(n, family, caps)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("scale", [1.0, 300.0])
def test_laminar_sampler_law_equals_enumeration_at_any_range(seed, scale):
    """The polynomial laminar sampler's exact law (product of its conditionals) against the
    enumerated product-weight law, on random laminar families, including weights spanning e^1000."""
    rng = np.random.default_rng(seed)
    M = _random_laminar(rng, int(rng.integers(3, 10)))
    lw = rng.normal(scale=scale, size=M.n)
    bases = M.bases()
    scores = np.array([lw[b].sum() for b in bases])
    exact = np.exp(scores - np.logaddexp.reduce(scores))
    got = np.array([_laminar_law(M, lw, b) for b in bases])
    np.testing.assert_allclose(got, exact, atol=1e-12)
    B = M.sample_base(lw, rng)
    assert M.is_independent(B) and B.sum() == M.r


def test_laminar_sampler_beyond_enumeration_matches_block_products():
    """|E| = 30 (beyond the enumeration cap): nested laminar sets whose outer caps never bind
    reduce to a partition matroid, whose product-weight law factorises over the blocks; each
    block's law is enumerated on its own and compared with the sampler's exact law."""
    rng = np.random.default_rng(7)
    blocks = [list(range(6 * i, 6 * i + 6)) for i in range(5)]
    caps = [2, 1, 3, 2, 1]
    family = blocks + [list(range(12)), list(range(12, 30))]  # outer caps 3 and 6 equal the sums inside
    M = LaminarMatroid(30, family, caps + [3, 6])
    lw = rng.normal(scale=5.0, size=30)
    for _ in range(3):
        B = M.sample_base(lw, rng)
        assert M.is_independent(B) and B.sum() == M.r == 9
        expected = 1.0
        for block, cap in zip(blocks, caps, strict=True):
            subsets = list(itertools.combinations(block, cap))
            scores = np.array([lw[list(s)].sum() for s in subsets])
            chosen = tuple(np.flatnonzero(B[block]) + block[0])
            expected *= np.exp(scores[subsets.index(chosen)] - np.logaddexp.reduce(scores))
        assert _laminar_law(M, lw, B) == pytest.approx(expected, rel=1e-9)


@settings(max_examples=150, deadline=None)
@given(st.integers(2, 8), st.data())
def test_graphic_extensions_by_one_labelling_equal_one_independence_test_per_edge(n_vertices, data):
    """The components labelling gives exactly Lambda(S) of the generic oracle, for forests and for
    dependent sets (parallel edges included), in increasing order."""
    from dpmodels.submodular.matroids import Matroid

    pairs = st.tuples(st.integers(0, n_vertices - 1), st.integers(0, n_vertices - 1)).filter(lambda p: p[0] != p[1])
    edges = data.draw(st.lists(pairs, min_size=1, max_size=12))
    M = GraphicMatroid(n_vertices, edges)
    S = np.array(data.draw(st.lists(st.booleans(), min_size=len(edges), max_size=len(edges))))
    assert M.extensions(S) == Matroid.extensions(M, S)
