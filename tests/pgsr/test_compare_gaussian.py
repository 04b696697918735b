"""``dpmodels compare pgsr`` and ``bench pgsr`` under ``--noise discrete-gaussian --rho`` (issue 25).

The comparison's rows state each level's ``sigma^2``; they must be what the zCDP accountant gives
for the rho: ``sigma^2 = Delta_2^2 / (2 rho_l)`` with ``rho_l = rho / L``, where ``Delta_2^2`` (the
squared L2 sensitivity of a level's measured vector) is found here by brute force over every
neighbouring pair of small datasets on the same tree, from vectors built here with numpy alone.
"""

import itertools
import json
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

from dpmodels import cli
from dpmodels.pgsr.compare import compare_mechanisms
from dpmodels.pgsr.data import GroupSizeData

#: A three-level tree (root; two regions; three leaves) as its region,parent CSV declares it.
PARENTS = {"R": None, "A": "R", "B": "R", "A1": "A", "A2": "A", "B1": "B"}
LEVELS = (("R",), ("A", "B"), ("A1", "A2", "B1"))
#: The groups of the data compared: (leaf, size); the largest size is N.
GROUPS = [("A1", 1), ("A1", 3), ("A2", 2), ("A2", 4), ("B1", 1), ("B1", 1), ("B1", 2)]
N = 4
KINDS = {"M_H^dp": "counts", "M_c^dp": "cumulative", "M_c^ch": "chain"}


def _level_vectors(groups, kind: str) -> list[np.ndarray]:
    """Each level's measured vector: counts per (region, size), their running sums over sizes, or the
    chain (size-major, then the level's regions, summed along); sizes above N count as N."""
    out = []
    for regions in LEVELS:
        counts = np.zeros((len(regions), N), dtype=np.int64)
        for leaf, size in groups:
            node = leaf
            while node is not None:
                if node in regions:
                    counts[regions.index(node), min(size, N) - 1] += 1
                node = PARENTS[node]
        if kind == "counts":
            out.append(counts.ravel())
        elif kind == "cumulative":
            out.append(np.cumsum(counts, axis=1).ravel())
        else:
            out.append(np.cumsum(counts.T.ravel()))
    return out


def _brute_force_l2sq(kind: str) -> list[int]:
    """max ||f_l(D) - f_l(D')||_2^2 per level over neighbours: a unit of size 1..N+1 (with up to one other
    unit) loses one person of quantity 1 and keeps size >= 1 (z_max = 1, G fixed)."""
    units = [(leaf, s) for leaf in LEVELS[-1] for s in range(1, N + 2)]
    best = [0] * len(LEVELS)
    for k in range(2):
        for others in itertools.combinations_with_replacement(units, k):
            for leaf, s in units:
                if s < 2:
                    continue
                before = _level_vectors([*others, (leaf, s)], kind)
                after = _level_vectors([*others, (leaf, s - 1)], kind)
                for lvl, (a, b) in enumerate(zip(before, after, strict=True)):
                    best[lvl] = max(best[lvl], int(((a - b) ** 2).sum()))
    return best


def _write_inputs(tmp_path):
    hierarchy, counts = tmp_path / "h.csv", tmp_path / "c.csv"
    hierarchy.write_text("region,parent\n" + "".join(f"{r},{p or ''}\n" for r, p in PARENTS.items()))
    frame = pd.DataFrame(GROUPS, columns=["region", "size"]).value_counts().rename("count").reset_index()
    frame.to_csv(counts, index=False)
    return ["--csv-hierarchy", str(hierarchy), "--csv-counts", str(counts)]


def test_compare_under_the_discrete_gaussian_states_the_zcdp_accountants_sigma2(tmp_path, capsys):
    csv = tmp_path / "runs.csv"
    rhos = ("0.3", "2")
    argv = ["compare", "pgsr", *_write_inputs(tmp_path), "--mechanisms", *KINDS, "--runs", "1"]
    argv += ["--noise", "discrete-gaussian", "--rho", *rhos, "--no-progress", "--csv", str(csv)]
    assert cli.main(argv) == 0, capsys.readouterr().err
    out = capsys.readouterr().out
    assert "discrete Gaussian" in out and "runs per rho" in out
    runs = pd.read_csv(csv)
    assert "epsilon" not in runs.columns and "epsilon spent" not in runs.columns
    assert len(runs) == len(KINDS) * len(rhos) and runs["L1 total"].notna().all()
    assert (runs["#CV"] == 0).all()  # the exact mechanisms stay consistent under any noise
    L = len(LEVELS)
    for mechanism, kind in KINDS.items():
        l2sq = _brute_force_l2sq(kind)
        for rho in rhos:
            rows = runs[(runs.mechanism == mechanism) & (runs.rho == float(rho))]
            assert len(rows) == 1 and (rows["rho spent"] == float(rho)).all()
            for lvl in range(1, L + 1):
                expected = Fraction(l2sq[lvl - 1]) / (2 * Fraction(rho) / L)
                assert (rows[f"sigma^2 level {lvl}"] == float(expected)).all(), (mechanism, rho, lvl)


