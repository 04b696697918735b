"""Interleaved multi-pass solves (issue 25): later passes hold the earlier rounded answers exactly, one
pass is the 2019 solve, and each pass's optima equal HiGHS's, SCIP's and brute force's on the same model."""

import itertools

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import dpmodels
from dpmodels import instances
from dpmodels.core.errors import DataValidationError
from dpmodels.core.marker import get_marker
from dpmodels.topdown.data import pl94_schema
from dpmodels.topdown.driver import node_problem, run_topdown, topdown
from dpmodels.topdown.interleaved import check_passes, run_passes
from dpmodels.topdown.mechanism import default_strategy, measure
from dpmodels.topdown.models import build_l1, build_l2, histogram_values
from dpmodels.topdown.node_data import ChildSpec, NodeProblem, WeightedQuery
from dpmodels.topdown.solve import NodeOptions

COARSE_FIRST = (("hhgq",), ("votingage x hispanic x cenrace",), ("detailed",))


@pytest.fixture(scope="module")
def tiny():
    return instances.generate("topdown/synthetic", preset="tiny", races=2, seed=3, edits=False)


def _answers(problem: NodeProblem, values: np.ndarray, names) -> list[np.ndarray]:
    """Dense numpy answers of every child to the query sets ``names`` (the oracle of the held rows)."""
    return [
        q.matrix.toarray() @ values[t] for t, c in enumerate(problem.children) for q in c.queries if q.name in names
    ]


def _solves(data, measurements, options, children: bool = True):
    """The root solve and (``children``) the solve of the root's children given its pass-solved
    histogram, as the driver builds them: ``(problem, what the driver released for its children)``."""
    root = node_problem(data, measurements)
    done, _ = run_passes(root, options)
    yield root, None
    if children:
        parent = np.zeros(data.schema.size, dtype=np.int64)
        parent[root.cells] = done[-1].solution.values[0]
        yield node_problem(data, measurements, 0, parent), None


def test_check_passes_expands_rest_and_refuses_bad_sequences():
    names = ["detailed", "hhgq", "va"]
    assert check_passes((("hhgq",), ("rest",)), names) == (("hhgq",), ("detailed", "va"))
    assert check_passes((), names) == ()
    for bad, word in [
        ((("hhgq",), ("nope",)), "not query sets"),
        ((("hhgq",), ("hhgq", "rest")), "more than one pass"),
        ((("rest",), ("hhgq",)), "last pass only"),
        ((("hhgq",),), "in no pass"),
        (("hhgq", "rest"), "sequence of passes"),
        ((("hhgq",), ()), "no query set"),
    ]:
        with pytest.raises(DataValidationError, match=word):
            check_passes(bad, names)
    strategy = default_strategy(pl94_schema(2))
    with pytest.raises(DataValidationError, match="detailed query set goes in the last pass"):
        check_passes((("detailed",), ("rest",)), strategy.queries)
    assert check_passes((("hhgq",), ("rest",)), strategy.queries)[1] == ("detailed", "votingage x hispanic x cenrace")


def test_one_pass_is_the_2019_two_step_solve(tiny):
    measured = measure(tiny, 1.0, rng=5)
    args = (measured, tiny.knowledge, tiny.schema, tiny.geography)
    today = topdown(*args, NodeOptions())
    for passes in ((("rest",),), (("detailed", "hhgq", "votingage x hispanic x cenrace"),)):
        one = topdown(*args, NodeOptions(passes=passes))
        assert (one.node_counts != today.node_counts).nnz == 0


@settings(max_examples=3, deadline=None)
@given(seed=st.integers(0, 10**6))
def test_later_passes_hold_every_earlier_rounded_answer_exactly(tiny, seed):
    measured = measure(tiny, 0.5, rng=seed)
    options = NodeOptions(passes=check_passes(COARSE_FIRST, [q.name for q in measured.strategy.queries]))
    for problem, _ in _solves(tiny, measured, options):
        done, notes = run_passes(problem, options)
        final = done[-1].solution.values
        for earlier in done[:-1]:
            got = _answers(problem, final, earlier.names)
            held = _answers(problem, earlier.solution.values, earlier.names)
            assert all(np.array_equal(a, b) for a, b in zip(got, held, strict=True))
        assert not notes or notes[-1]["method"] == "earlier pass kept"


def test_each_pass_l2_optimum_equals_scip_on_the_same_model(tiny):
    """Our L2 (Clarabel on the matrix form) against SCIP on each pass's Pyomo model (HiGHS's QP method
    stalls on a pass whose optimum is not unique: it reached the value and then the time limit)."""
    measured = measure(tiny, 1.0, rng=11)
    options = NodeOptions(passes=check_passes(COARSE_FIRST, [q.name for q in measured.strategy.queries]))
    checked = 0
    for problem, _ in _solves(tiny, measured, options):
        done, _ = run_passes(problem, options)
        for r in done:
            ours = [rec for rec in r.solution.log if rec["stage"] == "L2" and rec["objective"] is not None][-1]
            model = build_l2(r.problem, fingerprint=False)
            res = dpmodels.solve(model, "scip", time_limit=60)
            assert res.termination_condition.name == "convergenceCriteriaSatisfied"
            assert ours["objective"] == pytest.approx(res.incumbent_objective, rel=1e-6, abs=1e-6)
            checked += 1
    assert checked == 6


