"""``dpmodels bench mdp --sweep-n`` (the paper's Fig. 6) at tiny N: arguments, table, JSON, plot."""

import json

import pytest

from dpmodels import cli
from dpmodels.core.errors import DataValidationError
from dpmodels.metricdp.bench.sweep import RULES, grid_shape, sweep_run, sweep_table


@pytest.mark.parametrize(
    "n, shape", [(250, (10, 25)), (500, (20, 25)), (1000, (25, 40)), (2000, (40, 50)), (12, (3, 4))]
)
def test_grid_shapes(n, shape):
    assert grid_shape(n) == shape


@pytest.mark.parametrize("n", [2, 13, 46])  # too small, prime, 2 x 23 (cols > 4 rows)
def test_sizes_that_are_no_grid_are_refused(n):
    with pytest.raises(DataValidationError, match="--sweep-n"):
        grid_shape(n)


def test_bad_sweep_arguments_fail_before_any_run(capsys, tmp_path):
    assert cli.main(["bench", "mdp", "--sweep-n", "13"]) == 2
    assert "--sweep-n" in capsys.readouterr().err
    assert cli.main(["bench", "mdp", "--sweep-n", "0"]) == 2
    assert cli.main(["bench", "mdp", "--sweep-n", "12", "--methods", "gurobi"]) == 2
    assert cli.main(["bench", "mdp", "--sweep-n", "12", "--plot", str(tmp_path / "fig.jpg")]) == 2
    assert "must end in .png" in capsys.readouterr().err
    assert cli.main(["bench", "mdp", "--plot", str(tmp_path / "fig.png")]) == 2  # a plot needs the sweep
    assert "--sweep-n" in capsys.readouterr().err


def test_every_method_is_certified_in_process():
    """One run per method on the 3 x 4 grid: every certified bracket holds the simplex optimum."""
    runs = [sweep_run(m, 12, 2.0, 60.0) for m in ("highs-simplex", "highs-ipm", "highs-pdlp", "mdp_ipm", "mdp_benders")]
    opt = runs[0]["reported objective"]
    for r in runs:
        assert r["certified LB"] <= opt + 1e-9 <= r["certified UB"] + 2e-9, r
        assert r["rel gap"] <= 1e-3 and r["s to rel 1e-3"] is not None and r["peak GB"] > 0
    table = sweep_table(runs)
    for rule in RULES:
        assert table.loc[table.method == "highs-simplex", f"x simplex ({rule})"].item() == 1.0


@pytest.mark.slow  # ~8 s; the sweep's in-process tests cover its rules and JSON
def test_sweep_command_prints_both_rules_and_writes_json_and_plot(tmp_path, capsys):
    report, png = tmp_path / "sweep.json", tmp_path / "fig6.png"
    argv = ["bench", "mdp", "--sweep-n", "12", "--epsilon", "2", "--methods", "highs-simplex", "mdp_ipm"]
    assert cli.main([*argv, "--time-limit", "60", "--json", str(report), "--plot", str(png)]) == 0
    captured = capsys.readouterr()
    assert "load before timing" in captured.err  # the conditions of the timing, logged
    assert "s to abs 0.01" in captured.out and "x simplex (rel 1e-3)" in captured.out
    runs = json.loads(report.read_text())
    assert [(r["N"], r["method"]) for r in runs] == [(12, "highs-simplex"), (12, "mdp_ipm")]
    assert all(r["rel gap"] <= 1e-3 for r in runs)
    assert png.stat().st_size > 0


def test_rule_times_come_from_the_history_and_an_empty_history_meets_none():
    """A Benders run that finishes no iteration in its time limit has an empty history (measured:
    eps = 1, N = 1,000): no rule met, not a crash."""
    import pandas as pd

    from dpmodels.metricdp.bench.runs import rule_times

    none = {
        "s to abs 0.01": None,
        "iterations to abs 0.01": None,
        "s to rel 1e-3": None,
        "iterations to rel 1e-3": None,
    }
    assert rule_times(pd.DataFrame([]), 0.0) == none
    history = pd.DataFrame({"best UB": [2.0, 1.005, 1.0005], "LB": [0.5, 1.0, 1.0], "elapsed s": [1.0, 2.0, 3.0]})
    met = {"s to abs 0.01": 2.5, "iterations to abs 0.01": 2, "s to rel 1e-3": 3.5, "iterations to rel 1e-3": 3}
    assert rule_times(history, 0.5) == met


def test_repeated_runs_give_medians_ranges_and_rules_met_in_most_runs():
    runs = [
        {"eps": 1.0, "N": 12, "method": "highs-simplex", "status": "Optimal", "seconds": s, "s to rel 1e-3": s}
        for s in (1.0, 3.0, 2.0)
    ] + [
        {"eps": 1.0, "N": 12, "method": "mdp_ipm", "status": st, "seconds": s, "s to rel 1e-3": met}
        for st, s, met in (("gap reached", 0.5, 0.5), ("time limit", 9.0, None), ("time limit", 8.0, None))
    ]
    table = sweep_table(runs).set_index("method")
    simplex, ipm = table.loc["highs-simplex"], table.loc["mdp_ipm"]
    assert (simplex["runs"], simplex["seconds"], simplex["seconds min"], simplex["seconds max"]) == (3, 2.0, 1.0, 3.0)
    assert simplex["x simplex (rel 1e-3)"] == 1.0
    assert ipm["status"] == "gap reached / time limit" and ipm["seconds"] == 8.0
    assert ipm["s to rel 1e-3"] != ipm["s to rel 1e-3"]  # met in one run of three: no median (NaN)


def test_runs_repeat_each_measurement_in_its_own_child(capsys):
    argv = ["bench", "mdp", "--sweep-n", "12", "--epsilon", "2", "--methods", "highs-simplex", "--runs", "2"]
    assert cli.main([*argv, "--time-limit", "60"]) == 0
    captured = capsys.readouterr()
    assert "run 1" in captured.err and "run 2" in captured.err  # each run logged as it ends
    assert "seconds min" in captured.out and "run 1" not in captured.out  # the table: medians over the runs
    assert cli.main(["bench", "mdp", "--runs", "2"]) == 2  # runs belong to the sweep
    assert "--runs" in capsys.readouterr().err
