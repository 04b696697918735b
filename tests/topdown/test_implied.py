"""Implied constraints of TopDown: spec 3.9, 3.10, 4.3, 4.4; oracles T1-T5 of 6.1/6.2 and 6.3 items 10-13.

Every check is against an independent oracle: the spec's numbers, the exact MILP decision,
max-flow against Hall, brute force over truth assignments, or LP implication computed here
with scipy (not with the module's own pruning code).
"""

import itertools

import numpy as np
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog

from dpmodels.core.errors import DataValidationError
from dpmodels.core.hierarchy import Hierarchy
from dpmodels.topdown.data import GQKnowledge, PublicKnowledge
from dpmodels.topdown.implied import (
    allocate,
    extend_to_leaves,
    extension_milp,
    fme_project,
    hall_constraints,
    lemma1_bounds,
    maxflow_extension,
    sat_reduction,
    type_total_ranges,
)


# ---------------------------------------------------------------------- test-side oracles
def _holds(rows, x, tol=1e-9):
    x = np.asarray(x, dtype=float).ravel()
    for coef, op, rhs in rows:
        lhs = float(np.asarray(coef, dtype=float).ravel() @ x)
        if {"<=": lhs > rhs + tol, ">=": lhs < rhs - tol, "==": abs(lhs - rhs) > tol}[op]:
            return False
    return True


def _lp_min(rows, n, c):
    """min c.x subject to the triples, by scipy/HiGHS; -inf if unbounded."""
    a_ub, b_ub, a_eq, b_eq = [], [], [], []
    for coef, op, rhs in rows:
        a = np.asarray(coef, dtype=float).ravel()
        if op == "==":
            a_eq.append(a)
            b_eq.append(rhs)
        else:
            sign = 1.0 if op == "<=" else -1.0
            a_ub.append(sign * a)
            b_ub.append(sign * rhs)
    res = linprog(
        c,
        A_ub=np.array(a_ub) if a_ub else None,
        b_ub=b_ub or None,
        A_eq=np.array(a_eq) if a_eq else None,
        b_eq=b_eq or None,
        bounds=(None, None),
        method="highs",
    )
    assert res.status in (0, 3), res.message
    return res.fun if res.status == 0 else -np.inf


def _implies(system, rows, n, tol=1e-7):
    """Every row of ``rows`` holds on every real point of ``system`` (LP implication)."""
    for coef, op, rhs in rows:
        a = np.asarray(coef, dtype=float).ravel()
        if op in (">=", "==") and _lp_min(system, n, a) < rhs - tol:
            return False
        if op in ("<=", "==") and -_lp_min(system, n, -a) > rhs + tol:
            return False
    return True


def _ranges(system, n):
    return [(_lp_min(system, n, e), -_lp_min(system, n, -e)) for e in np.eye(n)]


def _e(n, *idx, coef=None):
    a = np.zeros(n)
    for k, j in enumerate(idx):
        a[j] = 1 if coef is None else coef[k]
    return a


def _assert_theorem3_table(table, x, n, allowed, lower=None, equal=None):
    lower = np.zeros(allowed.shape, int) if lower is None else lower
    assert table.dtype.kind == "i"
    np.testing.assert_array_equal(table.sum(axis=1), x)
    np.testing.assert_array_equal(table.sum(axis=0), n)
    assert (table[~allowed] == 0).all()
    assert (table >= lower).all()
    if equal is not None:
        np.testing.assert_array_equal(table[equal], lower[equal])


def _theorem3_milp(x, n, allowed, lower, equal):
    """Theorem 3 as an extension problem: regions are the leaves, buckets the parent's cells."""
    k, m = allowed.shape
    leaves = []
    for i in range(m):
        cons = [(np.ones(k), "==", n[i])]
        for j in range(k):
            op = ">=" if allowed[j, i] and not equal[j, i] else "=="
            cons.append((_e(k, j), op, lower[j, i]))
        leaves.append(cons)
    return extension_milp(x, leaves)


# ---------------------------------------------------------------------- T1: Example 1 (dorms)
T1_ALLOWED = np.array([[True, False], [True, True], [False, True]])  # buckets F, C, M x regions 1, 2


