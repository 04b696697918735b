"""The batched assembly of TopDown solves (issue 25) against the child-by-child assembly it replaced.

Oracles: the previous code (:mod:`dpmodels.topdown.previous`, kept unchanged) for the matrices,
combination networks and checks, compared bit for bit; ``PublicKnowledge.flow_data`` node by node;
and the Pyomo models solved by HiGHS for the optima of a whole run.
"""

import dataclasses

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from dpmodels import instances
from dpmodels.topdown.child_checks import child_checks
from dpmodels.topdown.compiled import l1_system, l2_system
from dpmodels.topdown.driver import free_marginal, topdown
from dpmodels.topdown.mechanism import measure
from dpmodels.topdown.node_data import NodeProblem
from dpmodels.topdown.previous import (
    previous_child_checks,
    previous_child_spec,
    previous_l1_system,
    previous_l2_system,
)
from dpmodels.topdown.solve import NodeOptions
from dpmodels.topdown.specs import LevelSpecs, level_flow_data


def _problems(data, meas, spec_builder):
    """Every child solve of a run's geography, on the true parent histograms (public-shaped data only)."""
    geo, kn, schema = data.geography, data.knowledge, data.schema
    mats = {q.name: q.matrix.tocsr() for q in meas.strategy.queries}
    identity = {name: name == "detailed" for name in mats}
    hist = data.node_histograms_all().toarray()
    common = {"cell_type": kn.gq.cell_type, "edits": kn.edits, "free_marginal": free_marginal(schema, kn)}
    out = []
    for level in range(1, geo.n_levels):
        builder = LevelSpecs(meas, kn, geo, mats, identity, level + 1)
        for p in range(*geo.level_slice(level).indices(geo.n_regions)):
            kids, cells = geo.children(p), np.flatnonzero(hist[p] > 0)
            if len(kids) < 2 or len(cells) == 0:
                continue
            if spec_builder == "previous":
                specs = [previous_child_spec(c, cells, meas, identity, mats, geo, kn) for c in kids]
            else:
                specs = builder.specs(kids, cells)
            out.append(NodeProblem(cells, specs, parent=hist[p, cells], **common))
    return out


def _same_system(a, b):
    for name in ("c", "b_eq", "b_ub", "lb", "ub"):
        x, y = getattr(a, name), getattr(b, name)
        assert x.dtype == y.dtype and np.array_equal(x, y), name
    assert a.c0 == b.c0 and a.n_hist == b.n_hist
    for name in ("P", "a_eq", "a_ub"):
        x, y = getattr(a, name), getattr(b, name)
        if x is None:
            assert y is None
            continue
        assert x.shape == y.shape and x.format == y.format, name
        for part in ("indptr", "indices", "data"):
            assert np.array_equal(getattr(x, part), getattr(y, part)), (name, part)


@pytest.fixture(scope="module")
def county_level():
    """Invariant totals down to the counties: fixed combination populations and child totals appear."""
    data = instances.generate("topdown/synthetic", preset="tiny", races=3, seed=3, total_level="county")
    return data, measure(data, 2.0, rng=1)


def test_batched_systems_equal_the_previous_ones_bit_for_bit(county_level):
    data, meas = county_level
    batched, previous = _problems(data, meas, "batched"), _problems(data, meas, "previous")
    assert len(batched) == len(previous) >= 4
    assert any(c.flows is not None and c.flows.fixed for p in batched for c in p.children)
    rng = np.random.default_rng(0)
    for new, old in zip(batched, previous, strict=True):
        for a, b in zip(new.children, old.children, strict=True):  # the same specs
            assert a.total == b.total and (a.flows is None) == (b.flows is None)
            for qa, qb in zip(a.queries, b.queries, strict=True):
                assert (qa.matrix != qb.matrix).nnz == 0 and np.array_equal(qa.values, qb.values)
        for edits in (True, False):
            _same_system(l2_system(new, edits=edits, form="residual"), previous_l2_system(old, edits=edits))
            hstar = rng.random((new.m, new.n)) * 3
            sys_new, low_new = l1_system(new, hstar, edits=edits)
            sys_old, low_old = previous_l1_system(old, hstar, edits=edits)
            _same_system(sys_new, sys_old)
            assert np.array_equal(low_new, low_old)


@settings(max_examples=6, deadline=None)
@given(seed=st.integers(0, 10**6), total_level=st.sampled_from(["nation", "state", "county", "block"]))
def test_level_flow_data_equals_flow_data_node_by_node(seed, total_level):
    data = instances.generate("topdown/synthetic", preset="tiny", races=2, seed=seed, total_level=total_level)
    geo, kn = data.geography, data.knowledge
    for level in range(1, geo.n_levels + 1):
        networks = level_flow_data(kn, geo, level)
        nodes = range(*geo.level_slice(level).indices(geo.n_regions))
        assert sorted(networks) == list(nodes)
        for node in nodes:
            want = kn.flow_data(geo, node)
            for name in ("combos", "lower", "population"):
                got, exp = getattr(networks[node], name), getattr(want, name)
                assert got.dtype == exp.dtype and np.array_equal(got, exp), (level, node, name)


def test_child_checks_report_what_the_previous_checks_report(county_level):
    data, meas = county_level
    rng = np.random.default_rng(5)
    seen = set()
    for problem in _problems(data, meas, "batched"):
        truth = data.node_histograms_all()[problem.children[0].node : problem.children[-1].node + 1]
        base = np.asarray(truth[:, problem.cells].todense(), dtype=np.float64)
        for scale in (0.0, 0.5, 3.0):  # the truth holds everything; perturbations break some checks
            v = base + scale * rng.standard_normal(base.shape)
            for edits in (True, False):
                got = child_checks(problem, v, edits, 1e-6)
                assert got == previous_child_checks(problem, v, edits, 1e-6)
                seen.update(issue.split()[-1] for issue in got)
    assert {"total", "quarters"} <= seen  # both kinds of failure were exercised


