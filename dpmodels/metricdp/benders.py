"""Benders decomposition of the perturbation LP over a record partition (spec 5-6).

The master holds the boundary records' perturbation vectors ``z_Y`` and one ``w_l`` per block
with internal records; each subproblem derives its internal vectors given ``z_Y``.  A
feasible subproblem returns its optimum and duals: the optimality cut ``w_l >= phi_l(z_Y)``
(spec erratum A1: ``w_l`` is the internal cost only).  An infeasible one returns a ray of the
normalised ray LP: the feasibility cut ``phi_l(z_Y) <= 0``.  Cuts are added to a persistent
HiGHS master (warm-started dual simplex), one per block per iteration (multi-cut); the
subproblem solves of an iteration go through the ``executor``.

``phi_l(z_Y) = const + sum coeff * z_Y`` is kept as (constant, coefficients over the
block's boundary columns), so a cut is one sparse row of the master.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import scipy.sparse as sp

from dpmodels.core.errors import DataValidationError
from dpmodels.core.executors import map_tasks, resolve_executor

from .data import MDPInstance, Partition
from .lp import INF, Highs, mdp_rows, safe_lower_bound, unit_rows
from .mechanism import expected_loss, exponential_mechanism, repair

__all__ = ["Subproblem", "BendersResult", "benders", "master_init_cuts"]


# ---------------------------------------------------------------------- subproblems
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
        a = sp.vstack([_width(alpha, n_x), beta, gamma, unit_rows(len(internal), K)], format="csr")
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


def _width(a: sp.spmatrix, n: int) -> sp.csr_matrix:
    a = sp.csr_matrix(a)
    return sp.csr_matrix((a.data, a.indices, a.indptr), shape=(a.shape[0], n))


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
        sub._model = Highs(
            sub.cost, np.zeros(sub.a.shape[1]), np.full(sub.a.shape[1], INF), sub.a, rhs, upper, presolve=False
        )
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
        sub._ray = Highs(
            -rhs,
            lower,
            np.full(sub.n_rows, INF),
            a,
            np.full(a.shape[0], -INF),
            np.concatenate([np.zeros(sub.a.shape[1]), [1.0]]),
            presolve=False,
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
        sub._elastic = Highs(cost, np.zeros(a.shape[1]), np.full(a.shape[1], INF), a, rhs, upper, presolve=False)
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


# ---------------------------------------------------------------------- master
def master_init_cuts(
    instance: MDPInstance,
    part: Partition,
    y_order: np.ndarray,
    mode: str = "all",
    max_coeff: float = 1e12,
    max_rows: int | None = 200_000,
):
    """Property 3.2 rows ``z_i <= exp(eps D_ij) z_j`` for non-neighbouring boundary pairs (spec 6.2).

    ``mode``: ``"none"``, ``"two-hop"`` (pairs joined by a path of two mDP edges) or ``"all"``
    (:func:`benders` also takes ``"lazy"``: all of them, added to the master when violated);
    pairs whose coefficient exceeds ``max_coeff`` are vacuous and skipped; if more than
    ``max_rows`` rows remain, the tightest pairs (smallest D) are kept.
    """
    g, K = instance.graph, instance.K
    if mode == "none" or len(y_order) < 2:
        return np.empty(0, int), np.empty(0, int), np.empty(0)
    if mode not in ("two-hop", "all"):
        raise DataValidationError("init_cuts", f"must be 'lazy', 'all', 'two-hop' or 'none', got {mode!r}")
    dist = g.shortest_paths(y_order)[:, y_order]
    if mode == "two-hop":
        adj = g.adjacency().astype(bool).astype(np.int32)
        two = (adj @ adj)[y_order][:, y_order].toarray() > 0
        dist = np.where(two, dist, np.inf)
    neighbour = np.zeros((len(y_order),) * 2, dtype=bool)
    y_pos = np.full(instance.N, -1)
    y_pos[y_order] = np.arange(len(y_order))
    both = (y_pos[g.src] >= 0) & (y_pos[g.dst] >= 0)
    neighbour[y_pos[g.src[both]], y_pos[g.dst[both]]] = True
    np.fill_diagonal(neighbour, True)
    keep = ~neighbour & np.isfinite(dist) & (instance.epsilon * dist <= np.log(max_coeff))
    i, j = np.nonzero(keep)
    d = dist[i, j]
    if max_rows is not None and len(i) * K > max_rows:
        order = np.argsort(d, kind="stable")[: max_rows // K]
        i, j, d = i[order], j[order], d[order]
    return i, j, np.exp(instance.epsilon * d)


@dataclass
class Master:
    """The master LP over (z_Y, w) on a persistent HiGHS model."""

    model: Highs
    n_z: int
    w_index: dict[int, int]  # block -> column of w_l

    def add_cut(self, block: int | None, link_cols: np.ndarray, const: float, coeff: np.ndarray) -> None:
        """Optimality cut ``w_l - coeff z >= const`` (``block``) or feasibility cut ``coeff z <= -const`` (None)."""
        keep = coeff != 0
        cols, vals = link_cols[keep], coeff[keep]
        if block is None:
            row = sp.csr_matrix((vals, (np.zeros(len(cols), int), cols)), shape=(1, self.n_z + len(self.w_index)))
            self.model.add_rows(row, [-INF], [-const])
        else:
            cols = np.concatenate([cols, [self.w_index[block]]])
            vals = np.concatenate([-vals, [1.0]])
            row = sp.csr_matrix((vals, (np.zeros(len(cols), int), cols)), shape=(1, self.n_z + len(self.w_index)))
            self.model.add_rows(row, [const], [INF])


@dataclass
class LazyRows:
    """Property-3.2 rows kept outside the master and added when the master's point violates them.

    Every row is valid for the full LP, so the master stays a relaxation (its optimum a lower
    bound) whichever of them it holds; adding only the violated ones keeps the master small
    (measured: the eager rows made each warm-started master solve ~10x slower).
    """

    i: np.ndarray  # positions in the master's Y order
    j: np.ndarray
    coef: np.ndarray
    added: np.ndarray  # (pairs, K) bool

    CHUNK = 20_000

    def violated(self, zy: np.ndarray, tol: float) -> tuple[np.ndarray, np.ndarray]:
        """(pair, output) indices of rows ``z_i - coef z_j <= 0`` violated by more than ``tol``."""
        found_p, found_k = [np.empty(0, np.int64)], [np.empty(0, np.int64)]
        for lo in range(0, len(self.i), self.CHUNK):
            sl = slice(lo, lo + self.CHUNK)
            gap = zy[self.i[sl]] - self.coef[sl, None] * zy[self.j[sl]]
            p, k = np.nonzero((gap > tol) & ~self.added[sl])
            found_p.append(p + lo)
            found_k.append(k)
        return np.concatenate(found_p), np.concatenate(found_k)

    def add_to(self, master: Master, pairs: np.ndarray, ks: np.ndarray) -> None:
        self.added[pairs, ks] = True
        n, K = len(pairs), self.added.shape[1]
        cols = np.column_stack([self.i[pairs] * K + ks, self.j[pairs] * K + ks]).ravel()
        vals = np.column_stack([np.ones(n), -self.coef[pairs]]).ravel()
        a = sp.csr_matrix((vals, (np.repeat(np.arange(n), 2), cols)), shape=(n, master.n_z + len(master.w_index)))
        master.model.add_rows(a, np.full(n, -INF), np.zeros(n))


def build_master(
    instance: MDPInstance,
    part: Partition,
    y_order: np.ndarray,
    subs: list[Subproblem],
    init_cuts: str = "all",
    max_coeff: float = 1e12,
    max_rows: int = 200_000,
) -> tuple[Master, int]:
    g, K = instance.graph, instance.K
    y_pos = np.full(instance.N, -1)
    y_pos[y_order] = np.arange(len(y_order))
    both = (y_pos[g.src] >= 0) & (y_pos[g.dst] >= 0)
    n_z = len(y_order) * K
    w_index = {s.block: n_z + t for t, s in enumerate(subs)}
    width = n_z + len(w_index)
    ii, jj, cc = master_init_cuts(instance, part, y_order, init_cuts, max_coeff, max_rows)
    rows = [
        mdp_rows(y_pos[g.src[both]], y_pos[g.dst[both]], g.coef[both], np.arange(len(y_order)), K),
        unit_rows(len(y_order), K),
        mdp_rows(ii, jj, cc, np.arange(len(y_order)), K),
    ]
    a = sp.vstack([_width(r, width) for r in rows], format="csr")
    n_mdp = rows[0].shape[0] + rows[2].shape[0]
    lower = np.concatenate([np.full(rows[0].shape[0], -INF), np.ones(len(y_order)), np.full(rows[2].shape[0], -INF)])
    upper = np.concatenate([np.zeros(rows[0].shape[0]), np.ones(len(y_order)), np.zeros(rows[2].shape[0])])
    cost = np.concatenate([instance.weighted_cost[y_order].ravel(), np.ones(len(w_index))])
    model = Highs(cost, np.zeros(width), np.full(width, INF), a, lower, upper)
    return Master(model, n_z, w_index), n_mdp


# ---------------------------------------------------------------------- the driver
@dataclass
class BendersResult:
    """Incumbent perturbation matrix, bounds, status and the per-iteration history."""

    z: np.ndarray | None
    lower_bound: float
    upper_bound: float
    status: str
    iterations: int
    history: pd.DataFrame
    first_feasible: dict[int, int]
    info: dict

    @property
    def gap(self) -> float:
        return self.upper_bound - self.lower_bound

    @property
    def relative_gap(self) -> float:
        return self.gap / max(abs(self.upper_bound), 1e-12)


def benders(
    instance: MDPInstance,
    part: Partition,
    *,
    gap: float = 1e-3,
    gap_type: str = "relative",
    max_iter: int = 500,
    time_limit: float | None = None,
    init_cuts: str = "lazy",
    max_coeff: float = 1e12,
    max_init_rows: int = 200_000,
    opt_tol: float = 1e-9,
    stabilize: float = 0.5,
    executor=None,
    progress: bool = False,
) -> BendersResult:
    """Solve the perturbation LP by multi-cut Benders over ``part`` (spec 6.8).

    Stops when the best upper bound and the lower bound are within ``gap`` (``"absolute"``
    or ``"relative"``; the paper's setting is absolute 0.01), when an iteration at the master's
    own point adds no cut (optimal), at ``max_iter`` or at ``time_limit`` seconds.

    ``stabilize`` is the in-out weight (Ben-Ameur and Neto 2007; Fischetti, Ljubic and Sinnl
    2017) of the master's point in the separation point ``stabilize * y_master + (1 - stabilize)
    * y_core``; the core starts at the exponential mechanism's boundary rows (feasible for the
    full LP) and moves to every separation point at which all blocks are feasible.  Cuts are valid
    wherever they are separated, so the lower bound stays a bound; when no cut cuts the master's
    point off, the next iteration separates at the master's point itself (plain Kelley).
    ``stabilize = 1`` is the paper's unstabilised method.  Measured on the 8 x 10 notebook grid
    (balanced spectral partition, 6 blocks): 500 iterations ending at a 1.2% gap without it.
    """
    if gap_type not in ("absolute", "relative"):
        raise DataValidationError("gap_type", f"must be 'absolute' or 'relative', got {gap_type!r}")
    if not 0.0 < stabilize <= 1.0:
        raise DataValidationError("stabilize", f"must be in (0, 1], got {stabilize!r}")
    if (instance.cost < 0).any():
        raise DataValidationError("cost", "negative utility losses make the subproblem duals unbounded (spec C3)")
    start = time.perf_counter()
    deadline = None if time_limit is None else time.time() + time_limit
    y_order = part.all_boundary
    subs = build_subproblems(instance, part, y_order)
    for sub in subs:
        sub.deadline = deadline
    lazy = None
    if init_cuts == "lazy":
        ii, jj, cc = master_init_cuts(instance, part, y_order, "all", max_coeff, max_rows=None)
        lazy = LazyRows(ii, jj, cc, np.zeros((len(ii), instance.K), dtype=bool))
    master, _ = build_master(instance, part, y_order, subs, "none" if lazy else init_cuts, max_coeff, max_init_rows)
    build_s = time.perf_counter() - start
    w_caps = np.array([instance.weighted_cost[sub.internal].max(axis=1).sum() for sub in subs])
    core = _initial_core(instance, y_order, stabilize)
    kelley = core is None
    lb, ub, incumbent = -INF, INF, None
    history, first_feasible = [], {}
    status = "max_iter"
    with resolve_executor(executor) as pool:
        for it in range(1, max_iter + 1):
            try:
                mres, lazy_rows = _solve_master(master, lazy, it, deadline)
            except TimeUp:
                status = "time limit"
                break
            lb = max(lb, _master_bound(master, w_caps))
            z_master = np.clip(mres.x[: master.n_z], 0.0, 1.0)  # tolerance can leave -1e-9: times e^(eps d) it matters
            w = mres.x[master.n_z :]
            zy = z_master if kelley else stabilize * z_master + (1 - stabilize) * core
            tick = time.perf_counter()
            try:
                outcomes = _solve_blocks(subs, zy, pool)
            except TimeUp:
                status = "time limit"
                break
            sub_s = time.perf_counter() - tick
            feas_cuts = opt_cuts = cuts_off_master = 0
            ub_t = np.nan  # the loss of this iteration's mechanism, when every block is feasible
            all_feasible = True
            for sub, out in zip(subs, outcomes, strict=True):
                at_master = out.const + out.coeff @ z_master[sub.beta_pos]
                if not out.feasible:
                    all_feasible = False
                    master.add_cut(None, sub.beta_pos, out.const, out.coeff)
                    feas_cuts += 1
                    cuts_off_master += at_master > opt_tol
                    continue
                first_feasible.setdefault(sub.block, it)
                w_l = w[master.w_index[sub.block] - master.n_z]
                if w_l < out.value - opt_tol * max(1.0, abs(out.value)) or w_l < at_master - opt_tol * max(
                    1.0, abs(at_master)
                ):
                    master.add_cut(sub.block, sub.beta_pos, out.const, out.coeff)
                    opt_cuts += 1
                    cuts_off_master += w_l < at_master - opt_tol * max(1.0, abs(at_master))
            if all_feasible:  # the bound is the loss of the repaired, exactly mDP mechanism
                candidate, _ = repair(instance, _assemble(instance, y_order, zy, subs, outcomes))
                ub_t = expected_loss(instance, candidate)
                if ub_t < ub:
                    ub, incumbent = ub_t, candidate
            separated_at_master = kelley
            if all_feasible and stabilize < 1.0:
                core = zy
            kelley = core is None or cuts_off_master == 0
            gap_now = (ub - lb) / max(abs(ub), 1e-12) if gap_type == "relative" else ub - lb
            history.append(
                {
                    "iteration": it,
                    "LB": lb,
                    "UB_t": ub_t,
                    "best UB": ub,
                    "gap": gap_now,
                    "feasibility cuts": feas_cuts,
                    "optimality cuts": opt_cuts,
                    "infeasible subproblems": sum(not o.feasible for o in outcomes),
                    "Property-3.2 rows added": lazy_rows,
                    "master s": mres.seconds,
                    "subproblems s": sub_s,
                    "slowest subproblem s": max((o.seconds for o in outcomes), default=0.0),
                    "elapsed s": time.perf_counter() - start,
                }
            )
            if progress:
                print(f"  iteration {it:4d}  LB {lb:.8g}  UB {ub:.8g}  gap {gap_now:.3g}  cuts {feas_cuts}+{opt_cuts}")
            if feas_cuts + opt_cuts == 0 and separated_at_master:
                status = "optimal"
                break
            if gap_now <= gap:
                status = "gap reached"
                break
            if time_limit is not None and time.perf_counter() - start > time_limit:
                status = "time limit"
                break
    info = {
        "boundary records": len(y_order),
        "subproblems": len(subs),
        "build s": build_s,
        "seconds": time.perf_counter() - start,
        "master columns": master.n_z + len(master.w_index),
    }
    return BendersResult(incumbent, lb, ub, status, len(history), pd.DataFrame(history), first_feasible, info)


def _master_bound(master: Master, w_caps: np.ndarray) -> float:
    """A lower bound from the master's duals that holds whatever their accuracy
    (:func:`~dpmodels.metricdp.lp.safe_lower_bound`), over boxes that contain the master's
    optimum: ``0 <= z <= 1`` (row sums) and ``0 <= w_l <= `` the block's largest possible cost
    (``sum_i max_k p_i c_ik``; valid cuts never push ``w_l`` above it).  HiGHS's reported
    objective is *not* a bound when its duals are inexact (measured at eps = 10/km, 1 km cells)."""
    lower = np.zeros(master.n_z + len(w_caps))
    upper = np.concatenate([np.ones(master.n_z), w_caps])
    return safe_lower_bound(master.model, lower, upper)


def _initial_core(instance: MDPInstance, y_order: np.ndarray, stabilize: float) -> np.ndarray | None:
    """The exponential mechanism's boundary rows (feasible for the full LP, hence for every block),
    or None (plain Kelley until a feasible separation point is found) without output distances."""
    if stabilize >= 1.0 or instance.d_ro is None:
        return None
    return exponential_mechanism(instance)[y_order].ravel()


def _solve_master(master: Master, lazy: LazyRows | None, it: int, deadline: float | None, tol: float = 1e-9):
    """Solve the master; with lazy Property-3.2 rows, add the violated ones and re-solve until none is."""
    added = 0
    while True:
        if deadline is not None:
            if deadline <= time.time():
                raise TimeUp
            master.model.set_time_limit(deadline - time.time())
        res = master.model.solve()
        if res.status == "Time limit reached":
            raise TimeUp
        if res.objective is None:
            raise RuntimeError(f"Benders master is {res.status} at iteration {it} (cuts must keep it feasible)")
        if lazy is None:
            return res, added
        zy = res.x[: master.n_z].reshape(-1, lazy.added.shape[1])
        pairs, ks = lazy.violated(zy, tol)
        if len(pairs) == 0:
            return res, added
        lazy.add_to(master, pairs, ks)
        added += len(pairs)


def _solve_blocks(subs: list[Subproblem], zy: np.ndarray, pool) -> list[BlockOutcome]:
    if pool is None:  # in process: persistent, warm-started subproblem models
        return [solve_block(s, zy) for s in subs]
    return map_tasks(_solve_task, [(s, zy) for s in subs], executor=pool)


def _solve_task(task) -> BlockOutcome:
    sub, zy = task
    return solve_block(sub, zy)


def _assemble(instance: MDPInstance, y_order: np.ndarray, zy: np.ndarray, subs, outcomes) -> np.ndarray:
    """The full perturbation matrix in record order: master rows for Y, subproblem rows for each X_l."""
    K = instance.K
    z = np.zeros((instance.N, K))
    z[y_order] = zy.reshape(-1, K)
    for sub, out in zip(subs, outcomes, strict=True):
        z[sub.internal] = out.x.reshape(-1, K)
    return z