@pytest.mark.parametrize(
    ("fcm", "flow", "ok"),
    [((48, 49, 99), 195, False), ((48, 50, 98), 196, True), ((0, 196, 0), 196, True), ((98, 0, 98), 196, True)],
)
def test_t1_maxflow(fcm, flow, ok):
    res = maxflow_extension(fcm, [98, 98], T1_ALLOWED)
    assert (res.flow_value, res.required, res.extendable) == (flow, 196, ok)
    if ok:
        _assert_theorem3_table(res.extension, fcm, [98, 98], T1_ALLOWED)
    else:
        assert res.extension is None
    assert _holds(hall_constraints([98, 98], T1_ALLOWED), fcm) == ok


def test_t1_hall_set_equals_spec_complete_set():
    """Every integer (F, C, M) in [0, 196]^2 with F+C+M = 196 or 195: Hall <=> the spec's set."""
    F, C = np.meshgrid(np.arange(197), np.arange(197), indexing="ij")
    for total in (196, 195):
        M = total - F - C
        pts = np.stack([F.ravel(), C.ravel(), M.ravel()], axis=1)
        spec = (pts >= 0).all(1) & (F + C >= 98).ravel() & (M + C >= 98).ravel() & (total == 196)
        hall = np.ones(len(pts), bool)
        for coef, op, rhs in hall_constraints([98, 98], T1_ALLOWED):
            lhs = pts @ coef
            hall &= {"<=": lhs <= rhs, ">=": lhs >= rhs, "==": lhs == rhs}[op]
        np.testing.assert_array_equal(hall, spec)


def test_t1_fme_projection_equals_spec_set():
    # variables F, C, M, F1, C1, M1, F2, C2, M2
    n = 9
    rows = [(_e(n, j, 3 + j, 6 + j, coef=[1, -1, -1]), "==", 0) for j in range(3)]
    rows += [(_e(n, 5), "==", 0), (_e(n, 6), "==", 0), (_e(n, 3, 4, 5), "==", 98), (_e(n, 6, 7, 8), "==", 98)]
    rows += [(_e(n, j), ">=", 0) for j in range(3, 9)]
    proj = fme_project(rows, [0, 1, 2], names=list("FCM") + ["F1", "C1", "M1", "F2", "C2", "M2"])
    assert proj.names == ("F", "C", "M")
    spec = [(_e(3, j), ">=", 0) for j in range(3)]
    spec += [(_e(3, 0, 1), ">=", 98), (_e(3, 1, 2), ">=", 98), (_e(3, 0, 1, 2), "==", 196)]
    assert _implies(proj.constraints, spec, 3) and _implies(spec, proj.constraints, 3)


def test_theorem3_input_errors():
    with pytest.raises(DataValidationError, match="2\\^17"):
        hall_constraints([1], np.ones((17, 1), bool))
    with pytest.raises(DataValidationError, match="allowed"):
        maxflow_extension([1, 2], [3], np.ones((3, 1), bool))
    with pytest.raises(DataValidationError, match="lower"):
        maxflow_extension([1, 2], [3], [[True], [False]], lower=[[0], [1]])
    with pytest.raises(DataValidationError, match="region 0"):
        hall_constraints([1], [[True], [True]], lower=[[1], [1]])


# ---------------------------------------------------------------------- Theorem 3: Hall <=> flow <=> MILP
@st.composite
def theorem3_instances(draw):
    k, m = draw(st.integers(1, 4)), draw(st.integers(1, 3))

    def grid(elements):
        return np.array(draw(st.lists(elements, min_size=k * m, max_size=k * m))).reshape(k, m)

    allowed = grid(st.booleans())
    equal = allowed & (grid(st.integers(0, 3)) == 0)
    lower = np.where(allowed, grid(st.integers(0, 2)), 0)
    n = lower.sum(axis=0) + np.array(draw(st.lists(st.integers(0, 4), min_size=m, max_size=m)))
    free = allowed & ~equal
    if draw(st.booleans()) and all(free[:, i].any() or n[i] == lower[:, i].sum() for i in range(m)):
        # aggregate a valid table: each region's excess goes to random free cells of its column
        table = lower.copy()
        for i in range(m):
            for _ in range(n[i] - lower[:, i].sum()):
                table[draw(st.sampled_from(np.flatnonzero(free[:, i]).tolist())), i] += 1
        return table.sum(axis=1), n, allowed, lower, equal
    total = int(n.sum()) + draw(st.sampled_from([0, 0, 0, 1, -1]))
    head = draw(st.lists(st.integers(0, max(total, 0)), min_size=k - 1, max_size=k - 1))
    x = np.array(head + [total - sum(head)])
    return x, n, allowed, lower, equal


