"""The dpmodels command, run as a user runs it."""

import json
import subprocess
import sys

import pandas as pd
import pytest

from dpmodels import cli
from dpmodels.cli import main


def run(*args, check=True):
    proc = subprocess.run([sys.executable, "-m", "dpmodels.cli", *args], capture_output=True, text=True)
    if check:
        assert proc.returncode == 0, proc.stderr
    return proc


def test_instances_lists_everything():
    out = run("instances").stdout
    assert "pgsr/running-example" in out and "pgsr/census-like" in out


@pytest.mark.slow  # ~9 s; tests/test_readme.py runs the same main job and checks its CSV and plot
def test_compare_pgsr_writes_table_csv_and_plot(tmp_path):
    csv, png = tmp_path / "runs.csv", tmp_path / "plot.png"
    out = run(
        "compare",
        "pgsr",
        "--instance",
        "pgsr/taxi-like",
        "--set",
        "scale=0.1",
        "--set",
        "N=6",
        "--epsilon",
        "0.5",
        "1",
        "--runs",
        "2",
        "--mechanisms",
        "M_H",
        "M_H^r",
        "M_H^dp",
        "M_c^ch",
        "--qp-solver",
        "highs",
        "--csv",
        str(csv),
        "--plot",
        str(png),
        "--no-progress",
    ).stdout
    assert "L1 level 3" in out and "M_H^dp" in out
    runs = pd.read_csv(csv)
    assert len(runs) == 2 * 2 * 4
    exact = runs[runs.mechanism.isin(["M_H", "M_H^dp"])].groupby(["epsilon", "run"])["objective"]
    assert (exact.max() - exact.min()).abs().max() < 1e-6  # both solve Model 1 exactly on the same noise
    assert (runs.loc[runs.mechanism == "M_H^dp", "#CV"] == 0).all()
    assert png.stat().st_size > 10_000


def test_compare_pgsr_user_csv(tmp_path):
    (tmp_path / "h.csv").write_text("region,parent\nUS,\nGA,US\nNY,US\n")
    (tmp_path / "c.csv").write_text("region,size,count\nGA,1,2\nGA,3,1\nNY,1,1\nNY,2,1\nNY,3,1\n")
    out = run(
        "compare",
        "pgsr",
        "--csv-hierarchy",
        str(tmp_path / "h.csv"),
        "--csv-counts",
        str(tmp_path / "c.csv"),
        "--runs",
        "2",
        "--no-progress",
    ).stdout
    assert "G = 6" in out


def test_bad_input_is_a_clear_error(capsys):
    assert (
        main(
            ["compare", "pgsr", "--instance", "pgsr/running-example", "--epsilon", "-1", "--runs", "1", "--no-progress"]
        )
        == 2
    )
    assert "--epsilon: expected a finite number > 0, got '-1'" in capsys.readouterr().err
    assert main(["compare", "pgsr", "--instance", "pgsr/unknown", "--no-progress"]) == 2
    assert "unknown name" in capsys.readouterr().err
    assert main(["compare", "pgsr", "--instance", "pgsr/taxi-like", "--set", "colour=red", "--no-progress"]) == 2
    assert "has no options" in capsys.readouterr().err


@pytest.mark.slow  # ~13 s; bench pgsr's JSON shape is also read by the docs' measurement tests
def test_bench_pgsr_small(tmp_path):
    report = tmp_path / "bench.json"
    out = run(
        "bench",
        "pgsr",
        "--sizes",
        "5",
        "--time-limit",
        "20",
        "--census-scale",
        "0.001",
        "--census-variants",
        "M_H^dp/windows/full",
        "--json",
        str(report),
    ).stdout
    assert "clarabel" in out and "peak GB" in out
    data = json.loads(report.read_text())
    assert data["census"][0]["consistent"] is True and data["sweep"][0]["N"] == 5


