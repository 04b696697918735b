"""TopDown releases under zCDP: the session's rho, the release facts, the manifest's (eps, delta) and the CLI.

Oracles: exact Fraction sums of the ledger's rows, the plan's ledger against the stated facts,
Canonne-Kamath-Steinke's conversion minimised here at 50 digits (mpmath) and OpenDP's
``make_zCDP_to_approxDP``, the hard constraint checks in the manifest, and the budget database.
"""

import json
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from release_cases import topdown as topdown_case

from dpmodels import cli
from dpmodels.core.budget import BudgetDatabase
from dpmodels.core.errors import DataValidationError, PrivacyParameterError
from dpmodels.core.session import BudgetExceededError, PrivacySession
from dpmodels.instances.topdown import synthetic_census
from dpmodels.topdown.mechanism import default_strategy, plan_measurement
from dpmodels.topdown.release import HARD_CHECKS, RELEASE_NOISES, measure_release, release, release_facts
from dpmodels.topdown.zcdp import GAUSSIAN, level_l2_deltas

GAUSSIAN_OPTIONS = {"noise": "discrete-gaussian"}


@pytest.fixture(scope="module")
def census():
    return synthetic_census(seed=1, preset="tiny", races=7)


def _session(data, amount, unit="rho", seed=1):
    return PrivacySession(data, amount, unit=unit, rng=np.random.default_rng(seed), not_private=True)


# ---------------------------------------------------------------------- the session and the facts
def test_a_rho_session_charges_the_gaussian_measurement_exactly(census):
    session = _session(census, "1")
    measured, public = measure_release(session, None, rho="3/4", **GAUSSIAN_OPTIONS)
    assert session.spent_epsilon == Fraction(3, 4) and session.to_dict()["spent"]["rho"] == "3/4"
    (charge,) = session.to_dict()["charges"]
    assert charge["unit"] == "rho" and sum(Fraction(r["rho_exact"]) for r in charge["measurements"]) == Fraction(3, 4)
    assert all(r["sensitivity_norm"] == "squared L2" and r["epsilon"] is None for r in charge["measurements"])
    json.dumps(session.to_dict(), allow_nan=False)  # strict JSON: no inf anywhere
    assert measured.mechanism == GAUSSIAN and measured.ledger.total_rho == Fraction(3, 4)
    assert public.geography is census.geography
    with pytest.raises(BudgetExceededError):
        measure_release(session, None, rho="1/2", **GAUSSIAN_OPTIONS)


def test_an_epsilon_session_refuses_a_rho_request(census):
    """No sound rule turns a rho into a pure epsilon: refused before anything is drawn or charged."""
    session = _session(census, 1, unit="epsilon")
    state = session.rng.bit_generator.state
    with pytest.raises(PrivacyParameterError, match="cannot be charged to a budget in epsilon"):
        measure_release(session, None, rho="1/2", **GAUSSIAN_OPTIONS)
    assert session.spent_epsilon == 0 and session.rng.bit_generator.state == state


@pytest.mark.parametrize(
    ("epsilon", "options", "field"),
    [
        (1, {"noise": "laplace"}, "noise"),
        (1, {"noise": "discrete-gaussian", "rho": "1/2"}, "epsilon"),
        (None, {"noise": "discrete-gaussian"}, "rho"),
        (1, {"rho": "1/2"}, "rho"),
    ],
)
def test_refused_releases_cost_nothing(census, epsilon, options, field):
    session = _session(census, 1, unit="epsilon" if options.get("rho") is None else "rho")
    with pytest.raises(DataValidationError) as err:
        measure_release(session, epsilon, **options)
    assert err.value.field == field and session.spent_epsilon == 0 and not session.charges


def test_release_facts_state_the_l2_sensitivities_the_rho_split_and_sigma2(census):
    facts = release_facts(census, rho="1/2", **GAUSSIAN_OPTIONS)
    declared, geo = facts.declared, census.geography
    strategy = default_strategy(census.schema)
    plan = plan_measurement(census, None, rho="1/2", records_may_leave=True, **GAUSSIAN_OPTIONS)
    by_group = {e.group: e for e in plan.ledger.entries}
    assert facts.flavor == "zCDP" and "squared L2" in facts.neighbours
    for level in range(1, geo.n_levels + 1):
        expected = level_l2_deltas(strategy, geo, level, "substitution", True)
        assert declared["l2_sensitivity_squared_per_level"][level - 1] == expected
        for q in strategy.queries:
            entry = by_group[f"level {level} / {q.name}"]
            assert declared["l2_sensitivity_squared_per_level"][level - 1][q.name] == entry.sensitivity
            assert declared["rho_per_level_and_query_set"][level - 1][q.name] == str(entry.rho)
            assert declared["sigma2_per_level_and_query_set"][level - 1][q.name] == str(entry.scale)
    assert declared["rho_per_level"] == ["1/12"] * 6
    assert sum(Fraction(r) for r in declared["rho_per_level"]) == Fraction(1, 2)
    assert any("k^2 times the rho" in n for n in facts.notes) and any("discrete Gaussian" in n for n in facts.notes)
    without_rho = release_facts(census, **GAUSSIAN_OPTIONS).declared
    assert "sigma2_per_level_and_query_set" not in without_rho and "l2_sensitivity_squared_per_level" in without_rho
    pure = release_facts(census)
    assert pure.flavor == "pure DP" and "l2_sensitivity_squared_per_level" not in pure.declared
    assert not any("Gaussian" in n for n in pure.notes)
    with pytest.raises(PrivacyParameterError):
        release_facts(census, noise="laplace")


