"""``dpmodels bench topdown --solver-settings`` (issue 25): the node solves it times are the driver's,
and every setting reaches the same optimum."""

from __future__ import annotations

import numpy as np
import pytest

import dpmodels.instances as instances
from dpmodels.topdown.bench_solves import L2_SETTINGS, run_problems, settings_lines, solver_settings
from dpmodels.topdown.driver import topdown
from dpmodels.topdown.mechanism import measure
from dpmodels.topdown.solve import NodeOptions, solve_node


@pytest.fixture(scope="module")
def tiny_run():
    data = instances.generate("topdown/synthetic", preset="tiny", races=3, seed=1)
    meas = measure(data, 2.0, rng=1)
    return data, meas, topdown(meas, data.knowledge, data.schema, data.geography)


def test_rebuilt_problems_are_the_driver_solves(tiny_run):
    """One rebuilt problem per parent the driver solved (its log's L2 rows), and solving a rebuilt
    problem again gives the children the driver released."""
    data, meas, result = tiny_run
    problems = run_problems(data, meas, result)
    log = result.log
    assert (
        len(problems) == log[log.stage == "L2"].groupby(["node", "level"]).ngroups
    )  # the root solve and each parent's
    geo, counts = data.geography, result.node_counts.toarray()
    for level, problem in problems[1:]:
        kids = [c.node for c in problem.children]
        again = solve_node(problem, NodeOptions()).values
        assert np.array_equal(again, counts[np.ix_(kids, problem.cells)])
        assert all(geo.level[k] + 1 == level for k in kids)


def test_settings_reach_the_reference_optimum():
    doc = solver_settings("tiny", races=3, epsilon=2.0, seed=1)
    l2 = [r for r in doc["rows"] if r["stage"] == "L2"]
    assert [r["setting"] for r in l2] == [name for name, _ in L2_SETTINGS]
    for row in l2:
        assert row["failed"] == 0 and row["solves"] == doc["solves"]
        assert row["max |H - H ref|"] < 1e-2  # every setting solves to 1e-10: the same optimum
    for row in l2:  # the driver's settings, the active set and Clarabel after it: absent GQ types' cells go
        dropped = "zeros out" in row["setting"]
        assert (0 < row["histogram columns removed"] < 1) if dropped else "histogram columns removed" not in row
    lp, full, presolved, mip, default_mip = (r for r in doc["rows"] if r["stage"] == "L1")
    assert default_mip["solves"] == mip["solves"] and default_mip["optima that differ"] == 0
    assert lp["LP integral"] + mip["solves"] == lp["solves"] == full["solves"] == presolved["solves"] <= doc["solves"]
    assert doc["solver floor s"] == pytest.approx(min(r["seconds"] for r in l2) + lp["seconds"] + mip["seconds"])
    assert "solver floor" in settings_lines(doc)[-1]