@settings(max_examples=150)
@given(theorem3_instances())
def test_hall_equals_maxflow_equals_milp(inst):
    """Spec 6.3 item 12 (Hall <=> flow) and item 11 for Theorem 3 (<=> exact MILP)."""
    x, n, allowed, lower, equal = inst
    flow = maxflow_extension(x, n, allowed, lower=lower, equal=equal)
    hall = _holds(hall_constraints(n, allowed, lower=lower, equal=equal), x)
    assert hall == flow.extendable
    event(f"extendable={flow.extendable}")
    assert flow.flow_value <= flow.required
    if flow.extendable:
        assert flow.flow_value == flow.required
        _assert_theorem3_table(flow.extension, x, n, allowed, lower, equal)
    assert _theorem3_milp(x, n, allowed, lower, equal).extendable == flow.extendable


# ---------------------------------------------------------------------- Lemma 1 and Allocate (T2)
T2_ROWS = np.array([[6, 16], [15, 5]])  # regions A, B: R_H row sums
T2_COLS = np.array([[17, 5], [5, 15]])  # R_V column sums


def test_t2_lemma1_numbers():
    lem = lemma1_bounds(T2_ROWS, T2_COLS)
    assert (lem.lower, lem.upper) == (0, 10)
    assert lem.row_totals.sum() == lem.col_totals.sum() == 42
    # the spec's FME system: h00 = 1 + h11, h01 = 20 - h11, h10 = 21 - h11
    for h11 in range(0, 11):
        np.testing.assert_array_equal(lem.table(h11), [[1 + h11, 20 - h11], [21 - h11, h11]])


def _margin_rows(r, c):
    """Leaf margin constraints on a 2x2 leaf table."""
    return [
        (np.array([[1, 1], [0, 0]]), "==", r[0]),
        (np.array([[0, 0], [1, 1]]), "==", r[1]),
        (np.array([[1, 0], [1, 0]]), "==", c[0]),
        (np.array([[0, 1], [0, 1]]), "==", c[1]),
    ]


@settings(max_examples=60)
@given(st.lists(st.tuples(*[st.integers(0, 5)] * 4), min_size=1, max_size=3))
def test_lemma1_allocate_and_completeness(leaf_tables):
    """Spec 6.3 item 13, and item 11 for Lemma 1: inside the bounds Allocate splits h, outside the
    MILP finds no extension."""
    tables = np.array(leaf_tables).reshape(-1, 2, 2)
    rows, cols = tables.sum(axis=2), tables.sum(axis=1)
    R, C = rows.sum(axis=0), cols.sum(axis=0)
    lem = lemma1_bounds(rows, cols)
    assert lem.lower <= tables[:, 1, 1].sum() <= lem.upper  # necessity on a real extension
    leaf_cons = [_margin_rows(r, c) for r, c in zip(rows, cols, strict=True)]
    for h11 in range(lem.lower - 1, lem.upper + 2):
        h01, h10 = C[1] - h11, R[1] - h11
        h = np.array([[R[0] - h01, h01], [h10, h11]])
        if lem.lower <= h11 <= lem.upper:
            leaves = allocate(h, rows, cols)
            assert leaves.dtype.kind == "i" and (leaves >= 0).all()
            np.testing.assert_array_equal(leaves.sum(axis=0), h)
            np.testing.assert_array_equal(leaves.sum(axis=2), rows)
            np.testing.assert_array_equal(leaves.sum(axis=1), cols)
            if h11 in (lem.lower, lem.upper):
                assert extension_milp(h, leaf_cons).extendable
        else:
            with pytest.raises(DataValidationError, match="not extendable"):
                allocate(h, rows, cols)
            assert not extension_milp(h, leaf_cons).extendable


