"""``dpmodels compare pgsr --table7``: the paper's Table 7 layout on both shapes, its numbers beside
ours, #CV = 0 where it must be, Figs. 8-9, and bad input refused before any work."""

import contextlib
import io
import re

import numpy as np
import pandas as pd
import pytest

from dpmodels.cli import main
from dpmodels.pgsr.compare import DEFAULT_MECHANISMS
from dpmodels.pgsr.table7 import (
    MAY_VIOLATE,
    PAPER_TABLE7,
    TABLE7_SHAPES,
    compare_shapes,
    consistency_failures,
    paper_table7,
)

#: Both shapes shrunk to seconds: a tenth-of-a-percent census with 60 counties, a taxi sample; N = 10.
TINY = ["--set", "scale=0.01", "--set", "N=10", "--set", "census.n_counties=60", "--set", "census.n_states=5"]


@pytest.fixture(scope="module")
def table7_run(tmp_path_factory):
    """One --table7 run on the tiny shapes: its results (stdout), its CSV, its PNG and its notes (stderr)."""
    folder = tmp_path_factory.mktemp("table7")
    csv, png = folder / "runs.csv", folder / "fig8-9.png"
    out, err = io.StringIO(), io.StringIO()  # capsys is function-scoped
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["compare", "pgsr", "--table7", *TINY, "--no-progress", "--csv", str(csv), "--plot", str(png)])
    return code, out.getvalue(), pd.read_csv(csv), png, err.getvalue()


def test_table7_prints_the_paper_layout_for_both_shapes(table7_run):
    code, out, runs, _, _ = table7_run
    assert code == 0
    assert "Census-like, L1 in units of 1e3" in out and "Taxi-like, L1 in units of 1e4" in out
    assert set(runs["shape"]) == {"census", "taxi"}
    assert set(runs["mechanism"]) == set(DEFAULT_MECHANISMS) and "TopDown" in DEFAULT_MECHANISMS
    assert sorted(set(runs["epsilon"])) == [0.1, 0.5, 1.0]
    assert (runs.groupby(["shape", "epsilon", "mechanism"]).size() == 1).all()  # one run per epsilon by default
    lines = out.splitlines()
    rows = [ln for ln in lines if re.match(r"^(0\.1|0\.5|1\.0)?\s+(M_|TopDown)", ln) and "(" in ln]
    assert len(rows) == 3 * len(DEFAULT_MECHANISMS)


def test_each_cell_is_our_mean_in_the_papers_unit_beside_the_papers_number(table7_run):
    _, out, runs, _, _ = table7_run
    line = next(ln for ln in out.splitlines() if ln.startswith("0.1 M_H^r"))
    census = runs[(runs["shape"] == "census") & (runs["epsilon"] == 0.1) & (runs["mechanism"] == "M_H^r")].iloc[0]
    assert f"{census['L1 level 1'] / 1e3:,.1f} (40.3)" in line  # Census Lev 1 of M_H^r at eps 0.1
    assert f"{census['L1 level 3'] / 1e3:,.1f} (802.1)" in line
    taxi = runs[(runs["shape"] == "taxi") & (runs["epsilon"] == 0.1) & (runs["mechanism"] == "M_H^r")].iloc[0]
    assert f"{taxi['L1 level 3'] / 1e4:,.1f} (904.4)" in line  # Taxi Lev 3
    assert f"{taxi['#CV']:,.0f} (18,206)" in line
    topdown = next(ln for ln in out.splitlines() if re.match(r"^\s+TopDown", ln) and "(127.2)" in ln)
    assert "0 (0)" in topdown  # eps 1: consistent, as in the paper


def test_exact_mechanisms_and_topdown_have_no_violations(table7_run):
    _, out, runs, _, _ = table7_run
    must = runs[~runs["mechanism"].isin(MAY_VIOLATE)]
    assert must["#CV"].notna().all() and (must["#CV"] == 0).all()
    assert (must["#faithfulness"] == 0).all() and (must["#negative"] == 0).all()
    assert "#CV = 0 for every run of every mechanism but M_H^r, M_c^r" in out
    assert consistency_failures(runs).empty


