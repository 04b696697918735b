"""PGSR under zCDP: the exact discrete Gaussian, its squared L2 sensitivities and its exact privacy loss.

The neighbour relation is the L1 one (``dpmodels.pgsr.sensitivity``): one record of quantity
``z <= z_max`` added to or removed from a unit that stays non-empty (``G`` fixed).  Removing and
adding are each other's reverse and every norm here is symmetric, so enumerating removals covers
both directions.  The discrete Gaussian's Renyi divergence between two integer shifts ``a, b`` is
``alpha (a - b)^2 / (2 sigma^2)`` exactly when ``alpha (a - b)`` is an integer (and at most that
otherwise); computed here from ``discrete_gaussian_pmf`` alone.
"""

import functools
import itertools
import json
import math
from fractions import Fraction

import mpmath
import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from laws import chacha, chisquare_pvalue
from scipy.special import logsumexp

from dpmodels import cli, instances
from dpmodels.core.errors import DataValidationError, PrivacyParameterError
from dpmodels.core.gaussian import discrete_gaussian, discrete_gaussian_cdf, discrete_gaussian_pmf
from dpmodels.core.hierarchy import Hierarchy
from dpmodels.core.noise import truncation_delta
from dpmodels.core.session import BudgetExceededError, PrivacySession
from dpmodels.pgsr.data import GroupSizeData
from dpmodels.pgsr.domains import gaussian_domain_scale
from dpmodels.pgsr.mechanism import NOISES, measure, run_mechanism
from dpmodels.pgsr.release import measure_release, release_facts
from dpmodels.pgsr.sensitivity import level_l2_sensitivity, level_sensitivity

KINDS = ("counts", "cumulative", "chain")
TWO_LEAVES = {"R": None, "A": "R", "B": "R"}
THREE_LEVELS = {"R": None, "A": "R", "B": "R", "A1": "A", "A2": "A", "B1": "B"}
GAUSSIAN = {"noise": "discrete-gaussian"}


def _truth(data: GroupSizeData, kind: str) -> np.ndarray:
    return {"counts": data.counts, "cumulative": data.cumulative(), "chain": data.chain()}[kind]


def _level_l2sq(h: Hierarchy, a, b) -> list[int]:
    """``||f_l(D) - f_l(D')||_2^2`` for every level ``l``, in Python integers."""
    diff = np.asarray(a, dtype=np.int64) - np.asarray(b, dtype=np.int64)
    return [int((diff[h.level_slice(lvl)].astype(object) ** 2).sum()) for lvl in range(1, h.n_levels + 1)]


def _level_l1(h: Hierarchy, a, b) -> list[int]:
    diff = np.abs(np.asarray(a, dtype=np.int64) - np.asarray(b, dtype=np.int64))
    return [int(diff[h.level_slice(lvl)].sum()) for lvl in range(1, h.n_levels + 1)]


def _pairs(tree, n_sizes: int, z_max: int, background: int = 1):
    """Every neighbouring pair of datasets with at most ``background`` other units: a unit of any leaf and
    size ``1..N + z_max`` (sizes above N exercise the top bin) loses a person of quantity ``0..z_max``
    and keeps size >= 1."""
    h = Hierarchy.from_parent_table(tree)
    units = [(h.names[i], s) for i in h.leaves for s in range(1, n_sizes + z_max + 1)]
    for k in range(background + 1):
        for others in itertools.combinations_with_replacement(units, k):
            regions = [u[0] for u in others]
            sizes = [u[1] for u in others]
            for leaf, s in units:
                before = GroupSizeData.from_groups(h, [*regions, leaf], [*sizes, s], n_sizes, z_max=z_max)
                for z in range(0, min(z_max, s - 1) + 1):
                    after = GroupSizeData.from_groups(h, [*regions, leaf], [*sizes, s - z], n_sizes, z_max=z_max)
                    assert after.G == before.G
                    yield before, after


