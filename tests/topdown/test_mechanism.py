"""TopDown measurement (spec 2, 6.3 items 17-18): budget split, ledger, noise scales and laws.

Oracles: exact Fraction arithmetic of the budget shares, the known sensitivities of
partition queries (2 under substitution, 1 under add/remove), the double-geometric pmf
``(1 - a)/(1 + a) a^|z|`` and the Laplace law written out here, and true answers recomputed
from the leaf histograms with geocode prefixes.
"""

import math
from fractions import Fraction

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from dpmodels.core.errors import DataValidationError
from dpmodels.instances.topdown import synthetic_census
from dpmodels.topdown.driver import run_topdown
from dpmodels.topdown.mechanism import Measurements, Strategy, default_strategy, measure
from dpmodels.topdown.queries import QuerySet, grouping_matrix, identity, kron_query, marginal, total


# ---------------------------------------------------------------------- fixtures and oracles
@pytest.fixture(scope="module")
def tiny():
    return synthetic_census(seed=4, preset="tiny", races=3)


@pytest.fixture(scope="module")
def small63():
    return synthetic_census(seed=8, preset="small", races=63)


def _true_histograms(data):
    """Region histograms from geocode prefixes (root = all leaves)."""
    geo = data.geography
    dense = data.leaf_counts.toarray()
    codes = np.array([geo.names[i] for i in geo.leaves])
    out = np.zeros((geo.n_regions, data.schema.size), dtype=np.int64)
    for r, name in enumerate(geo.names):
        out[r] = dense[np.ones(len(codes), bool) if r == 0 else np.char.startswith(codes, name)].sum(axis=0)
    return out


def _dgeo_pmf(z, scale):
    alpha = math.exp(-1 / scale)
    return (1 - alpha) / (1 + alpha) * alpha ** np.abs(z)


def _dgeo_var(scale):
    alpha = math.exp(-1 / scale)
    return 2 * alpha / (1 - alpha) ** 2


def _entries(m: Measurements, level: int, query: str):
    found = [e for e in m.ledger.entries if e.query == query and e.group.startswith(f"level {level} ")]
    assert len(found) == 1, (level, query, [e.group for e in m.ledger.entries])
    return found[0]


def _residuals(data, m: Measurements, query: str, level: int):
    geo = data.geography
    matrix = m.matrices()[query]
    truth = _true_histograms(data)
    rows = np.flatnonzero(geo.level == level)
    out = []
    for r in rows:
        (meas,) = [x for x in m.by_node[r] if x.query == query]
        out.append(meas.values - matrix @ truth[r])
    return np.concatenate(out)


def _custom_strategy(schema, shares):
    """Four query sets with known sensitivities: 2, 2, 2 and 4 (two marginals stacked)."""
    race = schema.attribute("cenrace").values
    recode = grouping_matrix(race, {"first": race[:1], "others": race[1:]})
    queries = (
        QuerySet("detailed", identity(schema)),
        QuerySet("hhgq", marginal(schema, ["hhgq"])),
        QuerySet("race recode x votingage", kron_query(schema, {"cenrace": recode, "votingage": "keep"})),
        QuerySet("two marginals", sp.vstack([marginal(schema, ["hispanic"]), marginal(schema, ["votingage"])]).tocsr()),
    )
    return Strategy(queries, tuple(shares)), (2, 2, 2, 4)


# ---------------------------------------------------------------------- budget and ledger
@settings(max_examples=20)
@given(
    st.sampled_from(["1", "0.5", "2.25", "1/3", "7"]),
    st.one_of(st.none(), st.lists(st.sampled_from(["1", "2", "0.5", "1/7", "3"]), min_size=6, max_size=6)),
    st.sampled_from(
        [("1/4", "1/4", "1/4", "1/4"), ("1/2", "1/6", "1/6", "1/6"), (0.1, 0.2, 0.3, 0.4), ("0.7", "0.1", "0.1", "0.1")]
    ),
    st.sampled_from(["geometric", "laplace"]),
)
def test_ledger_total_and_scales_are_exact(tiny, epsilon, level_shares, query_shares, noise):
    data = tiny
    strategy, sens = _custom_strategy(data.schema, query_shares)
    weights = [Fraction(w) for w in (level_shares or ["1"] * 6)]
    shares = [w / sum(weights) for w in weights]  # level shares must sum to 1 (spec 2.3)
    m = measure(data, epsilon, strategy, level_shares=shares if level_shares else None, noise=noise, rng=0)
    eps = Fraction(epsilon)
    assert m.ledger.total_epsilon == eps  # exact, not approximate
    level_eps = [eps * w for w in shares]
    assert list(m.level_epsilons) == level_eps
    assert sum(m.level_epsilons) == eps
    geo = data.geography
    q_shares = [Fraction(repr(s)) if isinstance(s, float) else Fraction(s) for s in query_shares]
    for level in range(1, 7):
        for q, share, delta in zip(strategy.queries, q_shares, sens, strict=True):
            e = _entries(m, level, q.name)
            assert e.epsilon == level_eps[level - 1] * share
            assert e.sensitivity == delta
            assert e.scale == Fraction(delta) / (level_eps[level - 1] * share)
            assert e.noise == noise
            assert e.count == geo.level_sizes()[level - 1]
    # per level, the query sets add up to the level's allocation
    for level in range(1, 7):
        spent = sum(e.epsilon for e in m.ledger.entries if e.group.startswith(f"level {level} "))
        assert spent == level_eps[level - 1]
    assert len(m.ledger.entries) == 6 * 4


