"""``dpmodels release mdp`` and :func:`dpmodels.metricdp.release.release`, run as a user runs them.

The mechanism is computed from public inputs only (the grid or points file, the prior, eps per
km), audited exactly, then each user's secret location is replaced by one draw from its row with
the secure generator.  The draw's law is checked by chi-square against the audited row; refusals
exit 2 naming the field and write nothing; a seeded experiment is reproducible and says NOT private.
"""

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import chisquare

from dpmodels import cli, instances
from dpmodels.core.errors import DataValidationError, PrivacyParameterError
from dpmodels.core.facts import ReleaseFacts
from dpmodels.core.randomness import SECURE_SOURCE, SEEDED_SOURCE, release_rng
from dpmodels.instances.metricdp import OUTSIDE, locations_from_csv, records_from_csv
from dpmodels.metricdp.data import MDPInstance, euclidean_distances
from dpmodels.metricdp.mechanism import optimal_mechanism, sample_outputs
from dpmodels.metricdp.privacy_audit import is_exactly_mdp
from dpmodels.metricdp.release import GUARANTEE, domain_centre, fallback_location, release, release_facts

#: A 3 x 3 grid of 1 km cells, every cell an output: N = K = 9.
GRID = ["--set", "rows=3", "--set", "cols=3", "--set", "K=9"]


def tiny_grid(epsilon=1.0):
    return instances.generate("mdp/grid", seed=0, rows=3, cols=3, K=9, epsilon=epsilon, eta=2.0)


def dpmodels_release(*args):
    command = [sys.executable, "-m", "dpmodels.cli", "release", "mdp", *map(str, args)]
    return subprocess.run(command, capture_output=True, text=True)


@pytest.fixture
def files(tmp_path):
    """Five users on cells of the 3 x 3 grid, and a points file of four named places."""
    pd.DataFrame({"user": ["ann", "ben", "cat", "dan", "eve"], "record": [0, 4, 8, 4, 2]}).to_csv(
        tmp_path / "records.csv", index=False
    )
    (tmp_path / "places.csv").write_text("location,x,y\nhome,0,0\nshop,1,0\npark,1,1\nschool,0,1.5\n")
    (tmp_path / "visits.csv").write_text("user,record\nann,home\nben,park\n")
    return tmp_path


# ---------------------------------------------------------------------- the law of the draws
@pytest.mark.parametrize("solver", ["mdp_ipm", "highs"])
def test_sample_outputs_draws_each_records_row_exactly(solver):
    """Chi-square of 40,000 draws per record against its row of the audited matrix (the exact pmf)."""
    inst = tiny_grid()
    mech = optimal_mechanism(inst, solver, gap=1e-6)
    assert is_exactly_mdp(inst, mech.z) and (mech.bound is None) == (solver == "highs")
    rng = np.random.default_rng(11)
    for record in (0, 4):
        draws = sample_outputs(inst, mech.z, np.full(40_000, record), rng)
        counts = np.bincount(draws, minlength=inst.K)
        pmf = mech.z[record] / mech.z[record].sum()
        support = pmf > 0
        assert counts[~support].sum() == 0
        assert chisquare(counts[support], 40_000 * pmf[support]).pvalue > 1e-3