def test_a_gaussian_release_is_consistent(census):
    session = _session(census, "1/2")
    result = release(session, None, rho="1/2", **GAUSSIAN_OPTIONS)
    assert all(result.checks[name] == 0 for name in HARD_CHECKS), result.checks
    assert result.leaf_counts.sum() == census.population and session.spent_epsilon == Fraction(1, 2)


# ---------------------------------------------------------------------- the command line
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


GAUSSIAN_FLAGS = ["--noise", "discrete-gaussian", "--rho", "1/2"]


def test_cli_release_with_the_discrete_gaussian(tmp_path, capsys):
    """``--noise discrete-gaussian --rho 1/2``: 0 broken hard constraints, a ledger of exactly rho 1/2 whose rows
    are the stated facts, and a manifest whose epsilons are valid CKS bounds within 1e-9 of OpenDP's."""
    case = topdown_case(tmp_path)
    argv = [*case.argv, *GAUSSIAN_FLAGS, "--seed", "3", "--not-private", "--delta", "1e-8"]
    assert cli.main(argv) == 0, capsys.readouterr().err
    assert all(path.exists() for path in case.written)
    manifest = json.loads(case.manifest.read_text())
    checks = manifest["details"]["checks"]
    assert all(checks[name] == 0 for name in HARD_CHECKS), checks
    assert manifest["details"]["noise"] == "discrete-gaussian" and manifest["dp_flavor"] == "zCDP"
    ledger = json.loads(case.ledger.read_text())
    rows = ledger["charges"][0]["measurements"]
    assert ledger["budget_unit"] == "rho" and ledger["spent"]["rho"] == "1/2"
    assert sum(Fraction(r["rho_exact"]) for r in rows) == Fraction(1, 2) and len(rows) == 6 * 3
    facts = manifest["unprotected_quantities"]["declared_public_facts"]
    for r in rows:
        level = int(r["group"].split(" / ")[0][6:]) - 1
        assert facts["l2_sensitivity_squared_per_level"][level][r["query"]] == Fraction(r["sensitivity_exact"])
        assert facts["sigma2_per_level_and_query_set"][level][r["query"]] == r["scale_exact"]
        assert Fraction(r["scale_exact"]) == Fraction(r["sensitivity_exact"]) / (2 * Fraction(r["rho_exact"]))
    assert "Gaussian" in manifest["sampler"] and "detailed 24" in manifest["sampler"]
    params = manifest["privacy_parameters"]
    assert params["unit"] == "rho" and params["rho"] == "1/2" and params["declared_delta"] == "1e-8"
    assert set(params["epsilon_at_delta"]) == {"1e-10", "1e-6", "1e-8"}
    for delta, text in params["epsilon_at_delta"].items():
        eps = Fraction(text)
        assert mpmath.mpf(eps.numerator) / eps.denominator >= _cks_minimum(Fraction(1, 2), Fraction(delta))
    dp = pytest.importorskip("opendp.prelude")
    dp.enable_features("contrib")
    space = dp.atom_domain(T=int), dp.absolute_distance(T=int)
    opendp = dp.c.make_zCDP_to_approxDP(dp.m.make_gaussian(*space, scale=1.0)).map(1)  # rho = 1/2
    for delta, text in params["epsilon_at_delta"].items():
        assert float(Fraction(text)) == pytest.approx(opendp.epsilon(float(delta)), rel=1e-9)


def test_cli_charges_a_rho_budget_database_and_refuses_an_epsilon_one(tmp_path, capsys):
    rho_db, eps_db = tmp_path / "rho.db", tmp_path / "eps.db"
    assert cli.main(["budget", "init", "--db", str(rho_db), "--dataset", "census", "--rho", "1"]) == 0
    assert cli.main(["budget", "init", "--db", str(eps_db), "--dataset", "census", "--epsilon", "1"]) == 0
    case = topdown_case(tmp_path)
    common = [*case.argv, *GAUSSIAN_FLAGS, "--seed", "3", "--not-private", "--dataset", "census"]
    assert cli.main([*common, "--budget-db", str(eps_db)]) == 2
    assert "cannot be charged to a budget in epsilon" in capsys.readouterr().err
    assert not any(path.exists() for path in case.written) and BudgetDatabase(eps_db).dataset("census").charges == []
    assert cli.main([*common, "--budget-db", str(rho_db)]) == 0, capsys.readouterr().err
    budget = BudgetDatabase(rho_db).dataset("census")
    assert budget.unit == "rho" and [c.cost for c in budget.charges] == [Fraction(1, 2)]
    assert budget.spent == Fraction(1, 2)


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--noise", "discrete-gaussian", "--epsilon", "1"], "--rho"),
        (["--rho", "1"], "a zCDP budget needs a zCDP noise"),
        (["--epsilon", "1", "--delta", "1e-6"], "goes with --rho only"),
    ],
)
def test_cli_refuses_mixed_units_before_anything_is_written(tmp_path, capsys, flags, message):
    case = topdown_case(tmp_path)
    assert cli.main([*case.argv, *flags, "--seed", "3", "--not-private"]) == 2
    assert message in capsys.readouterr().err and not any(path.exists() for path in case.written)


def test_the_command_offers_the_release_noises(capsys):
    assert cli.main(["release", "topdown", "--help"]) == 0
    text = capsys.readouterr().out
    assert "--rho" in text and "--delta" in text and "{" + ",".join(RELEASE_NOISES) + "}" in text
    assert RELEASE_NOISES == ("geometric", GAUSSIAN)
