"""The 2020 production's query rounder (issue 25, ``NodeOptions(objective="queries")``).

Oracles: brute force over every rounding of tiny solves (the least sum of ``|Q_r y - round(Q_r phi)|``
plus the cell term), and the Pyomo model solved by HiGHS and by SCIP; the matrix form on HiGHS must
reach the same optimum.
"""

import itertools

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import dpmodels
from dpmodels import instances
from dpmodels.core.errors import DataValidationError
from dpmodels.topdown.compiled import l1_system, solve_l1_highs
from dpmodels.topdown.driver import topdown
from dpmodels.topdown.flow import solve_flow_rounding
from dpmodels.topdown.mechanism import measure
from dpmodels.topdown.models import build_l1
from dpmodels.topdown.node_data import ChildSpec, NodeProblem, WeightedQuery
from dpmodels.topdown.query_rounder import round_half_up
from dpmodels.topdown.solve import NodeOptions, solve_node

MARGINAL = sp.csr_matrix(np.array([[1.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 1.0], [1.0, 0.0, 1.0, 0.0]]))


def _problem(hstar: np.ndarray, detailed: bool) -> NodeProblem:
    """Children x 4 cells measured by a 3-row marginal (two of its rows partition the cells, the third
    crosses them) and, when ``detailed``, the identity; the parent is the column sums of ``hstar``."""
    m, n = hstar.shape
    eye = sp.identity(n, format="csr")
    children = []
    for t in range(m):
        queries = [WeightedQuery("marginal", MARGINAL, MARGINAL @ hstar[t], 1.0)]
        if detailed:
            queries.append(WeightedQuery("detailed", eye, hstar[t], 1.0, True))
        children.append(ChildSpec(t, queries))
    return NodeProblem(np.arange(n), children, parent=np.round(hstar.sum(axis=0)).astype(np.int64))


def _brute_force(problem: NodeProblem, hstar: np.ndarray, detailed: bool) -> float:
    """The least query-rounder objective over every split of the parent in ``[floor H*, floor H* + 1]``."""
    low = np.floor(hstar).astype(int)
    phi = hstar - low
    targets = round_half_up(phi @ MARGINAL.T.toarray())
    m, n = hstar.shape
    best = None
    for first in itertools.product((0, 1), repeat=(m - 1) * n):
        y = np.zeros((m, n), dtype=int)
        y[:-1] = np.reshape(first, (m - 1, n))
        y[-1] = problem.parent - low.sum(axis=0) - y[:-1].sum(axis=0)
        if (y < 0).any() or (y > 1).any():
            continue
        value = np.abs(y @ MARGINAL.T.toarray() - targets).sum() + (((1 - 2 * phi) * y).sum() if detailed else 0.0)
        best = value if best is None else min(best, value)
    return best


@st.composite
def _hstar(draw):
    """A fractional L2-like solution whose columns sum to integers (the parent)."""
    m = draw(st.integers(2, 3))
    parent = np.array(draw(st.lists(st.integers(0, 4), min_size=4, max_size=4)), dtype=float)
    shares = np.array(draw(st.lists(st.floats(0.05, 1.0), min_size=m * 4, max_size=m * 4))).reshape(m, 4)
    return shares / shares.sum(axis=0) * parent


@settings(max_examples=25, deadline=None)
@given(_hstar(), st.booleans())
def test_matrix_form_and_pyomo_model_reach_the_brute_force_optimum(hstar, detailed):
    problem = _problem(hstar, detailed)
    best = _brute_force(problem, hstar, detailed)
    system, _ = l1_system(problem, hstar, objective="queries")
    x, status, objective = solve_l1_highs(system, integer=True)
    assert status == "Optimal" and objective == pytest.approx(best, abs=1e-7)
    model = build_l1(problem, hstar, objective="queries", fingerprint=False)
    res = dpmodels.solve(model, "highs", options={"mip_rel_gap": 0.0})
    assert res.incumbent_objective == pytest.approx(best, abs=1e-7)


def test_scip_agrees_on_the_pyomo_model():
    hstar = np.array([[0.4, 1.6, 0.5, 2.2], [1.6, 0.4, 2.5, 0.8]])
    problem = _problem(hstar, detailed=True)
    model = build_l1(problem, hstar, objective="queries", fingerprint=False)
    highs = dpmodels.solve(model, "highs", options={"mip_rel_gap": 0.0}).incumbent_objective
    scip = dpmodels.solve(build_l1(problem, hstar, objective="queries", fingerprint=False), "scip").incumbent_objective
    assert highs == pytest.approx(scip, abs=1e-7) == pytest.approx(_brute_force(problem, hstar, True), abs=1e-7)


def test_the_query_rounder_keeps_a_marginal_the_cell_rounder_moves():
    """Two children share a parent of one person in each of two cells, which form one marginal row.
    The cell rounder gives both persons to the child whose cells are at 0.7 (its row jumps from 1.4 to
    2, the other's from 0.6 to 0); the query rounder gives each child its row's rounded answer, 1."""
    hstar = np.array([[0.7, 0.7, 0.0, 0.0], [0.3, 0.3, 0.0, 0.0]])
    problem = _problem(hstar, detailed=False)
    rows = {
        objective: solve_node(problem, NodeOptions(objective=objective)).values @ MARGINAL.T.toarray()
        for objective in ("l1", "queries")
    }
    np.testing.assert_array_equal(rows["l1"][:, 0], [2, 0])
    np.testing.assert_array_equal(rows["queries"][:, 0], [1, 1])


def test_a_release_with_the_query_rounder_holds_every_constraint():
    data = instances.generate("topdown/synthetic", preset="tiny", races=3, seed=2)
    result = topdown(
        measure(data, 2.0, rng=3), data.knowledge, data.schema, data.geography, NodeOptions(objective="queries")
    )
    assert sum(result.checks.values()) == 0, result.checks


def test_the_query_rounder_is_refused_where_it_cannot_run():
    with pytest.raises(DataValidationError, match="objective.*l1='highs'"):
        NodeOptions(objective="queries", l1="topdown_flow")
    with pytest.raises(DataValidationError, match="objective.*assembly='previous'"):
        NodeOptions(objective="queries", assembly="previous")
    with pytest.raises(DataValidationError, match="must be one of"):
        NodeOptions(objective="cells")
    hstar = np.array([[0.5, 0.5, 0.0, 0.0], [0.5, 0.5, 0.0, 0.0]])
    with pytest.raises(DataValidationError, match="flow rounder takes"):
        solve_flow_rounding(_problem(hstar, True), hstar, "queries")