def test_the_python_release_charges_the_ledger_before_drawing_and_reports_the_audit():
    inst = tiny_grid()
    out = release(inst, np.array([0, 4, 8, 4]), release_rng(), users=["a", "b", "c", "d"])
    assert out.private and out.ledger.randomness == SECURE_SOURCE
    assert len(out.outputs) == 4 and set(out.released) <= set(inst.info["outputs"].tolist())
    report = out.to_dict()
    assert report["guarantee"] == GUARANTEE and "not a session budget" in GUARANTEE
    assert report["epsilon_per_km"] == 1.0 and report["audit"]["exactly mDP"] is True
    assert report["audit"]["max privacy loss / eps"] <= 1 and report["domain"]["components"] == 1
    assert report["optimisation"]["gap certified"] and report["optimisation"]["relative gap"] <= 1e-3
    (charge,) = report["charges"]
    assert charge["epsilon"] == 1.0 and "4 records" in charge["query"]
    with pytest.raises(DataValidationError, match="users: must name the 2 records"):
        release(inst, np.array([0, 4]), release_rng(), users=["a"])
    with pytest.raises(DataValidationError, match="records: must be a vector of integer location indices"):
        release(inst, np.array([0.0, 4.5]), release_rng())  # malformed: refused
    with pytest.raises(DataValidationError, match="rng"):
        release(inst, np.array([0]), 7)  # a seed cannot slip in: only a Generator from release_rng
    with pytest.raises(DataValidationError, match="not exactly eps-mDP"):
        release(inst, np.array([0]), release_rng(), mechanism=np.eye(9))  # refused before any draw


def test_a_disconnected_domain_is_refused():
    far = instances.generate("mdp/grid", seed=0, rows=2, cols=2, K=4, cell_km=3.0, epsilon=1.0, eta=2.0)
    with pytest.raises(DataValidationError, match="eta: the public locations fall into 4 groups"):
        release(far, np.array([0]), release_rng())


# ---------------------------------------------------------------------- the command
def test_release_writes_the_outputs_and_a_secure_ledger(files):
    out = files / "released.csv"
    proc = dpmodels_release("--records", files / "records.csv", *GRID, "--epsilon", "1", "--out", out)
    assert proc.returncode == 0, proc.stderr
    released = pd.read_csv(out)
    assert list(released.columns) == ["user", "released"]
    assert released.user.tolist() == ["ann", "ben", "cat", "dan", "eve"] and released.released.between(0, 8).all()
    ledger = json.loads((files / "released.ledger.json").read_text())
    assert ledger["private"] is True and ledger["randomness"] == SECURE_SOURCE
    assert ledger["epsilon_per_km"] == 1.0 and ledger["eta_km"] == 2.0 and ledger["records released"] == 5
    assert ledger["audit"]["exactly mDP"] is True and ledger["audit"]["mDP ratio failures"] == 0
    assert ledger["optimisation"]["solver"] == "mdp_ipm" and ledger["optimisation"]["gap certified"] is True
    assert ledger["charges"][0]["noise"].endswith("(exact proportional sampler)")


