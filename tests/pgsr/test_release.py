"""``dpmodels release pgsr`` and :func:`dpmodels.pgsr.release.release`, run as a user runs them."""

import json
import subprocess
import sys
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from pgsr_loss import exact_privacy_loss

from dpmodels import instances
from dpmodels.cli import main
from dpmodels.core.errors import DataValidationError
from dpmodels.core.hierarchy import Hierarchy
from dpmodels.core.metrics import release_metrics
from dpmodels.core.randomness import SECURE_SOURCE
from dpmodels.core.resources import format_bytes
from dpmodels.core.session import BudgetExceededError, PrivacySession
from dpmodels.instances.pgsr import from_csv
from dpmodels.pgsr.bounding import RULES
from dpmodels.pgsr.data import GroupSizeData
from dpmodels.pgsr.mechanism import measure
from dpmodels.pgsr.postprocessing import MECHANISMS
from dpmodels.pgsr.release import DEFAULT_MECHANISM, estimate_release_bytes, release, release_facts
from dpmodels.pgsr.sensitivity import NEIGHBOURS


def dpmodels(*args):
    command = [sys.executable, "-m", "dpmodels.cli", "release", "pgsr", *args]
    return subprocess.run(command, capture_output=True, text=True)


@pytest.fixture
def files(tmp_path):
    """A two-state hierarchy and 200 households of sizes 1..4 as person records."""
    (tmp_path / "h.csv").write_text("region,parent\nUS,\nA,US\nB,US\n")
    rng = np.random.default_rng(0)
    rows, person = [], 0
    for unit in range(200):
        region = "AB"[rng.integers(2)]
        for _ in range(rng.integers(1, 5)):
            rows.append((f"p{person}", f"h{unit}", region, 1))
            person += 1
    pd.DataFrame(rows, columns=["user", "unit", "region", "quantity"]).to_csv(tmp_path / "r.csv", index=False)
    return tmp_path


def test_release_writes_consistent_counts_and_a_secure_ledger(files):
    out = files / "released.csv"
    proc = dpmodels(
        "--hierarchy", files / "h.csv", "--records", files / "r.csv", "--N", "6", "--epsilon", "1", "--out", out
    )
    assert proc.returncode == 0, proc.stderr
    frame = pd.read_csv(out)
    wide = frame.pivot(index="region", columns="size", values="count").loc[["US", "A", "B"]].to_numpy()
    assert (wide >= 0).all() and (wide[0] == wide[1] + wide[2]).all()  # M_H^dp is consistent
    assert wide[0].sum() == 200  # G is public and kept
    ledger = json.loads((files / "released.ledger.json").read_text())
    assert ledger["private"] and ledger["randomness"] == SECURE_SOURCE and ledger["spent"]["epsilon"] == "1"
    assert sorted(frame["size"].unique()) == list(range(1, 7))  # the declared N = 6, not the data's 4


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--seed", "1"], "not private"),
        (["--epsilon", "0"], "epsilon"),
        (["--epsilon", "1e-25"], "is refused"),
        (["--epsilon", "2e-16"], "is refused"),
        (["--z-max", "0"], "--z-max: expected an integer > 0"),
        (["--N", "0"], "--N: expected an integer > 0"),
        (["--overflow", "error"], "--overflow: error refuses data"),
        (["--overflow", "clip"], "invalid choice"),
    ],
)
def test_bad_requests_fail_before_anything_is_written(files, extra, message):
    args = ["--hierarchy", files / "h.csv", "--records", files / "r.csv", "--N", "6", "--epsilon", "1"]
    args += ["--out", files / "o.csv"]
    proc = dpmodels(*args, *extra)
    assert proc.returncode == 2 and message in proc.stderr
    assert not (files / "o.csv").exists() and not (files / "o.ledger.json").exists()


def test_a_missing_output_folder_is_refused_up_front(files):
    out = files / "no" / "o.csv"
    proc = dpmodels(
        "--hierarchy", files / "h.csv", "--records", files / "r.csv", "--N", "6", "--epsilon", "1", "--out", out
    )
    assert proc.returncode == 2 and "does not exist" in proc.stderr