@pytest.mark.slow  # ~90 s: three census runs; test_bench_pgsr_small covers the command
def test_bench_pgsr_census_only_at_several_epsilons(tmp_path):
    """Table 7's budgets, one child process per (epsilon, variant): seconds, peak memory, objectives
    that agree between the table DP and the window solver, and the full optimum below the truncated."""
    report = tmp_path / "census.json"
    variants = ["M_H^dp/tables/truncated", "M_H^dp/windows/truncated", "M_H^dp/windows/full"]
    out = run(
        "bench",
        "pgsr",
        "--census-only",
        "--census-scale",
        "0.001",
        "--epsilon",
        "0.5",
        "1",
        "--census-variants",
        *variants,
        "--json",
        str(report),
    ).stdout
    census = json.loads(report.read_text())["census"]
    assert "sweep" not in json.loads(report.read_text())
    assert [(c["epsilon"], c["variant"]) for c in census] == [(e, v) for e in (0.5, 1.0) for v in variants]
    assert all(c["consistent"] and c["seconds"] > 0 and c["peak RSS GB"] > 0 for c in census)
    assert census[0]["delta"] > census[3]["delta"]  # the truncation widens as epsilon shrinks
    assert census[2]["delta"] is None  # the full domain [0, G]
    for eps in (0.5, 1):
        assert f"eps {eps:g} M_H^dp: tables and windows agree on truncated domains: True" in out
        assert f"eps {eps:g} M_H^dp: full optimum <= truncated: True" in out


@pytest.mark.slow  # ~5-10 s; bench topdown's functions are tested in tests/topdown
def test_bench_topdown_small(tmp_path):
    report = tmp_path / "bench.json"
    out = run("bench", "topdown", "--sizes", "4x64", "--preset", "tiny", "--races", "7", "--json", str(report)).stdout
    assert "same optimum: True" in out and "2-process speed-up" in out
    data = json.loads(report.read_text())
    runs = data["state"]["runs"]
    assert [r["assembly"] for r in runs] == ["previous", "batched", "batched"]
    assert all(r["same release as the serial batched run"] for r in runs[1:])
    assert runs[0]["same release as the serial batched run"] == (
        runs[0]["cells differing from the batched release"] == 0
    )
    assert all(sum(r["checks"].values()) == 0 for r in data["state"]["runs"])


def test_compare_mdp_table_csv_and_plot(tmp_path):
    csv, png = tmp_path / "mdp.csv", tmp_path / "bounds.png"
    out = run(
        "compare",
        "mdp",
        "--instance",
        "mdp/grid",
        "--set",
        "rows=4",
        "--set",
        "cols=5",
        "--set",
        "K=6",
        "--set",
        "epsilon=1.0",
        "--set",
        "eta=1.5",
        "--blocks",
        "3",
        "--gap",
        "1e-6",
        "--methods",
        "full LP simplex",
        "structured IPM",
        "Benders k-m-DV",
        "Benders BSC",
        "exponential mechanism",
        "--partitions",
        "--utility",
        "0.5",
        "2",
        "--csv",
        str(csv),
        "--plot",
        str(png),
    ).stdout
    table = pd.read_csv(csv)
    lp = table.loc[table.method == "full LP simplex", "objective"].item()
    for method in ("structured IPM", "Benders k-m-DV", "Benders BSC"):
        row = table[table.method == method].iloc[0]
        assert abs(row.objective - lp) <= 1e-5 * lp and row["bound"] <= lp + 1e-9
    em = table.loc[table.method == "exponential mechanism", "objective"].item()
    assert lp <= em  # the LP optimum is the best mDP mechanism, the exponential mechanism is one of them
    assert (table["max mDP violation (relative)"].dropna() <= 1e-6).all()
    assert png.stat().st_size > 0 and "privacy-utility" in out and "k-m-rec" in out