def test_release_on_a_points_file_names_the_places(files):
    out = files / "released.csv"
    proc = dpmodels_release(
        "--records", files / "visits.csv", "--points", files / "places.csv", "--epsilon", "2", "--solver", "highs",
        "--out", out,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    released = pd.read_csv(out)
    assert released.user.tolist() == ["ann", "ben"] and set(released.released) <= {"home", "shop", "park", "school"}
    ledger = json.loads((files / "released.ledger.json").read_text())
    assert ledger["domain"]["metric"] == "Euclidean km (x, y)" and ledger["domain"]["prior"] == "uniform"
    assert ledger["optimisation"]["gap certified"] is False and ledger["audit"]["exactly mDP"] is True


def test_a_seeded_experiment_is_reproducible_and_labelled_not_private(files):
    texts = []
    for name in ("a", "b"):
        argv = ["release", "mdp", "--records", str(files / "records.csv"), *GRID, "--epsilon", "0.5"]
        assert cli.main([*argv, "--out", str(files / f"{name}.csv"), "--seed", "4", "--not-private"]) == 0
        texts.append((files / f"{name}.csv").read_text())
    assert texts[0] == texts[1]
    ledger = json.loads((files / "a.ledger.json").read_text())
    assert ledger["private"] is False and ledger["randomness"] == SEEDED_SOURCE and "NOT private" in SEEDED_SOURCE


BASE = {"--records": "records.csv", "--epsilon": "1", "--out": "o.csv"}


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--seed", "3"], "not private"),
        (["--epsilon", "0"], "--epsilon: must be > 0"),
        (["--epsilon", "-1"], "--epsilon: must be > 0"),
        (["--epsilon", "abc"], "--epsilon: must be a decimal number"),
        (["--epsilon", "inf"], "--epsilon: must be a decimal number"),
        (["--epsilon", "1_0"], "--epsilon: must be a decimal number"),
        (["--epsilon", "800"], "epsilon: epsilon * eta = 1600"),
        (["--out", "missing/o.csv"], "--out: the folder"),
        (["--out", "records.csv"], "would overwrite the input --records"),
        (["--ledger", "o.csv"], "--ledger: must differ from --out"),
        (["--set", "epsilon=2"], "--set: epsilon is given by --epsilon"),
        (["--set", "rows=4", "--points", "places.csv"], "--set: shapes a generated --instance"),
        (["--instance", "submodular/trap"], "--instance: 'submodular/trap' is not a metric-DP instance"),
        (["--eta", "0.5"], "eta: the public locations fall into 9 groups"),
        (["--gap", "-1"], "--gap: certified relative gap to stop at"),
        (["--solver", "scip"], "invalid choice: 'scip'"),
        (["--outside", "9"], "--outside: must be a location of the public domain (a cell index 0..8)"),
        (["--outside", "airport", "--points", "places.csv"], "--outside: must be a location of the public domain"),
    ],
)
def test_bad_requests_are_refused_before_anything_is_written(files, extra, message, capsys):
    named = {a for a in extra if a.startswith("--")}
    args = [a for flag, value in BASE.items() if flag not in named for a in (flag, value)]
    grid = GRID if not {"--points", "--instance"} & named else []
    argv = [str(files / a) if a.endswith(".csv") else a for a in [*args, *grid, *extra]]
    before = {p.name: p.read_bytes() for p in files.iterdir()}
    assert cli.main(["release", "mdp", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err, err
    assert {p.name: p.read_bytes() for p in files.iterdir()} == before


BAD_RECORDS = {
    "empty": ("", "is empty"),
    "header-only": ("user,record\n", "has a header but no rows"),
    "no-record-column": ("user,cell\nann,0\n", "missing columns ['record']"),
    "blank-record": ("user,record\nann,0\nben,\n", "column 'record' is empty on data row 2"),
    "not-a-cell": ("user,record\nann,0\nben,1.5\n", "data row 2 is not an integer cell index of the grid"),
    "text-cell": ("user,record\nann,0\nben,home\n", "data row 2 is not an integer cell index of the grid"),
    "two-rows": ("user,record\nann,0\nben,1\nann,2\n", "user 'ann' is on data rows 1 and 3"),
}


@pytest.mark.parametrize("kind", list(BAD_RECORDS))
def test_bad_records_are_refused_naming_the_user_and_nothing_is_written(files, kind, capsys):
    text, message = BAD_RECORDS[kind]
    (files / "bad.csv").write_text(text)
    before = {p.name: p.read_bytes() for p in files.iterdir()}
    argv = ["release", "mdp", "--records", str(files / "bad.csv"), *GRID, "--epsilon", "1", "--out"]
    assert cli.main([*argv, str(files / "o.csv")]) == 2
    err = capsys.readouterr().err
    assert message in err and "bad.csv" in err, err
    assert {p.name: p.read_bytes() for p in files.iterdir()} == before


BAD_POINTS = {
    "no-location": ("x,y\n0,0\n1,1\n", "missing columns ['location']"),
    "text-coordinate": ("location,x,y\nhome,0,0\nshop,one,0\n", "column 'x' needs finite numbers; data row 2"),
    "repeated-location": ("location,x,y\nhome,0,0\nhome,1,0\n", "'home' repeats on data row 2"),
    "no-coordinates": ("location,prior\nhome,1\n", "no coordinate columns"),
    "negative-prior": ("location,x,prior\nhome,0,1\nshop,1,-1\n", "column 'prior' needs weights >= 0"),
}


@pytest.mark.parametrize("kind", list(BAD_POINTS))
def test_bad_points_files_are_refused_and_nothing_is_written(files, kind, capsys):
    text, message = BAD_POINTS[kind]
    (files / "bad-points.csv").write_text(text)
    before = {p.name: p.read_bytes() for p in files.iterdir()}
    argv = ["release", "mdp", "--records", str(files / "visits.csv"), "--points", str(files / "bad-points.csv")]
    assert cli.main([*argv, "--epsilon", "1", "--out", str(files / "o.csv")]) == 2
    err = capsys.readouterr().err
    assert message in err and "bad-points.csv" in err, err
    assert {p.name: p.read_bytes() for p in files.iterdir()} == before


# ------------------------------------------------------------------ issue 22: a seeded generator needs a declaration
def test_a_seeded_generator_is_refused_unless_the_output_is_declared_not_private():
    """Before issue 22 any Generator was accepted: a Python caller could release seeded (guessable) noise."""
    inst = tiny_grid()
    mech = optimal_mechanism(inst, "mdp_ipm", gap=1e-3)
    with pytest.raises(PrivacyParameterError, match="rng: is not the secure generator.*not_private=True"):
        release(inst, np.array([0, 4]), np.random.default_rng(1), mechanism=mech)
    out = release(inst, np.array([0, 4]), np.random.default_rng(1), mechanism=mech, not_private=True)
    assert out.private is False and out.ledger.randomness == SEEDED_SOURCE and out.to_dict()["private"] is False
    assert release(inst, np.array([0, 4]), release_rng(), mechanism=mech).private is True
    assert release(inst, np.array([0, 4]), release_rng(), mechanism=mech, not_private=True).private is False


# ---------------------------------------------------------------------- issue 22: records outside the domain
def brute_force_centre(points) -> int:
    """The oracle: the first location whose largest distance to the others is least (pure Python)."""

    def largest(i):
        return max(sum((a - b) ** 2 for a, b in zip(points[i], q, strict=True)) ** 0.5 for q in points)

    best = min(largest(i) for i in range(len(points)))
    return next(i for i in range(len(points)) if largest(i) == best)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 4), st.integers(0, 4)), min_size=1, max_size=12, unique=True))