def test_lemma1_input_errors():
    with pytest.raises(DataValidationError, match="leaf 1"):
        lemma1_bounds([[1, 2], [3, 4]], [[2, 1], [3, 3]])
    with pytest.raises(DataValidationError, match="row_sums"):
        lemma1_bounds([[1, 2, 3]], [[1, 2, 3]])


# ---------------------------------------------------------------------- T2: FME (Appendix D)
T2_NAMES = ["h00", "h01", "h10", "h11"] + [f"{s}{i}{j}" for s in "AB" for i in (0, 1) for j in (0, 1)]


def _t2_system():
    idx = {name: k for k, name in enumerate(T2_NAMES)}
    n = len(T2_NAMES)

    def row(terms, op, rhs):
        return (_e(n, *[idx[t] for t in terms], coef=list(terms.values())), op, rhs)

    rows = [row({f"h{i}{j}": 1, f"A{i}{j}": -1, f"B{i}{j}": -1}, "==", 0) for i in (0, 1) for j in (0, 1)]
    for s, rs, cs in (("A", T2_ROWS[0], T2_COLS[0]), ("B", T2_ROWS[1], T2_COLS[1])):
        rows += [row({f"{s}{i}0": 1, f"{s}{i}1": 1}, "==", int(rs[i])) for i in (0, 1)]
        rows += [row({f"{s}0{j}": 1, f"{s}1{j}": 1}, "==", int(cs[j])) for j in (0, 1)]
        rows += [row({f"{s}{i}{j}": 1}, ">=", 0) for i in (0, 1) for j in (0, 1)]
    return rows


def test_t2_fme_projection():
    proj = fme_project(_t2_system(), [0, 1, 2, 3], names=T2_NAMES)
    assert proj.names == ("h00", "h01", "h10", "h11")
    spec = [
        (np.array([1, 0, 0, -1]), "==", 1),
        (np.array([0, 1, 0, 1]), "==", 20),
        (np.array([0, 0, 1, 1]), "==", 21),
        (np.array([0, 0, 0, 1]), ">=", 0),
        (np.array([0, 0, 0, 1]), "<=", 10),
    ]
    assert _implies(proj.constraints, spec, 4) and _implies(spec, proj.constraints, 4)
    np.testing.assert_allclose(_ranges(proj.constraints, 4), [(1, 11), (10, 20), (11, 21), (0, 10)], atol=1e-7)
    # pruning leaves no redundant row: dropping any inequality changes the polytope
    ineq = [k for k, (_, op, _) in enumerate(proj.constraints) if op != "=="]
    for k in ineq:
        rest = proj.constraints[:k] + proj.constraints[k + 1 :]
        assert not _implies(rest, [proj.constraints[k]], 4)


@settings(max_examples=20)
@given(st.lists(st.tuples(*[st.integers(0, 4)] * 4), min_size=1, max_size=2))
def test_fme_matches_lemma1(leaf_tables):
    """The real projection of 2x2 leaves with fixed margins is Lemma 1's set (spec 3.10)."""
    tables = np.array(leaf_tables).reshape(-1, 2, 2)
    m = len(tables)
    n = 4 + 4 * m
    rows = [(_e(n, c, *[4 + 4 * leaf + c for leaf in range(m)], coef=[1] + [-1] * m), "==", 0) for c in range(4)]
    for leaf, t in enumerate(tables):
        base = 4 + 4 * leaf
        for coef, op, rhs in _margin_rows(t.sum(axis=1), t.sum(axis=0)):
            a = np.zeros(n)
            a[base : base + 4] = coef.ravel()
            rows.append((a, op, rhs))
        rows += [(_e(n, base + c), ">=", 0) for c in range(4)]
    proj = fme_project(rows, [0, 1, 2, 3])
    lem = lemma1_bounds(tables.sum(axis=2), tables.sum(axis=1)).constraints()
    assert _implies(proj.constraints, lem, 4) and _implies(lem, proj.constraints, 4)


def test_fme_reports_infeasible_system():
    rows = [(np.array([1.0, 1.0]), "==", 3), (np.array([0.0, 1.0]), ">=", 4), (np.array([1.0, 0.0]), ">=", 0)]
    with pytest.raises(DataValidationError, match="infeasible"):
        fme_project(rows, [0])