def test_release_is_the_same_and_matches_the_pyomo_models_solved_by_highs():
    """A whole run: the batched and previous assemblies release the same histograms bit for bit, and
    the optimum of every solve equals that of the Pyomo models solved by HiGHS (an independent oracle)."""
    data = instances.generate("topdown/synthetic", preset="tiny", races=2, seed=7)
    meas = measure(data, 2.0, rng=2)
    args = (meas, data.knowledge, data.schema, data.geography)
    batched = topdown(*args, NodeOptions())
    previous = topdown(*args, NodeOptions(assembly="previous"))
    assert (batched.node_counts != previous.node_counts).nnz == 0
    assert sum(batched.checks.values()) == 0
    oracle = topdown(*args, NodeOptions(path="pyomo", l2="highs"))
    final = {
        name: r.log.groupby(["node", "stage"]).tail(1).set_index(["node", "stage"])["objective"].dropna()
        for name, r in (("batched", batched), ("oracle", oracle))
    }
    for stage, tol in (("L2", 1e-5), ("L1", 2e-2)):
        got = final["batched"].xs(stage, level="stage")
        np.testing.assert_allclose(got, final["oracle"].xs(stage, level="stage").loc[got.index], rtol=tol, atol=tol)
    assert isinstance(batched.node_counts, sp.csr_matrix)


def test_assembly_option_is_checked():
    with pytest.raises(Exception, match="assembly"):
        NodeOptions(assembly="fast")
    assert dataclasses.replace(NodeOptions(), assembly="previous").assembly == "previous"


@pytest.mark.parametrize("total_level", ["state", "block"])
def test_leaves_breaking_gq_counts_what_flows_hold_counts(total_level):
    from dpmodels.topdown.child_checks import leaves_breaking_gq
    from dpmodels.topdown.implied.group_quarters import flows_hold

    data = instances.generate("topdown/synthetic", preset="tiny", races=2, seed=11, total_level=total_level)
    geo, kn = data.geography, data.knowledge
    rng = np.random.default_rng(3)
    counts = data.leaf_counts.toarray()
    assert leaves_breaking_gq(counts, kn, geo) == 0
    for _ in range(4):  # move persons between random cells: some leaves break their facts, some not
        noisy = counts.copy()
        rows = rng.choice(len(counts), size=len(counts) // 2)
        noisy[rows, rng.integers(0, counts.shape[1], len(rows))] += 1
        want = sum(
            not flows_hold(kn.flow_data(geo, int(leaf)), kn.gq.cell_type, noisy[k]) for k, leaf in enumerate(geo.leaves)
        )
        assert leaves_breaking_gq(noisy, kn, geo) == want
        assert leaves_breaking_gq(sp.csr_matrix(noisy), kn, geo) == want


def test_largest_state_run_on_a_small_shape():
    """The largest-state bench row on a small shape: every check holds, time and memory are reported."""
    from dpmodels.topdown.bench_scale import largest_state_counties

    row = largest_state_counties(1, races=2, fanout=(1, 58, 2, 2, 3))
    assert row["blocks"] == 12 and row["persons"] > 0 and row["violations"] == 0
    assert row["topdown s"] > 0 and row["peak memory GB"] > 0


@pytest.mark.slow  # ~10 s: two runs, each in a fresh process; the in-process run above is the light sibling
def test_largest_state_runs_extrapolate_along_the_line_through_the_runs():
    from dpmodels.topdown.bench_scale import extrapolation_line, largest_state_runs

    rows, extra = largest_state_runs([1, 2], races=2, fanout=(1, 4, 2, 1, 2))  # each in a fresh process
    assert [r["blocks"] for r in rows] == [4, 8] and all(r["violations"] == 0 for r in rows)
    time = [r["end to end s"] for r in rows]  # the line through both runs, read at 4 counties
    assert extra["end to end h"] * 3600 == pytest.approx(time[0] + 3 * (time[1] - time[0]))
    assert "4 counties" in extrapolation_line(extra)


def test_sparse_check_release_counts_what_dense_numpy_counts():
    """check_release reads the release sparse; dense numpy on the same perturbed releases is the oracle."""
    from dpmodels.topdown.driver import check_release

    data = instances.generate("topdown/synthetic", preset="tiny", races=2, seed=4)
    kn, geo = data.knowledge, data.geography
    result = topdown(measure(data, 2.0, rng=3), kn, data.schema, geo)
    rng = np.random.default_rng(1)
    for _ in range(3):
        dense = result.node_counts.toarray()
        hit = rng.integers(0, dense.size, 30)
        dense.flat[hit] += rng.integers(-2, 3, 30)
        got = check_release(dataclasses.replace(result, node_counts=sp.csr_matrix(dense)), kn, True)
        zeros = np.asarray(kn.structural_zeros, dtype=np.int64)
        want = {
            "negative cells": int((dense < 0).sum()),
            "invariant totals off": int((dense[: len(kn.invariant_totals)].sum(axis=1) != kn.invariant_totals).sum()),
            "structural zeros off": int(dense[:, zeros].sum()),
            "inconsistent parents": int((geo.consistency_residual(dense) != 0).any(axis=1).sum()),
            "edit violations": int(sum((~e.holds(dense[geo.leaves])).sum() for e in kn.edits)),
        }
        assert {k: got[k] for k in want} == want
        assert want["inconsistent parents"] > 0 and want["negative cells"] > 0
