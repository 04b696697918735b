"""The L2 system's query rows written as sums of finer rows (issue 25) against the residual form.

Oracles: ``Q @ h`` computed by scipy for random histograms (every row's term must sit on a variable
whose value, after the sum rows, is exactly that row's answer); and the residual form of the same
solve, the matrix of the pre-issue-25 code (tested bit for bit in ``test_assembly``), both solved by
HiGHS's QP solver and by Clarabel, which must reach the same optimum.
"""

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from dpmodels import instances
from dpmodels.topdown.compiled import l2_system, solve_l2_clarabel
from dpmodels.topdown.mechanism import measure
from dpmodels.topdown.query_sums import sum_plan

from .test_assembly import _problems


def _partition(labels: np.ndarray) -> sp.csr_matrix:
    """The 0/1 query whose row ``r`` sums the cells labelled ``r`` (label -1: in no row), empty rows dropped."""
    used = np.unique(labels[labels >= 0])
    cells = np.flatnonzero(labels >= 0)
    rows = np.searchsorted(used, labels[cells])
    return sp.csr_matrix((np.ones(len(cells)), (rows, cells)), shape=(len(used), len(labels)))


def _evaluate(plan, h: np.ndarray) -> np.ndarray:
    """The sum variables' values implied by the plan's rows ``s - sum(members) = 0``, row after row."""
    lengths, is_cell, idx, coef = plan.rows
    sums = np.full(plan.n_sums, np.nan)
    start = 0
    for length in lengths:
        own, members = slice(start, start + 1), slice(start + 1, start + length)
        assert coef[own][0] == 1.0 and not is_cell[own][0]
        padded = np.append(sums, np.nan)
        values = np.where(
            is_cell[members], h[idx[members] * is_cell[members]], padded[np.where(is_cell[members], -1, idx[members])]
        )
        assert not np.isnan(values).any(), "a row uses a sum defined later"
        sums[idx[own][0]] = -(coef[members] @ values)
        start += length
    return sums


@st.composite
def _queries(draw):
    """Random queries on a random cell set: nested marginals of a product schema, crossing ones,
    a coarsening of a random partition, and now and then a weighted or overlapping one."""
    sizes = draw(st.lists(st.integers(1, 4), min_size=2, max_size=3))
    grid = np.indices(sizes).reshape(len(sizes), -1).T  # the attribute values of every cell
    keep = draw(st.lists(st.booleans(), min_size=len(grid), max_size=len(grid)))
    if not any(keep):
        keep[0] = True
    grid = grid[np.asarray(keep)]
    mats = []
    for subset in draw(st.lists(st.sets(st.integers(0, len(sizes) - 1)), min_size=1, max_size=5)):
        attrs = sorted(subset)
        if not attrs:
            labels = np.zeros(len(grid), dtype=np.int64)
        else:
            labels = np.ravel_multi_index(grid[:, attrs].T, [sizes[a] for a in attrs])
        mats.append(_partition(labels))
    if draw(st.booleans()):  # a weighted row (not a partition's 0/1 row)
        w = mats[0].copy().astype(np.float64)
        w.data = w.data * 2.0
        mats.append(w)
    if draw(st.booleans()) and len(grid) > 1:  # two overlapping rows
        mats.append(sp.csr_matrix(np.array([[1.0] * len(grid), [1.0] + [0.0] * (len(grid) - 1)])))
    return mats, len(grid)


@settings(max_examples=80, deadline=None)
@given(_queries(), st.integers(0, 2**31 - 1))
def test_every_row_term_sits_on_a_variable_worth_exactly_its_answer(queries, seed):
    mats, n = queries
    plan = sum_plan(mats)
    h = np.random.default_rng(seed).integers(0, 50, n).astype(np.float64)
    sums = _evaluate(plan, h)
    for mat, on_cell, handle in zip(mats, plan.handle_is_cell, plan.handle, strict=True):
        padded = np.append(sums, np.nan)  # index len(sums): a placeholder for rows on cells
        value = np.where(on_cell, h[np.where(on_cell, handle, 0)], padded[np.where(on_cell, len(sums), handle)])
        np.testing.assert_array_equal(value, mat @ h)  # integers in float: exact