# ---------------------------------------------------------------- (1) squared L2 sensitivities, brute force
@pytest.mark.parametrize("tree", [TWO_LEAVES, THREE_LEVELS], ids=["2 levels", "3 levels"])
@pytest.mark.parametrize("z_max", [1, 2])
def test_brute_force_squared_l2_sensitivity_is_the_formula(tree, z_max):
    """Over every neighbouring pair (N <= 4, up to two units), each level's largest ``||f(D) - f(D')||_2^2``
    is exactly ``level_l2_sensitivity``: 2 (counts), z_max (cumulative), |R_l| z_max (chain) when
    N > z_max, and the formula at the largest reachable move ``min(z_max, N - 1)`` otherwise.  Every
    coordinate moves by 0 or 1, so the squared L2 distance always equals the L1 one."""
    h = Hierarchy.from_parent_table(tree)
    regions = h.level_sizes().tolist()
    for n_sizes in range(1, 5):
        worst = {kind: [0] * h.n_levels for kind in KINDS}
        for before, after in _pairs(tree, n_sizes, z_max):
            for kind in KINDS:
                a, b = _truth(before, kind), _truth(after, kind)
                assert np.abs(a - b).max(initial=0) <= 1
                l2sq = _level_l2sq(h, a, b)
                assert l2sq == _level_l1(h, a, b)
                worst[kind] = [max(w, d) for w, d in zip(worst[kind], l2sq, strict=True)]
        reach = min(z_max, n_sizes - 1)
        for kind in KINDS:
            expected = [level_l2_sensitivity(kind, r, reach) if reach else 0 for r in regions]
            assert worst[kind] == expected, (kind, n_sizes)
            if n_sizes > z_max:
                assert worst[kind] == [level_l2_sensitivity(kind, r, z_max) for r in regions]


def test_squared_l2_sensitivities_are_exact_integers():
    assert [level_l2_sensitivity(k, 5, 3) for k in KINDS] == [2, 3, 15]
    assert all(type(level_l2_sensitivity(k, 4, 2)) is int for k in KINDS)
    assert level_l2_sensitivity("counts", 7) == 2 and level_sensitivity("counts", 7) == 2
    with pytest.raises(DataValidationError, match="kind"):
        level_l2_sensitivity("sums", 3)
    with pytest.raises(DataValidationError, match="z_max"):
        level_l2_sensitivity("chain", 3, 0)


COLUMNS = ["user", "unit", "region", "quantity"]


@st.composite
def record_sets(draw):
    """A small hierarchy, z_max 1..2, 1-3 units of 1-3 members with raw quantities -1..z_max+1, and N <= 4."""
    h = Hierarchy.from_parent_table(draw(st.sampled_from([TWO_LEAVES, THREE_LEVELS])))
    z_max = draw(st.integers(1, 2))
    regions = [h.names[i] for i in h.leaves] + ["R"]
    member = st.lists(st.integers(-1, z_max + 1), min_size=1, max_size=3)
    units = draw(st.lists(st.tuples(st.sampled_from(regions), member), min_size=1, max_size=3))
    return h, units, z_max, draw(st.integers(1, 4))


@settings(max_examples=40)
@given(record_sets())
def test_record_removals_move_no_level_beyond_the_ledgers_squared_sensitivity(case):
    """From person records through the bounding rules: every G-preserving removal moves each level by at
    most the squared L2 sensitivity the Gaussian ledger records (the relation of the L1 brute force)."""
    h, units, z_max, n_sizes = case
    rows = [(f"{u}-{k}", f"u{u}", leaf, z) for u, (leaf, zs) in enumerate(units) for k, z in enumerate(zs)]
    records = pd.DataFrame(rows, columns=COLUMNS)
    before = GroupSizeData.from_records(records, h, n_sizes, z_max=z_max)
    for kind in KINDS:
        _, ledger = measure(before, None, kind, 0, rho=1, **GAUSSIAN)
        calibrated = [m.sensitivity for m in ledger.entries]
        assert calibrated == [level_l2_sensitivity(kind, r, z_max) for r in h.level_sizes().tolist()]
        for user in records.user:
            after = GroupSizeData.from_records(records[records.user != user], h, n_sizes, z_max=z_max)
            if after.G != before.G:
                continue  # emptied a unit: outside the relation (sensitivity.py says why)
            moved = _level_l2sq(h, _truth(before, kind), _truth(after, kind))
            assert all(m <= c for m, c in zip(moved, calibrated, strict=True))


