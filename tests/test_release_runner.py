"""Every ``dpmodels release`` through the shared runner: budget database, all-or-nothing files, manifest.

Parametrized over the families that declare a release command (``cli.FAMILIES``), each with a tiny
case from ``tests/helpers/release_cases.py``.  Regression tests of the issue-22 audit: three runs
of ``release pgsr --epsilon 1`` each said "spent 1 of 1", ``release pgsr --out records.csv
--records records.csv`` destroyed its input, and ``--out-histograms /dev/full`` left a microdata
CSV without a ledger.
"""

from __future__ import annotations

import hashlib
import json
from fractions import Fraction

import pytest
from release_cases import CASES

from dpmodels import cli
from dpmodels.core.budget import BudgetDatabase
from dpmodels.core.facts import FLAVORS
from dpmodels.core.manifest import read_manifest, verify_outputs

FAMILIES = [f.name for f in cli.FAMILIES if f.release]
UNIT_FLAG = {"mdp": "--epsilon-per-km"}


def _sha256(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _partials(folder) -> list[str]:
    return [p.name for p in folder.iterdir() if p.name.endswith(".dpmodels-partial")]


def test_every_release_command_has_a_case():
    assert set(CASES) == set(FAMILIES)


@pytest.mark.parametrize("family", FAMILIES)
def test_a_release_writes_its_outputs_ledger_and_a_manifest_that_verifies(family, tmp_path, capsys):
    case = CASES[family](tmp_path)
    assert cli.main([*case.argv, "--epsilon", "1"]) == 0, capsys.readouterr().err
    manifest = read_manifest(case.manifest)
    assert verify_outputs(case.manifest) == {}
    assert set(manifest["outputs"]) == {*case.outputs, "--ledger"}
    assert {flag: record["sha256"] for flag, record in manifest["inputs"].items()} == {
        flag: _sha256(path) for flag, path in case.inputs.items()
    }
    assert manifest["family"] == family and manifest["private"] is True and manifest["dp_flavor"] in FLAVORS
    assert manifest["privacy_unit"]["unit"] and manifest["privacy_unit"]["neighbour_relation"]
    assert manifest["options"]["epsilon"] == "1" and manifest["command"][:3] == ["dpmodels", "release", family]
    params = manifest["privacy_parameters"]
    assert Fraction(params[params["unit"]]) == 1
    charges = manifest["budget"]["charges"]
    assert sum(Fraction(c[c["unit"]]) for c in charges) == 1 and {c["status"] for c in charges} == {"done"}
    assert manifest["software"]["dependencies"]["numpy"]
    captured = capsys.readouterr()
    assert f"wrote {case.manifest}" in captured.err and "wrote" not in captured.out  # notes: stderr


@pytest.mark.parametrize("family", FAMILIES)
def test_an_existing_output_needs_force_and_an_input_is_never_an_output(family, tmp_path, capsys):
    case = CASES[family](tmp_path)
    first_flag, first = next(iter(case.outputs.items()))
    first.write_text("keep me\n")
    assert cli.main([*case.argv, "--epsilon", "1"]) == 2
    assert "pass --force" in capsys.readouterr().err
    assert first.read_text() == "keep me\n" and not case.ledger.exists() and not case.manifest.exists()
    assert cli.main([*case.argv, "--epsilon", "1", "--force"]) == 0
    assert verify_outputs(case.manifest) == {}
    source_flag, source = next(iter(case.inputs.items()))
    before = _sha256(source)
    argv = [str(source) if a == str(first) else a for a in case.argv]
    assert cli.main([*argv, "--epsilon", "1", "--force"]) == 2
    assert f"would overwrite the input {source_flag}" in capsys.readouterr().err
    assert _sha256(source) == before


@pytest.mark.parametrize("family", FAMILIES)
def test_a_device_as_an_output_is_refused_before_any_work(family, tmp_path, capsys):
    """Regression: ``--out-histograms /dev/full`` left a microdata CSV with no ledger."""
    case = CASES[family](tmp_path)
    assert cli.main([*case.argv, "--epsilon", "1", "--ledger", "/dev/full", "--force"]) == 2
    assert "not a regular file" in capsys.readouterr().err
    assert not any(path.exists() for path in case.written) and not _partials(tmp_path)


@pytest.mark.parametrize("family", FAMILIES)
def test_the_budget_database_persists_across_releases_and_refuses_what_does_not_fit(family, tmp_path, capsys):
    """Regression: every release opened a fresh budget, so repeated releases each spent all of it."""
    db = tmp_path / "budget.db"
    unit = UNIT_FLAG.get(family, "--epsilon")
    assert cli.main(["budget", "init", "--db", str(db), "--dataset", "people", unit, "1"]) == 0
    budget = ["--budget-db", str(db), "--dataset", "people"]
    first, second, third = (CASES[family](tmp_path, name) for name in ("first", "second", "third"))
    assert cli.main([*first.argv, "--epsilon", "0.6", *budget]) == 0
    assert cli.main([*second.argv, "--epsilon", "0.6", *budget]) == 2
    assert "left of" in capsys.readouterr().err
    assert not any(path.exists() for path in second.written)
    assert cli.main([*third.argv, "--epsilon", "0.4", *budget]) == 0
    record = BudgetDatabase(db).dataset("people")
    assert record.spent == 1 and record.remaining == 0
    assert [c.status for c in record.charges] == ["released", "released"]
    for charge, case in zip(record.charges, (first, third), strict=True):
        manifest = read_manifest(case.manifest)
        assert charge.outputs == manifest["outputs"] and charge.inputs == manifest["inputs"]
        assert manifest["budget_database"]["charge_ids"] == [charge.id]
    assert cli.main(["budget", "show", "--db", str(db)]) == 0
    shown = capsys.readouterr().out
    assert "remaining" in shown and shown.count("released") == 2


def test_budget_show_prints_every_charge_as_json(tmp_path, capsys):
    db = tmp_path / "budget.db"
    assert cli.main(["budget", "init", "--db", str(db), "--dataset", "people", "--rho", "1/2"]) == 0
    case = CASES["pgsr"](tmp_path)
    assert cli.main([*case.argv, "--epsilon", "0.5", "--budget-db", str(db), "--dataset", "people"]) == 0
    capsys.readouterr()
    assert cli.main(["budget", "show", "--db", str(db), "--json"]) == 0
    (shown,) = json.loads(capsys.readouterr().out)
    assert shown["unit"] == "rho" and shown["spent"] == "1/8"  # a pure 0.5-DP release is 1/8-zCDP
    assert shown["charges"][0]["command"].startswith("dpmodels release pgsr")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--budget-db", "x.db"], "--budget-db and --dataset go together"),
        (["--dataset", "people"], "--budget-db and --dataset go together"),
        (["--budget-db", "missing.db", "--dataset", "people"], "does not exist"),
        (["--epsilon", "1_0"], "--epsilon: must be a decimal number"),
        (["--epsilon", "1e400"], "--epsilon: 1e400 is too large"),
        (["--epsilon", "1e-400"], "--epsilon: 1e-400 is too small"),
    ],
)
def test_bad_budget_flags_are_refused_before_anything_is_written(argv, message, tmp_path, capsys, monkeypatch):
    case = CASES["pgsr"](tmp_path)
    monkeypatch.chdir(tmp_path)  # the relative x.db and missing.db
    given = ["--epsilon", "1"] if "--epsilon" not in argv else []
    assert cli.main([*case.argv, *given, *argv]) == 2
    assert message in capsys.readouterr().err
    assert not any(path.exists() for path in case.written)


@pytest.mark.parametrize("family", FAMILIES)
def test_quiet_release_prints_only_its_summary(family, tmp_path, capsys):
    """``-q``: no "wrote ..." notes anywhere; the files are still written."""
    case = CASES[family](tmp_path)
    assert cli.main([*case.argv, "--epsilon", "1", "-q"]) == 0
    captured = capsys.readouterr()
    assert "wrote" not in captured.err + captured.out
    assert verify_outputs(case.manifest) == {}
