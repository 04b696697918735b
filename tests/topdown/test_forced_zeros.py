"""The exact presolve of the node solves (:mod:`dpmodels.topdown.forced_zeros`).

Oracles: an LP solved by scipy's ``linprog`` on the full system (every dropped column is 0 at both its
maximum and its minimum over the feasible set), the full QP and LP solved as before (same optimal
value, same histogram), on hypothesis-drawn systems and on every node solve of a synthetic release.
"""

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog

from dpmodels import instances
from dpmodels.topdown.bench_solves import run_problems
from dpmodels.topdown.compiled import LinearSystem, l1_system, l2_system, solve_l1_highs, solve_l2_clarabel
from dpmodels.topdown.driver import topdown
from dpmodels.topdown.forced_zeros import expanded, forced_zero_columns, without_forced_zeros
from dpmodels.topdown.mechanism import measure


def _range_of(system, j: int, sign: float) -> float | None:
    """``max`` (sign -1) or ``min`` (sign 1) of ``x_j`` over the feasible set; None if infeasible."""
    c = np.zeros(system.n)
    c[j] = sign
    bounds = [
        (None if np.isinf(lo) else lo, None if np.isinf(hi) else hi)
        for lo, hi in zip(system.lb, system.ub, strict=True)
    ]
    res = linprog(
        c,
        A_ub=system.a_ub.toarray() if system.a_ub.shape[0] else None,
        b_ub=system.b_ub if system.a_ub.shape[0] else None,
        A_eq=system.a_eq.toarray() if system.a_eq.shape[0] else None,
        b_eq=system.b_eq if system.a_eq.shape[0] else None,
        bounds=bounds,
        method="highs",
    )
    if res.status == 2:
        return None
    return float(res.x[j]) if res.status == 0 else float(sign * -np.inf)  # unbounded: not forced


def _system(a_eq, b_eq, lb, ub, a_ub=None, b_ub=None) -> LinearSystem:
    n = len(lb)
    a_ub = sp.csr_matrix((0, n)) if a_ub is None else sp.csr_matrix(a_ub)
    b_ub = np.zeros(0) if b_ub is None else np.asarray(b_ub, dtype=float)
    c = np.zeros(n)
    return LinearSystem(None, c, 0.0, sp.csr_matrix(a_eq), np.asarray(b_eq, float), a_ub, b_ub, lb, ub, n)


@st.composite
def systems(draw):
    n = draw(st.integers(1, 6))
    rows = draw(st.integers(1, 4))
    coef = st.sampled_from([-2.0, -1.0, 0.0, 0.0, 1.0, 1.0, 2.0])
    a = np.array(draw(st.lists(st.lists(coef, min_size=n, max_size=n), min_size=rows, max_size=rows)))
    b = np.array(draw(st.lists(st.sampled_from([0.0, 0.0, 0.0, 1.0, -1.0]), min_size=rows, max_size=rows)))
    lb = np.array(draw(st.lists(st.sampled_from([0.0, 0.0, -np.inf, 1.0]), min_size=n, max_size=n)))
    ub = np.array(draw(st.lists(st.sampled_from([np.inf, np.inf, 0.0, 3.0]), min_size=n, max_size=n)))
    ub = np.maximum(ub, lb)
    explicit = sp.csr_matrix(a)
    if draw(st.booleans()):  # a stored zero in row 0, which must force nothing
        r, c = explicit.nonzero()
        coo = (np.append(explicit.data, 0.0), (np.append(r, 0), np.append(c, 0)))
        explicit = sp.csr_matrix(sp.coo_matrix(coo, shape=a.shape), copy=False)
    return _system(explicit, b, lb, ub)


@settings(max_examples=150, deadline=None)
@given(systems())
def test_every_dropped_column_is_zero_in_every_feasible_point(system):
    for j in np.flatnonzero(forced_zero_columns(system)):
        high, low = _range_of(system, j, -1.0), _range_of(system, j, 1.0)
        if high is None:  # infeasible: nothing to keep
            break
        assert abs(high) < 1e-9 and abs(low) < 1e-9, (j, high, low)


@settings(max_examples=150, deadline=None)
@given(
    systems(), st.lists(st.integers(-3, 3), min_size=6, max_size=6)
)  # integers: no cost below the solver's tolerances
def test_the_reduced_lp_has_the_full_optimum(system, cost):
    system.c[:] = cost[: system.n]
    full, _, full_value = solve_l1_highs(system, integer=False)
    reduced, keep = without_forced_zeros(system)
    x, _, value = solve_l1_highs(reduced, integer=False)
    assert (full is None) == (x is None)
    if x is not None:
        assert value == pytest.approx(full_value, abs=1e-7)
        x = expanded(x, keep, system.n)
        assert np.allclose(system.a_eq @ x, system.b_eq, atol=1e-7) and (x >= system.lb - 1e-9).all()


def test_an_all_zero_system_and_an_infeasible_removal_are_left_whole():
    everything = _system([[1.0, 1.0]], [0.0], np.zeros(2), np.full(2, np.inf))
    assert forced_zero_columns(everything).all()
    assert without_forced_zeros(everything)[0] is everything  # the solvers refuse an empty model
    infeasible = _system([[1.0, 1.0], [1.0, 0.0]], [0.0, 2.0], np.zeros(2), np.full(2, np.inf))
    assert without_forced_zeros(infeasible)[0] is infeasible  # 0 = 2 would remain: the solver says so


@pytest.fixture(scope="module")
def node_solves():
    data = instances.generate("topdown/synthetic", preset="tiny", seed=3, races=7)
    meas = measure(data, 1.0, rng=4)
    result = topdown(meas, data.knowledge, data.schema, data.geography)
    return [p for _, p in run_problems(data, meas, result)]


def test_node_solves_lose_only_forced_columns_and_keep_their_optimum(node_solves):
    dropped = 0
    for problem in node_solves:
        system = l2_system(problem)
        zero = forced_zero_columns(system)
        dropped += zero.sum()
        full, _, full_value = solve_l2_clarabel(system, tol=1e-10)
        reduced, keep = without_forced_zeros(system)
        x, _, value = solve_l2_clarabel(reduced, tol=1e-10)
        assert np.abs(full[zero]).max(initial=0) < 1e-6  # the full QP's optimum has them at 0 too
        assert value == pytest.approx(full_value, rel=1e-7, abs=1e-6)
        assert np.allclose(expanded(x, keep, system.n)[: system.n_hist], full[: system.n_hist], atol=1e-3)
        rounding, _ = l1_system(problem, full[: system.n_hist])
        _, _, mip_value = solve_l1_highs(rounding, integer=True)
        small, _ = without_forced_zeros(rounding)
        _, _, small_value = solve_l1_highs(small, integer=True)
        assert small_value == pytest.approx(mip_value, abs=1e-7)
        for j in np.flatnonzero(forced_zero_columns(rounding))[:5]:  # the LP oracle on a few per solve
            assert abs(_range_of(rounding, j, -1.0)) < 1e-9
    assert dropped > 0  # the tiny census has absent group-quarters types: something to drop