def test_the_gaussian_comparison_is_seeded():
    """A comparison is an experiment: the same seed gives the same rows, another seed other noise."""
    data = GroupSizeData.from_groups(_hierarchy(), [g[0] for g in GROUPS], [g[1] for g in GROUPS], N)
    kwargs = {"runs": 3, "mechanisms": ["M_H^dp"], "noise": "discrete-gaussian", "rhos": [1]}
    first, again = compare_mechanisms(data, **kwargs), compare_mechanisms(data, **kwargs)
    pd.testing.assert_frame_equal(first.drop(columns="seconds"), again.drop(columns="seconds"))
    other = compare_mechanisms(data, seed=1, **kwargs)
    assert not first["objective"].equals(other["objective"])


def _hierarchy():
    from dpmodels.core.hierarchy import Hierarchy

    return Hierarchy.from_parent_table(PARENTS)


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--noise", "discrete-gaussian"], "--rho: this noise is zCDP"),
        (["--noise", "discrete-gaussian", "--epsilon", "1"], "give --rho, not --epsilon"),
        (["--noise", "discrete-gaussian", "--rho", "1", "--epsilon", "1"], "--epsilon: discrete-gaussian is zCDP"),
        (["--rho", "1"], "--rho: a zCDP budget needs a zCDP noise"),
        (["--noise", "discrete-gaussian", "--rho", "1", "--calibration", "paper"], "--calibration: paper"),
        (["--noise", "discrete-gaussian", "--rho", "1", "--table7"], "--noise: --table7"),
        (["--noise", "discrete-gaussian", "--rho", "0"], "--rho: expected a finite number > 0"),
        (["--noise", "gaussian", "--rho", "1"], "--noise: invalid choice"),
    ],
)
def test_compare_refuses_a_budget_in_the_wrong_unit(flags, message, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    argv = ["compare", "pgsr", "--instance", "pgsr/running-example", *flags, "--no-progress", "--csv", "x.csv"]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--noise", "discrete-gaussian"], "--rho: this noise is zCDP"),
        (["--noise", "discrete-gaussian", "--rho", "1", "--epsilon", "1"], "--epsilon: discrete-gaussian is zCDP"),
        (["--rho", "0.5"], "--rho: a zCDP budget needs a zCDP noise"),
    ],
)
def test_bench_refuses_a_budget_in_the_wrong_unit(flags, message, capsys):
    assert cli.main(["bench", "pgsr", "--sizes", "5", "--skip-census", *flags]) == 2
    assert message in capsys.readouterr().err


def test_the_library_refuses_a_budget_in_the_wrong_unit():
    from dpmodels.core.errors import DataValidationError

    data = GroupSizeData.from_groups(_hierarchy(), ["A1"], [1], 1)
    with pytest.raises(DataValidationError, match="epsilons"):
        compare_mechanisms(data, [1], 1, ["M_H^dp"], noise="discrete-gaussian", rhos=[1])
    with pytest.raises(DataValidationError, match="rhos"):
        compare_mechanisms(data, None, 1, ["M_H^dp"], noise="discrete-gaussian")
    with pytest.raises(DataValidationError, match="rhos"):
        compare_mechanisms(data, [1], 1, ["M_H^dp"], rhos=[1])


@pytest.mark.slow  # ~45 s: the sweep at N = 5 and one census run in a child process; the errors are in the default tier
def test_bench_under_the_discrete_gaussian(tmp_path):
    report = tmp_path / "bench.json"
    argv = ["bench", "pgsr", "--noise", "discrete-gaussian", "--rho", "0.5", "--sizes", "5"]
    argv += ["--census-scale", "0.001", "--census-variants", "M_H^dp/windows/truncated", "M_H^dp/tables/truncated"]
    assert cli.main([*argv, "--time-limit", "20", "--json", str(report), "-q"]) == 0
    document = json.loads(report.read_text())
    census = document["census"]
    assert [(c["noise"], c["rho"]) for c in census] == [("discrete-gaussian", 0.5)] * 2
    assert all("epsilon" not in c and c["consistent"] for c in census)
    assert census[0]["objective"] == census[1]["objective"]  # tables and windows: the same exact optimum
    assert document["sweep"][0]["N"] == 5
