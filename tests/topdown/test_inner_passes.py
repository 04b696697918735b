"""The production's inner passes within an interleaved pass (issue 25): L2 passes hold an earlier L2 pass's
answers within the tolerance (checked against the closed form and a hand-written Clarabel QP), rounder
passes hold an earlier rounder pass's rounded answers exactly (checked by brute force), a single inner
pass is the plain pass, and bad declarations are refused naming their field."""

import argparse
import itertools
import json

import clarabel
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from release_cases import topdown as topdown_case

from dpmodels import cli, instances
from dpmodels.core.errors import DataValidationError
from dpmodels.topdown.budget_presets import PL94_2020_INNER_PASSES
from dpmodels.topdown.data import pl94_schema
from dpmodels.topdown.driver import topdown
from dpmodels.topdown.inner_passes import run_l2_passes, run_rounder_passes
from dpmodels.topdown.interleaved import check_options
from dpmodels.topdown.mechanism import default_strategy, measure
from dpmodels.topdown.pass_rows import HeldRows
from dpmodels.topdown.production_options import parse_passes, production_release
from dpmodels.topdown.query_rounder import round_half_up
from dpmodels.topdown.release import HARD_CHECKS, release_facts
from dpmodels.topdown.solve import NodeOptions

from .test_interleaved import _tiny_problem as _problem  # two children: a total and the detailed query

TOTAL_FIRST = (("total",), ("detailed",))


@pytest.fixture(scope="module")
def tiny():
    return instances.generate("topdown/synthetic", preset="tiny", races=2, seed=3, edits=False)


def _detailed_qp_with_totals_box(parent, noisy_cells, totals, tol):
    """The second L2 pass written by hand, solved by Clarabel: min sum (x - y)^2 over the cells, the children
    summing to the parent, x >= 0, and each child's total within ``tol`` of ``totals``."""
    m, n = len(noisy_cells), len(parent)
    y = np.concatenate(noisy_cells)
    p = sp.csc_matrix(2 * np.eye(m * n))
    eq = np.hstack([np.eye(n)] * m)
    tot = np.kron(np.eye(m), np.ones((1, n)))
    a = sp.csc_matrix(np.vstack([eq, -np.eye(m * n), tot, -tot]))
    b = np.concatenate([parent, np.zeros(m * n), np.asarray(totals) + tol, -(np.asarray(totals) - tol)])
    settings_ = clarabel.DefaultSettings()
    settings_.verbose = False
    settings_.tol_gap_abs = settings_.tol_gap_rel = settings_.tol_feas = 1e-10
    cones = [clarabel.ZeroConeT(n), clarabel.NonnegativeConeT(m * n + 2 * m)]
    sol = clarabel.DefaultSolver(p, -2 * y, a, b, cones, settings_).solve()
    assert str(sol.status) == "Solved"
    return np.asarray(sol.x).reshape(m, n)


def test_defaults_are_off_and_one_inner_pass_is_the_plain_pass(tiny):
    assert NodeOptions().l2_passes == () and NodeOptions().rounder_passes == () and NodeOptions().l2_tolerance == 0.1
    measured = measure(tiny, 1.0, rng=5)
    args = (measured, tiny.knowledge, tiny.schema, tiny.geography)
    plain = topdown(*args, NodeOptions(objective="queries"))
    inner = NodeOptions(objective="queries", l2_passes=(("rest",),), rounder_passes=(("rest",),))
    one = topdown(*args, inner)
    assert (one.node_counts != plain.node_counts).nnz == 0
    assert set(one.log["l2 pass"].dropna()) == {1} and set(one.log["rounder pass"].dropna()) == {1}


