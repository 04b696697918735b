"""Releases as separate processes: concurrent charges never overspend, an interrupted release leaves nothing.

Regression tests of the issue-22 audit: every ``dpmodels release`` opened a fresh budget (so
concurrent or repeated runs each spent all of it), and a failed write left partial outputs.
"""

from __future__ import annotations

import random
import resource
import signal
import subprocess
import sys
import time
from fractions import Fraction

import pytest
from release_cases import CASES

from dpmodels.core.budget import BudgetDatabase
from dpmodels.core.manifest import verify_outputs

PROCESSES = 8


def _start(argv, **options) -> subprocess.Popen:
    command = [sys.executable, "-m", "dpmodels.cli", *map(str, argv)]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **options)


def _init(db, dataset="people", epsilon="1"):
    subprocess.run(
        [
            sys.executable,
            "-m",
            "dpmodels.cli",
            "budget",
            "init",
            "--db",
            db,
            "--dataset",
            dataset,
            "--epsilon",
            epsilon,
        ],
        check=True,
        capture_output=True,
    )


def test_eight_processes_asking_a_third_each_give_exactly_three_releases(tmp_path):
    db = tmp_path / "budget.db"
    _init(db)
    cases = [CASES["submodular"](tmp_path, f"run{k}") for k in range(PROCESSES)]
    budget = ["--budget-db", db, "--dataset", "people", "--epsilon", "1/3"]
    procs = [_start([*case.argv, *budget]) for case in cases]
    results = [(proc.wait(timeout=300), proc.stderr.read()) for proc in procs]
    codes = [code for code, _ in results]
    assert sorted(codes) == [0, 0, 0] + [2] * (PROCESSES - 3), results
    record = BudgetDatabase(db).dataset("people")
    assert record.spent == 1 and len(record.charges) == 3 and all(c.cost == Fraction(1, 3) for c in record.charges)
    for (code, err), case in zip(results, cases, strict=True):
        if code == 0:
            assert verify_outputs(case.manifest) == {}
        else:
            assert "left of" in err and not any(path.exists() for path in case.written)


def _outcome(case) -> str:
    """'complete' (every file, the manifest verifying them), 'nothing', or what is wrong."""
    present = [path.exists() for path in case.written]
    if all(present):
        return "complete" if verify_outputs(case.manifest) == {} else "corrupt"
    return "nothing" if not any(present) else f"partial: {[p.name for p in case.written if p.exists()]}"


@pytest.mark.slow  # ~15 s each; the failing-write test here and the staging tests' signals stay in the default tier
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_release_interrupted_at_random_points_leaves_all_or_nothing(sig, tmp_path):
    """Ctrl-C (SIGINT) or kill (SIGTERM) at random points between the end of the imports and just after
    the end of a full run: every file of the release with a verifying manifest, or none, never a
    temporary; the budget database records a charge as released exactly when its release is complete."""
    db = tmp_path / "budget.db"
    _init(db, epsilon="100")
    budget = ["--budget-db", db, "--dataset", "people", "--epsilon", "1"]
    tick = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import dpmodels.cli"], check=True)
    imports = time.perf_counter() - tick
    tick = time.perf_counter()
    assert _start([*CASES["topdown"](tmp_path, "full", "county").argv, *budget]).wait(timeout=300) == 0
    full = time.perf_counter() - tick
    rng = random.Random(int(sig))
    outcomes = []
    for run in range(4):
        case = CASES["topdown"](tmp_path, f"run{run}", "county")
        proc = _start([*case.argv, *budget])
        time.sleep(rng.uniform(imports, 1.05 * full))
        proc.send_signal(sig)
        code = proc.wait(timeout=300)
        outcome = _outcome(case)
        outcomes.append(outcome)
        assert outcome in ("complete", "nothing"), (code, proc.stderr.read())
        assert code == 0 or code in (130, -sig) or outcome == "nothing"  # a late signal may end a complete run
        assert not [p for p in tmp_path.iterdir() if p.name.endswith(".dpmodels-partial")]
    charges = BudgetDatabase(db).dataset("people").charges[1:]  # the first is the full run's
    released = [c for c in charges if c.status == "released"]
    assert len(released) == outcomes.count("complete")  # every complete release is recorded, and only those
    assert all(c.status in ("failed", "charged") for c in charges if c not in released)


def test_a_write_that_fails_leaves_nothing(tmp_path):
    """A file-size limit (RLIMIT_FSIZE) makes the ledger's write fail half-way: no output, no temporary."""
    case = CASES["facility"](tmp_path)

    def limit():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG instead
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))

    proc = _start([*case.argv, "--epsilon", "1"], preexec_fn=limit)
    assert proc.wait(timeout=300) == 2
    assert "cannot write" in proc.stderr.read()
    assert _outcome(case) == "nothing" and not [p for p in tmp_path.iterdir() if "partial" in p.name]
