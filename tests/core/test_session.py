"""The privacy session: budgets that hold across releases, refusals before any noise, the JSON ledger."""

import json
import math
from fractions import Fraction

import pytest

from dpmodels import instances
from dpmodels.core.errors import PrivacyParameterError
from dpmodels.core.randomness import SECURE_SOURCE, SEEDED_SOURCE
from dpmodels.core.session import BudgetExceededError, PrivacySession
from dpmodels.pgsr.mechanism import measure


@pytest.fixture
def data():
    return instances.generate("pgsr/taxi-like", seed=0, scale=0.05, N=4)


class CountingMeasure:
    """The real PGSR measurement, counting how often it was called (i.e. drew noise)."""

    def __init__(self, kind="counts", **options):
        self.calls, self.kind, self.options = 0, kind, options

    def __call__(self, data, epsilon, rng):
        self.calls += 1
        return measure(data, epsilon, self.kind, rng, **self.options)


def test_requests_add_up_and_the_last_one_over_budget_draws_nothing(data):
    session = PrivacySession(data, epsilon=1, name="taxi")
    mech = CountingMeasure()
    session.run("counts a", mech, "0.4")
    session.run("counts b", mech, "0.5")
    assert session.spent_epsilon == Fraction(9, 10) and session.remaining_epsilon == Fraction(1, 10)
    with pytest.raises(BudgetExceededError, match="nothing was drawn"):
        session.run("counts c", mech, "0.2")
    assert mech.calls == 2 and len(session.charges) == 2
    session.run("counts d", mech, "0.1")  # exactly the rest fits (exact fractions, no 0.30000000000000004)
    assert session.remaining_epsilon == 0


def test_noise_comes_from_the_secure_generator_and_the_ledger_says_so(data, tmp_path):
    session = PrivacySession(data, epsilon=2, name="taxi")
    noisy = session.run("cumulative", CountingMeasure("cumulative"), 1)
    assert noisy.kind == "cumulative"
    doc = json.loads(session.write_ledger(tmp_path / "ledger.json").read_text())
    assert doc["private"] is True and doc["randomness"] == SECURE_SOURCE
    assert doc["spent"]["epsilon"] == "1" and doc["remaining"]["epsilon"] == "1"
    levels = doc["charges"][0]["measurements"]
    assert [row["epsilon"] for row in levels] == pytest.approx([1 / data.L] * data.L)


def test_a_seed_needs_an_explicit_not_private_and_is_recorded(data):
    with pytest.raises(PrivacyParameterError, match="not private"):
        PrivacySession(data, epsilon=1, seed=4)
    session = PrivacySession(data, epsilon=1, seed=4, not_private=True)
    a = session.run("counts", CountingMeasure(), "0.5")
    again = PrivacySession(data, epsilon=1, seed=4, not_private=True).run("counts", CountingMeasure(), "0.5")
    assert (a.values == again.values).all()
    assert session.to_dict()["private"] is False and session.charges[0].randomness == SEEDED_SOURCE


def test_a_mechanism_that_overspends_is_withheld_and_charged(data):
    """The chain measured with the paper's calibration spends eps * sum|R_l| / L, more than granted."""
    session = PrivacySession(data, epsilon=100, name="taxi")
    with pytest.raises(PrivacyParameterError, match="withheld"):
        session.run("chain (paper)", CountingMeasure("chain", calibration="paper"), 1)
    assert session.spent_epsilon > 1


@pytest.mark.parametrize("budget, request_", [(0, 1), (-1, 1), (1, 0), (1, float("inf")), (1, float("nan"))])
def test_bad_budgets_and_requests_are_refused(data, budget, request_):
    with pytest.raises(PrivacyParameterError):
        PrivacySession(data, epsilon=budget).run("x", CountingMeasure(), request_)


# ---------------------------------------------------------------- issue 22: charge first, lock, persist
def test_a_mechanism_that_raises_is_charged_and_cannot_be_retried_for_free(data):
    """Regression: a mechanism that raised inside run was never charged and could be retried forever."""
    session = PrivacySession(data, epsilon=1, name="taxi")

    def fails_after_drawing(d, epsilon, rng):
        rng.integers(10)  # it may have drawn noise before failing
        raise RuntimeError("solver crashed")

    with pytest.raises(RuntimeError):
        session.run("flaky", fails_after_drawing, "0.6")
    assert session.spent_epsilon == Fraction(3, 5) and session.charges[0].status == "failed"
    with pytest.raises(BudgetExceededError):
        session.run("flaky again", fails_after_drawing, "0.6")