@settings(max_examples=6, deadline=None)
@given(
    parent=st.lists(st.integers(0, 5), min_size=3, max_size=3).filter(lambda p: sum(p) > 0),
    noise=st.lists(st.floats(-4, 4, allow_nan=False), min_size=8, max_size=8),
    tol=st.sampled_from([0.1, 0.5]),
)
def test_a_later_l2_pass_keeps_the_earlier_answers_within_the_tolerance(parent, noise, tol):
    """L2 pass 1 (the totals) against the closed form; L2 pass 2 (the cells) against the same QP written by
    hand; pass 2's totals stay within ``tol`` of pass 1's."""
    parent = np.array(parent, dtype=float)
    half = parent / 2
    y_tot = [parent.sum() / 2 + noise[0], parent.sum() / 2 + noise[1]]
    y_cells = [half + np.array(noise[2:5]), half + np.array(noise[5:8])]
    problem = _problem(parent, y_tot, y_cells)
    done, used, log = run_l2_passes(problem, NodeOptions(l2_passes=TOTAL_FIRST, l2_tolerance=tol))
    assert [r.number for r in done] == [1, 2] and used is False
    total = parent.sum()
    first = np.clip((total + y_tot[0] - y_tot[1]) / 2, 0, total)  # min (T1-y1)^2 + (T2-y2)^2, T1 + T2 = total
    np.testing.assert_allclose(done[0].values.sum(axis=1), [first, total - first], atol=1e-6)
    totals = done[0].values.sum(axis=1)
    assert np.abs(done[1].values.sum(axis=1) - totals).max() <= tol + 1e-7
    oracle = _detailed_qp_with_totals_box(parent, y_cells, totals, tol)
    np.testing.assert_allclose(done[1].values, oracle, atol=1e-5)


def test_the_tolerance_binds_and_the_pyomo_path_takes_the_rows():
    """Noisy cells far from the noisy totals: the cells' pass would move the totals, the tolerance stops
    them at ``tol``; SCIP through the Pyomo model finds the same estimate as Clarabel on the matrix form."""
    parent = np.array([4.0, 4.0, 4.0])
    problem = _problem(parent, [6.0, 6.0], [np.array([3.0, 3.0, 3.0]), np.array([1.0, 1.0, 1.0])])
    got = {}
    for path, l2 in (("compiled", "clarabel"), ("pyomo", "scip")):
        done, _, _ = run_l2_passes(problem, NodeOptions(l2_passes=TOTAL_FIRST, l2_tolerance=0.5, path=path, l2=l2))
        got[path] = done[1].values
        np.testing.assert_allclose(done[1].values.sum(axis=1), [6.5, 5.5], atol=1e-5)  # at the bound
    np.testing.assert_allclose(got["pyomo"], got["compiled"], atol=1e-4)
    np.testing.assert_allclose(
        got["compiled"], _detailed_qp_with_totals_box(parent, [[3.0] * 3, [1.0] * 3], [6, 6], 0.5), atol=1e-5
    )


@settings(max_examples=8, deadline=None)
@given(
    parent=st.lists(st.integers(0, 4), min_size=3, max_size=3).filter(lambda p: sum(p) > 0),
    split=st.lists(st.floats(0.05, 0.95), min_size=3, max_size=3),
)
def test_rounder_passes_hold_the_earlier_rounded_answers_and_are_optimal(parent, split):
    """Rounder pass 1 (the totals' penalties) and pass 2 (the cell term, the totals held) against brute force
    over every integer split of the parent in the box [floor H*, floor H* + 1]."""
    parent = np.array(parent)
    first = parent * np.array(split)
    hstar = np.vstack([first, parent - first])
    problem = _problem(parent, [0.0, 0.0], [np.zeros(3), np.zeros(3)])  # the rounder reads H*, not the noise
    opts = NodeOptions(objective="queries", rounder_passes=TOTAL_FIRST)
    done, log = run_rounder_passes(problem, hstar, False, HeldRows(problem), opts)
    low = np.floor(hstar + 1e-9)
    phi = hstar - low
    targets = round_half_up(phi.sum(axis=1))

    def total_penalty(h):
        return np.abs((h - low).sum(axis=1) - targets).sum()

    def cell_term(h):
        return ((1 - 2 * phi) * (h - low)).sum()

    splits = [np.vstack([f, parent - np.array(f)]) for f in itertools.product(*(range(p + 1) for p in parent))]
    box = [h for h in splits if ((h >= low) & (h <= low + 1)).all()]
    final = done[-1].values
    assert total_penalty(done[0].values) == pytest.approx(min(map(total_penalty, box)), abs=1e-9)
    if len(done) == 2:  # a pass whose floors already meet the parent is the floors: nothing left to round
        np.testing.assert_array_equal(final.sum(axis=1), done[0].values.sum(axis=1))  # held exactly
        same = [h for h in box if (h.sum(axis=1) == final.sum(axis=1)).all()]
        assert cell_term(final) == pytest.approx(min(map(cell_term, same)), abs=1e-9)
    assert not any(rec["method"] == "earlier rounder pass kept" for rec in log)


