"""``--level-shares`` on ``release``, ``measure`` and ``compare topdown`` (issue 25): custom geolevel shares
from the command line, exact fractions summing to exactly 1, spent as declared and stated in the manifest.

The per-level budget is read back from the ledger (every measurement row's exact epsilon or rho, summed
by level) and compared with the fractions computed here from the declared text."""

import argparse
import json
from fractions import Fraction

import pytest
from release_cases import topdown as topdown_case

from dpmodels import cli
from dpmodels.core.errors import DataValidationError
from dpmodels.topdown.budget_presets import PL94_2020_LEVELS, PL94_2020_QUERY_SHARES
from dpmodels.topdown.production_options import parse_level_shares, production_release

SHARES = "104/4099,1440/4099,447/4099,687/4099,1256/4099,165/4099"
ODD_SHARES = "1/2,1/4,1/8,1/16,1/32,1/32"


def _fractions(text: str) -> list[Fraction]:
    """The declared shares, computed here: numerator and denominator of each item."""
    return [Fraction(int(item.split("/")[0]), int(item.split("/")[1])) for item in text.split(",")]


def _spent_per_level(ledger: dict, unit: str) -> dict[int, Fraction]:
    spent: dict[int, Fraction] = {}
    for row in ledger["charges"][0]["measurements"]:
        level = int(row["group"].split(" / ")[0].removeprefix("level "))
        spent[level] = spent.get(level, Fraction(0)) + Fraction(row[f"{unit}_exact"])
    return spent


def _measure_argv(case, out, *flags) -> list[str]:
    persons, blocks = str(case.inputs["--persons"]), str(case.inputs["--blocks"])
    return ["measure", "topdown", "--persons", persons, "--blocks", blocks, "--races", "7", "--out", str(out), *flags]


@pytest.mark.parametrize(
    "budget, unit",
    [(["--epsilon", "2"], "epsilon"), (["--noise", "discrete-gaussian", "--rho", "3/2"], "rho")],
    ids=["geometric", "discrete-gaussian"],
)
def test_measure_spends_the_declared_share_of_each_level(budget, unit, tmp_path, capsys):
    case = topdown_case(tmp_path)
    out = tmp_path / "m.csv"
    argv = _measure_argv(case, out, *budget, "--level-shares", SHARES, "--seed", "1", "--not-private")
    assert cli.main(argv) == 0, capsys.readouterr().err
    total = Fraction(budget[-1])
    ledger = json.loads((tmp_path / "m.ledger.json").read_text())
    spent = _spent_per_level(ledger, unit)
    assert spent == {lvl: total * share for lvl, share in enumerate(_fractions(SHARES), start=1)}
    assert Fraction(ledger["spent"][unit]) == total
    facts = json.loads((tmp_path / "m.manifest.json").read_text())["unprotected_quantities"]["declared_public_facts"]
    assert facts["level_shares"] == SHARES.split(",") and facts["level_shares_from"] == "--level-shares"


@pytest.mark.slow  # ~5 s: a whole release; the measurement (the same split) is checked in the default tier
def test_release_with_the_preset_and_custom_shares_spends_them_with_the_presets_query_shares(tmp_path, capsys):
    case = topdown_case(tmp_path)
    budget = ["--noise", "discrete-gaussian", "--rho", "2", "--seed", "3", "--not-private"]
    argv = [*case.argv, "--budget-preset", "pl94-2020", "--level-shares", ODD_SHARES, *budget]
    assert cli.main(argv) == 0, capsys.readouterr().err
    manifest = json.loads(case.manifest.read_text())
    facts = manifest["unprotected_quantities"]["declared_public_facts"]
    assert facts["level_shares"] == ODD_SHARES.split(",") and "replacing the pl94-2020" in facts["level_shares_from"]
    names = [q["query_set"] for q in facts["strategy"]]
    geolevel = _fractions(ODD_SHARES)
    ledger = json.loads(case.ledger.read_text())
    for row in ledger["charges"][0]["measurements"]:
        level = int(row["group"].split(" / ")[0].removeprefix("level "))
        query_share = PL94_2020_QUERY_SHARES[PL94_2020_LEVELS[level - 1]][names.index(row["query"])]
        assert Fraction(row["rho_exact"]) == 2 * geolevel[level - 1] * query_share
    assert _spent_per_level(ledger, "rho") == {lvl: 2 * s for lvl, s in enumerate(geolevel, start=1)}


