"""``dpmodels release pgsr`` and :func:`dpmodels.pgsr.release.release`, run as a user runs them."""

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from dpmodels import instances
from dpmodels.core.metrics import release_metrics
from dpmodels.core.randomness import SECURE_SOURCE
from dpmodels.core.session import BudgetExceededError, PrivacySession
from dpmodels.pgsr.release import release


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
    proc = dpmodels("--hierarchy", files / "h.csv", "--records", files / "r.csv", "--epsilon", "1", "--out", out)
    assert proc.returncode == 0, proc.stderr
    frame = pd.read_csv(out)
    wide = frame.pivot(index="region", columns="size", values="count").loc[["US", "A", "B"]].to_numpy()
    assert (wide >= 0).all() and (wide[0] == wide[1] + wide[2]).all()  # M_H^dp is consistent
    assert wide[0].sum() == 200  # G is public and kept
    ledger = json.loads((files / "released.ledger.json").read_text())
    assert ledger["private"] and ledger["randomness"] == SECURE_SOURCE and ledger["spent"]["epsilon"] == "1"


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--seed", "1"], "not private"),
        (["--epsilon", "0"], "epsilon"),
        (["--epsilon", "1e-25"], "cannot represent"),
        (["--z-max", "0"], "--z-max: expected an integer > 0"),
    ],
)
def test_bad_requests_fail_before_anything_is_written(files, extra, message):
    args = ["--hierarchy", files / "h.csv", "--records", files / "r.csv", "--epsilon", "1", "--out", files / "o.csv"]
    proc = dpmodels(*args, *extra)
    assert proc.returncode == 2 and message in proc.stderr
    assert not (files / "o.csv").exists() and not (files / "o.ledger.json").exists()


def test_a_missing_output_folder_is_refused_up_front(files):
    out = files / "no" / "o.csv"
    proc = dpmodels("--hierarchy", files / "h.csv", "--records", files / "r.csv", "--epsilon", "1", "--out", out)
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