# ---------------------------------------------------------------- (2) the mechanism and its ledger
@settings(max_examples=40)
@given(
    st.sampled_from(KINDS),
    st.fractions(min_value=Fraction(1, 10**6), max_value=50),
    st.integers(1, 3),
    st.sampled_from([TWO_LEAVES, THREE_LEVELS]),
)
def test_the_ledger_splits_rho_exactly_and_the_variances_follow(kind, rho, z_max, tree):
    """rho / L per level, sigma^2 = Delta_2^2 / (2 rho_l) exactly, the rhos add back to rho exactly."""
    h = Hierarchy.from_parent_table(tree)
    data = GroupSizeData.from_groups(h, [h.names[h.leaves[0]]], [2], n_sizes=3, z_max=z_max)
    noisy, ledger = measure(data, None, kind, 0, rho=rho, **GAUSSIAN)
    L = h.n_levels
    assert ledger.total_rho == rho and type(ledger.total_rho) is Fraction
    assert ledger.total_epsilon == math.inf  # not pure DP: read in rho
    for level, (m, r) in enumerate(zip(ledger.entries, h.level_sizes().tolist(), strict=True), start=1):
        assert m.rho == rho / L and m.scale == Fraction(level_l2_sensitivity(kind, r, z_max)) * L / (2 * rho)
        assert 2 * m.scale * m.rho == m.sensitivity == level_l2_sensitivity(kind, r, z_max)
        assert m.group == f"level {level}" and m.count == r * data.N and "Gaussian" in m.noise
    assert noisy.info["sigma2_per_level"] == tuple(m.scale for m in ledger.entries)
    assert noisy.level_scales == tuple(gaussian_domain_scale(m.scale) for m in ledger.entries)
    assert noisy.info["rho"] == rho and noisy.info["noise"] == "discrete-gaussian"


@pytest.mark.parametrize("kind", KINDS)
def test_noisy_values_are_the_truth_plus_the_exact_discrete_gaussian_draws(running_example, kind):
    """Level by level, the noisy values equal the int64 truth plus ``discrete_gaussian`` drawn from an
    identically seeded generator (the oracle adds in Python integers)."""
    data = running_example
    noisy, ledger = measure(data, None, kind, np.random.default_rng(11), rho="1/3", **GAUSSIAN)
    oracle = np.random.default_rng(11)
    truth = _truth(data, kind)
    for level, entry in enumerate(ledger.entries, start=1):
        rows = data.hierarchy.level_slice(level)
        draws = discrete_gaussian(entry.scale, truth[rows].shape, oracle)
        pairs = zip(truth[rows].tolist(), draws.tolist(), strict=True)
        expected = [[t + z for t, z in zip(tr, zr, strict=True)] for tr, zr in pairs]
        assert noisy.values[rows].tolist() == [[float(v) for v in row] for row in expected]


def test_the_default_noise_is_the_discrete_laplace_unchanged(running_example):
    a, la = measure(running_example, "1/2", "counts", 5)
    b, lb = measure(running_example, "1/2", "counts", 5, noise="discrete-laplace")
    assert np.array_equal(a.values, b.values) and la.to_records() == lb.to_records()
    L = running_example.L  # L pure steps of eps / L: rho = L (eps / L)^2 / 2
    assert la.total_epsilon == Fraction(1, 2) and la.total_rho == L * Fraction(1, 2 * L) ** 2 / 2 and not la.is_zcdp
    assert "noise" not in a.info and NOISES == ("discrete-laplace", "discrete-gaussian")


@pytest.mark.parametrize(
    ("epsilon", "options", "field"),
    [
        (1, {"noise": "discrete-gaussian", "rho": 1}, "epsilon"),
        (None, {"noise": "discrete-gaussian"}, "rho"),
        (1, {"rho": 1}, "rho"),
        (1, {"noise": "gaussian"}, "noise"),
        (None, {"noise": "discrete-gaussian", "rho": 1, "calibration": "paper"}, "calibration"),
        (None, {"noise": "discrete-gaussian", "rho": 0}, "rho"),
    ],
)
def test_mixed_units_are_refused(running_example, epsilon, options, field):
    with pytest.raises((DataValidationError, PrivacyParameterError)) as err:
        measure(running_example, epsilon, "counts", 0, **options)
    assert err.value.field == field


