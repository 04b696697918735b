"""The TopDown evaluation harness (spec 5, project-defined) and ``dpmodels compare topdown``."""

import dataclasses
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from dpmodels import instances
from dpmodels.cli import main
from dpmodels.core.errors import DataValidationError
from dpmodels.topdown.compare import CONFIGS, DEFAULT_CONFIGS, compare_topdown, level_metrics, resolve_configs
from dpmodels.topdown.compare_report import plot_topdown, summary_table, violation_counts
from dpmodels.topdown.driver import TopDownResult, node_problem, topdown
from dpmodels.topdown.mechanism import default_strategy, measure
from dpmodels.topdown.solve import NodeOptions, solve_node

EPSILONS = (1, 4)
RUNS = 2


@pytest.fixture(scope="module")
def tiny():
    return instances.generate("topdown/synthetic", preset="tiny", seed=1)


@pytest.fixture(scope="module")
def runs(tiny):
    configs = {name: CONFIGS[name] for name in DEFAULT_CONFIGS}
    configs["LP-first again"] = CONFIGS["L2 clarabel + LP-first highs"]  # a twin: must match row for row
    return compare_topdown(tiny, epsilons=EPSILONS, runs=RUNS, configs=configs, seed=3)


def _metric_columns(df):
    return [c for c in df.columns if "seconds" not in c and c != "config"]


def test_one_row_per_config_epsilon_run_level(tiny, runs):
    levels = tiny.geography.n_levels
    assert len(runs) == 4 * len(EPSILONS) * RUNS * levels
    assert not runs.duplicated(["config", "epsilon", "run", "level"]).any()
    assert set(runs["epsilon"]) == {1.0, 4.0} and set(runs["run"]) == {0, 1}
    assert list(dict.fromkeys(runs["config"]))[:3] == list(DEFAULT_CONFIGS)
    for col in ("L1 error", "workload MAE", "total error/node", "lp-integral", "mip", "flow", "failsafe", "d* max"):
        assert col in runs.columns
    assert {"seconds", "L2 seconds", "L1 seconds", "check: inconsistent parents", "noise digest"} <= set(runs.columns)
    # every parent of level l-1 is solved or short-cut exactly once
    sizes = tiny.geography.level_sizes()
    parents = runs["level"].map(lambda lv: 1 if lv == 1 else int(sizes[lv - 2]))
    assert (runs["solves"] + runs["one child"] + runs["zero parent"] == parents).all()
    methods = ["lp-integral", "mip", "flow", "already integral", "failsafe", "other"]
    assert (runs[methods].sum(axis=1) == runs["solves"]).all()


def test_configs_see_the_same_noise(runs):
    assert (runs.groupby(["epsilon", "run"])["noise digest"].nunique() == 1).all()
    assert runs.groupby("epsilon")["noise digest"].nunique().eq(RUNS).all()  # runs differ
    # a configuration listed twice under two names gives identical releases
    a = runs[runs.config == "L2 clarabel + LP-first highs"][_metric_columns(runs)].reset_index(drop=True)
    b = runs[runs.config == "LP-first again"][_metric_columns(runs)].reset_index(drop=True)
    pd.testing.assert_frame_equal(a, b)
    # "no edits" and the flow rounder share the L2 stage: the root rounding solves the same problem,
    # so both backends reach the same L1 objective (spec 5), and the released root is as close
    root = runs[runs.level == 1].set_index(["config", "epsilon", "run"])
    flow, lp = root.loc["L2 clarabel + flow rounder"], root.loc["no edits"]
    np.testing.assert_allclose(flow["rounding distance"], lp["rounding distance"], atol=1e-4)
    assert (flow["lp-integral"] == 0).all() and (flow["flow"] == 1).all() and (lp["lp-integral"] == 1).all()


def test_no_violations_and_exact_invariant_totals(tiny, runs):
    checks = [c for c in runs.columns if c.startswith("check: ") and c != "check: edit violations"]
    assert (runs[checks] == 0).all().all(), runs[checks].sum()
    kept = runs[runs.config.map(lambda c: c == "LP-first again" or CONFIGS[c].edits)]
    assert runs.loc[runs.config.isin(["no edits", "L2 clarabel + flow rounder"]), "check: edit violations"].isna().all()
    fallback_runs = kept.groupby(["config", "epsilon", "run"])["edit fallbacks"].transform("sum")
    assert (kept.loc[fallback_runs == 0, "check: edit violations"] == 0).all()
    invariant = runs["level"] <= tiny.knowledge.total_level
    assert invariant.any() and (runs["invariant totals"] == invariant).all()
    assert (runs.loc[invariant, ["total error/node", "max total error"]] == 0).all().all()
    assert (runs.loc[~invariant, "total error/node"] > 0).any()  # below the invariants, totals are noisy
    assert (runs["L1 error"] > 0).all() and (runs["failsafe"] == 0).all() and runs["d* max"].isna().all()


