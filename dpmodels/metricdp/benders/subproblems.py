"""The Benders subproblems of the perturbation LP: one LP per block of internal records, solved at the
master's boundary values, and the cut each solve returns (spec 6.1, 6.4-6.6).

Block ``l`` derives its internal records' perturbation vectors given the boundary vectors
``z_Y``.  A feasible subproblem returns its optimum and duals: the optimality cut
``w_l >= phi_l(z_Y)`` (spec erratum A1: ``w_l`` is the internal cost only).  An infeasible one
returns a ray of the normalised ray LP (or, when that fails or is below tolerance, of the elastic
LP): the feasibility cut ``phi_l(z_Y) <= 0``.  Solver multipliers are made exactly dual feasible
before they become a cut (:meth:`Subproblem.cut`).  ``phi_l(z_Y) = const + sum coeff * z_Y`` is
kept as (constant, coefficients over the block's boundary columns), so a cut is one sparse row of
the master (:mod:`.master`).  Each block keeps its primal, ray and elastic LPs as persistent
HiGHS models, warm-started across iterations, and stops at Benders' deadline (:class:`TimeUp`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from ..data import MDPInstance, Partition
from ..lp import INF, Highs, mdp_rows, unit_rows, with_width

__all__ = ["Subproblem", "build_subproblems", "BlockOutcome", "solve_block", "TimeUp"]


@dataclass
class Subproblem:
    """Block l: internal records X_l, their coupling to boundary records, and LP data in ``>=`` form.

    Rows, in order: alpha (internal pairs), beta and gamma (internal-boundary pairs), mu (unit measure).
    ``rhs(ybar)`` is affine in the boundary values; ``cut(duals)`` turns row multipliers into
    ``phi_l = const + coeff . z_Y[boundary]``.
    """

    block: int
    internal: np.ndarray
    boundary: np.ndarray  # global positions in the master's Y order, of the boundary records this block touches
    K: int
    a: sp.csr_matrix  # rows x (|X| K)
    cost: np.ndarray
    beta_pos: np.ndarray  # for each beta/gamma row: (position in boundary, output k) -> master column
    beta_coef: np.ndarray
    n_alpha: int
    n_link: int  # number of beta (= gamma) rows
    _model: object = field(default=None, repr=False)
    _elastic: object = field(default=None, repr=False)
    _ray: object = field(default=None, repr=False)
    deadline: float | None = None  # wall-clock time (time.time()) at which solves stop: Benders' time limit

    def __getstate__(self):  # persistent HiGHS objects stay in the process that made them
        state = dict(self.__dict__)
        state["_model"] = state["_elastic"] = state["_ray"] = None
        return state

    @property
    def n_rows(self) -> int:
        return self.a.shape[0]

    def rhs(self, ybar_cols: np.ndarray) -> np.ndarray:
        """Right-hand sides (>= rows; mu rows are equalities) given boundary values at the link columns."""
        y = ybar_cols
        return np.concatenate([np.zeros(self.n_alpha), -self.beta_coef * y, y, np.ones(len(self.internal))])

    def cut(self, multipliers: np.ndarray, cost: np.ndarray | None) -> tuple[float, np.ndarray]:
        """``phi(z) = sum mu + sum (gamma - coef beta) z``: constant and per-link coefficients, from
        solver multipliers made exactly dual feasible first (``cost``: the LP's costs for an
        optimality cut, ``None`` for a Farkas ray, ``A'pi <= 0``): inequality parts clipped at 0,
        each internal record's row-sum multiplier the largest value ``A'pi <= cost`` allows.

        Why: HiGHS meets ``A'pi <= c`` only to its tolerance in *scaled* space; with
        ``e^(eps d)`` ~ 3e6 coefficients (eps = 10/km, 1.5 km cells) its rays gave cuts violated
        by 0.018 at the exponential mechanism, a feasible point (measured).  After the repair
        every cut is valid up to floating-point rounding; for already feasible duals it can
        only strengthen the cut (each row-sum multiplier grows).
        """
        n_ineq = self.n_rows - len(self.internal)
        p = np.maximum(multipliers[:n_ineq], 0.0)
        room = -(self.a[:n_ineq].T @ p)
        if cost is not None:
            room = room + cost
        mu = room.reshape(len(self.internal), self.K).min(axis=1)
        beta = p[self.n_alpha : self.n_alpha + self.n_link]
        gamma = p[self.n_alpha + self.n_link : self.n_alpha + 2 * self.n_link]
        return float(mu.sum()), gamma - self.beta_coef * beta


def build_subproblems(instance: MDPInstance, part: Partition, y_order: np.ndarray) -> list[Subproblem]:
    """One subproblem per block with internal records (spec 6.1, 6.4)."""
    g, K = instance.graph, instance.K
    y_pos = np.full(instance.N, -1)
    y_pos[y_order] = np.arange(len(y_order))
    subs = []
    for l, internal in enumerate(part.internal):
        if len(internal) == 0:
            continue
        local = np.full(instance.N, -1)
        local[internal] = np.arange(len(internal))
        in_x = local[g.src] >= 0
        xx = in_x & (local[g.dst] >= 0)
        xy = in_x & (local[g.dst] < 0)  # the other end of an internal record's pair is boundary (same block)
        n_x = len(internal) * K
        alpha = -mdp_rows(local[g.src[xx]], local[g.dst[xx]], g.coef[xx], np.arange(len(internal)), K)
        i_xy, j_xy, c_xy = local[g.src[xy]], g.dst[xy], g.coef[xy]
        cols = np.repeat(i_xy, K) * K + np.tile(np.arange(K), len(i_xy))
        n_link = len(cols)
        beta = sp.csr_matrix((-np.ones(n_link), (np.arange(n_link), cols)), shape=(n_link, n_x))
        gamma = sp.csr_matrix((np.repeat(c_xy, K), (np.arange(n_link), cols)), shape=(n_link, n_x))
        a = sp.vstack([with_width(alpha, n_x), beta, gamma, unit_rows(len(internal), K)], format="csr")
        link_cols = y_pos[np.repeat(j_xy, K)] * K + np.tile(np.arange(K), len(j_xy))
        subs.append(
            Subproblem(
                l,
                internal,
                link_cols,
                K,
                a,
                instance.weighted_cost[internal].ravel(),
                link_cols,
                np.repeat(c_xy, K),
                alpha.shape[0],
                n_link,
            )
        )
    return subs


@dataclass
class BlockOutcome:
    block: int
    feasible: bool
    value: float | None
    const: float
    coeff: np.ndarray
    x: np.ndarray | None
    seconds: float
    violation: float = 0.0  # > 0 when x meets the rows only within the solver tolerance


def solve_block(sub: Subproblem, ybar: np.ndarray, cut_tol: float = 1e-7) -> BlockOutcome:
    """Solve subproblem ``sub`` at the master's boundary values ``ybar`` (all of Y, flattened).

    Protocol (every branch returns a valid cut):

    1. the primal LP (persistent, warm-started; presolve off, because on e^(eps d) ~ 5e8
       coefficients times tiny boundary values presolve declared feasible subproblems
       infeasible, measured at eps = 10/km): optimal -> value, duals -> optimality cut;
    2. infeasible -> a Farkas ray (:func:`_ray`); if it is violated by more than ``cut_tol``
       (the master's feasibility tolerance, below which a cut cannot move the master) ->
       feasibility cut;
    3. otherwise the infeasibility is below solver tolerance: the rows are relaxed by the
       elastic LP's slacks (at most ``cut_tol``), the relaxed LP gives x and duals.  Any dual-
       feasible multipliers give a valid optimality cut (the dual region does not depend on
       the right-hand side), and x violates the true rows by at most ``cut_tol`` plus any widening
       HiGHS's own tolerances needed (``cut_tol``, then ``10 cut_tol``, ``100 cut_tol``; both were
       needed at eps = 10/km), recorded as the outcome's ``violation``.
    """
    tick = time.perf_counter()
    rhs = sub.rhs(ybar[sub.beta_pos])
    res = _primal(sub, rhs)
    if res.objective is not None:
        const, coeff = sub.cut(res.row_dual, sub.cost)
        return BlockOutcome(sub.block, True, res.objective, const, coeff, res.x, time.perf_counter() - tick)
    violation, const, coeff, slack = _ray(sub, rhs, cut_tol)
    if violation > cut_tol:
        return BlockOutcome(sub.block, False, None, const, coeff, None, time.perf_counter() - tick)
    res = _primal(sub, rhs - slack)
    widen = cut_tol
    while res.objective is None and widen <= 100 * cut_tol:  # HiGHS's own tolerances: widen the >= rows
        margin = np.concatenate([np.full(sub.n_rows - len(sub.internal), widen), np.zeros(len(sub.internal))])
        sub._model.h.clearSolver()
        res = _primal(sub, rhs - slack - margin)
        violation += widen
        widen *= 10
    if res.objective is None:
        raise RuntimeError(f"subproblem {sub.block}: infeasible by {violation:.2e} yet the relaxed LP is {res.status}")
    const, coeff = sub.cut(res.row_dual, sub.cost)
    return BlockOutcome(sub.block, True, res.objective, const, coeff, res.x, time.perf_counter() - tick, violation)


#: Simplex iterations per row and column a block LP may take in one run before it is retried cold
#: (:meth:`~dpmodels.metricdp.lp.Highs.solve`): a warm-started ray LP of 201 rows and 4,602 columns
#: cycled for 6.3 million iterations (129 s) on the 25 x 40 grid at eps = 10/km, where such LPs
#: take hundreds.
ITERATIONS_PER_DIMENSION = 10


def _block_lp(cost, a: sp.spmatrix, row_lower, row_upper, col_lower=None) -> Highs:
    """One of a block's persistent LPs: columns from ``col_lower`` (default 0) up, presolve off
    (they are warm-started) and the simplex iteration cap."""
    lower = np.zeros(a.shape[1]) if col_lower is None else col_lower
    iteration_limit = ITERATIONS_PER_DIMENSION * (a.shape[0] + a.shape[1])
    return Highs(
        cost, lower, np.full(a.shape[1], INF), a, row_lower, row_upper, presolve=False, iteration_limit=iteration_limit
    )


class TimeUp(Exception):
    """Benders' time limit ran out inside an LP solve."""


def _timed(sub: Subproblem, model: Highs):
    """Solve one of the block's LPs within what is left of Benders' time limit."""
    if sub.deadline is not None:
        left = sub.deadline - time.time()
        if left <= 0:
            raise TimeUp
        model.set_time_limit(left)
    res = model.solve()
    if res.status == "Time limit reached":
        raise TimeUp
    return res


def _primal(sub: Subproblem, rhs: np.ndarray):
    """The subproblem LP at right-hand sides ``rhs`` (``>=`` rows, then the unit-measure equalities)."""
    n_mu = len(sub.internal)
    upper = np.concatenate([np.full(sub.n_rows - n_mu, INF), rhs[sub.n_rows - n_mu :]])
    if sub._model is None:
        sub._model = _block_lp(sub.cost, sub.a, rhs, upper)
    else:
        sub._model.set_row_bounds(np.arange(sub.n_rows), rhs, upper)
    return _timed(sub, sub._model)


def _ray(sub: Subproblem, rhs: np.ndarray, cut_tol: float):
    """A Farkas ray of an infeasible subproblem (spec 6.6 C1): ``(violation, const, coeff, slacks)``.

    First the sum-normalised ray LP: ``max a.rhs`` s.t. ``A'a <= 0``, inequality parts ``>= 0``
    summing to at most 1, ``mu`` free; only its objective depends on the boundary values, so it
    is built once per block and warm-started.  If HiGHS cannot solve it (measured: solve errors
    on the paper-scale grid at eps = 10/km), or the violation is below the master's tolerance
    (then step 3 of :func:`solve_block` needs slacks), the elastic LP ``min sum s`` (every row
    relaxed by a slack) gives a ray through its duals, normalised by ``|pi| <= 1``.  Both rays
    are valid; the sum-normalised ones made Benders converge in far fewer iterations in tests.
    """
    ray = _ray_lp(sub, rhs)
    if ray is not None and ray[0] > cut_tol:
        return ray[0], ray[1][0], ray[1][1], None
    value, (const, coeff), slack = _elastic(sub, rhs)
    if ray is not None and ray[0] > value:
        return ray[0], ray[1][0], ray[1][1], slack
    return value, const, coeff, slack


def _ray_lp(sub: Subproblem, rhs: np.ndarray):
    if sub._ray is None:
        n_mu = len(sub.internal)
        n_ineq = sub.n_rows - n_mu
        lower = np.concatenate([np.zeros(n_ineq), np.full(n_mu, -INF)])
        norm = sp.csr_matrix(np.concatenate([np.ones(n_ineq), np.zeros(n_mu)])[None, :])
        a = sp.vstack([sub.a.T.tocsr(), norm], format="csr")
        sub._ray = _block_lp(
            -rhs, a, np.full(a.shape[0], -INF), np.concatenate([np.zeros(sub.a.shape[1]), [1.0]]), lower
        )
    else:
        sub._ray.set_costs(-rhs)
    res = _timed(sub, sub._ray)
    if res.objective is None:
        return None
    const, coeff = sub.cut(res.x, None)
    return const + coeff @ rhs[sub.n_alpha + sub.n_link : sub.n_alpha + 2 * sub.n_link], (const, coeff)


def _elastic(sub: Subproblem, rhs: np.ndarray):
    """``(violation, cut, slacks)`` of the elastic LP; slacks are per row (net for equalities)."""
    n_mu = len(sub.internal)
    if sub._elastic is None:
        slack_neg = sp.csr_matrix(
            (-np.ones(n_mu), (np.arange(sub.n_rows - n_mu, sub.n_rows), np.arange(n_mu))), shape=(sub.n_rows, n_mu)
        )
        a = sp.hstack([sub.a, sp.identity(sub.n_rows, format="csr"), slack_neg], format="csr")
        cost = np.concatenate([np.zeros(sub.a.shape[1]), np.ones(sub.n_rows + n_mu)])
        upper = np.concatenate([np.full(sub.n_rows - n_mu, INF), np.ones(n_mu)])
        sub._elastic = _block_lp(cost, a, rhs, upper)
    else:
        rows = np.arange(sub.n_alpha, sub.n_alpha + 2 * sub.n_link)
        sub._elastic.set_row_bounds(rows, rhs[rows], np.full(len(rows), INF))
    res = _timed(sub, sub._elastic)
    if res.objective is None:
        raise RuntimeError(f"subproblem {sub.block}: the elastic LP failed ({res.status})")
    n_x = sub.a.shape[1]
    slack = res.x[n_x : n_x + sub.n_rows].copy()
    slack[sub.n_rows - n_mu :] -= res.x[n_x + sub.n_rows :]
    return res.objective, sub.cut(res.row_dual, None), slack