# ---------------------------------------------------------------------- T3: Appendix A (exact MILP)
@pytest.mark.parametrize(
    ("national", "ok"), [([[11, 9], [9, 11]], False), ([[10, 10], [10, 10]], True), ([[0, 20], [20, 0]], True)]
)
def test_t3_extension_milp(national, ok):
    states = [((5, 15), (15, 5)), ((15, 5), (5, 15))]  # (R_H row sums, R_V column sums) of A and B
    res = extension_milp(np.array(national), [_margin_rows(r, c) for r, c in states])
    assert res.extendable == ok
    if ok:
        table = res.table  # (R_H, R_V, state)
        assert table.shape == (2, 2, 2) and table.dtype.kind == "i" and (table >= 0).all()
        np.testing.assert_array_equal(table.sum(axis=2), national)
        for s, (r, c) in enumerate(states):
            np.testing.assert_array_equal(table[:, :, s].sum(axis=1), r)
            np.testing.assert_array_equal(table[:, :, s].sum(axis=0), c)


# ---------------------------------------------------------------------- T4: Theorem 1 (3-SAT)
ALL_PATTERNS = [[s1 * 1, s2 * 2, s3 * 3] for s1, s2, s3 in itertools.product((1, -1), repeat=3)]


def _satisfied(clauses, assignment):
    return all(any(assignment[abs(v) - 1] == (v > 0) for v in clause) for clause in clauses)


def test_t4_unsatisfiable_formula_has_lp_but_no_integer_extension():
    red = sat_reduction(ALL_PATTERNS, 3)
    np.testing.assert_array_equal(red.parent, [1, 1, 1])
    assert not extension_milp(red.parent, n_leaves=2, joint_constraints=red.constraints).extendable
    half = np.full((3, 2), 0.5)
    assert _holds(red.constraints, half) and np.array_equal(half.sum(axis=1), red.parent)
    lp = extension_milp(red.parent, n_leaves=2, joint_constraints=red.constraints, relax=True)
    assert lp.extendable and _holds(red.constraints, lp.table)


def test_t4_satisfiable_formula_decodes_to_a_model():
    clauses = ALL_PATTERNS[:7]  # drop (-v1 v -v2 v -v3): only all-true satisfies the rest
    red = sat_reduction(clauses, 3)
    res = extension_milp(red.parent, n_leaves=2, joint_constraints=red.constraints)
    assert res.extendable
    assignment = red.decode(res.table)
    assert _satisfied(clauses, assignment) and assignment.all()


@settings(max_examples=40)
@given(
    st.integers(1, 3).flatmap(
        lambda w: st.tuples(
            st.just(w),
            st.lists(
                st.lists(st.integers(1, w).flatmap(lambda v: st.sampled_from([v, -v])), min_size=3, max_size=3),
                min_size=1,
                max_size=14,
            ),
        )
    )
)
def test_sat_reduction_matches_brute_force(instance):
    w, clauses = instance
    sat = any(_satisfied(clauses, a) for a in itertools.product((False, True), repeat=w))
    red = sat_reduction(clauses, w)
    res = extension_milp(red.parent, n_leaves=2, joint_constraints=red.constraints)
    assert res.extendable == sat
    event(f"satisfiable={sat}")
    if sat:
        assert _satisfied(clauses, red.decode(res.table))


def test_sat_reduction_rejects_bad_literals():
    with pytest.raises(DataValidationError, match="clauses\\[1\\]"):
        sat_reduction([[1, 2, 3], [1, 0, 2]], 3)


# ---------------------------------------------------------------------- T5: the NY/RI network
T5 = {  # leaf: (state, N, support, lower bounds for A, B, C)
    "Suffolk": ("NY", 10, "AC", (2, 0, 3)),
    "Nassau": ("NY", 8, "AC", (1, 0, 2)),
    "Queens": ("NY", 5, "C", (0, 0, 5)),
    "Washington": ("RI", 6, "AB", (1, 2, 0)),
    "Kent": ("RI", 4, "AB", (1, 1, 0)),
    "Providence": ("RI", 7, "AC", (2, 0, 1)),
    "Newport": ("RI", 3, "AB", (1, 1, 0)),
}
CELL_TYPE = np.array([0, 0, 1, 1, 2, 2])  # two cells (e.g. ethnicity) per type A, B, C