def test_level_metrics_against_a_hand_made_release(tiny):
    geo = tiny.geography
    truth = tiny.node_histograms_all().toarray()
    log = pd.DataFrame(columns=["node", "level", "stage", "method", "edits", "seconds"])
    exact = TopDownResult(geo, sp.csr_matrix(truth), log, {})
    for row in level_metrics(tiny, exact):
        assert row["L1 error"] == 0 and row["workload MAE"] == 0 and row["total error/node"] == 0
    # move one person of a non-empty leaf to another cell: every ancestor changes by the same 2 units
    moved = truth.copy()
    leaf = int(geo.leaves[np.flatnonzero(truth[geo.leaves].sum(axis=1))[0]])
    src = int(np.flatnonzero(truth[leaf])[0])
    dst = (src + 1) % truth.shape[1]
    node = leaf
    while node >= 0:
        moved[node, src] -= 1
        moved[node, dst] += 1
        node = geo.parent[node]
    rows = level_metrics(tiny, TopDownResult(geo, sp.csr_matrix(moved), log, {}))
    assert [r["L1 error"] for r in rows] == [2.0] * geo.n_levels
    assert all(r["total error/node"] == 0 for r in rows)
    strategy = default_strategy(tiny.schema)
    names = [q.name for q in strategy.queries]
    assert all(f"MAE {n}" in rows[0] for n in names)
    assert rows[0]["MAE detailed"] == pytest.approx(2 / tiny.schema.size)


def test_node_problem_rebuilds_the_driver_solves(tiny):
    m = measure(tiny, 2.0, rng=5)
    opts = NodeOptions(l2="clarabel", edits=False)
    result = topdown(m, tiny.knowledge, tiny.schema, tiny.geography, opts)
    released = result.node_counts.toarray()
    root = node_problem(tiny, m)
    sol = solve_node(root, opts)
    np.testing.assert_array_equal(sol.values[0], released[0, root.cells])
    state = int(tiny.geography.children(0)[0])  # the first state has several counties
    child = node_problem(tiny, m, state, released[state])
    kids = tiny.geography.children(state)
    assert len(kids) > 1
    np.testing.assert_array_equal(solve_node(child, opts).values, released[np.ix_(kids, child.cells)])
    with pytest.raises(DataValidationError, match="parent"):
        node_problem(tiny, m, state)
    with pytest.raises(DataValidationError, match="leaf"):
        node_problem(tiny, m, int(tiny.geography.leaves[0]), released[tiny.geography.leaves[0]])


def test_summary_violations_and_plot(runs, tmp_path):
    table = summary_table(runs)
    assert len(table) == 4 * len(EPSILONS) * 6 and (table["runs"] == RUNS).all()
    one = runs[(runs.config == "no edits") & (runs.epsilon == 4.0) & (runs.level == 6)]
    row = table[(table.config == "no edits") & (table.epsilon == 4.0) & (table.level == 6)].iloc[0]
    assert row["L1 error"] == pytest.approx(one["L1 error"].mean())
    counts = violation_counts(runs)
    assert list(counts["runs"]) == [len(EPSILONS) * RUNS] * 4
    assert counts.loc["no edits", "inconsistent parents"] == 0
    path = tmp_path / "topdown.png"
    plot_topdown(runs, str(path), title="tiny")
    assert path.stat().st_size > 10_000


def test_bad_arguments_are_clear_errors(tiny):
    with pytest.raises(DataValidationError, match="unknown configuration"):
        compare_topdown(tiny, runs=1, configs=["simplex magic"])
    with pytest.raises(DataValidationError, match="runs"):
        compare_topdown(tiny, runs=0)
    with pytest.raises(DataValidationError, match="epsilon"):
        compare_topdown(tiny, epsilons=(-1,), runs=1)
    with pytest.raises(DataValidationError, match="l1"):
        resolve_configs({"bad": dataclasses.replace(NodeOptions(), l1="gurobi")})
    assert list(resolve_configs(["flow", "no-edits"])) == ["L2 clarabel + flow rounder", "no edits"]


# ---------------------------------------------------------------------- the command
def test_cli_compare_topdown_writes_table_csv_and_plot(tmp_path):
    csv, png = tmp_path / "runs.csv", tmp_path / "plot.png"
    args = ["compare", "topdown", "--preset", "tiny", "--runs", "1", "--epsilon", "1"]
    args += ["--csv", str(csv), "--plot", str(png), "--no-progress"]
    proc = subprocess.run([sys.executable, "-m", "dpmodels.cli", *args], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "L2 clarabel + flow rounder" in out and "violations" in out and "lp-integral" in out
    runs = pd.read_csv(csv)
    assert len(runs) == len(DEFAULT_CONFIGS) * 6 and set(runs["level"]) == set(range(1, 7))
    assert (runs["check: inconsistent parents"] == 0).all()
    assert png.stat().st_size > 10_000


def test_cli_compare_topdown_bad_input(capsys):
    assert main(["compare", "topdown", "--preset", "tiny", "--configs", "bogus", "--no-progress"]) == 2
    assert "unknown configuration 'bogus'" in capsys.readouterr().err
    assert main(["compare", "topdown", "--preset", "huge", "--no-progress"]) == 2
    assert "--preset: must be one of" in capsys.readouterr().err
    assert main(["compare", "topdown", "--set", "colour=red", "--runs", "1", "--no-progress"]) == 2
    assert "has no options" in capsys.readouterr().err