def test_table7_reports_times_and_draws_figures_8_and_9(table7_run):
    _, out, runs, png, err = table7_run
    assert "post-processing seconds" in out and "wall time:" in err  # the wall time is a note, logged
    assert (runs.dropna(subset=["L1 total"])["seconds"] > 0).all()
    assert png.stat().st_size > 20_000


def test_rows_of_a_shape_above_the_qp_cell_limit_are_marked_not_dropped(capsys):
    """M_c^r (a Pyomo model on Clarabel) is not run above the limit and says so; M_H^r runs on the
    plain data (pgsr_relax) under --table7, so the limit does not apply to it."""
    code = main(
        ["compare", "pgsr", "--table7", *TINY, "--epsilon", "1", "--shapes", "taxi", "--qp-max-cells", "100"]
        + ["--mechanisms", "M_H^r", "M_c^r", "TopDown", "--no-progress"]
    )
    out = capsys.readouterr().out
    assert code == 0
    row = next(ln for ln in out.splitlines() if re.match(r"^\s+M_c\^r\s", ln))
    assert row.count("not run") == 4  # Lev 1-3 and #CV
    assert "not run: M_c^r on shapes above --qp-max-cells 100" in out
    assert "not run" not in next(ln for ln in out.splitlines() if ln.startswith("1.0 M_H^r"))
    assert "post-processed by: M_H^r pgsr_relax, TopDown topdown_baseline" in out
    assert "Census-like" not in out.split("Table 7")[1]  # --shapes taxi


def test_m_h_r_under_table7_is_model_1r_on_the_plain_data_and_equals_clarabel(capsys):
    """The same noise, M_H^r by pgsr_relax (the --table7 default) and by Clarabel on the Pyomo model:
    the same release up to the rounding of cells Clarabel leaves within 1e-6 of a half."""
    base = ["compare", "pgsr", "--table7", *TINY, "--epsilon", "1", "--mechanisms", "M_H^r", "--no-progress"]
    runs = {}
    for solver in ("pgsr_relax", "clarabel"):
        assert main([*base, "--qp-solver", solver]) == 0
        runs[solver] = capsys.readouterr().out
    assert "M_H^r pgsr_relax" in runs["pgsr_relax"] and "M_H^r clarabel" in runs["clarabel"]
    line = {k: next(ln for ln in v.splitlines() if ln.startswith("1.0 M_H^r")) for k, v in runs.items()}
    assert line["pgsr_relax"] == line["clarabel"]


def test_paper_numbers_are_the_spec_table():
    """Spec 6.5: 3 budgets x 6 mechanisms; only M_H^r and M_c^r have #CV > 0 there."""
    assert len(PAPER_TABLE7) == 18
    assert {(eps, mech) for eps, mech, *_ in PAPER_TABLE7} == {
        (e, m) for e in (0.1, 0.5, 1.0) for m in DEFAULT_MECHANISMS
    }
    for _, mech, taxi, census in PAPER_TABLE7:
        assert (taxi[3] > 0) == (census[3] > 0) == (mech in MAY_VIOLATE)
    runs = pd.DataFrame(
        [{"shape": "census", "mechanism": "M_c^dp", "epsilon": 0.5, "run": 0, "status": "feasible", "seconds": 1.0}]
    ).assign(**{"L1 level 1": 100.0, "L1 level 2": 2000.0, "L1 level 3": 159_100.0, "L1 total": 161_200.0})
    runs = runs.assign(**{"#CV": 0, "#faithfulness": 0, "objective": 1.0, "epsilon spent": 0.5})
    row = paper_table7(runs).iloc[0]
    assert row["L1 level 3"] == pytest.approx(159.1) and row["paper L1 level 3"] == 159.1
    assert row["paper L1 level 1"] == 0.2 and row["paper #CV"] == 0
    assert TABLE7_SHAPES["census"].unit == 1e3 and TABLE7_SHAPES["taxi"].unit == 1e4