def test_default_strategy_shares_and_scales(tiny):
    strategy = default_strategy(tiny.schema)
    assert [q.name for q in strategy.queries] == ["detailed", "hhgq", "votingage x hispanic x cenrace"]
    assert strategy.shares == (Fraction(1, 2), Fraction(1, 4), Fraction(1, 4))
    assert sum(strategy.shares) == 1
    m = measure(tiny, 3, rng=1)
    assert m.ledger.total_epsilon == 3
    assert m.mechanism == "geometric" and m.info["neighbours"] == "substitution"
    for level in range(1, 7):
        for q, share in zip(strategy.queries, strategy.shares, strict=True):
            # each query set is a partition of the cells: sensitivity 2 under substitution
            assert _entries(m, level, q.name).scale == 2 / (Fraction(3, 6) * share)
    # add/remove neighbours halve the sensitivity and the scale
    m1 = measure(tiny, 3, neighbours="add/remove", rng=1)
    assert _entries(m1, 6, "detailed").scale == 1 / (Fraction(1, 2) * Fraction(1, 2))
    # marginals over attributes not in the schema are dropped
    assert [q.name for q in default_strategy(tiny.schema, marginals=(("sex",), ("hhgq",))).queries] == [
        "detailed",
        "hhgq",
    ]


@pytest.mark.parametrize("marginals", [(), (("sex",), ("age", "hhgq"))])
def test_default_strategy_without_marginals_is_detailed_only(tiny, marginals):
    """With no (usable) marginal the detailed query gets the whole level budget (mechanism.py:60)."""
    only = default_strategy(tiny.schema, marginals=marginals, detailed_share="1/3")
    assert [q.name for q in only.queries] == ["detailed"]
    assert only.shares == (1,)


def test_measurements_structure_and_variances(tiny):
    strategy, _ = _custom_strategy(tiny.schema, ("1/4", "1/4", "1/4", "1/4"))
    for noise in ("geometric", "laplace"):
        m = measure(tiny, 2, strategy, noise=noise, rng=3)
        assert len(m.by_node) == tiny.geography.n_regions
        for r, node in enumerate(m.by_node):
            assert [x.query for x in node] == [q.name for q in strategy.queries]
            level = tiny.geography.level[r]
            for x, q in zip(node, strategy.queries, strict=True):
                assert x.values.shape == (q.rows,)
                b = _entries(m, level, q.name).scale
                expected = _dgeo_var(float(b)) if noise == "geometric" else 2 * float(b) ** 2
                assert x.variance == pytest.approx(expected, rel=1e-12)
                if noise == "geometric":  # integer answers plus integer noise
                    np.testing.assert_array_equal(x.values, np.round(x.values))


# ---------------------------------------------------------------------- validation
def test_strategy_validation(tiny):
    s = tiny.schema
    det, hh = QuerySet("detailed", identity(s)), QuerySet("hhgq", marginal(s, ["hhgq"]))
    Strategy((det, hh), ("0.25", 0.75))  # a valid one
    bad = [
        ((det, hh), ("1/2", "1/3"), "strategy.shares"),  # sum != 1
        ((det, hh), ("1/2", "1/2", "0"), "strategy"),  # lengths differ
        ((det,), ("1/2", "1/2"), "strategy"),
        ((), (), "strategy"),
        ((det, hh), ("3/2", "-1/2"), "strategy.shares"),  # negative share
        ((det, hh), ("1", "0"), "strategy.shares"),  # zero share
        ((det, QuerySet("detailed", marginal(s, ["hhgq"]))), ("1/2", "1/2"), "strategy"),  # repeated names
    ]
    for queries, shares, field in bad:
        with pytest.raises(DataValidationError) as err:
            Strategy(queries, shares)
        assert err.value.field == field, (queries, shares)