def test_nested_marginals_touch_each_cell_once():
    """total > votingage > votingage x race > cells: only the finest rows touch cells, and a single-cell
    row (here every row of the finest query) gets no variable."""
    va = np.repeat([0, 1], 3)
    race = np.tile([0, 1, 2], 2)
    mats = [_partition(np.zeros(6, dtype=np.int64)), _partition(va), _partition(va * 3 + race)]
    plan = sum_plan(mats)
    assert plan.handle_is_cell[2].all()  # one cell a row: the cell itself
    assert not plan.handle_is_cell[0].any() and not plan.handle_is_cell[1].any()
    assert plan.n_sums == 3  # total and the two votingage rows
    lengths, is_cell, _, _ = plan.rows
    assert int(is_cell.sum()) == 6  # every cell once, in a votingage row
    assert sorted(lengths.tolist()) == [3, 4, 4]  # total = 2 votingage rows; each votingage row = 3 cells


def test_queries_that_are_not_partitions_keep_their_cells():
    weighted = sp.csr_matrix(np.array([[2.0, 1.0, 0.0]]))
    overlapping = sp.csr_matrix(np.array([[1.0, 1.0, 1.0], [1.0, 0.0, 0.0]]))
    plan = sum_plan([weighted, overlapping, _partition(np.array([0, 1, 2]))])
    lengths, is_cell, _, coef = plan.rows
    assert is_cell.sum() == 2 + 3  # the weighted row's 2 cells and the overlapping total's 3
    assert sorted(coef[~is_cell].tolist()) == [1.0, 1.0]  # only the two sum variables, no finer rows


@pytest.fixture(scope="module")
def solves():
    data = instances.generate("topdown/synthetic", preset="tiny", races=3, seed=3, total_level="county")
    return _problems(data, measure(data, 2.0, rng=1), "batched")


def test_sums_and_residual_forms_reach_the_same_optimum(solves):
    from dpmodels.core.facade import solve
    from dpmodels.topdown.models import build_l2

    smaller = 0
    for problem in solves:
        sums, residual = l2_system(problem, form="sums"), l2_system(problem, form="residual")
        smaller += sums.n < residual.n
        x_s, status_s, obj_s = solve_l2_clarabel(sums, tol=1e-10)
        x_r, status_r, obj_r = solve_l2_clarabel(residual, tol=1e-10)
        assert status_s == status_r == "Solved"
        np.testing.assert_allclose(obj_s, obj_r, rtol=1e-7)
        hist = slice(0, problem.m * problem.n)
        np.testing.assert_allclose(x_s[hist], x_r[hist], atol=1e-3)
        res = solve(build_l2(problem, fingerprint=False), "highs")  # an active-set QP, another solver
        np.testing.assert_allclose(obj_s, res.incumbent_objective, rtol=1e-6)
    assert smaller == len(solves) >= 4


@settings(max_examples=30, deadline=None)
@given(
    shapes=st.lists(st.tuples(st.integers(0, 5), st.integers(0, 12)), min_size=1, max_size=4),
    n=st.integers(1, 9),
    seed=st.integers(0, 2**16),
)
def test_stack_rows_is_scipys_vstack(shapes, n, seed):
    """The blocks stacked without scipy's conversions: the same matrix as ``sp.vstack``, duplicate
    entries summed (a row may name a column twice)."""
    from dpmodels.topdown.compiled import stack_rows

    rng = np.random.default_rng(seed)
    blocks = []
    for rows, entries in shapes:
        r = np.sort(rng.integers(0, max(rows, 1), entries)) if rows else np.zeros(0, dtype=int)
        c = rng.integers(0, n, len(r))  # repeats within a row stay repeated: CSR arrays built by hand
        indptr = np.concatenate([[0], np.cumsum(np.bincount(r, minlength=rows))])
        blocks.append(sp.csr_matrix((rng.normal(size=len(r)), c, indptr), shape=(rows, n)))
    ours = stack_rows(blocks, n)
    assert ours.shape == (sum(b.shape[0] for b in blocks), n)
    np.testing.assert_allclose(ours.toarray(), sp.vstack(blocks).toarray(), atol=1e-12)
    assert ours.has_canonical_format


@settings(max_examples=60, deadline=None)
@given(values=st.lists(st.sampled_from([0.0, 0.0, 1.0, 2.5, -3.0]), max_size=12))
def test_diagonal_is_scipys_diags_stored_alike(values):
    """The QP's ``P`` written straight from its arrays: the matrix ``sp.diags(..., format="csc")``
    gives, its zeros not stored (Clarabel reads the stored pattern)."""
    from dpmodels.topdown.node_solvers import diagonal

    ours = diagonal(np.array(values))
    if values:
        theirs = sp.diags(np.array(values), format="csc")
    else:
        theirs = sp.csc_matrix((0, 0))
    assert ours.shape == theirs.shape
    for part in ("indptr", "indices", "data"):
        np.testing.assert_array_equal(getattr(ours, part), getattr(theirs, part))
