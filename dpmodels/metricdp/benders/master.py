"""The Benders master of the perturbation LP: the boundary records' perturbation vectors ``z_Y``
and one ``w_l`` per block with internal records, on a persistent HiGHS model (spec 6.2, 6.3).

The master starts from the mDP rows among boundary records, their unit-measure rows and the
Property-3.2 rows ``z_i <= exp(eps D_ij) z_j`` (:func:`master_init_cuts`), added up front or
kept aside as :class:`LazyRows` and added when violated.  The subproblems' cuts
(:mod:`.subproblems`) arrive through :meth:`Master.add_cut`, one sparse row each, and the
master is re-solved warm (dual simplex) within Benders' deadline (:func:`solve_master`); its
lower bound is certified from its duals whatever their accuracy (:func:`master_bound`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from dpmodels.core.errors import DataValidationError

from ..data import MDPInstance, Partition
from ..lp import INF, Highs, mdp_rows, record_simplices, safe_lower_bound, unit_rows, with_width
from .subproblems import Subproblem, TimeUp

__all__ = ["master_init_cuts", "Master", "LazyRows", "build_master", "master_bound", "solve_master", "MASTER_TOLERANCE"]

#: HiGHS's primal and dual feasibility tolerances on the master.  Its lower bound is certified
#: from its duals (:func:`master_bound`), which pays for every dual infeasibility; at HiGHS's
#: default 1e-7 (in scaled space, under e^(eps d) up to 5e8) the certified bound stalled 0.7%
#: below the optimum on the 20 x 25 grid of 1 km cells at eps = 10/km, at 1e-10 it reached it.
MASTER_TOLERANCE = 1e-10


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
    (:func:`.driver.benders` also takes ``"lazy"``: all of them, added to the master when violated);
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
    last_solve_s: float = 0.0  # the latest solve's seconds (see :func:`solve_master`)

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
    a = sp.vstack([with_width(r, width) for r in rows], format="csr")
    n_mdp = rows[0].shape[0] + rows[2].shape[0]
    lower = np.concatenate([np.full(rows[0].shape[0], -INF), np.ones(len(y_order)), np.full(rows[2].shape[0], -INF)])
    upper = np.concatenate([np.zeros(rows[0].shape[0]), np.ones(len(y_order)), np.zeros(rows[2].shape[0])])
    cost = np.concatenate([instance.weighted_cost[y_order].ravel(), np.ones(len(w_index))])
    model = Highs(cost, np.zeros(width), np.full(width, INF), a, lower, upper, tolerance=MASTER_TOLERANCE)
    model.simplices = record_simplices(rows[0].shape[0], len(y_order), K)  # the boundary records' row sums
    return Master(model, n_z, w_index), n_mdp


def master_bound(master: Master, w_caps: np.ndarray) -> float:
    """A lower bound from the master's duals that holds whatever their accuracy
    (:func:`~dpmodels.metricdp.lp.safe_lower_bound`): each boundary record's ``z`` kept on its
    simplex (its row sum), and ``0 <= w_l <=`` the block's largest possible cost (``sum_i max_k
    p_i c_ik``; valid cuts never push ``w_l`` above it).  HiGHS's reported objective is *not* a
    bound when its duals are inexact (measured at eps = 10/km, 1 km cells).

    Parameters
    ----------
    master : Master
        The master, solved (its HiGHS model holds the duals).
    w_caps : numpy.ndarray
        Per block with internal records, the largest cost its ``w_l`` can stand for.
    """
    lower = np.zeros(master.n_z + len(w_caps))
    upper = np.concatenate([np.ones(master.n_z), w_caps])
    return safe_lower_bound(master.model, lower, upper, simplices=master.model.simplices)


def solve_master(master: Master, lazy: LazyRows | None, it: int, deadline: float | None, tol: float = 1e-9):
    """Solve the master; with lazy Property-3.2 rows, add the violated ones and re-solve until none is.

    A solve is not started when less time is left than the latest one took: HiGHS checks its time
    limit between simplex iterations only, and on the 10 x 25 grid at eps = 1/km (231 of 250
    records on the boundary) every warm master solve took about 60 s for as few as 6 iterations,
    so a solve started 19 s before the deadline ended 43 s past it.

    Parameters
    ----------
    master : Master
        The master to solve (warm-started from its previous solve).
    lazy : LazyRows or None
        The Property-3.2 rows kept aside, added when violated (None: all are in the master).
    it : int
        The Benders iteration (named in the error when the master is not feasible).
    deadline : float or None
        ``time.time()`` by which the solve must end (:class:`TimeUp` otherwise).
    tol : float
        The violation above which a lazy row is added.

    Returns
    -------
    tuple
        HiGHS's result and the number of lazy rows added.
    """
    added = 0
    while True:
        if deadline is not None:
            left = deadline - time.time()
            if left <= master.last_solve_s:
                raise TimeUp
            master.model.set_time_limit(left)
        res = master.model.solve()
        master.last_solve_s = res.seconds
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
