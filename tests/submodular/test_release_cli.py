"""``dpmodels release submodular`` and its reader, run as a user runs them.

The ground set and the matroid are public declarations (an elements or partition CSV, the rank
or capacity); the coverage pairs and the weights are private.  ``--epsilon`` is the total budget:
the input epsilon is calibrated from public inputs so the planned total fits it.  Every refusal
exits 2 naming the field and writes nothing.
"""

import itertools
import json
import subprocess
import sys
from fractions import Fraction

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpmodels import cli, instances
from dpmodels.core.errors import DataValidationError, PrivacyParameterError
from dpmodels.core.facts import ReleaseFacts
from dpmodels.core.randomness import SECURE_SOURCE, SEEDED_SOURCE
from dpmodels.core.session import PrivacySession
from dpmodels.instances.submodular import from_csv
from dpmodels.submodular.release import (
    BOUNDING_RULES,
    NEIGHBOURS,
    input_epsilon,
    planned_accountant,
    release,
    release_facts,
    spend,
)

ELEMENTS = ["north", "south", "east", "west", "centre", "harbour"]
PARTS = {"north": "inland", "south": "inland", "east": "coast", "west": "coast", "centre": "inland", "harbour": "coast"}


def dpmodels_release(*args):
    command = [sys.executable, "-m", "dpmodels.cli", "release", "submodular", *map(str, args)]
    return subprocess.run(command, capture_output=True, text=True)


@pytest.fixture
def files(tmp_path):
    """Six public sites; 12 users each covering one to three sites; weights in [0.5, 2]."""
    pd.DataFrame({"element": ELEMENTS}).to_csv(tmp_path / "elements.csv", index=False)
    pd.DataFrame({"element": list(PARTS), "part": list(PARTS.values())}).to_csv(tmp_path / "parts.csv", index=False)
    pairs = [(ELEMENTS[(u * k) % 6], f"u{u}") for u in range(12) for k in range(1, 2 + u % 3)]
    pd.DataFrame(pairs, columns=["element", "user"]).to_csv(tmp_path / "coverage.csv", index=False)
    weights = pd.DataFrame({"user": [f"u{u}" for u in range(12)], "weight": [0.5 + (u % 4) / 2 for u in range(12)]})
    weights.to_csv(tmp_path / "weights.csv", index=False)
    return tmp_path


def _ledger(path):
    return json.loads(path.read_text())