@pytest.mark.parametrize("kind", KINDS)
def test_a_tiny_rho_is_refused_before_anything_is_drawn(running_example, kind):
    """A variance whose draws could leave the exact integer range (256 (floor(sigma) + 1) > 2^52) is
    refused naming rho, for every level before the first draw; a huge one inside it still draws."""
    rng = np.random.default_rng(0)
    state = rng.bit_generator.state
    with pytest.raises(PrivacyParameterError) as err:
        measure(running_example, None, kind, rng, rho=Fraction(1, 10**80), **GAUSSIAN)
    assert err.value.field == "rho" and "exact" in err.value.problem
    assert rng.bit_generator.state == state
    noisy, ledger = measure(running_example, None, kind, 0, rho=Fraction(1, 10**20), **GAUSSIAN)
    assert max(m.scale for m in ledger.entries) >= 10**20 and np.isfinite(noisy.values).all()


@pytest.mark.parametrize(("kind", "rho", "z_max"), [("counts", "1/2", 1), ("chain", "1/2", 1), ("cumulative", "2", 2)])
def test_the_noise_of_a_level_follows_the_discrete_gaussian_law(kind, rho, z_max):
    """Chi-square of the 10,520 noise values of the taxi-like leaf level against ``discrete_gaussian_pmf``
    at the level's sigma^2 (6, 789 and 3/4 here)."""
    base = instances.generate("pgsr/taxi-like", seed=0, scale=0.05, N=40)
    data = GroupSizeData(base.hierarchy, base.counts, z_max=z_max, N_declared=True)
    noisy, ledger = measure(data, None, kind, chacha(24), rho=rho, **GAUSSIAN)
    rows = data.hierarchy.level_slice(3)
    noise = (noisy.values[rows] - _truth(data, kind)[rows]).ravel().astype(np.int64)
    sigma2 = ledger.entries[2].scale
    assert noise.size == 10_520
    bound = int(5 * math.sqrt(sigma2)) + 2
    support = np.arange(-bound, bound + 1)
    assert chisquare_pvalue(noise, support, discrete_gaussian_pmf(support, sigma2)) > 1e-4


# ---------------------------------------------------------------- (3) the exact privacy loss
@functools.cache
def _renyi(shift: int, sigma2: Fraction, alpha: float) -> float:
    """``D_alpha(N_Z(shift, sigma2) || N_Z(0, sigma2)) = log sum_z p^alpha q^(1 - alpha) / (alpha - 1)``, pmf only."""
    if shift == 0:
        return 0.0
    bound = int(25 * math.sqrt(sigma2)) + abs(shift) + 2
    z = np.arange(-bound, bound + 1)
    p, q = discrete_gaussian_pmf(z - shift, sigma2), discrete_gaussian_pmf(z, sigma2)
    keep = (p > 0) & (q > 0)  # the far tails underflow; their terms are below 1e-200
    return float(logsumexp(alpha * np.log(p[keep]) + (1 - alpha) * np.log(q[keep])) / (alpha - 1))