def test_threads_cannot_both_spend_the_last_of_a_budget(data):
    """Regression: two threads asking 0.6 of 1 both got it in 40 of 40 trials (check, then charge, no lock)."""
    import threading

    for _ in range(20):
        session = PrivacySession(data, epsilon=1)
        start = threading.Barrier(2)
        granted = []

        def ask(session=session, start=start, granted=granted):
            start.wait()
            try:
                session.run("x", _slow_mechanism, "0.6")
                granted.append(1)
            except BudgetExceededError:
                pass

        threads = [threading.Thread(target=ask) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(granted) == 1 and session.spent_epsilon == Fraction(3, 5)


class _Spent:
    """A mechanism ledger that spent exactly its grant."""

    def __init__(self, epsilon):
        self.total_epsilon = epsilon


def test_a_database_session_persists_across_sessions_and_refuses_beyond_it(data, tmp_path):
    from dpmodels.core.budget import BudgetDatabase

    db = BudgetDatabase(tmp_path / "budget.db")
    db.init("taxi", "epsilon", 1)
    first = PrivacySession.from_database(data, db, "taxi", command="test", inputs={"data": {"sha256": "ab"}})
    first.run("counts", CountingMeasure(), "0.5")
    second = PrivacySession.from_database(data, tmp_path / "budget.db", "taxi")
    assert second.spent_epsilon == Fraction(1, 2) and second.remaining_epsilon == Fraction(1, 2)
    mech = CountingMeasure()
    with pytest.raises(BudgetExceededError, match="nothing was drawn"):
        second.run("counts", mech, "0.6")
    assert mech.calls == 0
    charges = db.dataset("taxi").charges
    assert [(c.cost, c.status, c.inputs) for c in charges] == [(Fraction(1, 2), "charged", {"data": {"sha256": "ab"}})]


def test_a_rho_budget_charges_pure_requests_as_half_their_square(data, tmp_path):
    session = PrivacySession(data, "1/2", unit="rho")
    session.run("counts", CountingMeasure(), "0.5")  # 0.5-DP is 1/8-zCDP
    assert session.spent_epsilon == Fraction(1, 8) and session.to_dict()["spent"]["rho"] == "1/8"
    with pytest.raises(BudgetExceededError):
        session.run("counts", CountingMeasure(), 1)  # would cost 1/2 with 3/8 left


def test_a_rho_request_names_one_amount_and_no_delta(data):
    session = PrivacySession(data, "1/2", unit="rho")
    mech = CountingMeasure()
    with pytest.raises(PrivacyParameterError, match="epsilon or rho, not both"):
        session.run("counts", mech, "0.5", rho="1/8")  # one of them would be silently dropped
    with pytest.raises(PrivacyParameterError, match="no delta"):
        session.run("counts", mech, rho="1/8", delta="1e-6")
    with pytest.raises(PrivacyParameterError, match="budget delta"):
        PrivacySession(data, "1/2", delta="1e-6", unit="rho")
    assert mech.calls == 0 and session.spent_epsilon == 0


class _SpentWithDelta:
    """A mechanism ledger with a finite rho and a delta (an approximate step a zCDP budget cannot pay)."""

    def __init__(self, rho):
        self.total_epsilon, self.total_rho, self.total_delta = math.inf, rho, Fraction(1, 10**6)


def test_a_delta_under_a_rho_budget_is_withheld_with_its_reason(data):
    session = PrivacySession(data, "1/2", unit="rho")
    with pytest.raises(PrivacyParameterError, match="paired with delta 1e-06.*withheld"):
        session.run("approx", lambda d, rho, rng: (None, _SpentWithDelta(rho)), rho="1/8")
    assert session.charges[-1].status == "withheld" and session.spent_epsilon == Fraction(1, 8)


def test_a_seeded_generator_needs_not_private(data):
    import numpy as np

    with pytest.raises(PrivacyParameterError, match="not private"):
        PrivacySession(data, 1, rng=np.random.default_rng(0))
    assert not PrivacySession(data, 1, rng=np.random.default_rng(0), not_private=True).private


def _slow_mechanism(data, epsilon, rng):
    """A mechanism that takes a moment, as real ones do (the window the old check-then-charge left open)."""
    import time

    time.sleep(0.005)
    return None, _Spent(epsilon)
