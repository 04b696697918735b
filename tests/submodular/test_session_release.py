"""Private submodular runs through a PrivacySession (dpmodels.submodular.release).

The session is charged the run's total before anything is drawn, refuses a request beyond what
is left, records the spend exactly, and hands back only the release.
"""

import math
from fractions import Fraction

import pytest

from dpmodels import instances
from dpmodels.core.errors import DataValidationError, PrivacyParameterError
from dpmodels.core.noise import exact
from dpmodels.core.randomness import SECURE_SOURCE, SEEDED_SOURCE
from dpmodels.core.session import BudgetExceededError, PrivacySession
from dpmodels.submodular.exact import bases as exact_bases
from dpmodels.submodular.mechanism import exponential
from dpmodels.submodular.mechanism.continuous import private_continuous_greedy
from dpmodels.submodular.release import ALGORITHMS, planned_accountant, release, spend
from dpmodels.submodular.results import ContinuousRelease, GreedyRelease


@pytest.fixture(scope="module")
def cov():
    """Coverage on a uniform matroid of rank 3 (|E| = 12), Delta = 1."""
    return instances.generate("submodular/coverage", seed=1, n=12, users=30, rank=3)


@pytest.fixture(scope="module")
def kcov():
    return instances.generate("submodular/k-coverage", seed=0, n=8, users=20, k=2, rank=3)


def _no_draws(monkeypatch):
    """Make every sampler of the mechanisms raise: a refused request must never reach them."""

    def boom(*args, **kwargs):
        raise AssertionError("a sampler was called")

    monkeypatch.setattr(exponential, "exponential_mechanism", boom)
    monkeypatch.setattr(exact_bases, "conditional_poisson", boom)


def test_the_spend_is_recorded_exactly_and_only_the_release_comes_back(cov):
    session = PrivacySession(cov.function, 1, name="coverage")
    out = release(session, "mitrovic", cov.matroid, 0.1)
    assert isinstance(out, GreedyRelease) and not hasattr(out, "diagnostics") and not hasattr(out, "value")
    assert out.epsilon == 0.3 and len(out.order) == 3
    charge = session.charges[-1]
    assert (charge.label, charge.epsilon, charge.delta) == ("submodular mitrovic", Fraction(3, 10), 0)
    assert charge.randomness == SECURE_SOURCE and session.remaining_epsilon == Fraction(7, 10)
    rows = charge.measurements
    assert [r["step"] for r in rows] == ["mitrovic step 1", "mitrovic step 2", "mitrovic step 3", "total (basic)"]
    assert rows[-1]["epsilon_exact"] == "3/10" and all(r["randomness"] == SECURE_SOURCE for r in rows)
    cg = release(session, "alg1", cov.matroid, 0.05, T=2)  # 2 eps r T = 0.6
    assert isinstance(cg, ContinuousRelease) and cg.epsilon == pytest.approx(0.6)
    assert session.spent_epsilon == Fraction(9, 10)


def test_a_request_beyond_what_is_left_is_refused_before_any_draw(cov, monkeypatch):
    session = PrivacySession(cov.function, 1, name="coverage")
    release(session, "mitrovic", cov.matroid, 0.2)  # 0.6 spent
    state = repr(session.rng.bit_generator.state)
    _no_draws(monkeypatch)
    with pytest.raises(BudgetExceededError, match="nothing was drawn"):
        release(session, "mitrovic", cov.matroid, 0.2)  # asks 0.6, 0.4 left
    with pytest.raises(BudgetExceededError):
        release(session, "alg1", cov.matroid, 0.1)  # 2 eps r T = 1.8
    assert repr(session.rng.bit_generator.state) == state and len(session.charges) == 1
    assert session.remaining_epsilon == Fraction(2, 5)


def test_bad_requests_are_refused_before_the_session_is_asked(cov, monkeypatch):
    session = PrivacySession(cov.function, 100)
    _no_draws(monkeypatch)
    for eps in (math.inf, 0.0, -1.0, math.nan):
        with pytest.raises(PrivacyParameterError, match="^epsilon"):
            release(session, "mitrovic", cov.matroid, eps)
    for owned in ({"seed": 1}, {"accountant": None}, {"diagnostic": True}):
        with pytest.raises(PrivacyParameterError, match="set by the session"):
            release(session, "alg1", cov.matroid, 0.1, **owned)
    with pytest.raises(DataValidationError, match="algorithm"):
        release(session, "gumbel", cov.matroid, 0.1)
    assert session.charges == []


def test_advanced_composition_is_charged_with_its_delta(cov):
    """50 steps of 2 eps r = 0.06: basic 3.0, zCDP at delta' = 1e-6 about 2.32, charged with delta 1e-6."""
    session = PrivacySession(cov.function, 10, 1e-5)
    release(session, "alg1", cov.matroid, 0.01, T=50, delta_prime=1e-6)
    charge = session.charges[-1]
    zcdp = private_continuous_greedy(cov.function, cov.matroid, 0.01, T=50, seed=0).accountant.zcdp(1e-6)
    assert charge.epsilon == exact(zcdp[0], "eps") < 3 and charge.delta == Fraction(1, 10**6)
    assert charge.measurements[-1]["step"] == "total (zCDP)"
    release(session, "mitrovic", cov.matroid, 0.5, delta_prime=1e-6)  # 3 steps: basic 1.5 is smallest
    assert (session.charges[-1].epsilon, session.charges[-1].delta) == (Fraction(3, 2), 0)
    with pytest.raises(BudgetExceededError, match="delta"):
        release(PrivacySession(cov.function, 10), "alg1", cov.matroid, 0.01, T=50, delta_prime=1e-6)


@pytest.mark.parametrize(
    ("algorithm", "options"),
    [
        ("alg1", {"T": 4}),
        ("alg1", {"cover": "maurey", "maurey_m": 2, "T": 2}),
        ("alg2", {"T": 2, "sample_size": 5}),
        ("alg2", {"T": 2, "sample_size": 5, "mu": 0.5}),
        ("alg2", {"T": 2, "sample_size": 5, "mu_mode": "scale"}),
        ("mitrovic", {}),
        ("alg3", {}),
        ("alg4", {"gamma": 0.2}),
    ],
)
@pytest.mark.parametrize("delta_prime", [None, 1e-6])
def test_the_plan_is_what_the_run_charges(cov, kcov, algorithm, options, delta_prime):
    """The request (computed before the run from public inputs) equals the run's own accountant total."""
    inst = kcov if algorithm in ("alg3", "alg4") else cov
    F, M = inst.function, inst.matroid
    planned = spend(planned_accountant(algorithm, F, M, 0.3, **options), delta_prime)
    ran = ALGORITHMS[algorithm](F, M, 0.3, seed=0, **options).accountant
    actual = spend(ran, delta_prime)
    assert (planned.total_epsilon, planned.total_delta, planned.composition) == (
        actual.total_epsilon,
        actual.total_delta,
        actual.composition,
    )
    assert [c.name for c in planned.accountant.charges] == [c.name for c in ran.charges]


def test_a_seeded_session_is_reproducible_and_labelled(cov):
    def run():
        session = PrivacySession(cov.function, 5, seed=4, not_private=True)
        return release(session, "alg1", cov.matroid, 0.1, T=3), session

    (a, sa), (b, _) = run(), run()
    assert a == b and sa.charges[-1].randomness == SEEDED_SOURCE
    assert sa.charges[-1].measurements[-1]["randomness"] == SEEDED_SOURCE
