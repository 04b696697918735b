"""``dpmodels release topdown`` and :func:`dpmodels.topdown.release.release`, run as a user runs them.

Oracles: the person file itself (its population per state is invariant), the released
microdata re-aggregated by geocode prefix (every released histogram must equal it), the
session's JSON ledger, and the generator's state (a refused request draws nothing).
The command-line runs start together (two cores) and are awaited by the tests.
"""

import json
import re
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from dpmodels.core.errors import DataValidationError, PrivacyParameterError
from dpmodels.core.randomness import SECURE_SOURCE, SEEDED_SOURCE
from dpmodels.core.session import BudgetExceededError, PrivacySession
from dpmodels.instances.topdown import records, synthetic_census
from dpmodels.topdown.release import HARD_CHECKS, release

ATTRIBUTES = ["hhgq", "votingage", "hispanic", "cenrace"]
PREFIX = {1: 0, 2: 2, 3: 5, 4: 11, 5: 12, 6: 15}  # geocode prefix length of each level (1 = the nation)


def start(*args) -> subprocess.Popen:
    """``python -m dpmodels.cli release topdown --races 7 ARGS``, started, not awaited."""
    command = [sys.executable, "-m", "dpmodels.cli", "release", "topdown", "--races", "7", *map(str, args)]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finished(proc: subprocess.Popen) -> tuple[int, str]:
    """Wait for ``proc`` (once; later calls reuse the answer): its exit code and stderr."""
    if not hasattr(proc, "stderr_text"):
        _, proc.stderr_text = proc.communicate(timeout=120)
    return proc.returncode, proc.stderr_text


@pytest.fixture(scope="module")
def census():
    """The smallest synthetic census (2 states, 24 blocks), 7 races."""
    return synthetic_census(seed=1, preset="tiny", races=7)


@pytest.fixture(scope="module")
def folder(tmp_path_factory, census):
    """persons.csv and blocks.csv (every block, empty ones too) of :func:`census`."""
    root = tmp_path_factory.mktemp("release")
    records(census).to_csv(root / "persons.csv", index=False)
    geo = census.geography
    pd.DataFrame({"geocode": [geo.names[i] for i in geo.leaves]}).to_csv(root / "blocks.csv", index=False)
    return root


def _outputs(folder, name):
    return ["--out-microdata", folder / f"{name}.csv", "--out-histograms", folder / f"{name}.hist.csv"]


@pytest.fixture(scope="module")
def runs(folder):
    """The private run and two seeded experiments, started together."""
    persons = ["--persons", folder / "persons.csv"]
    seeded = ["--epsilon", "2", "--seed", "5", "--not-private"]
    return {
        "private": start(*persons, "--blocks", folder / "blocks.csv", "--epsilon", "1", *_outputs(folder, "m")),
        "seeded a": start(*persons, *seeded, *_outputs(folder, "a")),
        "seeded b": start(*persons, *seeded, *_outputs(folder, "b")),
    }


def _by_prefix(micro: pd.DataFrame, level: int) -> pd.Series:
    """Persons of the released microdata per (region of ``level``, cell), from geocode prefixes."""
    region = micro["geocode"].str[: PREFIX[level]] if level > 1 else pd.Series("US", index=micro.index)
    return micro.assign(region=region).groupby(["region", *ATTRIBUTES]).size().sort_index()


def test_release_writes_consistent_microdata_histograms_and_a_secure_ledger(folder, runs):
    code, err = finished(runs["private"])
    assert code == 0, err
    persons = pd.read_csv(folder / "persons.csv", dtype=str)
    micro = pd.read_csv(folder / "m.csv", dtype=str)
    hist = pd.read_csv(folder / "m.hist.csv", dtype={"region": str})
    assert list(micro.columns) == ["geocode", *ATTRIBUTES]
    # the invariants: the nation and every state keep their population
    assert len(micro) == len(persons)
    states = micro["geocode"].str[:2].value_counts().sort_index()
    assert states.equals(persons["geocode"].str[:2].value_counts().sort_index())
    # every released histogram is the microdata aggregated to its region: consistent, integer, > 0
    assert (hist["count"] > 0).all() and pd.api.types.is_integer_dtype(hist["count"])
    public_blocks = set(pd.read_csv(folder / "blocks.csv", dtype=str)["geocode"])
    assert set(micro["geocode"]) <= public_blocks
    for level in PREFIX:
        released = hist[hist.level == level].set_index(["region", *ATTRIBUTES])["count"].sort_index()
        assert released.rename(None).equals(_by_prefix(micro, level).astype(released.dtype)), level
    ledger = json.loads((folder / "m.ledger.json").read_text())
    assert ledger["private"] is True and ledger["randomness"] == SECURE_SOURCE
    assert ledger["budget"]["epsilon"] == ledger["spent"]["epsilon"] == "1"
    (charge,) = ledger["charges"]
    assert charge["epsilon"] == "1" and charge["randomness"] == SECURE_SOURCE
    assert {row["noise"] for row in charge["measurements"]} == {"geometric"}


