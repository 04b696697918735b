"""The 2020 production's constraints (issue 25): grouped child totals, occupancy caps, the production's
structural zeros, and the failsafe that keeps them, against brute force and HiGHS/SCIP on the same models."""

import itertools

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import dpmodels
from dpmodels import instances
from dpmodels.core.errors import DataValidationError
from dpmodels.instances.topdown import adult_only_zeros
from dpmodels.topdown.child_rows import ChildRows
from dpmodels.topdown.data import ChildGroup, GQKnowledge, PublicKnowledge, TopDownData, pl94_schema
from dpmodels.topdown.driver import node_problem, topdown
from dpmodels.topdown.failsafe_models import build_failsafe_l2
from dpmodels.topdown.mechanism import measure
from dpmodels.topdown.models import build_l2
from dpmodels.topdown.node_data import ChildSpec, NodeProblem, WeightedQuery
from dpmodels.topdown.production import (
    ProductionRows,
    failsafe_nodes,
    occupancy_caps,
    production_checks,
    structural_zeros,
)
from dpmodels.topdown.solve import NodeOptions, solve_node

HARD = ("negative cells", "invariant totals off", "structural zeros off", "inconsistent parents")


# ---------------------------------------------------------------- structural zeros
def test_production_zeros_are_nursing_under_18_only():
    schema = pl94_schema(5)
    cells = schema.cells_frame()
    nursing_minors = cells.index[(cells.hhgq == "nursing") & (cells.votingage == "under 18")]
    np.testing.assert_array_equal(structural_zeros(schema, "production"), nursing_minors)
    assert len(nursing_minors) == 2 * 5  # hispanic x cenrace
    adult_only = structural_zeros(schema, "adult-only")
    np.testing.assert_array_equal(adult_only, adult_only_zeros(schema))  # the synthetic default
    assert set(nursing_minors) < set(adult_only) and len(adult_only) == 4 * 2 * 5
    with pytest.raises(DataValidationError, match="must be one of"):
        structural_zeros(schema, "e2e")


def test_the_synthetic_default_keeps_the_adult_only_set():
    data = instances.generate("topdown/synthetic", preset="tiny", races=2, seed=0)
    np.testing.assert_array_equal(data.knowledge.structural_zeros, structural_zeros(data.schema, "adult-only"))


# ---------------------------------------------------------------- rows on a tiny solve, brute force
def _problem(parent, noisy, groups=(), caps=None, types=None):
    """Children x cells with the detailed query, a parent, and production rows from a tiny knowledge."""
    m, n = len(noisy), len(parent)
    eye = sp.identity(n, format="csr")
    children = [
        ChildSpec(t, [WeightedQuery("detailed", eye, np.asarray(v, float), 1.0, True)]) for t, v in enumerate(noisy)
    ]
    rows = []
    if groups:
        cols = [np.concatenate([t * n + np.arange(n) for t in g]) for g, _ in groups]
        indptr = np.concatenate([[0], np.cumsum([len(c) for c in cols])])
        a = sp.csr_matrix((np.ones(indptr[-1]), np.concatenate(cols), indptr), shape=(len(groups), m * n))
        rows.append(ChildRows("group total", a, [tot for _, tot in groups]))
    if caps is not None:
        r, c, rhs = [], [], []
        for t in range(m):
            for g in range(caps.shape[1]):
                cells = np.flatnonzero(types == g)
                r += [len(rhs)] * len(cells)
                c += list(t * n + cells)
                rhs.append(caps[t, g])
        rows.append(
            ChildRows("occupancy cap", sp.csr_matrix((np.ones(len(r)), (r, c)), shape=(len(rhs), m * n)), rhs, "<=")
        )
    return NodeProblem(np.arange(n), children, parent=np.asarray(parent), rows=tuple(rows))


def _brute_force(problem, hstar):
    """The least ||H - H*||_1 over every integer split of the parent in the box [floor H*, floor H* + 1]
    that meets every row (None when there is none)."""
    low = np.floor(hstar + 1e-9).astype(int)
    m, n = hstar.shape
    best = None
    choices = [range(low[t, x], low[t, x] + 2) for t in range(m - 1) for x in range(n)]
    for first in itertools.product(*choices):
        h = np.zeros((m, n), dtype=int)
        h[:-1] = np.reshape(first, (m - 1, n))
        h[-1] = problem.parent - h[:-1].sum(axis=0)
        if (h < low).any() or (h > low + 1).any() or any(not r.holds(h, 1e-9) for r in problem.rows):
            continue
        d = np.abs(h - hstar).sum()
        best = d if best is None else min(best, d)
    return best


