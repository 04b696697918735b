"""``dpmodels release submodular`` and its reader, run as a user runs them.

The ground set and the matroid are public declarations (an elements or partition CSV, the rank
or capacity); the coverage pairs and the weights are private.  ``--epsilon`` is the total budget:
the input epsilon is calibrated from public inputs so the planned total fits it.  Every refusal
exits 2 naming the field and writes nothing.
"""

import json
import subprocess
import sys
from fractions import Fraction

import pandas as pd
import pytest
from dpmodels.instances.submodular import from_csv

from dpmodels import cli, instances
from dpmodels.core.errors import DataValidationError
from dpmodels.core.randomness import SECURE_SOURCE, SEEDED_SOURCE
from dpmodels.submodular.release import input_epsilon, planned_accountant, spend

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
        "--epsilon", "1", "--out", out,
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
        "--weights", files / "weights.csv", "--max-weight", "2", "--algorithm", "alg1", "--T", "2",
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


BASE = {"--coverage": "coverage.csv", "--elements": "elements.csv", "--rank": "2", "--epsilon": "1", "--out": "o.csv"}


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
    "unknown-element": (
        "coverage",
        "element,user\nnorth,u1\nmoon,u2\n",
        "column 'element': data row 2 has 'moon', which is not an element of the declared ground set",
    ),
    "repeated-element": ("elements", "element\nnorth\nsouth\nnorth\n", "'north' on data rows 1 and 3"),
    "no-element-column": ("elements", "site\nnorth\n", "missing columns ['element']"),
    "weight-over-bound": ("weights", "user,weight\nu0,1\nu1,9\n", "data row 2 exceeds the declared max_weight 2"),
    "text-weight": ("weights", "user,weight\nu0,1\nu1,heavy\n", "column 'weight' needs finite numbers >= 0"),
    "missing-weight": ("weights", "user,weight\nu0,1\n", "no weight for user 'u1'"),
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
    if kind == "weight-over-bound":
        assert "'9'" not in err and " 9 " not in err  # the private value is not quoted
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
    assert inst.labels == tuple(ELEMENTS) and M.kind == "partition" and M.r == 4
    assert F.sensitivity == 2 and F.n_users == 12 and F.max_value == 2 * 12  # public: Delta x users
    (files / "pairs.csv").write_text("element,user\nnorth,a\nnorth,a\nsouth,b\n")  # a repeated pair is one
    unit = from_csv(files / "pairs.csv", elements=files / "elements.csv", rank=2, n_users=5)
    assert unit.function.sensitivity == 1 and unit.function.n_users == 5 and unit.function.max_value == 5
    assert unit.function([0]) == 1 and unit.function([0, 1]) == 2
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