def test_a_seeded_experiment_is_reproducible_and_labelled(files):
    runs = []
    for name in ("a.csv", "b.csv"):
        proc = dpmodels(
            "--hierarchy",
            files / "h.csv",
            "--records",
            files / "r.csv",
            "--epsilon",
            "1",
            "--out",
            files / name,
            "--seed",
            "5",
            "--not-private",
        )
        assert proc.returncode == 0, proc.stderr
        runs.append(pd.read_csv(files / name))
    assert runs[0].equals(runs[1])
    assert json.loads((files / "a.ledger.json").read_text())["private"] is False


def test_python_release_spends_from_one_session():
    data = instances.generate("pgsr/taxi-like", seed=0, scale=0.05, N=4)
    session = PrivacySession(data, epsilon=1)
    first = release(session, "M_c^dp", "0.6")
    with pytest.raises(BudgetExceededError):
        release(session, "M_H^dp", "0.6")
    second = release(session, "M_H^dp", "0.4")
    for rel in (first, second):
        metrics = release_metrics(data.hierarchy, data.counts, rel.counts, data.G)
        assert metrics["#CV"] == 0
    assert session.spent_epsilon == 1


# ---------------------------------------------------------------- N is declared (issue 22)
def _main(*args) -> int:
    return main(["release", "pgsr", *[str(a) for a in args]])


def test_n_is_required_unless_an_experiment(files, capsys):
    """Regression: without --N, N was the largest group in the data, released in the size rows and
    in the ledger's cells.  Now it must be declared; only a run declared --not-private may skip it (its
    ledger and manifest then say NOT private, seeded or not)."""
    base = ["--hierarchy", files / "h.csv", "--records", files / "r.csv", "--epsilon", "1"]
    assert _main(*base, "--out", files / "o.csv") == 2
    assert "--N: is required" in capsys.readouterr().err
    assert not (files / "o.csv").exists() and not (files / "o.ledger.json").exists()
    assert _main(*base, "--out", files / "u.csv", "--not-private") == 0
    assert json.loads((files / "u.ledger.json").read_text())["private"] is False
    assert json.loads((files / "u.manifest.json").read_text())["private"] is False
    assert _main(*base, "--out", files / "e.csv", "--not-private", "--seed", "1") == 0
    assert json.loads((files / "e.ledger.json").read_text())["private"] is False


def test_overflow_error_is_for_experiments_only(files, capsys):
    base = ["--hierarchy", files / "h.csv", "--records", files / "r.csv", "--epsilon", "1", "--N", "2"]
    assert _main(*base, "--overflow", "error", "--out", files / "o.csv") == 2
    assert "--overflow" in capsys.readouterr().err
    assert _main(*base, "--overflow", "error", "--out", files / "o.csv", "--not-private", "--seed", "1") == 2
    err = capsys.readouterr().err
    assert "larger than N=2" in err and "--overflow top" in err  # the data has groups of 3 and 4
    assert _main(*base, "--out", files / "o.csv") == 0  # the default counts them in the size-2 bin
    released = pd.read_csv(files / "o.csv")
    assert released.loc[released.region == "US", "count"].sum() == 200


def test_work_that_cannot_fit_is_refused_before_the_records_are_read(files, capsys, monkeypatch):
    """Regression: --N 10000000 ran for minutes past 14 GB.  The estimate (declared sizes only) is
    checked against DPMODELS_MEMORY_LIMIT before the records are read: the records file given here
    does not exist, and the error is about memory, naming --N and both figures."""
    monkeypatch.setenv("DPMODELS_MEMORY_LIMIT", "1G")
    out = files / "o.csv"
    code = _main("--hierarchy", files / "h.csv", "--records", files / "absent.csv", "--N", 10_000_000)
    assert code == 2  # argparse: --epsilon and --out missing
    capsys.readouterr()
    args = ["--hierarchy", files / "h.csv", "--records", files / "absent.csv", "--N", 10_000_000]
    assert _main(*args, "--epsilon", "1", "--out", out) == 2
    err = capsys.readouterr().err
    tree = Hierarchy.from_parent_table({"US": None, "A": "US", "B": "US"})
    estimate = estimate_release_bytes(tree, 10_000_000, DEFAULT_MECHANISM, epsilon=1)
    assert "--N:" in err and format_bytes(estimate) in err and format_bytes(2**30) in err
    assert "file not found" not in err and not out.exists()


