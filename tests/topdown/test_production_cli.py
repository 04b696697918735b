"""``dpmodels release topdown --passes --budget-preset --structural-zeros`` (issue 25): the manifest states the
preset, the passes and every node that used the failsafe; the ledger charges exactly the declared rho."""

import argparse
import json
from fractions import Fraction

import pandas as pd
import pytest
from release_cases import topdown as topdown_case

from dpmodels import cli
from dpmodels.core.errors import DataValidationError
from dpmodels.topdown.budget_presets import BUDGET_PRESETS, PL94_2020_GEOLEVEL_SHARES, PL94_2020_QUERY_SHARES
from dpmodels.topdown.production import STRUCTURAL_ZERO_RULE, STRUCTURAL_ZEROS
from dpmodels.topdown.production_options import parse_passes, production_release
from dpmodels.topdown.release import HARD_CHECKS
from dpmodels.topdown.solve import NodeOptions


def test_the_command_offers_the_registered_names(capsys):
    assert cli.main(["release", "topdown", "--help"]) == 0
    text = capsys.readouterr().out
    assert all(f"--{flag}" in text for flag in ("passes", "budget-preset", "structural-zeros", "rounder"))
    assert cli.main(["release", "topdown", "--budget-preset", "pl94-2019", "--help"]) == 2
    assert "pl94-2020" in capsys.readouterr().err and set(BUDGET_PRESETS) == {"pl94-2020"}
    assert set(STRUCTURAL_ZEROS) == {"production", "adult-only"}
    assert parse_passes("total; hhgq, rest") == (("total",), ("hhgq", "rest"))
    assert parse_passes(None) == ()
    with pytest.raises(DataValidationError, match="--passes"):
        parse_passes("total;;rest")


@pytest.mark.slow  # about 4 s; the preset, the passes and the failsafe list are tested in Python in the default tier
def test_cli_release_with_the_production_options(tmp_path, capsys):
    case = topdown_case(tmp_path)
    persons = pd.read_csv(case.inputs["--persons"], dtype=str)
    minor = persons.iloc[[0]].assign(hhgq="nursing", votingage="under 18")  # a structural zero of the production
    persons = pd.concat([persons, minor], ignore_index=True)
    persons.to_csv(case.inputs["--persons"], index=False)
    flags = ["--budget-preset", "pl94-2020", "--passes", "total; rest", "--structural-zeros", "production"]
    flags += ["--rounder", "queries"]
    argv = [*case.argv, *flags, "--noise", "discrete-gaussian", "--rho", "2", "--seed", "3", "--not-private"]
    assert cli.main(argv) == 0, capsys.readouterr().err
    manifest = json.loads(case.manifest.read_text())
    details = manifest["details"]
    assert all(details["checks"][name] == 0 for name in HARD_CHECKS), details["checks"]
    assert len(details["failsafe nodes"]) == details["checks"]["failsafe parents"]
    facts = manifest["unprotected_quantities"]["declared_public_facts"]
    assert facts["budget_preset"] == "pl94-2020" and facts["passes"][0] == ["total"]
    assert facts["rounder"].startswith("queries")
    assert facts["preset_level_shares"] == [str(v) for v in PL94_2020_GEOLEVEL_SHARES.values()]
    assert STRUCTURAL_ZERO_RULE in manifest["contribution_bounding"]
    ledger = json.loads(case.ledger.read_text())
    rows = ledger["charges"][0]["measurements"]
    assert ledger["spent"]["rho"] == "2" and sum(Fraction(r["rho_exact"]) for r in rows) == 2
    levels = list(PL94_2020_GEOLEVEL_SHARES)
    names = [q["query_set"] for q in facts["strategy"]]
    for r in rows:
        level = levels[int(r["group"].split(" / ")[0][6:]) - 1]
        share = PL94_2020_QUERY_SHARES[level][names.index(r["query"])]
        assert Fraction(r["rho_exact"]) == 2 * PL94_2020_GEOLEVEL_SHARES[level] * share
    histograms = pd.read_csv(case.outputs["--out-histograms"], dtype={"region": str})
    minors = histograms[(histograms.hhgq == "nursing") & (histograms.votingage == "under 18")]
    assert minors.empty  # a structural zero everywhere
    nation = histograms[histograms.level == 1]["count"].sum()
    assert nation == len(persons) - 1  # the minor in a nursing facility was left out by the stated rule


def test_the_rounder_flag_selects_the_query_rounder():
    args = argparse.Namespace(budget_preset=None, passes=None, rounder="queries")
    assert production_release(args, None)["options"] == NodeOptions(objective="queries")
    assert production_release(argparse.Namespace(budget_preset=None, passes=None, rounder="cells"), None) == {}


def test_the_preset_needs_the_discrete_gaussian_and_nothing_is_written(tmp_path, capsys):
    case = topdown_case(tmp_path)
    argv = [*case.argv, "--budget-preset", "pl94-2020", "--epsilon", "1", "--seed", "3", "--not-private"]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert "--budget-preset" in err and "--noise discrete-gaussian" in err
    assert not any(path.exists() for path in case.outputs.values()) and not case.ledger.exists()