def test_strategy_accepts_float_thirds(tiny):
    s = tiny.schema
    queries = (
        QuerySet("detailed", identity(s)),
        QuerySet("hhgq", marginal(s, ["hhgq"])),
        QuerySet("votingage", marginal(s, ["votingage"])),
    )
    Strategy(queries, (1 / 3, 1 / 3, 1 / 3))


def test_measure_rejects_bad_arguments(tiny):
    with pytest.raises(DataValidationError) as err:
        measure(tiny, 1, noise="gaussian", rng=0)
    assert err.value.field == "noise"
    for shares in ([1] * 5, [1] * 7, []):
        with pytest.raises(DataValidationError) as err:
            measure(tiny, 1, level_shares=shares, rng=0)
        assert err.value.field == "level_shares"
    with pytest.raises(DataValidationError):
        measure(tiny, 1, level_shares=[1, 1, 1, 0, 1, 1], rng=0)
    for eps in (0, -1, "0", float("nan"), float("inf")):
        with pytest.raises(DataValidationError) as err:
            measure(tiny, eps, rng=0)
        assert err.value.field == "epsilon"
    with pytest.raises(DataValidationError) as err:
        measure(tiny, 1, neighbours="bounded", rng=0)
    assert err.value.field == "neighbours"


def test_measure_rejects_zero_sensitivity_query_set(tiny):
    s = tiny.schema
    strategy = Strategy((QuerySet("detailed", identity(s)), QuerySet("population", total(s))), ("1/2", "1/2"))
    with pytest.raises(DataValidationError, match="sensitivity 0") as err:
        measure(tiny, 1, strategy, rng=0)
    assert "population" in err.value.field
    # under add/remove neighbours the total is a legitimate query (sensitivity 1)
    m = measure(tiny, 1, strategy, neighbours="add/remove", rng=0)
    assert _entries(m, 1, "population").sensitivity == 1


# ---------------------------------------------------------------------- noise laws (6.3 items 17-18)
def test_geometric_leaf_residuals_follow_double_geometric(small63):
    """Detailed-query residuals at the blocks: eps = 6, 6 levels, share 1/2, sensitivity 2 -> scale 4."""
    m = measure(small63, 6, rng=np.random.default_rng(20190701))
    entry = _entries(m, 6, "detailed")
    assert entry.scale == 4
    z = _residuals(small63, m, "detailed", 6)
    assert z.size == 216 * 2016
    np.testing.assert_array_equal(z, np.round(z))  # integer support
    z = z.astype(np.int64)
    scale = float(entry.scale)
    alpha = math.exp(-1 / scale)
    # chi-square on integer bins in [-K, K], tails lumped into the end bins
    k = int(4 * scale)
    support = np.arange(-k, k + 1)
    expected = _dgeo_pmf(support, scale)
    tail = (1 - expected.sum()) / 2
    expected[0] += tail
    expected[-1] += tail
    observed = np.bincount(np.clip(z, -k, k) + k, minlength=2 * k + 1)
    assert stats.chisquare(observed, expected * z.size).pvalue > 1e-4
    # P(Z = 0), variance, symmetry
    se0 = math.sqrt(_dgeo_pmf(0, scale) * (1 - _dgeo_pmf(0, scale)) / z.size)
    assert abs((z == 0).mean() - (1 - alpha) / (1 + alpha)) < 5 * se0
    assert z.var() == pytest.approx(2 * alpha / (1 - alpha) ** 2, rel=0.02)
    assert abs(z.mean()) < 5 * math.sqrt(_dgeo_var(scale) / z.size)
    assert abs((z > 0).mean() - (z < 0).mean()) < 5 * math.sqrt(1 / z.size)
    # the marginal query sets at the state level carry their own scale, 2 / (1 * 1/4) = 8
    hh = _residuals(small63, m, "hhgq", 2)
    assert _entries(m, 2, "hhgq").scale == 8
    assert set(np.unique(hh - np.round(hh))) == {0}


def test_level_shares_must_sum_to_one(tiny):
    with pytest.raises(DataValidationError) as err:
        measure(tiny, 1, level_shares=["1"] * 6)
    assert err.value.field == "level_shares"


def test_laplace_residuals_match_variance():
    data = synthetic_census(seed=9, preset="small", races=7)
    m = measure(data, 3, level_shares=["1/6"] * 6, noise="laplace", rng=5)
    b = _entries(m, 6, "detailed").scale
    assert b == Fraction(2) / (Fraction(3, 6) * Fraction(1, 2)) == 8
    z = np.concatenate([_residuals(data, m, "detailed", level) for level in range(1, 7)])
    assert z.size == data.geography.n_regions * data.schema.size
    assert not np.allclose(z, np.round(z))  # continuous noise
    assert z.var() == pytest.approx(2 * float(b) ** 2, rel=0.03)
    assert stats.kstest(z, stats.laplace(scale=float(b)).cdf).pvalue > 1e-4
    assert abs(z.mean()) < 5 * math.sqrt(2 * float(b) ** 2 / z.size)