def test_a_seeded_experiment_is_reproducible_and_labelled_not_private(folder, runs):
    for name in ("seeded a", "seeded b"):
        code, err = finished(runs[name])
        assert code == 0, err
    for suffix in (".csv", ".hist.csv"):
        assert (folder / f"a{suffix}").read_bytes() == (folder / f"b{suffix}").read_bytes()
    ledger = json.loads((folder / "a.ledger.json").read_text())
    assert ledger["private"] is False and ledger["randomness"] == SEEDED_SOURCE
    assert ledger["spent"]["epsilon"] == "2"


# ---------------------------------------------------------------------- refusals
def _write(case, content) -> object:
    """``case/persons.csv`` holding ``content`` (bytes, or a frame written as CSV)."""
    path = case / "persons.csv"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        content.to_csv(path, index=False)
    return path


REFUSALS = {
    # label: (what stderr says, the options that differ from a good run: f(case folder, persons frame))
    "missing file": ("nope.csv: file not found", lambda c, p: {"--persons": c / "nope.csv"}),
    "empty file": ("is empty", lambda c, p: {"--persons": _write(c, b"")}),
    "not UTF-8": ("is not UTF-8", lambda c, p: {"--persons": _write(c, b"geocode,hhgq\n\xff\xfe,x\n")}),
    "missing column": ("missing columns ['cenrace']", lambda c, p: {"--persons": _write(c, p.drop(columns="cenrace"))}),
    "epsilon 0": ("epsilon: must be > 0", lambda c, p: {"--epsilon": "0"}),
    "epsilon unrepresentable": ("cannot be sampled exactly", lambda c, p: {"--epsilon": "1e-25"}),
    "seed without --not-private": ("seed: a release on real data", lambda c, p: {"--seed": "3"}),
    "blocks repeated": ("is listed twice", lambda c, p: {"--blocks": _write(c, p[["geocode"]].iloc[[0, 0]])}),
    "blocks malformed": ("must be 15 digits", lambda c, p: {"--blocks": _write(c, p[["geocode"]].iloc[:1] + "0")}),
    "output folder missing": ("--out-histograms: the folder", lambda c, p: {"--out-histograms": c / "no" / "h.csv"}),
    "output over the input": (
        "--out-microdata: ",
        lambda c, p: {"--persons": _write(c, p), "--out-microdata": c / "persons.csv"},
    ),
}


@pytest.mark.parametrize("label", list(REFUSALS))
def test_bad_input_is_refused_with_its_field_and_nothing_written(folder, census, label, tmp_path, capsys):
    """In process (the command's own code path, without an interpreter start per case)."""
    from dpmodels import cli

    options = {"--persons": folder / "persons.csv", "--blocks": folder / "blocks.csv", "--epsilon": "1"}
    options.update({"--out-microdata": tmp_path / "m.csv", "--out-histograms": tmp_path / "h.csv"})
    options.update(REFUSALS[label][1](tmp_path, records(census)))
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    argv = ["release", "topdown", "--races", "7", *[str(x) for pair in options.items() for x in pair]]
    code, err = cli.main(argv), capsys.readouterr().err
    assert code == 2, err
    assert REFUSALS[label][0] in err and "Traceback" not in err
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before