def _renyi_of_outputs(h, a, b, variances, alpha: float) -> float:
    """The Renyi divergence of the two output laws: independent cells, so the cells' divergences add."""
    diff = np.asarray(a, dtype=np.int64) - np.asarray(b, dtype=np.int64)
    total = 0.0
    for level, sigma2 in enumerate(variances, start=1):
        for d in diff[h.level_slice(level)].ravel().tolist():
            total += _renyi(abs(d), sigma2, alpha)
    return total


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("tree", [TWO_LEAVES, THREE_LEVELS], ids=["2 levels", "3 levels"])
def test_renyi_divergence_is_alpha_rho_at_the_worst_neighbour_and_never_more(kind, tree):
    """For integer alpha the Renyi divergence between the output laws of the worst neighbours is
    alpha * rho (alpha * sum_l rho_l), computed from the pmf; over every neighbouring pair (N = 3,
    z_max = 2) and for alpha in {1.5, 2, 3, 5} it never exceeds alpha * rho."""
    h = Hierarchy.from_parent_table(tree)
    rho = Fraction(1, 2)
    leaf = h.names[h.leaves[-1]]
    worst_before = GroupSizeData.from_groups(h, [leaf], [3], n_sizes=3, z_max=2)
    _, ledger = measure(worst_before, None, kind, 0, rho=rho, **GAUSSIAN)
    variances = [m.scale for m in ledger.entries]
    worst_after = GroupSizeData.from_groups(h, [leaf], [1], n_sizes=3, z_max=2)
    a, b = _truth(worst_before, kind), _truth(worst_after, kind)
    for alpha in (2.0, 3.0, 5.0):
        assert _renyi_of_outputs(h, a, b, variances, alpha) == pytest.approx(alpha * float(rho), rel=1e-9)
        assert _renyi_of_outputs(h, b, a, variances, alpha) == pytest.approx(alpha * float(rho), rel=1e-9)
    largest = {alpha: 0.0 for alpha in (1.5, 2.0, 3.0, 5.0)}
    for before, after in _pairs(tree, 3, 2, background=1 if tree is TWO_LEAVES else 0):
        a, b = _truth(before, kind), _truth(after, kind)
        for alpha in largest:
            loss = max(_renyi_of_outputs(h, a, b, variances, alpha), _renyi_of_outputs(h, b, a, variances, alpha))
            assert loss <= alpha * float(rho) * (1 + 1e-9)
            largest[alpha] = max(largest[alpha], loss)
    assert largest[2.0] == pytest.approx(2 * float(rho), rel=1e-9)


# ---------------------------------------------------------------- (4) truncated domains
@pytest.mark.parametrize("sigma2", [Fraction(1, 4), 1, 4, 6, Fraction(1000000007, 1000000), 789, 10**4])
def test_gaussian_domains_keep_at_most_the_laplace_rules_tail(sigma2):
    """The half-width is the smallest (up to the paper's multiple of 3) with a Gaussian tail no heavier than
    the Laplace rule's at the same variance: ``P(|Z| > delta) <= exp(-3 ceil(sigma2) / (sigma / sqrt 2))``."""
    delta = truncation_delta(gaussian_domain_scale(sigma2))
    sigma = math.sqrt(sigma2)
    laplace_tail = math.exp(-3 * math.ceil(sigma2) * math.sqrt(2) / sigma)
    assert 2 * (1 - float(discrete_gaussian_cdf(delta, sigma2))) <= laplace_tail
    assert delta % 3 == 0
    smaller = delta - 3  # the next multiple of 3 down fails the sub-Gaussian bound the rule uses
    assert smaller < 0 or 2 * math.exp(-(smaller**2) / (2 * sigma2)) > laplace_tail


# ---------------------------------------------------------------- (5) sessions, post-processing, facts
def test_a_rho_session_charges_the_gaussian_measurement_exactly(running_example):
    session = PrivacySession(running_example, "1", unit="rho", rng=np.random.default_rng(1), not_private=True)
    noisy = measure_release(session, "counts", "3/4", noise="discrete-gaussian")
    assert session.spent_epsilon == Fraction(3, 4) and session.to_dict()["spent"]["rho"] == "3/4"
    (charge,) = session.to_dict()["charges"]
    assert charge["unit"] == "rho" and [r["rho_exact"] for r in charge["measurements"]] == ["3/8"] * 2
    json.dumps(session.to_dict(), allow_nan=False)  # strict JSON: no inf anywhere
    assert noisy.info["rho"] == Fraction(3, 4)
    with pytest.raises(BudgetExceededError):
        measure_release(session, "counts", "1/2", noise="discrete-gaussian")


def test_an_epsilon_session_refuses_a_rho_request_and_a_gaussian_ledger(running_example):
    """No sound rule turns a rho into a pure epsilon: the request is refused before anything is drawn, and a
    mechanism that returns a zCDP ledger for an epsilon request is withheld."""
    session = PrivacySession(running_example, 1, rng=np.random.default_rng(1), not_private=True)
    with pytest.raises(PrivacyParameterError, match="cannot be charged to a budget in epsilon"):
        measure_release(session, "counts", "1/2", noise="discrete-gaussian")
    assert session.spent_epsilon == 0

    def sneaky(data, epsilon, rng):
        return measure(data, None, "counts", rng, rho=epsilon, **GAUSSIAN)

    with pytest.raises(PrivacyParameterError, match="withheld"):
        session.run("sneaky", sneaky, "1/2")