def _t5(total_level=3):
    table = {"US": None, "NY": "US", "RI": "US"} | {leaf: v[0] for leaf, v in T5.items()}
    geo = Hierarchy.from_parent_table(table)
    names = [geo.names[i] for i in geo.leaves]
    present = np.array([[t in T5[name][2] for t in "ABC"] for name in names])
    lower = np.array([T5[name][3] for name in names])
    gq = GQKnowledge(CELL_TYPE, ("A", "B", "C"), present, lower)
    totals = np.zeros(geo.n_regions, dtype=np.int64)
    for name in names:
        totals[geo.index[name]] = T5[name][1]
    totals[geo.index["NY"]], totals[geo.index["RI"]], totals[0] = 23, 20, 43
    return geo, gq, PublicKnowledge.from_region_totals(geo, totals, total_level, gq=gq)


def _combos(fd):
    """{support string: (N, lower bounds)} of a FlowData."""
    return {
        "".join(t for t, p in zip("ABC", row, strict=True) if p): (int(n), tuple(int(v) for v in f))
        for row, n, f in zip(fd.combos, fd.population, fd.lower, strict=True)
    }


def test_t5_flow_data_aggregation_and_ranges():
    geo, _, pk = _t5()
    us, ny, ri = (pk.flow_data(geo, geo.index[s]) for s in ("US", "NY", "RI"))
    assert _combos(us) == {"AC": (25, (5, 0, 6)), "AB": (13, (3, 4, 0)), "C": (5, (0, 0, 5))}
    np.testing.assert_array_equal(us.type_minimum, [8, 4, 11])
    assert _combos(ny) == {"AC": (18, (3, 0, 5)), "C": (5, (0, 0, 5))}
    assert _combos(ri) == {"AB": (13, (3, 4, 0)), "AC": (7, (2, 0, 1))}
    np.testing.assert_array_equal(type_total_ranges(us), [[8, 28], [4, 10], [11, 25]])
    np.testing.assert_array_equal(type_total_ranges(ny), [[3, 13], [0, 0], [10, 20]])
    np.testing.assert_array_equal(type_total_ranges(ri), [[5, 15], [4, 10], [1, 5]])
    # with state totals only (erratum 8), the nation's units are the states, supports their unions
    geo, _, pk2 = _t5(total_level=2)
    assert _combos(pk2.flow_data(geo, 0)) == {"AC": (23, (3, 0, 10)), "ABC": (20, (5, 4, 1))}


def test_t5_hall_and_flow_give_the_spec_projection():
    """All (g_A, g_B, g_C) >= 0 with sum 43: Theorem 3 on types -> combinations <=> the spec's ranges."""
    geo, _, pk = _t5()
    fd = pk.flow_data(geo, 0)
    hall = hall_constraints(fd.population, fd.combos.T, lower=fd.lower.T)
    for g_b in range(0, 44):
        for g_c in range(0, 44 - g_b):
            g = (43 - g_b - g_c, g_b, g_c)
            spec = 4 <= g_b <= 10 and 11 <= g_c <= 25
            assert _holds(hall, g) == spec
            if g_b in (3, 4, 10, 11) or g_c in (10, 11, 25, 26):
                assert maxflow_extension(g, fd.population, fd.combos.T, lower=fd.lower.T).extendable == spec


def _split(type_totals, rng):
    """A histogram over CELL_TYPE's cells with the given type totals."""
    hist = np.zeros(len(CELL_TYPE), dtype=np.int64)
    for g, total in enumerate(type_totals):
        cells = np.flatnonzero(CELL_TYPE == g)
        hist[cells] = rng.multinomial(total, np.ones(len(cells)) / len(cells))
    return hist


def _assert_valid_leaves(out, hist, gq, pos, totals):
    assert out is not None and out.dtype.kind == "i" and (out >= 0).all()
    np.testing.assert_array_equal(out.sum(axis=0), hist)
    per_type = np.stack([out[:, gq.cell_type == g].sum(axis=1) for g in range(gq.n_types)], axis=1)
    assert (per_type[~gq.present[pos]] == 0).all()
    assert (per_type >= gq.lower[pos]).all()
    if totals is not None:
        np.testing.assert_array_equal(out.sum(axis=1), totals)