# ---------------------------------------------------------------- the exact privacy loss, end to end
def _neighbour_files(tmp_path):
    """D: units of sizes 1, 2 and 3; D': the size-3 unit lost one person (sizes 1, 2, 2; same G)."""
    (tmp_path / "h.csv").write_text("region,parent\nUS,\nA,US\nB,US\n")
    rows = [("p1", "u1", "A"), ("p2", "u2", "A"), ("p3", "u2", "A"), ("p4", "u3", "B"), ("p5", "u3", "B")]
    rows.append(("p6", "u3", "B"))
    frame = pd.DataFrame([(*r, 1) for r in rows], columns=["user", "unit", "region", "quantity"])
    frame.to_csv(tmp_path / "d.csv", index=False)
    frame[frame.user != "p6"].to_csv(tmp_path / "d_prime.csv", index=False)
    return tmp_path / "h.csv", tmp_path / "d.csv", tmp_path / "d_prime.csv"


@pytest.mark.parametrize("mechanism", ["M_H^dp", "M_c^dp", "M_c^ch"])
def test_neighbours_release_the_same_shape_and_lose_at_most_epsilon(tmp_path, capsys, mechanism):
    """The issue's pair (data-derived N would be 3 for D and 2 for D'), released with --N 3: the same
    (region, size) keys in the same order, the same ledger rows, and the exact privacy loss of the
    measurement (truths from the CLI's loader, scales from the CLI's ledger) at most its epsilon."""
    tree, d, d_prime = _neighbour_files(tmp_path)
    outputs = []
    for name, records in (("d", d), ("d_prime", d_prime)):
        out = tmp_path / f"{name}.released.csv"
        assert (
            _main(
                "--hierarchy",
                tree,
                "--records",
                records,
                "--N",
                3,
                "--epsilon",
                "1/2",
                "--out",
                out,
                "--mechanism",
                mechanism,
            )
            == 0
        )
        ledger = json.loads((tmp_path / f"{name}.released.ledger.json").read_text())
        outputs.append((pd.read_csv(out), ledger))
    (frame_d, ledger_d), (frame_p, ledger_p) = outputs
    assert frame_d[["region", "size"]].equals(frame_p[["region", "size"]])
    rows = [
        [{k: m[k] for k in ("query", "cells", "sensitivity", "scale")} for m in led["charges"][0]["measurements"]]
        for led in (ledger_d, ledger_p)
    ]
    assert rows[0] == rows[1]
    kind = rows[0][0]["query"].split()[0]
    data = [from_csv(tree, records=r, N=3) for r in (d, d_prime)]
    truths = [{"counts": x.counts, "cumulative": x.cumulative(), "chain": x.chain()}[kind] for x in data]
    assert data[0].G == data[1].G and not np.array_equal(truths[0], truths[1])
    scales = [Fraction(m["scale"]) for m in rows[0]]
    loss = exact_privacy_loss(data[0].hierarchy, truths[0], truths[1], scales)
    assert 0 < loss <= Fraction(ledger_d["spent"]["epsilon"]) == Fraction(1, 2)


# ---------------------------------------------------------------- Python: declared facts only
def test_python_release_refuses_an_undeclared_n_on_a_private_session():
    h = Hierarchy.from_parent_table({"R": None, "A": "R", "B": "R"})
    undeclared = GroupSizeData.from_groups(h, ["A", "B", "B"], [1, 2, 3])
    session = PrivacySession(undeclared, epsilon=1)
    with pytest.raises(DataValidationError) as err:
        release(session, "M_H^dp", 1)
    assert err.value.field == "N" and "n_sizes=N" in err.value.problem and "--N" in err.value.problem
    assert session.spent_epsilon == 0 and session.charges == []
    experiment = PrivacySession(undeclared, epsilon=1, seed=3, not_private=True)
    assert release(experiment, "M_H^dp", 1).counts.shape == (3, 3)
    refusing = GroupSizeData.from_groups(h, ["A", "B", "B"], [1, 2, 3], n_sizes=3, overflow="error")
    with pytest.raises(DataValidationError, match="overflow='top'"):
        release(PrivacySession(refusing, epsilon=1), "M_H^dp", 1)
    declared = GroupSizeData.from_groups(h, ["A", "B", "B"], [1, 2, 3], n_sizes=5)
    assert release(PrivacySession(declared, epsilon=1), "M_H^dp", 1).counts.shape == (3, 5)