def test_same_seed_same_measurements(tiny):
    a = measure(tiny, 1, rng=77)
    b = measure(tiny, 1, rng=np.random.default_rng(77))
    c = measure(tiny, 1, rng=78)
    for ra, rb in zip(a.by_node, b.by_node, strict=True):
        for xa, xb in zip(ra, rb, strict=True):
            np.testing.assert_array_equal(xa.values, xb.values)
    assert any(
        not np.array_equal(xa.values, xc.values)
        for ra, rc in zip(a.by_node, c.by_node, strict=True)
        for xa, xc in zip(ra, rc, strict=True)
    )
    assert [e.scale for e in a.ledger.entries] == [e.scale for e in c.ledger.entries]


def test_run_topdown_is_exported():
    assert callable(run_topdown)


def test_ledger_records_the_randomness_source(tiny):
    from dpmodels.core.randomness import SECURE_SOURCE, SEEDED_SOURCE

    assert measure(tiny, 1, rng=0).ledger.randomness == SEEDED_SOURCE
    assert measure(tiny, 1).ledger.randomness == SECURE_SOURCE


def test_a_scale_refused_at_a_deep_level_draws_nothing(tiny):
    """Every scale is recorded before the first draw: a share that leaves the blocks an
    unrepresentable scale is refused with the generator untouched."""
    rng = np.random.default_rng(3)
    before = rng.bit_generator.state
    tiny_share = Fraction(1, 2**60)
    shares = [(1 - tiny_share) / 5] * 5 + [tiny_share]
    with pytest.raises(DataValidationError, match="cannot be sampled exactly") as err:
        measure(tiny, 1, level_shares=shares, rng=rng)
    assert err.value.field == "epsilon"
    assert rng.bit_generator.state == before


# ---------------------------------------------------------------------- exact integer noise (issue 22)
def test_exact_noise_refuses_non_integer_coefficients_before_any_draw(tiny):
    """Regression: a query set with coefficients 1/2 was measured with integer noise, and the
    fractional part of ``A h / 2`` survives any integer noise (an odd count shows as .5): refused,
    naming the query set, with the generator untouched.  Floating-point Laplace (research) runs."""
    s = tiny.schema
    halves = QuerySet("halves", (identity(s) * 0.5).tocsr())
    strategy = Strategy((QuerySet("detailed", identity(s)), halves), ("1/2", "1/2"))
    rng = np.random.default_rng(11)
    before = rng.bit_generator.state
    with pytest.raises(DataValidationError, match="non-integer") as err:
        measure(tiny, 1, strategy, rng=rng)
    assert "halves" in err.value.field
    assert rng.bit_generator.state == before
    measure(tiny, 1, strategy, noise="laplace", rng=0)


def test_noise_beyond_the_exact_integer_range_is_refused_naming_epsilon_before_any_draw(tiny):
    """At eps = 4e-15 the noise could exceed 2^52 (where a float64 sum of truth and noise rounded and
    revealed the true count): refused while planning, nothing drawn."""
    rng = np.random.default_rng(12)
    before = rng.bit_generator.state
    with pytest.raises(DataValidationError, match="2\\^52") as err:
        measure(tiny, "4e-15", rng=rng)
    assert err.value.field == "epsilon"
    assert rng.bit_generator.state == before


@settings(max_examples=6, deadline=None)
@given(st.sampled_from(["4e-12", "1/1000", "1/3", "2", "50"]), st.integers(0, 2**32))
def test_noisy_answers_are_integer_truth_plus_the_exact_sampler_draws(tiny, epsilon, seed):
    """Every noisy answer is exactly ``A h + Z`` (int64 arithmetic: truth from geocode prefixes, ``Z``
    replayed from the exact sampler on the same seed, in the ledger's order), delivered as float64;
    at eps = 4e-12 (scales up to 1.2e13, noise up to ~3e15) the equality is still exact."""
    from dpmodels.core.samplers import discrete_laplace

    m = measure(tiny, epsilon, rng=seed)
    replay = np.random.default_rng(seed)
    truth = _true_histograms(tiny)
    geo = tiny.geography
    for entry in m.ledger.entries:  # recorded in the order of the draws
        rows = np.flatnonzero(geo.level == int(entry.group.split()[1]))
        a = m.matrices()[entry.query].toarray().astype(np.int64)
        expected = truth[rows] @ a.T + discrete_laplace(entry.scale, (rows.size, a.shape[0]), replay)
        got = np.array([next(x.values for x in m.by_node[r] if x.query == entry.query) for r in rows])
        assert got.dtype == np.float64
        assert [[int(v) for v in row] for row in got] == expected.tolist()