@pytest.mark.parametrize(
    ("node", "type_totals", "ok"),
    [
        ("US", (28, 4, 11), True),
        ("US", (8, 10, 25), True),
        ("US", (18, 4, 21), True),
        ("US", (14, 10, 19), True),
        ("US", (7, 10, 26), False),
        ("US", (29, 3, 11), False),
        ("US", (8, 11, 24), False),
        ("US", (20, 8, 14), False),  # total 42, not 43
        ("NY", (3, 0, 20), True),
        ("NY", (13, 0, 10), True),
        ("NY", (12, 1, 10), False),
        ("RI", (5, 10, 5), True),
        ("RI", (15, 4, 1), True),
        ("RI", (14, 6, 0), False),
    ],
)
def test_t5_extend_to_leaves(node, type_totals, ok):
    geo, gq, pk = _t5()
    fd = pk.flow_data(geo, geo.index[node])
    leaves = [i for i in geo.leaves if geo.names[geo.parent[i]] == node or node == "US"]
    pos = np.searchsorted(geo.leaves, leaves)
    totals = [T5[geo.names[i]][1] for i in leaves]
    for seed in range(3):
        hist = _split(type_totals, np.random.default_rng(seed))
        out = extend_to_leaves(hist, fd, gq, totals, pos)
        if ok:
            _assert_valid_leaves(out, hist, gq, pos, totals)
        else:
            assert out is None


def test_extend_to_leaves_below_invariant_level():
    """Only the nation is invariant: NY's blocks have lower bounds but no totals (erratum 8)."""
    geo, gq, _ = _t5()
    pk = PublicKnowledge(_t5()[2].invariant_totals[:1], 1, gq)
    fd = pk.flow_data(geo, geo.index["NY"])
    assert not fd.fixed
    pos = np.searchsorted(geo.leaves, geo.children(geo.index["NY"]))
    rng = np.random.default_rng(0)
    out = extend_to_leaves(_split((3, 0, 40), rng), fd, gq, None, pos)
    _assert_valid_leaves(out, out.sum(axis=0), gq, pos, None)
    assert extend_to_leaves(_split((2, 0, 40), rng), fd, gq, None, pos) is None
    assert extend_to_leaves(_split((3, 1, 40), rng), fd, gq, None, pos) is None
    # the nation's network has state units: not a leaf-level network, so it is refused
    with pytest.raises(DataValidationError, match="flow_data"):
        extend_to_leaves(_split((28, 4, 11), rng), pk.flow_data(geo, 0), gq, None, np.arange(7))


# ---------------------------------------------------------------------- ExtendToLeaves on random instances
@st.composite
def gq_instances(draw):
    n_types = draw(st.integers(1, 3))
    cell_type = np.array(sum(([g] * draw(st.integers(1, 2)) for g in range(n_types)), []))
    n_leaves = draw(st.integers(1, 4))

    def grid(elements):
        size = n_leaves * n_types
        return np.array(draw(st.lists(elements, min_size=size, max_size=size))).reshape(n_leaves, n_types)

    present = grid(st.booleans())
    lower = np.where(present, grid(st.integers(0, 2)), 0)
    leaves = np.zeros((n_leaves, len(cell_type)), dtype=np.int64)
    for leaf in range(n_leaves):
        for g in np.flatnonzero(present[leaf]):
            cells = np.flatnonzero(cell_type == g)
            for _ in range(lower[leaf, g] + draw(st.integers(0, 3))):
                leaves[leaf, cells[draw(st.integers(0, len(cells) - 1))]] += 1
    return cell_type, present, lower, leaves


def _random_network(cell_type, present, lower, leaves):
    n_leaves = len(leaves)
    geo = Hierarchy.from_parent_table({"R": None} | {f"L{k}": "R" for k in range(n_leaves)})
    gq = GQKnowledge(cell_type, tuple("ABC"[: present.shape[1]]), present, lower)
    totals = leaves.sum(axis=1)
    pk = PublicKnowledge(np.concatenate([[totals.sum()], totals]), 2, gq)
    return gq, pk.flow_data(geo, 0), totals