def test_compare_shapes_runs_each_data_set_on_the_same_budgets():
    from dpmodels.instances.pgsr import census_like, taxi_like

    data = {"census": census_like(seed=1, scale=0.001, N=5, n_states=3, n_counties=9), "taxi": taxi_like(seed=1, N=30)}
    runs = compare_shapes(data, [0.5, 1], runs=2, mechanisms=["TopDown", "M_H^dp"], seed=3)
    assert list(dict.fromkeys(runs["shape"])) == ["census", "taxi"]
    assert len(runs) == 2 * 2 * 2 * 2
    paired = runs.pivot_table(index=["shape", "epsilon", "run"], columns="mechanism", values="objective")
    assert (paired["M_H^dp"] <= paired["TopDown"] + 1e-9).all()  # same noise: the exact optimum is no worse


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--table7", "--instance", "pgsr/running-example"], "--instance: does not apply with --table7"),
        (["--table7", "--csv-hierarchy", "h.csv", "--csv-counts", "c.csv"], "--csv-hierarchy: does not apply"),
        (["--table7", "--set", "county.N=3"], "a prefix must name a shape"),
        (["--table7", "--set", "census.colour=red"], "has no options ['colour']"),
        (["--table7", "--plot", "fig.tiff"], "--plot: fig.tiff must end in .png, .pdf, .svg"),
        (["--table7", "--mechanisms", "M_X"], "unknown 'M_X'"),
        (["--table7", "--shapes", "nation"], "invalid choice: 'nation'"),
        (["--table7", "--qp-max-cells", "-1"], "--qp-max-cells: expected an integer >= 0"),
        (["--shapes", "census"], "--shapes: only applies with --table7"),
        (["--qp-max-cells", "10"], "--qp-max-cells: only applies with --table7"),
        (["--table7", "--qp-solver", "pgsr_relax", "--mechanisms", "M_c^r"], "pgsr_relax solves Model 1-R only"),
        (["--table7", "--time-limit", "60"], "takes no --time-limit; choose clarabel"),
    ],
)
def test_bad_table7_input_fails_before_any_work(argv, message, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["compare", "pgsr", "--no-progress", *argv]) == 2
    assert message in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


def test_a_run_without_solution_has_no_metrics_rather_than_zero_violations():
    """Clarabel stopped by a time limit returns no point: the row's errors and #CV are NaN (shown as
    'no solution'), never a #CV of 0 computed on missing counts."""
    from dpmodels.instances.pgsr import taxi_like
    from dpmodels.pgsr.compare import compare_mechanisms
    from dpmodels.pgsr.table7 import _cell

    data = taxi_like(seed=0, scale=0.1, N=6)
    runs = compare_mechanisms(data, [1.0], 1, ["M_H^r"], options={"M_H^r": {"time_limit": 1e-9}})
    row = runs.iloc[0]
    assert row["status"] == "noSolution" and row["termination"] == "maxTimeLimit"
    assert np.isnan(row["#CV"]) and np.isnan(row["L1 total"])
    assert _cell(row["#CV"], 1966, row["status"], "{:,.0f}") == "no solution"


@pytest.mark.slow
def test_full_census_shape_every_consistent_mechanism_has_no_violation():
    """The default --table7 census shape (3,197 regions x N = 1,000, G = 1.18e8) at eps = 0.1, where
    the noise is widest: every mechanism but the rounded relaxations is consistent, faithful,
    non-negative and integral (about 20 s and 1 GB)."""
    from dpmodels.instances.pgsr import census_like

    runs = compare_shapes({"census": census_like(seed=0)}, [0.1], 1, ["M_H^dp", "M_c^dp", "M_c^ch", "TopDown"], seed=4)
    assert runs["L1 total"].notna().all()
    for col in ("#CV", "#faithfulness", "#negative", "#non-integral"):
        assert (runs[col] == 0).all(), col