def test_the_shares_replace_the_presets_geolevel_shares_and_keep_its_query_shares():
    from dpmodels.instances.topdown import synthetic_census

    data = synthetic_census(seed=1, preset="tiny", races=7)
    given = {"budget_preset": "pl94-2020", "passes": None, "rounder": "cells"}
    preset = production_release(argparse.Namespace(**given), data)
    custom = production_release(argparse.Namespace(**given, level_shares=ODD_SHARES), data)
    assert custom["level_shares"] == tuple(_fractions(ODD_SHARES)) != preset["level_shares"]
    kept, theirs = custom["strategy"], preset["strategy"]
    assert kept.per_level == theirs.per_level and [q.name for q in kept.queries] == [q.name for q in theirs.queries]
    alone = production_release(argparse.Namespace(**{**given, "budget_preset": None}, level_shares=SHARES), data)
    assert alone == {"level_shares": tuple(_fractions(SHARES))}


@pytest.mark.parametrize(
    "text, message",
    [
        ("1/6,1/6,1/6,1/6,1/6,1/7", "sum to 41/42, not exactly 1"),
        ("0.3,0.3,0.3", "sum to 9/10, not exactly 1"),
        ("1/2,-1/6,1/6,1/6,1/6,1/6", "share 2 is -1/6"),
        ("0,1/5,1/5,1/5,1/5,1/5", "share 1 is 0"),
        ("1/6,1/6,one sixth,1/6,1/6,1/6", "share 3 ('one sixth') is not an exact fraction"),
        ("1/6,1/6,1/6,1/6,1/6,1/0", "share 6 ('1/0') is not an exact fraction"),
        ("nan,1", "share 1 ('nan') is not an exact fraction"),
        ("1/2,,1/2", "share 2 ('') is not an exact fraction"),
    ],
)
def test_shares_that_are_not_exact_positive_fractions_summing_to_one_are_refused(text, message):
    with pytest.raises(DataValidationError, match="--level-shares") as refused:
        parse_level_shares(text)
    assert message in str(refused.value)


def test_exact_decimals_are_read_exactly():
    halves = (Fraction(1, 2), Fraction(1, 4), Fraction(1, 8), Fraction(1, 8))
    assert parse_level_shares("0.5,0.25,0.125,0.125") == halves
    assert parse_level_shares(None) is None


@pytest.mark.parametrize(
    "shares, message",
    [
        ("1/5,1/5,1/5,1/5,1/5", "needs one share per geography level, root first (6), got 5"),
        ("1/6,1/6,1/6,1/6,1/6,1/7", "not exactly 1"),
        ("1/6,1/6,1/6,1/6,1/6,x", "is not an exact fraction"),
    ],
)
def test_measure_refuses_bad_shares_before_anything_is_charged_or_written(shares, message, tmp_path, capsys):
    case = topdown_case(tmp_path)
    out = tmp_path / "m.csv"
    assert cli.main(_measure_argv(case, out, "--epsilon", "1", "--level-shares", shares)) == 2
    err = capsys.readouterr().err
    assert "--level-shares" in err and message in err and "Traceback" not in err
    assert not out.exists() and not (tmp_path / "m.ledger.json").exists()


def test_release_refuses_a_wrong_count_before_anything_is_written(tmp_path, capsys):
    case = topdown_case(tmp_path)
    argv = [*case.argv, "--epsilon", "1", "--level-shares", "1/2,1/2", "--seed", "1", "--not-private"]
    assert cli.main(argv) == 2
    assert "--level-shares: needs one share per geography level, root first (6), got 2" in capsys.readouterr().err
    assert not any(path.exists() for path in case.outputs.values()) and not case.ledger.exists()


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--level-shares", "1/2,1/2"], "--level-shares: needs one share per geography level, root first (6), got 2"),
        (["--estimators", "--level-shares", "1/2,1/2"], "--level-shares: does not apply with --estimators"),
    ],
)
def test_compare_refuses_shares_it_cannot_use(flags, message, capsys):
    assert cli.main(["compare", "topdown", "--runs", "1", "--epsilon", "1", "--no-progress", *flags]) == 2
    assert message in capsys.readouterr().err