def _leaf_milp(hist, gq, totals, pos):
    """Exact oracle: the leaf constraints of spec 3.5 as an extension problem."""
    type_rows = np.stack([(gq.cell_type == g).astype(float) for g in range(gq.n_types)])
    cons = []
    for k, leaf in enumerate(pos):
        rows = [(np.ones(len(hist)), "==", totals[k])]
        for g in range(gq.n_types):
            rows.append((type_rows[g], ">=" if gq.present[leaf, g] else "==", gq.lower[leaf, g]))
        cons.append(rows)
    return extension_milp(hist, cons)


@settings(max_examples=100)
@given(gq_instances(), st.randoms(use_true_random=False))
def test_extend_to_leaves_random(instance, rnd):
    """Spec 6.3 item 10: aggregated valid leaves always extend; histograms outside the LP ranges of
    the type totals never do; and on random histograms ExtendToLeaves agrees with the exact MILP."""
    cell_type, present, lower, leaves = instance
    gq, fd, totals = _random_network(cell_type, present, lower, leaves)
    pos = np.arange(len(leaves))
    hist = leaves.sum(axis=0)
    _assert_valid_leaves(extend_to_leaves(hist, fd, gq, totals, pos), hist, gq, pos, totals)

    # move persons between two types so that one type total leaves its projected range
    ranges = type_total_ranges(fd)
    t = np.bincount(cell_type, weights=hist, minlength=gq.n_types)
    for g, h in itertools.permutations(range(gq.n_types), 2):
        d = int(ranges[g, 1] + 1 - t[g])
        if 0 < d <= t[h]:
            bad, left = hist.copy(), d
            for x in np.flatnonzero(cell_type == h):
                take = min(left, bad[x])
                bad[x] -= take
                left -= take
            bad[np.flatnonzero(cell_type == g)[0]] += d
            assert bad.sum() == hist.sum() and (bad >= 0).all()
            assert extend_to_leaves(bad, fd, gq, totals, pos) is None
            event("out-of-range histogram tried")
            break

    # a random histogram with the right total: ExtendToLeaves <=> the exact MILP
    total = int(hist.sum())
    cuts = sorted(rnd.randint(0, total) for _ in range(len(cell_type) - 1))
    other = np.diff([0, *cuts, total]).astype(np.int64)
    out = extend_to_leaves(other, fd, gq, totals, pos)
    assert (out is not None) == _leaf_milp(other, gq, totals, pos).extendable
    event(f"random histogram extendable={out is not None}")
    if out is not None:
        _assert_valid_leaves(out, other, gq, pos, totals)


@settings(max_examples=20)
@given(
    st.lists(st.tuples(st.lists(st.integers(-2, 2), min_size=4, max_size=4), st.integers(-4, 2)), max_size=6),
    st.lists(st.tuples(st.integers(-3, 3), st.integers(-3, 3)), min_size=4, max_size=4),
)
def test_fme_projection_has_the_same_support_function(rows, directions):
    """Pure inequality systems (every eliminated variable goes through pyomo.contrib.fme): for any
    direction on the kept variables, the projection and the original system have the same minimum."""
    n = 4
    system = [(np.array(a, dtype=float), ">=", b) for a, b in rows]
    system += [(_e(n, j), ">=", -5) for j in range(n)] + [(_e(n, j), "<=", 5) for j in range(n)]
    res = linprog(
        np.zeros(n),
        A_ub=-np.array([a for a, _ in rows] or np.zeros((0, n))),
        b_ub=[-b for _, b in rows] or None,
        bounds=[(-5, 5)] * n,
        method="highs",
    )
    if res.status == 2:
        with pytest.raises(DataValidationError, match="infeasible"):
            fme_project(system, [0, 1])
        return
    proj = fme_project(system, [0, 1])
    for d in directions:
        full = np.array([d[0], d[1], 0, 0], dtype=float)
        assert _lp_min(proj.constraints, 2, np.array(d, dtype=float)) == pytest.approx(
            _lp_min(system, n, full), abs=1e-6
        )