def test_loader_refuses_blank_values_and_header_only_files_and_leaves_out_unlisted_blocks(folder, census, tmp_path):
    from dpmodels.instances.topdown import from_csv

    persons = records(census)
    cases = {
        "blank.csv": (persons.assign(hhgq=[""] + list(persons.hhgq[1:])), "column 'hhgq' is empty on data row 1"),
        "header.csv": (persons.iloc[:0], "has a header but no rows"),
    }
    for name, (frame, message) in cases.items():
        frame.to_csv(tmp_path / name, index=False)
        with pytest.raises(DataValidationError, match=re.escape(message)) as err:
            from_csv(tmp_path / name, races=7)
        assert err.value.field == str(tmp_path / name)
    with pytest.raises(DataValidationError, match="total_level"):
        from_csv(folder / "persons.csv", races=7, total_level="planet")
    # a public block list keeps the empty blocks in the geography
    listed = from_csv(folder / "persons.csv", races=7, blocks=folder / "blocks.csv")
    assert len(listed.geography.leaves) == len(census.geography.leaves) > len(set(persons.geocode))
    assert listed.geography_declared and not from_csv(folder / "persons.csv", races=7).geography_declared
    # persons of an unlisted block are left out (the stated rule), counted nowhere, invariants included
    codes = sorted(set(persons.geocode))
    pd.DataFrame({"geocode": codes[1:]}).to_csv(tmp_path / "few.csv", index=False)
    few = from_csv(folder / "persons.csv", races=7, blocks=tmp_path / "few.csv")
    kept = persons[persons.geocode != codes[0]]
    assert few.population == len(kept) and few.knowledge.root_total == len(kept)
    states = kept.geocode.str[:2].value_counts()
    for state, size in states.items():
        assert few.knowledge.invariant_totals[few.geography.names.index(state)] == size


# ---------------------------------------------------------------------- the Python function
def _hard_checks_hold(result, data):
    assert all(result.checks[name] == 0 for name in HARD_CHECKS), result.checks
    assert result.node_counts[0].sum() == data.population


def test_python_release_spends_from_one_session(census):
    session = PrivacySession(census, epsilon=1)
    first = release(session, "0.6")
    with pytest.raises(BudgetExceededError):
        release(session, "0.6")
    second = release(session, "0.4")
    for result in (first, second):
        _hard_checks_hold(result, census)
    assert session.spent_epsilon == 1 and [str(c.epsilon) for c in session.charges] == ["3/5", "2/5"]
    assert {c.randomness for c in session.charges} == {SECURE_SOURCE}


def test_refused_requests_draw_nothing(census):
    """Over budget, float Laplace, a bad executor or bad options: refused, no draw, no charge."""
    session = PrivacySession(census, epsilon=1, seed=0, not_private=True)
    state = json.dumps(session.rng.bit_generator.state, default=str)
    bad = [
        ({"epsilon": 2}, BudgetExceededError),
        ({"epsilon": 1, "noise": "laplace"}, PrivacyParameterError),
        ({"epsilon": 1, "executor": "bogus"}, ValueError),
        ({"epsilon": 1, "options": {"l1": "highs"}}, ValueError),
        ({"epsilon": 1, "level_shares": [1, 1]}, ValueError),
    ]
    for kwargs, error in bad:
        with pytest.raises(error):
            release(session, **kwargs)
    assert json.dumps(session.rng.bit_generator.state, default=str) == state
    assert session.charges == []
    _hard_checks_hold(release(session, 1), census)
    assert json.dumps(session.rng.bit_generator.state, default=str) != state


def test_released_microdata_reads_back_as_persons(folder, runs):
    """The microdata file has the input's format: ``from_csv`` loads it, with the same state totals."""
    from dpmodels.instances.topdown import from_csv

    code, err = finished(runs["private"])
    assert code == 0, err
    again = from_csv(folder / "m.csv", races=7)
    original = from_csv(folder / "persons.csv", races=7)
    np.testing.assert_array_equal(again.knowledge.invariant_totals, original.knowledge.invariant_totals)


def test_the_release_command_writes_the_outputs_its_parser_declares():
    from dpmodels.topdown.commands import RELEASE_OUTPUTS
    from dpmodels.topdown.release_command import OUTPUT_FLAGS

    assert tuple(RELEASE_OUTPUTS) == OUTPUT_FLAGS