# ---------------------------------------------------------------- release_facts
def test_release_facts_come_from_the_declaration_only():
    """Two data sets with the same declaration give the same facts, equal to the hierarchy's."""
    h = Hierarchy.from_parent_table({"R": None, "A": "R", "B": "R", "A1": "A", "A2": "A", "B1": "B"})
    one = GroupSizeData.from_groups(h, ["A1", "B1"], [1, 9], n_sizes=4, z_max=2)
    two = GroupSizeData.from_groups(h, ["A2"] * 5, [3] * 5, n_sizes=4, z_max=2)
    for mechanism in MECHANISMS:
        facts = release_facts(h, mechanism, N=4, z_max=2)
        assert release_facts(one, mechanism) == facts == release_facts(two, mechanism)
        json.dumps(facts.to_dict())
        _, ledger = measure(one, 1, MECHANISMS[mechanism].kind, rng=0)
        assert facts.declared["sensitivity_per_level"] == [int(m.sensitivity) for m in ledger.entries]
    facts = release_facts(h, "M_c^ch", N=4, z_max=2)
    assert facts.neighbours == NEIGHBOURS and facts.flavor == "pure DP"
    assert (facts.declared["N"], facts.declared["z_max"], facts.declared["overflow"]) == (4, 2, "top")
    assert facts.declared["regions_per_level"] == [1, 2, 3] and "G" in facts.invariants
    assert "unprotected" in facts.invariants["G"].lower()
    assert set(facts.bounding) == set(RULES)
    assert "chain" in facts.post_processing and "noisy" in facts.post_processing


def test_release_facts_say_what_is_not_private():
    h = Hierarchy.from_parent_table({"R": None, "A": "R", "B": "R"})
    undeclared = release_facts(GroupSizeData.from_groups(h, ["A"], [2]))
    assert "N" not in undeclared.declared and any("NOT private" in n for n in undeclared.notes)
    refusing = release_facts(h, N=3, overflow="error")
    assert any("refused" in b for b in refusing.bounding) and any("NOT private" in n for n in refusing.notes)
    paper = release_facts(h, "M_c^ch", N=3, calibration="paper")
    assert any("more than eps" in n for n in paper.notes)
    with pytest.raises(DataValidationError, match="N"):
        release_facts(h)
    with pytest.raises(DataValidationError, match="hierarchy"):
        release_facts(GroupSizeData.from_groups(h, ["A"], [2], n_sizes=3), N=3)


# ---------------------------------------------------------------- the memory estimate against measured peaks
_PEAK = """
import sys
from dpmodels.cli import main

def status(key):  # kB in /proc/self/status
    return next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith(key + ":"))

args = ["release", "pgsr", "--hierarchy", sys.argv[1], "--records", sys.argv[2], "--epsilon", "1",
        "--mechanism", sys.argv[4], "--out", sys.argv[5], "--force"]
assert main([*args, "--N", "4"]) == 0  # imports and compiled kernels: the baseline
with open("/proc/self/clear_refs", "w") as clear:
    clear.write("5")  # resets the peak (VmHWM) to the current resident size
base = status("VmRSS")
assert main([*args, "--N", sys.argv[3]]) == 0
print((status("VmHWM") - base) * 1024)
"""


@pytest.mark.parametrize(
    "mechanism, N", [pytest.param("M_H^dp", 200_000, marks=pytest.mark.slow), ("M_c^ch", 200_000), ("M_H^r", 5_000)]
)
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads the peak from /proc/self/status")
def test_the_memory_estimate_bounds_the_measured_peak(files, mechanism, N):
    """Peak resident memory of a release in a child process (VmHWM, reset after a warm-up run), above
    its resident size before: below the estimate, and the estimate within 10x of it (an upper bound of
    the same order)."""
    command = [sys.executable, "-c", _PEAK, files / "h.csv", files / "r.csv", str(N), mechanism, files / "o.csv"]
    proc = subprocess.run([str(c) for c in command], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    measured = int(proc.stdout.split()[-1])
    tree = Hierarchy.from_parent_table({"US": None, "A": "US", "B": "US"})
    estimate = estimate_release_bytes(tree, N, mechanism, epsilon=1)
    assert measured <= estimate <= 10 * measured, (measured, estimate)