def test_a_release_with_inner_passes_keeps_every_constraint_and_states_them(tiny):
    opts = NodeOptions(
        objective="queries",
        passes=(("hhgq",), ("rest",)),
        l2_passes=(("votingage x hispanic x cenrace",), ("rest",)),
        rounder_passes=(("votingage x hispanic x cenrace",), ("rest",)),
    )
    measured = measure(tiny, 1.0, rng=7)
    result = topdown(measured, tiny.knowledge, tiny.schema, tiny.geography, opts)
    assert sum(result.checks.values()) == 0, result.checks
    assert set(result.log["l2 pass"].dropna()) == {1, 2} and set(result.log["rounder pass"].dropna()) == {1, 2}
    facts = release_facts(tiny, options=opts)
    assert facts.declared["l2_passes"] == [["votingage x hispanic x cenrace"], ["rest"]]
    assert facts.declared["l2_tolerance"] == 0.1 and facts.declared["rounder_passes"][1] == ["rest"]
    assert "in L2 passes" in facts.post_processing and "in rounder passes" in facts.post_processing


def test_bad_inner_declarations_are_refused_naming_their_field():
    queries = default_strategy(pl94_schema(2)).queries
    for field, opts, word in [
        ("l2_passes", NodeOptions(l2_passes=(("nope",), ("rest",))), "not query sets"),
        ("l2_passes", NodeOptions(l2_passes=(("detailed",), ("rest",))), "detailed query set goes in the last"),
        ("l2_passes", NodeOptions(l2_passes=("hhgq", "rest")), "sequence of passes"),
        ("rounder_passes", NodeOptions(objective="queries", rounder_passes=(("rest",), ("hhgq",))), "last pass only"),
        ("rounder_passes", NodeOptions(objective="queries", rounder_passes=(("hhgq",),)), "in no pass"),
    ]:
        with pytest.raises(DataValidationError, match=word) as err:
            check_options(opts, queries)
        assert err.value.field == field
    for kwargs, field in [
        ({"rounder_passes": (("hhgq",), ("rest",))}, "rounder_passes"),  # the cells' rounder has no query penalties
        ({"l2_tolerance": 0.0}, "l2_tolerance"),
        ({"l2_tolerance": float("nan")}, "l2_tolerance"),
        ({"l2_tolerance": "0.1"}, "l2_tolerance"),
    ]:
        with pytest.raises(DataValidationError) as err:
            NodeOptions(**kwargs)
        assert err.value.field == field
    checked = check_options(NodeOptions(l2_passes=(("hhgq",), ("rest",))), queries)
    assert checked.passes == (tuple(q.name for q in queries),)  # one pass of every query set
    assert checked.l2_passes == (("hhgq",), ("detailed", "votingage x hispanic x cenrace"))


def test_the_command_line_declares_inner_passes():
    with pytest.raises(DataValidationError, match="--l2-passes"):
        parse_passes("total;;rest", "--l2-passes")
    args = argparse.Namespace(
        budget_preset=None,
        passes=None,
        rounder="queries",
        l2_passes="total; rest",
        rounder_passes="total; rest",
        l2_tolerance=0.25,
    )
    inner = (("total",), ("rest",))
    expected = NodeOptions(objective="queries", l2_passes=inner, rounder_passes=inner, l2_tolerance=0.25)
    assert production_release(args, None)["options"] == expected


@pytest.mark.slow  # a whole command; the options, their parsing and the manifest facts are tested above
def test_the_command_releases_with_the_production_pl94_ordering(tmp_path, capsys):
    case = topdown_case(tmp_path)
    inner = "; ".join(", ".join(p) for p in PL94_2020_INNER_PASSES)
    flags = ["--budget-preset", "pl94-2020", "--rounder", "queries", "--l2-passes", inner, "--rounder-passes", inner]
    argv = [*case.argv, *flags, "--noise", "discrete-gaussian", "--rho", "2", "--seed", "3", "--not-private"]
    assert cli.main(argv) == 0, capsys.readouterr().err
    manifest = json.loads(case.manifest.read_text())
    assert all(manifest["details"]["checks"][name] == 0 for name in HARD_CHECKS)
    facts = manifest["unprotected_quantities"]["declared_public_facts"]
    assert facts["l2_passes"] == facts["rounder_passes"] == [["total"], ["rest"]] and facts["l2_tolerance"] == 0.1