def test_each_pass_rounding_equals_scip_on_the_same_model(tiny):
    """With the L2 on SCIP through the Pyomo model (deterministic), the test rebuilds each pass's H* and
    asks SCIP for the optimal rounding of that model (ours: HiGHS, LP first): the L1 distances agree."""
    measured = measure(tiny, 1.0, rng=12)
    names = [q.name for q in measured.strategy.queries]
    options = NodeOptions(l2="scip", path="pyomo", passes=check_passes(COARSE_FIRST, names))
    for problem, _ in _solves(tiny, measured, options, children=False):
        done, _ = run_passes(problem, options)
        for r in done:
            if r.solution.failsafe:
                continue
            l2 = build_l2(r.problem, fingerprint=False)
            dpmodels.solve(l2, "scip", time_limit=60)
            hstar = histogram_values(l2)
            ours = [rec for rec in r.solution.log if rec["stage"] == "L1"][-1]
            mip = build_l1(r.problem, hstar, fingerprint=False)
            res = dpmodels.solve(mip, "scip", time_limit=60)
            best = res.incumbent_objective + get_marker(mip).data.l1_constant  # = min ||H - H*||_1
            assert ours["objective"] == pytest.approx(best, abs=1e-5)
            assert np.abs(r.solution.values - hstar).sum() == pytest.approx(best, abs=1e-5)


def _tiny_problem(parent, noisy_totals, noisy_cells):
    """Two children over three cells: a total (one row) and the detailed query per child."""
    n = len(parent)
    ones, eye = sp.csr_matrix(np.ones((1, n))), sp.identity(n, format="csr")
    children = [
        ChildSpec(
            t, [WeightedQuery("total", ones, np.array([tot]), 2.0), WeightedQuery("detailed", eye, cells, 1.0, True)]
        )
        for t, (tot, cells) in enumerate(zip(noisy_totals, noisy_cells, strict=True))
    ]
    return NodeProblem(np.arange(n), children, parent=np.asarray(parent))


@settings(max_examples=8, deadline=None)
@given(
    parent=st.lists(st.integers(0, 4), min_size=3, max_size=3).filter(lambda p: sum(p) > 0),
    noise=st.lists(st.floats(-3, 3, allow_nan=False), min_size=8, max_size=8),
)
def test_total_then_detailed_equals_brute_force(parent, noise):
    """Pass 1 fixes the rounded child totals; pass 2's rounding is the best integer split in the box
    [floor H*, floor H* + 1] that keeps them: brute force over every split of the parent agrees."""
    parent = np.array(parent)
    half = parent / 2
    problem = _tiny_problem(
        parent, [parent.sum() / 2 + noise[0], parent.sum() / 2 + noise[1]], [half + noise[2:5], half + noise[5:8]]
    )
    options = NodeOptions(passes=(("total",), ("detailed",)))
    done, notes = run_passes(problem, options)
    assert not notes
    totals = done[0].solution.values.sum(axis=1)
    second = done[1]
    np.testing.assert_array_equal(second.solution.values.sum(axis=1), totals)
    l2 = build_l2(second.problem, fingerprint=False)  # strictly convex: H* is unique
    assert dpmodels.solve(l2, "highs", time_limit=30).termination_condition.name == "convergenceCriteriaSatisfied"
    hstar = histogram_values(l2)
    low = np.floor(hstar + 1e-9)
    best = np.inf
    for first in itertools.product(*(range(p + 1) for p in parent)):
        h = np.vstack([first, parent - np.array(first)])
        if (h.sum(axis=1) == totals).all() and ((h >= low) & (h <= low + 1)).all():
            best = min(best, np.abs(h - hstar).sum())
    assert np.abs(second.solution.values - hstar).sum() == pytest.approx(best, abs=1e-5)


def test_run_topdown_with_passes_keeps_every_public_constraint(tiny):
    options = NodeOptions(passes=(("hhgq",), ("rest",)))
    result, _ = run_topdown(tiny, 1.0, options=options, seed=2)
    hard = ("negative cells", "invariant totals off", "structural zeros off", "inconsistent parents")
    assert all(result.checks[k] == 0 for k in hard), result.checks
    assert set(result.log["pass"].dropna()) <= {1, 2}
    measured = measure(tiny, 1.0, rng=2)
    result = topdown(measured, tiny.knowledge, tiny.schema, tiny.geography, options)
    released = result.node_counts.toarray()
    kids = tiny.geography.children(0)
    problem = node_problem(tiny, measured, 0, released[0])
    done, _ = run_passes(
        problem, NodeOptions(passes=check_passes(options.passes, [q.name for q in measured.strategy.queries]))
    )
    np.testing.assert_array_equal(released[np.ix_(kids, problem.cells)], done[-1].solution.values)