@pytest.mark.parametrize("mechanism", ["M_H^dp", "M_c^dp", "M_c^ch"])
def test_gaussian_runs_post_process_into_consistent_releases(running_example, mechanism):
    run = run_mechanism(mechanism, running_example, None, seed=3, noise="discrete-gaussian", rho="1/2")
    h, counts = running_example.hierarchy, run.release.counts
    assert run.rho == run.rho_spent == Fraction(1, 2) and run.epsilon is None
    assert not h.consistency_residual(counts).any() and counts[0].sum() == running_example.G


def test_release_facts_state_the_l2_sensitivities_and_the_rho_split(running_example):
    facts = release_facts(running_example, "M_c^ch", noise="discrete-gaussian", rho="1/2")
    declared = facts.declared
    sizes = running_example.hierarchy.level_sizes().tolist()
    assert facts.flavor == "zCDP" and "sensitivity_per_level" not in declared
    assert declared["l2_sensitivity_squared_per_level"] == [level_l2_sensitivity("chain", r) for r in sizes]
    L = len(sizes)
    assert declared["rho_per_level"] == [str(Fraction(1, 2 * L))] * L
    assert declared["sigma2_per_level"] == [str(Fraction(level_l2_sensitivity("chain", r) * L)) for r in sizes]
    assert release_facts(running_example, "M_c^ch").flavor == "pure DP"


# ---------------------------------------------------------------- (6) the command line
def _cks_minimum(rho: Fraction, delta: Fraction):
    """``min_alpha`` of Canonne-Kamath-Steinke's epsilon, by ternary search on ``log(alpha - 1)`` at 50 digits."""
    mpmath.mp.dps = 50
    r, d = (mpmath.mpf(x.numerator) / x.denominator for x in (rho, delta))

    def cks(t):
        a = 1 + mpmath.exp(t)
        return a * r + (mpmath.log(1 / d) + (a - 1) * mpmath.log(1 - 1 / a) - mpmath.log(a)) / (a - 1)

    lo, hi = mpmath.mpf(-40), mpmath.mpf(40)
    for _ in range(300):
        a, b = lo + (hi - lo) / 3, hi - (hi - lo) / 3
        lo, hi = (lo, b) if cks(a) < cks(b) else (a, hi)
    return cks((lo + hi) / 2)


def _pgsr_files(folder):
    (folder / "regions.csv").write_text("region,parent\nUS,\nA,US\nB,US\nA1,A\nA2,A\nB1,B\n")
    rng = np.random.default_rng(0)
    rows = [(f"p{u}-{k}", f"h{u}", ["A1", "A2", "B1"][u % 3], 1) for u in range(120) for k in range(rng.integers(1, 5))]
    pd.DataFrame(rows, columns=COLUMNS).to_csv(folder / "persons.csv", index=False)
    return ["release", "pgsr", "--hierarchy", str(folder / "regions.csv"), "--records", str(folder / "persons.csv")]