@settings(max_examples=8, deadline=None)
@given(
    parent=st.lists(st.integers(1, 4), min_size=3, max_size=3),
    noise=st.lists(st.floats(-2, 2, allow_nan=False), min_size=9, max_size=9),
    cap=st.integers(1, 6),
)
def test_group_total_and_caps_equal_brute_force_and_scip(parent, noise, cap):
    """Three children over three cells (types 0, 0, 1): children 0 and 1 held to a group total, each
    child's type 1 capped.  The L2 optimum equals SCIP's on the same model; the rounding equals brute force."""
    parent = np.array(parent)
    types = np.array([0, 0, 1])
    noisy = (parent / 3 + np.reshape(noise, (3, 3))).tolist()
    group_total = int(parent.sum() * 2 // 3)
    caps = np.array([[99, cap], [99, cap], [99, parent[2]]])
    problem = _problem(parent, noisy, groups=[((0, 1), group_total)], caps=caps, types=types)
    sol = solve_node(problem, NodeOptions())
    l2 = build_l2(problem, fingerprint=False)
    res = dpmodels.solve(l2, "scip", time_limit=60)
    if sol.failsafe:  # no split meets the rows: SCIP finds the L2 model infeasible too
        assert res.termination_condition.name != "convergenceCriteriaSatisfied"
        assert all(r.holds(sol.values, 1e-9) for r in problem.rows)  # the failsafe keeps the rows
        return
    ours = [r for r in sol.log if r["stage"] == "L2"][-1]
    assert ours["objective"] == pytest.approx(res.incumbent_objective, rel=1e-6, abs=1e-6)
    precise = build_l2(problem, fingerprint=False)  # H* to 1e-12 (SCIP's is good to about 1e-5) for the brute force
    dpmodels.solve(precise, "clarabel", options={"tol_gap_abs": 1e-12, "tol_gap_rel": 1e-12, "tol_feas": 1e-12})
    hstar = np.array([[precise.H[t, x].value for x in range(3)] for t in range(3)])
    assert all(r.holds(sol.values, 1e-9) for r in problem.rows)
    best = _brute_force(problem, hstar)
    rounding = [r for r in sol.log if r["stage"] == "L1"][-1]
    assert best is not None and rounding["objective"] == pytest.approx(best, abs=1e-5)


def test_the_failsafe_keeps_the_group_total_and_its_d_star_is_highs():
    """A group total (5) above the parent's total (3): no split meets both; the failsafe moves the parent
    sums by the least distance, HiGHS's phase-1 optimum on the same model (2), and keeps the group total."""
    problem = _problem(np.array([2, 1]), [[1, 0.5], [1, 0.5]], groups=[((0, 1), 5)])
    problem.free_marginal = sp.csr_matrix((0, 2))  # no marginal to keep
    sol = solve_node(problem, NodeOptions())
    assert sol.failsafe and sol.values.sum() == 5
    res = dpmodels.solve(build_failsafe_l2(problem, 1, fingerprint=False), "highs")
    assert res.incumbent_objective == pytest.approx(2)
    assert np.abs(sol.values.sum(axis=0) - problem.parent).sum() <= sol.d_star + 1


# ---------------------------------------------------------------- a synthetic census with groups and caps
@pytest.fixture(scope="module")
def census():
    """One state, three counties, two tracts each; counties 1 and 2 held to their total; every group-quarters
    type of a block capped at its persons (declared here: tight caps make the rows bind)."""
    data = instances.generate("topdown/synthetic", fanout=(1, 3, 2, 1, 3), races=2, seed=7, edits=False, gq_share=0.5)
    geo, kn = data.geography, data.knowledge
    totals = np.asarray(data.node_histograms_all().sum(axis=1)).ravel()
    counties = [geo.names[c] for c in geo.children(geo.children(0)[0])]
    group = ChildGroup(tuple(counties[:2]), int(sum(totals[geo.index[c]] for c in counties[:2])))
    per_type = np.asarray((data.leaf_counts @ kn.gq.type_matrix().T).todense())
    upper = np.where(kn.gq.present, per_type, 0)
    upper[:, 0] = -1  # households uncapped
    gq = GQKnowledge(kn.gq.cell_type, kn.gq.type_names, kn.gq.present, kn.gq.lower, upper)
    knowledge = PublicKnowledge(kn.invariant_totals, kn.total_level, gq, kn.structural_zeros, (), (group,))
    return TopDownData(data.schema, geo, data.leaf_counts, knowledge, name="census with groups")


def test_a_release_holds_the_group_totals_and_the_caps(census):
    measured = measure(census, 0.5, rng=1)
    result = topdown(measured, census.knowledge, census.schema, census.geography, NodeOptions())
    checks = result.checks
    assert checks["group totals off"] == 0 and checks["occupancy caps off"] == 0, checks
    assert all(checks[k] == 0 for k in HARD), checks
    # the checks themselves, recomputed with numpy from the released counts
    counts = result.node_counts.toarray()
    geo = census.geography
    group = census.knowledge.child_groups[0]
    assert sum(counts[geo.index[r]].sum() for r in group.regions) == group.total
    per_type = counts[geo.leaves] @ census.knowledge.gq.type_matrix().T.toarray()
    upper = census.knowledge.gq.upper
    assert ((upper < 0) | (per_type <= upper)).all()
    listed = failsafe_nodes(result.log)
    assert len(listed) == checks["failsafe parents"] + (result.log["method"] == "earlier pass kept").any()


def test_the_county_solve_model_carries_the_group_row_and_scip_agrees(census):
    """The solve of the state's counties, rebuilt by node_problem: its Pyomo model has the group row,
    and our L2 optimum (the matrix form on Clarabel) equals SCIP's on that model."""
    measured = measure(census, 1.0, rng=2)
    result = topdown(measured, census.knowledge, census.schema, census.geography, NodeOptions())
    geo = census.geography
    state = int(geo.children(0)[0])
    problem = node_problem(census, measured, state, result.node_counts.toarray()[state])
    names = [r.name for r in problem.rows]
    assert names == ["group total", "occupancy cap"]
    model = build_l2(problem, fingerprint=False)
    assert len(model.production_row) == len(problem.rows[0]) + len(problem.rows[1])
    sol = solve_node(problem, NodeOptions())
    res = dpmodels.solve(model, "scip", time_limit=120)
    ours = [r for r in sol.log if r["stage"] == "L2"][-1]
    assert ours["objective"] == pytest.approx(res.incumbent_objective, rel=1e-6)


def test_region_caps_are_the_sums_of_their_blocks(census):
    rows = ProductionRows(census.knowledge, census.geography)
    upper = census.knowledge.gq.upper
    geo = census.geography
    for region in range(geo.n_regions):
        leaves = [k for k, leaf in enumerate(geo.leaves) if region in _ancestors_or_self(geo, leaf)]
        for g in range(1, upper.shape[1]):
            assert rows.caps[region, g] == upper[leaves, g].clip(min=0).sum()
        assert rows.caps[region, 0] == (-1 if census.knowledge.gq.present[leaves, 0].any() else 0)
    assert (
        production_checks(np.zeros((geo.n_regions, census.schema.size), int), census.knowledge, geo)["group totals off"]
        == 1
    )


def _ancestors_or_self(geo, node):
    out = {int(node)}
    while geo.parent[node] >= 0:
        node = geo.parent[node]
        out.add(int(node))
    return out


def test_groups_and_caps_are_checked(census):
    geo, kn = census.geography, census.knowledge
    state = geo.names[geo.children(0)[0]]
    for group, word in [
        (ChildGroup(("nowhere",), 1), "not in the geography"),
        (ChildGroup((state, geo.names[geo.leaves[0]]), 1), "children of one parent"),
        (ChildGroup((geo.names[geo.leaves[0]],), 1), "parent's total must be invariant"),
    ]:
        knowledge = PublicKnowledge(kn.invariant_totals, kn.total_level, kn.gq, kn.structural_zeros, (), (group,))
        with pytest.raises(DataValidationError, match=word):
            knowledge.check(geo)
    wrong = ChildGroup(kn.child_groups[0].regions, kn.child_groups[0].total + 1)
    knowledge = PublicKnowledge(kn.invariant_totals, kn.total_level, kn.gq, kn.structural_zeros, (), (wrong,))
    with pytest.raises(DataValidationError, match="does not match the data"):
        TopDownData(census.schema, geo, census.leaf_counts, knowledge)
    with pytest.raises(DataValidationError, match="below its type's lower bound"):
        GQKnowledge(kn.gq.cell_type, kn.gq.type_names, kn.gq.present, kn.gq.lower, np.where(kn.gq.lower > 0, 0, -1))
    np.testing.assert_array_equal(occupancy_caps(np.array([[0, 2], [1, 0]]), [None, 5]), [[-1, 10], [-1, 0]])


@settings(max_examples=3, deadline=None)
@given(seed=st.integers(0, 10**6))
def test_every_parent_whose_constraints_admit_no_split_is_listed(census, seed):
    """At a small budget some parents' released histograms cannot be split under the group total and the caps.
    HiGHS's phase-1 optimum of the L2 failsafe on the same model (the least distance to the parent) is > 0
    exactly there: each such parent is in the manifest's failsafe list, and each listed parent logged the failsafe."""
    measured = measure(census, 0.05, rng=seed)
    result = topdown(measured, census.knowledge, census.schema, census.geography, NodeOptions())
    listed = set(failsafe_nodes(result.log))
    assert listed == set(result.log.loc[result.log["method"] == "failsafe", "node"])
    geo = census.geography
    released = result.node_counts.toarray()
    for parent in range(geo.n_regions):
        if geo.is_leaf[parent] or len(geo.children(parent)) < 2 or not released[parent].any():
            continue
        problem = node_problem(census, measured, parent, released[parent])
        res = dpmodels.solve(build_failsafe_l2(problem, 1, fingerprint=False), "highs")
        if res.incumbent_objective > 1e-7:
            assert geo.names[parent] in listed


# ---------------------------------------------------------------- caps bind the release, not the data
def _capped_below_the_data(census, over: int):
    """The census's knowledge with one block's capped type set ``over`` persons below its truth."""
    gq = census.knowledge.gq
    per_type = np.asarray((census.leaf_counts @ gq.type_matrix().T).todense())
    leaf, g = next((k, g) for k, g in zip(*np.nonzero(gq.upper > gq.lower), strict=True) if per_type[k, g] >= over)
    upper = gq.upper.copy()
    upper[leaf, g] = per_type[leaf, g] - over
    knowledge = PublicKnowledge(
        census.knowledge.invariant_totals,
        census.knowledge.total_level,
        GQKnowledge(gq.cell_type, gq.type_names, gq.present, gq.lower, upper),
        census.knowledge.structural_zeros,
        (),
        census.knowledge.child_groups,
    )
    return TopDownData(census.schema, census.geography, census.leaf_counts, knowledge, name="over a cap"), leaf, g


def test_data_over_a_cap_are_released_within_it(census):
    """One block holds a person more than its declared cap: no refusal (that would depend on the person);
    the release holds the block, and every region above it, to the caps."""
    over, leaf, g = _capped_below_the_data(census, 1)
    measured = measure(over, 1.0, rng=3)
    result = topdown(measured, over.knowledge, over.schema, over.geography, NodeOptions())
    assert result.checks["occupancy caps off"] == 0 and all(result.checks[k] == 0 for k in HARD), result.checks
    released = result.node_counts.toarray()[over.geography.leaves] @ over.knowledge.gq.type_matrix().T.toarray()
    assert released[leaf, g] <= over.knowledge.gq.upper[leaf, g]


def test_the_measurement_never_reads_the_caps(census):
    """Same data, same seed, caps or no caps: the same noisy measurements (the caps are post-processing facts)."""
    over, _, _ = _capped_below_the_data(census, 1)
    a, b = measure(over, 1.0, rng=5), measure(census, 1.0, rng=5)
    for node in range(census.geography.n_regions):
        for x, y in zip(a.by_node[node], b.by_node[node], strict=True):
            np.testing.assert_array_equal(x.values, y.values)


def test_caps_that_leave_no_room_for_an_invariant_total_are_refused_from_public_facts_alone(census):
    kn = census.knowledge
    upper = np.where(kn.gq.present, 0, 0)  # every present type capped at 0 persons: no room for anyone
    lower = np.zeros_like(kn.gq.lower)
    gq = GQKnowledge(kn.gq.cell_type, kn.gq.type_names, kn.gq.present, lower, upper)
    knowledge = PublicKnowledge(kn.invariant_totals, kn.total_level, gq, kn.structural_zeros, (), ())
    with pytest.raises(
        DataValidationError, match=r"gq.upper.*invariant total \d+ is above the sum of its occupancy caps 0"
    ):
        knowledge.check(census.geography)  # no data in sight