def test_compare_mdp_bad_method_is_a_clear_error():
    proc = run(
        "compare", "mdp", "--set", "rows=3", "--set", "cols=3", "--set", "K=3", "--methods", "simplex", check=False
    )
    assert proc.returncode == 2 and "--methods: invalid choice: 'simplex'" in proc.stderr


@pytest.mark.parametrize("cell_km", ["1", "1.5"])
def test_bench_mdp_small(tmp_path, cell_km):
    report = tmp_path / "bench.json"
    out = run(
        "bench",
        "mdp",
        "--rows",
        "4",
        "--cols",
        "5",
        "--cell-km",
        cell_km,
        "--epsilon",
        "2",
        "--blocks",
        "2",
        "3",
        "--time-limit",
        "60",
        "--json",
        str(report),
    ).stdout
    assert "Table 4" in out and "x simplex (abs 0.01)" in out and f"{float(cell_km):g} km cells" in out
    rows = json.loads(report.read_text())
    lp = [r for r in rows if r["run"] == "full LP simplex"][0]["reported objective"]
    for r in rows:  # every method certified: bound <= optimum <= exactly mDP incumbent, both rules met
        assert r["status"] in ("Optimal", "optimal", "gap reached"), r
        assert r["certified LB"] <= lp + 1e-9 <= r["certified UB"] + 2e-9 and r["rel gap"] <= 1e-3
        assert r["s to abs 0.01"] <= r["s to rel 1e-3"] <= r["seconds"] + 1e-9
        if not r["run"].startswith("full LP"):
            assert 1 <= r["iterations to abs 0.01"] <= r["iterations to rel 1e-3"] <= r["iterations"]


def test_version_is_printed():
    from dpmodels import __version__

    proc = run("--version")
    assert proc.stdout.strip() == f"dpmodels {__version__}"


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--runs", "0"], "--runs: expected an integer > 0"),
        (["--epsilon", "nan"], "--epsilon: expected a finite number > 0"),
        (["--executor", "threads"], "--executor: expected serial, process, dask, a number"),
        (["--plot", "out.xyz"], "--plot: out.xyz must end in .png"),
        (["--csv", "no/such/folder/out.csv"], "--csv: the folder no/such/folder does not exist"),
        (["--csv-counts", "c.csv"], "need --csv-hierarchy"),
        (["--set", "N=6.5"], "N: option of 'pgsr/census-like' must be an integer, got 6.5"),
    ],
)
def test_newcomer_mistakes_fail_before_any_work_with_exit_code_2(argv, message, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["compare", "pgsr", "--no-progress", *argv]) == 2
    assert message in capsys.readouterr().err
    assert not list(tmp_path.iterdir())  # nothing written


def test_formulations_and_solvers_are_listed_from_the_registries(capsys):
    import dpmodels

    assert main(["formulations"]) == 0
    out = capsys.readouterr().out
    assert all(f.name in out for f in dpmodels.formulations())
    assert main(["solvers"]) == 0
    out = capsys.readouterr().out
    assert "pgsr_dp" in out and "not exact" in out and "highs" in out
    assert main(["solvers", "no_such_solver"]) == 2
    assert "known:" in capsys.readouterr().err


# ---------------------------------------------------------------------- every family: tests/test_experiments.py
def test_mdp_gap_and_bench_counts_are_typed(capsys):
    assert cli.main(["compare", "mdp", "--gap", "-1", "--no-progress"]) == 2
    assert "--gap: certified gap to stop at" in capsys.readouterr().err  # the plugin's declared domain
    assert cli.main(["bench", "mdp", "--blocks", "0"]) == 2
    assert "--blocks: expected an integer > 0" in capsys.readouterr().err
    assert cli.main(["bench", "noise", "--cells", "0"]) == 2
    assert "--cells: expected an integer > 0" in capsys.readouterr().err
    assert cli.main(["bench", "topdown", "--sizes", "16by512"]) == 2
    assert "expected CHILDRENxCELLS" in capsys.readouterr().err