def test_release_writes_the_selection_and_a_secure_ledger(files):
    out = files / "selected.csv"
    proc = dpmodels_release(
        "--coverage", files / "coverage.csv", "--elements", files / "elements.csv", "--rank", "3",
        "--users", "12", "--epsilon", "1", "--out", out,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    selected = pd.read_csv(out)
    assert list(selected.columns) == ["element", "step"] and selected.step.tolist() == [1, 2, 3]
    assert selected.element.is_unique and set(selected.element) <= set(ELEMENTS)
    ledger = _ledger(files / "selected.ledger.json")
    assert ledger["private"] is True and ledger["randomness"] == SECURE_SOURCE
    assert ledger["spent"]["epsilon"] == "1" and ledger["budget"]["epsilon"] == "1"  # the budget, exactly
    (charge,) = ledger["charges"]
    assert charge["randomness"] == SECURE_SOURCE and "input epsilon 1/3" in charge["label"]
    steps = charge["measurements"]
    assert [s["epsilon_exact"] for s in steps] == ["1/3", "1/3", "1/3", "1"]  # three EMs, basic total
    assert "F(S)" not in proc.stdout and "value" not in proc.stdout  # nothing computed from the data is shown


def test_alg1_on_a_partition_with_weights(files):
    out = files / "selected.csv"
    proc = dpmodels_release(
        "--coverage", files / "coverage.csv", "--partition", files / "parts.csv", "--capacity", "1",
        "--weights", files / "weights.csv", "--max-weight", "2", "--algorithm", "alg1", "--T", "2", "--users", "12",
        "--epsilon", "0.5", "--out", out, "--ledger", files / "spend.json",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    selected = pd.read_csv(out)
    assert list(selected.columns) == ["element", "x"] and len(selected) == 2  # one per part
    assert sorted(PARTS[e] for e in selected.element) == ["coast", "inland"]
    assert ((selected.x >= 0) & (selected.x <= 1)).all()
    ledger = _ledger(files / "spend.json")
    assert ledger["private"] is True and ledger["spent"]["epsilon"] == "1/2"
    assert [s["epsilon_exact"] for s in ledger["charges"][0]["measurements"]] == ["1/4", "1/4", "1/2"]  # 2 eps r
    assert not (files / "selected.ledger.json").exists()


def test_a_seeded_experiment_is_reproducible_and_labelled(files):
    texts = []
    for name in ("a", "b"):
        code = cli.main(
            [
                "release", "submodular", "--coverage", str(files / "coverage.csv"),
                "--elements", str(files / "elements.csv"), "--rank", "2", "--algorithm", "alg2",
                "--epsilon", "2", "--out", str(files / f"{name}.csv"), "--seed", "5", "--not-private",
            ]
        )  # fmt: skip
        assert code == 0
        texts.append((files / f"{name}.csv").read_text())
    assert texts[0] == texts[1]
    ledger = _ledger(files / "a.ledger.json")
    assert ledger["private"] is False and ledger["randomness"] == SEEDED_SOURCE
    assert Fraction(ledger["spent"]["epsilon"]) <= 2  # Alg. 2's calibrated input fits the budget


BASE = {
    "--coverage": "coverage.csv",
    "--elements": "elements.csv",
    "--rank": "2",
    "--users": "12",
    "--epsilon": "1",
    "--out": "o.csv",
}


def _run(folder, extra, drop=(), capsys=None):
    """``release submodular`` in-process with ``BASE`` (files in ``folder``) changed by ``extra``; drops ``drop``."""
    named = {flag for flag in extra if flag.startswith("--")}
    args = [a for flag, value in BASE.items() if flag not in named | set(drop) for a in (flag, value)]
    argv = [str(folder / a) if a.endswith(".csv") and "/" not in a else a for a in [*args, *extra]]
    return cli.main(["release", "submodular", *argv])


@pytest.mark.parametrize(
    "extra, drop, message",
    [
        (["--seed", "3"], (), "not private"),
        (["--epsilon", "0"], (), "epsilon"),
        (["--epsilon", "-1"], (), "epsilon"),
        (["--epsilon", "abc"], (), "epsilon"),
        (["--epsilon", "nan"], (), "epsilon"),
        (["--out", "missing/o.csv"], (), "--out: the folder"),
        (["--out", "coverage.csv"], (), "would overwrite the input --coverage"),
        (["--ledger", "elements.csv"], (), "would overwrite the input --elements"),
        (["--rank", "7"], (), "rank: must be at most the 6 declared elements"),
        (["--rank", "0"], (), "--rank: expected an integer > 0"),
        ([], ("--rank",), "--rank: is required with --elements"),
        (["--capacity", "1"], (), "--capacity: goes with --partition"),
        (["--partition", "parts.csv"], ("--elements",), "--capacity: is required with --partition"),
        (["--weights", "weights.csv"], (), "--max-weight: and --weights go together"),
        (["--T", "3"], (), "--T: applies to alg1 and alg2"),
        (["--algorithm", "alg3"], (), "invalid choice: 'alg3'"),
        ([], ("--users",), "--users: is required: the declared public number of users"),
        (["--users", "1"], (), "n_users: the files name more users than the declared 1"),
    ],
)
def test_bad_requests_are_refused_before_anything_is_written(files, extra, drop, message, capsys):
    before = {p.name: p.read_bytes() for p in files.iterdir()}
    assert _run(files, extra, drop) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err, err
    assert {p.name: p.read_bytes() for p in files.iterdir()} == before


BAD_FILES = {
    "empty": ("coverage", "", "is empty"),
    "header-only": ("coverage", "element,user\n", "has a header but no rows"),
    "no-user-column": ("coverage", "element,person\nnorth,u1\n", "missing columns ['user']"),
    "blank-user": ("coverage", "element,user\nnorth,u1\nsouth,\n", "column 'user' is empty on data row 2"),
    "repeated-element": ("elements", "element\nnorth\nsouth\nnorth\n", "'north' on data rows 1 and 3"),
    "no-element-column": ("elements", "site\nnorth\n", "missing columns ['element']"),
    "text-weight": ("weights", "user,weight\nu0,1\nu1,heavy\n", "column 'weight' needs finite numbers; data row 2"),
    "nan-weight": ("weights", "user,weight\nu0,1\nu1,nan\n", "column 'weight' needs finite numbers; data row 2"),
    "repeated-user": ("weights", "user,weight\nu0,1\nu0,2\n", "'u0' on data rows 1 and 2"),
}


@pytest.mark.parametrize("kind", list(BAD_FILES))
def test_bad_files_are_refused_naming_the_field_and_nothing_is_written(files, kind, capsys):
    which, text, message = BAD_FILES[kind]
    path = files / f"bad-{which}.csv"
    path.write_text(text)
    if which == "coverage":
        (files / "coverage.csv").write_text("element,user\nnorth,u0\nsouth,u1\n")
    extra = [f"--{which}", str(path)]
    if which == "weights":
        (files / "coverage.csv").write_text("element,user\nnorth,u0\nsouth,u1\n")
        extra += ["--max-weight", "2"]
    before = {p.name: p.read_bytes() for p in files.iterdir()}
    assert _run(files, extra) == 2
    err = capsys.readouterr().err
    assert message in err and str(path) in err, err
    if kind in ("text-weight", "nan-weight"):
        assert "heavy" not in err and "nan" not in err  # the private value is not quoted
    assert {p.name: p.read_bytes() for p in files.iterdir()} == before


def test_a_file_that_is_not_utf8_is_refused(files, capsys):
    (files / "coverage.csv").write_bytes(b"element,user\nnorth,u1\nsouth,\xff\xfe\n")
    assert _run(files, []) == 2
    assert "not UTF-8" in capsys.readouterr().err and not (files / "o.csv").exists()


# ---------------------------------------------------------------------- the reader and the calibration
def test_the_reader_builds_the_declared_instance(files):
    inst = from_csv(
        files / "coverage.csv", partition=files / "parts.csv", capacity=2, weights=files / "weights.csv", max_weight=2
    )
    F, M = inst.function, inst.matroid
    assert inst.labels == tuple(sorted(ELEMENTS)) and M.kind == "partition" and M.r == 4  # by label, not row
    assert F.sensitivity == 2 and F.n_users == 12 and F.max_value == 2 * 12  # Delta x users
    assert F.public_record_count is False  # ... counted in the files, not declared: an experiment only
    (files / "pairs.csv").write_text("element,user\nnorth,a\nnorth,a\nsouth,b\n")  # a repeated pair is one
    unit = from_csv(files / "pairs.csv", elements=files / "elements.csv", rank=2, n_users=5)
    assert unit.function.sensitivity == 1 and unit.function.n_users == 5 and unit.function.max_value == 5
    assert unit.function.public_record_count is True
    at = {label: e for e, label in enumerate(unit.labels)}
    assert unit.function([at["north"]]) == 1 and unit.function([at["north"], at["south"]]) == 2
    with pytest.raises(DataValidationError, match="n_users"):
        from_csv(files / "pairs.csv", elements=files / "elements.csv", rank=2, n_users=1)


@pytest.mark.parametrize("algorithm, options", [("mitrovic", {}), ("alg1", {"T": 3}), ("alg2", {"T": 2})])
def test_the_input_epsilon_fits_the_budget(algorithm, options):
    inst = instances.generate("submodular/coverage", seed=2, n=10, users=25, rank=3)
    F, M = inst.function, inst.matroid
    eps = input_epsilon(algorithm, F, M, "0.7", **options)
    total = spend(planned_accountant(algorithm, F, M, eps, **options)).total_epsilon
    if algorithm == "alg2":  # the grid width depends on eps: the largest float that fits
        assert Fraction(69, 100) < total <= Fraction(7, 10)
    else:
        assert total == Fraction(7, 10)


# ---------------------------------------------------------------------- issue 22: the number of users is declared
def test_a_private_release_needs_the_number_of_users_declared(files, capsys):
    """Before issue 22 the users named in the files sized the run (M_F) when --users was left out."""
    before = {p.name: p.read_bytes() for p in files.iterdir()}
    assert _run(files, [], drop=("--users",)) == 2
    assert "--users: is required" in capsys.readouterr().err
    assert {p.name: p.read_bytes() for p in files.iterdir()} == before
    assert _run(files, ["--seed", "1", "--not-private"], drop=("--users",)) == 0  # an experiment may count them
    assert "NOT private: the number of users was counted in the files" in capsys.readouterr().out
    counted = from_csv(files / "coverage.csv", elements=files / "elements.csv", rank=2)
    F, M = counted.function, counted.matroid
    with pytest.raises(PrivacyParameterError, match="n_users: the number of users was counted"):
        release(PrivacySession(F, 1), "mitrovic", M, 0.1)
    session = PrivacySession(F, 1)
    with pytest.raises(PrivacyParameterError, match="n_users"):
        release(session, "alg1", M, 0.1)
    assert session.charges == []  # refused before anything was charged or drawn
    assert len(release(PrivacySession(F, 1, seed=0, not_private=True), "mitrovic", M, 0.1).order) == 2
    assert len(release(PrivacySession(F, 1, not_private=True), "mitrovic", M, 0.1).order) == 2  # declared experiment
    declared = from_csv(files / "coverage.csv", elements=files / "elements.csv", rank=2, n_users=12)
    assert len(release(PrivacySession(declared.function, 1), "mitrovic", M, 0.1).order) == 2


def test_files_naming_more_users_than_declared_are_refused_without_the_count(files):
    """Replace-one keeps the number of users, so no dataset of n users (nor its neighbour) names more."""
    with pytest.raises(DataValidationError, match="n_users: the files name more users than the declared 11") as err:
        from_csv(files / "coverage.csv", elements=files / "elements.csv", rank=2, n_users=11)
    assert "12" not in str(err.value)


# ---------------------------------------------------------------------- issue 22: rules, not refusals
SITES = ["a", "b", "c", "d"]  # declared; "x" and "y" are not
PAIRS = st.lists(st.tuples(st.sampled_from(SITES + ["x", "y"]), st.sampled_from(["p", "q", "r", "s"])), min_size=1)
WEIGHTS = st.dictionaries(st.sampled_from(["p", "q", "r", "s", "t"]), st.integers(-3, 6).map(lambda v: v / 2))


def brute_force_coverage(pairs, weights, bound, subset) -> float:
    """The oracle, from the stated rules: undeclared elements left out, weights clamped, a missing weight 0."""
    weight = {u: min(max(w, 0.0), bound) for u, w in weights.items()}
    covering = {u for e, u in pairs if e in subset}
    return sum(weight.get(u, 0.0) for u in covering)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(pairs=PAIRS, weights=WEIGHTS)
def test_data_outside_the_declared_bounds_follows_the_stated_rules(tmp_path, pairs, weights):
    """F(S) on every subset S of the declared ground set equals the brute force of the rules.

    Before issue 22 a weight above max_weight, an undeclared element or a missing weight refused the release."""
    pd.DataFrame({"element": SITES}).to_csv(tmp_path / "sites.csv", index=False)
    pd.DataFrame(pairs, columns=["element", "user"]).to_csv(tmp_path / "pairs.csv", index=False)
    frame = pd.DataFrame({"user": list(weights), "weight": list(weights.values())})
    frame = frame if len(frame) else pd.DataFrame({"user": ["nobody"], "weight": [1.0]})
    frame.to_csv(tmp_path / "w.csv", index=False)
    inst = from_csv(
        tmp_path / "pairs.csv", elements=tmp_path / "sites.csv", rank=2, weights=tmp_path / "w.csv", max_weight=2,
        n_users=9,
    )  # fmt: skip
    given_weights = dict(zip(frame.user, frame.weight, strict=True))
    for k in range(len(SITES) + 1):
        for subset in itertools.combinations(range(len(SITES)), k):
            expected = brute_force_coverage(pairs, given_weights, 2.0, {SITES[e] for e in subset})
            assert inst.function(list(subset)) == pytest.approx(expected, abs=1e-12)
    assert inst.function.sensitivity == 2 and inst.function.n_users == 9


def test_the_command_applies_the_rules_silently(files, capsys, tmp_path):
    """A run on files needing the rules equals, output, ledger and printed lines, the run on files that
    already satisfy them: nothing tells whether (or how often) a rule applied."""
    runs = []
    for name, coverage, weights in (
        ("raw", "element,user\nnorth,u0\nmoon,u1\nsouth,u1\nmars,u2\n", "user,weight\nu0,9\nu1,-1\n"),
        ("clean", "element,user\nnorth,u0\nsouth,u1\n", "user,weight\nu0,2\nu1,0\nu2,0\n"),
    ):
        folder = tmp_path / name
        folder.mkdir()
        for path in ("elements.csv",):
            (folder / path).write_bytes((files / path).read_bytes())
        (folder / "coverage.csv").write_text(coverage)
        (folder / "weights.csv").write_text(weights)
        extra = ["--weights", "weights.csv", "--max-weight", "2", "--seed", "3", "--not-private"]
        assert _run(folder, extra) == 0
        ledger = json.loads((folder / "o.ledger.json").read_text())
        for charge in ledger["charges"]:
            charge.pop("unix_time")
        printed = capsys.readouterr().out.replace(str(folder), "FOLDER")
        runs.append(((folder / "o.csv").read_text(), ledger, printed))
    assert runs[0] == runs[1]


# ---------------------------------------------------------------------- issue 22: the manifest's family part
def test_release_facts_state_the_declarations_and_the_rules(files):
    inst = from_csv(
        files / "coverage.csv", partition=files / "parts.csv", capacity=1, weights=files / "weights.csv",
        max_weight=2, n_users=12,
    )  # fmt: skip
    facts = release_facts(inst.matroid, "alg1", n_users=12, max_weight=2, T=3)
    assert isinstance(facts, ReleaseFacts) and facts.flavor == "pure DP" and facts.neighbours == NEIGHBOURS
    assert facts.declared == {
        "ground set size": 6,
        "matroid": "partition",
        "rank": 2,
        "number of users": 12,
        "Delta (max weight)": 2.0,
        "algorithm": "alg1",
        "capacity per part": [1, 1],
        "T": 3,
    }
    assert facts.invariants == {} and BOUNDING_RULES["weight"] in facts.bounding
    assert BOUNDING_RULES["missing weight"] in facts.bounding and BOUNDING_RULES["element"] in facts.bounding
    assert any("rejection sampling" in note and "ms" in note for note in facts.notes)
    json.dumps(facts.to_dict())
    unit = release_facts(inst.matroid, "mitrovic", n_users=None, delta_prime=1e-6)
    assert unit.flavor == "approximate DP" and unit.declared["Delta (max weight)"] == 1.0
    assert "NOT private" in unit.declared["number of users"] and "NOT private" in unit.notes[0]
    assert BOUNDING_RULES["unit"] in unit.bounding and BOUNDING_RULES["weight"] not in unit.bounding
