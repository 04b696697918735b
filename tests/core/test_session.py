"""The privacy session: budgets that hold across releases, refusals before any noise, the JSON ledger."""

import json
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