def test_the_domain_centre_is_the_brute_force_minimax_location(points):
    """Integer points make ties common: the lowest index must win them."""
    xy = np.array(points, dtype=float)
    d = euclidean_distances(xy)
    inst = MDPInstance(d, d, np.full(len(points), 1 / len(points)), 1.0, 10.0)
    assert domain_centre(inst) == brute_force_centre(points) == fallback_location(inst)


def test_a_record_outside_the_domain_is_drawn_exactly_as_one_at_the_fallback():
    """Same stream, same draws: records 9 and -1 (outside the 3 x 3 grid) get the centre's (cell 4) outputs.

    Before issue 22 such a record refused the whole release, so one person decided whether it happened."""
    inst = tiny_grid()
    mech = optimal_mechanism(inst, "mdp_ipm", gap=1e-3)
    outside = np.array([0, 9, OUTSIDE, 4, 8, 2**40])
    inside = (outside >= 0) & (outside < 9)
    at_centre = np.where(inside, outside, 4)
    runs = [
        release(inst, recs, np.random.default_rng(5), mechanism=mech, not_private=True) for recs in (outside, at_centre)
    ]
    np.testing.assert_array_equal(runs[0].outputs, runs[1].outputs)
    assert runs[0].fallback == runs[1].fallback == 4
    declared = release(inst, outside, np.random.default_rng(5), mechanism=mech, not_private=True, outside=2)
    at_two = np.where(inside, outside, 2)
    expected = release(inst, at_two, np.random.default_rng(5), mechanism=mech, not_private=True)
    np.testing.assert_array_equal(declared.outputs, expected.outputs)
    assert declared.fallback == 2 and "fallback location '2'" in declared.to_dict()["outside the domain"]