def test_cli_release_with_the_discrete_gaussian(tmp_path, capsys):
    """``--noise discrete-gaussian --rho 1/2``: a consistent release, a ledger of exactly rho 1/2, and a manifest
    whose epsilons are valid CKS bounds (some alpha reaches them) within 1e-9 of OpenDP's conversion."""
    out = tmp_path / "out.csv"
    argv = [*_pgsr_files(tmp_path), "--N", "4", "--out", str(out), "--noise", "discrete-gaussian", "--rho", "1/2"]
    assert cli.main([*argv, "--seed", "3", "--not-private", "--delta", "1e-8"]) == 0, capsys.readouterr().err
    released = pd.read_csv(out)
    wide = released.pivot(index="region", columns="size", values="count")
    assert (wide.loc["US"] == wide.loc["A"] + wide.loc["B"]).all() and (
        wide.loc["A"] == wide.loc["A1"] + wide.loc["A2"]
    ).all()
    assert (wide.loc["B"] == wide.loc["B1"]).all() and (released["count"] >= 0).all()
    ledger = json.loads((tmp_path / "out.ledger.json").read_text())
    rows = ledger["charges"][0]["measurements"]
    assert ledger["budget_unit"] == "rho" and ledger["spent"]["rho"] == "1/2"
    assert sum(Fraction(r["rho_exact"]) for r in rows) == Fraction(1, 2)
    assert [r["sensitivity_exact"] for r in rows] == ["2", "2", "2"] and [r["scale_exact"] for r in rows] == ["6"] * 3
    manifest = json.loads((tmp_path / "out.manifest.json").read_text())
    params = manifest["privacy_parameters"]
    assert params["unit"] == "rho" and params["rho"] == "1/2" and manifest["dp_flavor"] == "zCDP"
    assert "Gaussian" in manifest["sampler"] and "6, 6, 6" in manifest["sampler"]
    facts = manifest["unprotected_quantities"]["declared_public_facts"]
    assert facts["l2_sensitivity_squared_per_level"] == [2, 2, 2] and facts["rho_per_level"] == ["1/6"] * 3
    assert params["declared_delta"] == "1e-8" and set(params["epsilon_at_delta"]) == {"1e-10", "1e-6", "1e-8"}
    dp = pytest.importorskip("opendp.prelude")
    dp.enable_features("contrib")
    space = dp.atom_domain(T=int), dp.absolute_distance(T=int)
    opendp = dp.c.make_zCDP_to_approxDP(dp.m.make_gaussian(*space, scale=1.0)).map(1)  # rho = 1/2
    for delta, text in params["epsilon_at_delta"].items():
        eps = Fraction(text)
        assert mpmath.mpf(eps.numerator) / eps.denominator >= _cks_minimum(Fraction(1, 2), Fraction(delta))
        assert float(eps) == pytest.approx(opendp.epsilon(float(delta)), rel=1e-9)


def test_cli_refuses_a_rho_release_on_an_epsilon_budget_and_rho_elsewhere(tmp_path, capsys):
    db = tmp_path / "budget.db"
    assert cli.main(["budget", "init", "--db", str(db), "--dataset", "people", "--epsilon", "1"]) == 0
    out = tmp_path / "out.csv"
    argv = [*_pgsr_files(tmp_path), "--N", "4", "--out", str(out), "--noise", "discrete-gaussian", "--rho", "1/2"]
    assert cli.main([*argv, "--budget-db", str(db), "--dataset", "people"]) == 2
    assert "cannot be charged to a budget in epsilon" in capsys.readouterr().err
    assert not out.exists() and not list(tmp_path.glob("out.*"))
    from dpmodels.core.budget import BudgetDatabase

    assert BudgetDatabase(db).dataset("people").charges == []
    for flags, message in [
        (["--noise", "discrete-gaussian", "--epsilon", "1"], "--rho"),
        (["--rho", "1"], "a zCDP budget needs a zCDP noise"),
        (["--epsilon", "1", "--delta", "1e-6"], "goes with --rho only"),
    ]:
        plain = [*_pgsr_files(tmp_path), "--N", "4", "--out", str(out)]
        assert cli.main([*plain, *flags]) == 2
        assert message in capsys.readouterr().err and not out.exists()
    for family in (f.name for f in cli.FAMILIES if f.release):  # only PGSR and TopDown draw a zCDP noise so far
        assert cli.main(["release", family, "--help"]) == 0
        assert ("--rho" in capsys.readouterr().out) == (family in ("pgsr", "topdown"))


def test_the_memory_estimate_reads_the_gaussian_domains():
    from dpmodels.pgsr.algorithms.chain import TABLE_BUDGET
    from dpmodels.pgsr.footprint import estimate_release_bytes

    unbounded = estimate_release_bytes([1, 6, 263], 40, "M_c^ch")
    gaussian = estimate_release_bytes([1, 6, 263], 40, "M_c^ch", rho="1/2")
    widest = truncation_delta(gaussian_domain_scale(Fraction(263 * 3)))  # level 3: sigma^2 = 263 L / (2 rho)
    assert gaussian == unbounded - 16 * TABLE_BUDGET + 16 * (2 * widest + 1)