def test_records_outside_the_domain_are_read_as_outside(files):
    (files / "mixed.csv").write_text("user,record\nann,0\nben,9\ncat,-2\ndan,07\n")
    users, records = records_from_csv(files / "mixed.csv", [str(i) for i in range(9)], cells=True)
    assert users == ["ann", "ben", "cat", "dan"] and records.tolist() == [0, OUTSIDE, OUTSIDE, 7]
    places = locations_from_csv(files / "places.csv", 1.0, 2.0)
    (files / "far.csv").write_text("user,record\nann,home\nben,airport\n")
    assert records_from_csv(files / "far.csv", places.info["labels"])[1].tolist() == [0, OUTSIDE]


def _seeded_cli(files, records, *extra):
    out = files / "out.csv"
    argv = ["release", "mdp", "--records", str(records), "--epsilon", "1", "--out", str(out), *extra]
    assert cli.main([*argv, "--seed", "11", "--not-private", "--force"]) == 0
    ledger = json.loads((files / "out.ledger.json").read_text())
    ledger["optimisation"].pop("seconds")
    ledger.pop("dataset")  # the records file's name
    ledger.pop("budget")  # the session's: its dataset name and the time of its charge
    return out.read_text(), ledger


def test_the_command_releases_a_record_outside_the_domain_like_one_at_the_fallback(files, capsys):
    """Outputs, ledger and printed lines are those of the same users with the record at the fallback:
    nothing says whether (or how many) records were outside."""
    points = ["--points", str(files / "places.csv")]
    (files / "away.csv").write_text("user,record\nann,home\nben,airport\ncat,park\n")
    (files / "centre.csv").write_text("user,record\nann,home\nben,park\ncat,park\n")
    centre = brute_force_centre([(0, 0), (1, 0), (1, 1), (0, 1.5)])
    assert centre == 2  # park
    runs, printed = [], []
    for name in ("away", "centre"):
        runs.append(_seeded_cli(files, files / f"{name}.csv", *points))
        printed.append(capsys.readouterr().out)
    assert runs[0] == runs[1] and printed[0] == printed[1]
    assert "as if it were at 'park'" in printed[0]
    assert _seeded_cli(files, files / "away.csv", *points, "--outside", "school")[1]["outside the domain"].count(
        "'school'"
    )


def test_a_grid_record_outside_is_released_at_the_declared_cell(files):
    (files / "away.csv").write_text("user,record\nann,0\nben,12\n")
    (files / "there.csv").write_text("user,record\nann,0\nben,2\n")
    away = _seeded_cli(files, files / "away.csv", *GRID, "--outside", "2")
    assert away == _seeded_cli(files, files / "there.csv", *GRID, "--outside", "2")


# ---------------------------------------------------------------------- issue 22: the manifest's family part
def test_release_facts_state_the_public_inputs_and_the_rules(files):
    inst = tiny_grid(epsilon=0.5)
    facts = release_facts(inst)
    assert isinstance(facts, ReleaseFacts) and facts.flavor == "metric DP (local)"
    assert facts.neighbours == GUARANTEE and facts.invariants == {}
    declared = facts.declared
    assert (declared["locations"], declared["outputs"], declared["epsilon_per_km"], declared["eta_km"]) == (
        9,
        9,
        0.5,
        2.0,
    )
    assert declared["fallback location"] == "4" and "centre" in declared["fallback rule"]
    assert any("fallback location '4'" in rule for rule in facts.bounding)
    assert any("two rows is refused" in rule for rule in facts.bounding)
    json.dumps(facts.to_dict())  # JSON-able
    places = locations_from_csv(files / "places.csv", 2.0, 2.0)
    named = release_facts(places, outside="park", solver="highs")
    assert named.declared["fallback location"] == "park" and named.declared["fallback rule"] == "declared"
    assert named.declared["metric"] == "Euclidean km (x, y)" and named.declared["gap"].startswith("not certified")
    with pytest.raises(DataValidationError, match="outside: must be a location"):
        release_facts(places, outside="airport")
