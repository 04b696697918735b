"""A structured interior-point method for the perturbation LP, with certified bounds (spec 2.2).

The full LP ``min <C_hat, Z>`` s.t. ``Z[i, k] <= exp(eps d_ij) Z[j, k]`` (every neighbouring
pair, every output), ``sum_k Z[i, k] = 1``, ``Z >= 0`` has far more rows (N_pairs * K, 373k
on the paper's grid after presolve) than columns (N * K = 50k).  A general interior-point
code such as HiGHS's IPX works with normal equations in the row space; here the Newton
system is reduced to the *column* space, where it is block-diagonal by output -- the mDP rows
of output k touch only column k -- plus the N row sums:

    H_k = G' D_k G + diag(zx_k / x_k)   (N x N, one per output),
    (sum_k H_k^-1) dy = r                (the N x N Schur complement of the row sums).

One iteration factors K dense N x N blocks (LAPACK ``potrf``/``potri``) and one N x N Schur
complement.  Mehrotra predictor-corrector, started strictly primal feasible at the uniform
mechanism.

Every iteration is *certified*: the upper bound is the loss of an exactly eps-mDP mechanism
(the iterate made stochastic and mixed with the uniform mechanism just enough to satisfy
every mDP row of the original graph, :func:`~dpmodels.metricdp.mechanism.repair`), and the
lower bound is the weak-duality bound ``sum_i min_k (C_hat + G'u)[i, k]`` of the clipped
multipliers ``u >= 0``, valid for any u (:func:`dual_bound`).  The run stops when the
certified relative gap is below ``gap``.

Presolve: a pair ``(i, j)`` whose row is implied by a two-hop path ``i - m - j`` with
``d_im + d_mj = d_ij`` (collinear cells of a grid) is left out of the solve; the repair and
the audit still check every original row.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import scipy.linalg as sla
import scipy.sparse as sp
from scipy.linalg import lapack

from dpmodels.core.errors import DataValidationError

from .data import MDPGraph, MDPInstance
from .mechanism import repair

__all__ = ["IPMResult", "essential_pairs", "dual_bound", "structured_ipm"]

#: Dense blocks are K * N^2 doubles; above this many bytes the method refuses (use Benders or highs).
MAX_BLOCK_BYTES = 6e9


@dataclass
class IPMResult:
    """Certified incumbent and bound of the structured IPM, with its per-iteration history.

    ``multipliers`` and ``row_duals`` certify ``lower_bound``: ``multipliers[k, p] >= 0`` is the
    multiplier of the mDP row of pair ``p`` of ``instance.graph`` and output ``k`` (0 for pairs left
    out by presolve) and ``row_duals[i] = min_k (C_hat + G'u)[i, k]`` that of record i's row sum,
    so ``C_hat + G'u - row_duals >= 0`` (dual feasibility of the full LP) and ``row_duals.sum()``
    is ``lower_bound``.  None before the first iteration.
    """

    z: np.ndarray | None
    upper_bound: float
    lower_bound: float
    status: str
    iterations: int
    history: pd.DataFrame
    info: dict = field(default_factory=dict)
    multipliers: np.ndarray | None = None
    row_duals: np.ndarray | None = None

    @property
    def relative_gap(self) -> float:
        return (self.upper_bound - self.lower_bound) / max(abs(self.upper_bound), 1e-12)


# ---------------------------------------------------------------------- presolve and certificates
def essential_pairs(graph: MDPGraph, rtol: float = 1e-9) -> np.ndarray:
    """Mask of the ordered pairs whose mDP rows are not implied by a two-hop path.

    Row ``z_i <= a_ij z_j`` follows from ``z_i <= a_im z_m`` and ``z_m <= a_mj z_j`` whenever
    ``a_im a_mj <= a_ij``, i.e. ``d_im + d_mj <= d_ij`` (equality, by the triangle inequality).
    ``rtol`` admits rounding: leaving a row out only relaxes the LP, so the dual bound stays a
    bound whatever is dropped, and the repair re-checks every original row.
    """
    n = graph.n
    dist = sp.csr_matrix((graph.dist, (graph.src, graph.dst)), shape=(n, n)).toarray()
    linked = sp.csr_matrix((np.ones(graph.n_pairs), (graph.src, graph.dst)), shape=(n, n)).toarray() > 0
    keep = np.ones(graph.n_pairs, dtype=bool)
    for p, (i, j) in enumerate(zip(graph.src, graph.dst, strict=True)):
        mids = np.flatnonzero(linked[i] & linked[:, j])
        if len(mids) and (dist[i, mids] + dist[mids, j] <= dist[i, j] * (1 + rtol)).any():
            keep[p] = False
    return keep


def dual_bound(weighted_cost_T: np.ndarray, gt_u: np.ndarray) -> float:
    """``sum_i min_k (C_hat + G'u)[i, k]``, a lower bound on the LP for any ``u >= 0``.

    For feasible Z: <C_hat, Z> >= sum_ik Z_ik (y_i - (G'u)_ik) = sum_i y_i - u'GZ >= sum_i y_i,
    since each row of Z sums to 1, Z >= 0, GZ <= 0 and u >= 0.  Arrays are output-major (K x N).
    """
    return float(_row_duals(weighted_cost_T, gt_u).sum())


def _row_duals(weighted_cost_T: np.ndarray, gt_u: np.ndarray) -> np.ndarray:
    """``y_i = min_k (C_hat + G'u)[i, k]``: the row-sum multipliers that make ``u`` a dual
    feasible point of the full LP (every reduced cost ``C_hat + G'u - y >= 0``)."""
    return (weighted_cost_T + gt_u).min(axis=0)


# ---------------------------------------------------------------------- the method
class _Blocks:
    """The mDP rows in output-major layout: ``GX[k, p] = X[k, src_p] - a_p X[k, dst_p]``."""

    def __init__(self, src, dst, coef, n: int):
        self.src, self.dst, self.coef, self.n = src, dst, coef, n
        p = len(src)
        g = sp.csr_matrix(
            (np.concatenate([np.ones(p), -coef]), (np.tile(np.arange(p), 2), np.concatenate([src, dst]))),
            shape=(p, n),
        )
        self.gt = g.T.tocsr()
        # G' diag(d) G has entries (s,s): d, (t,t): a^2 d, (s,t) and (t,s): -a d; ``gather`` sums
        # the contributions of every pair into the distinct flat positions of an N x N block
        pos = np.concatenate([src * n + src, dst * n + dst, src * n + dst, dst * n + src])
        wts = np.concatenate([np.ones(p), coef**2, -coef, -coef])
        self.positions, slot = np.unique(pos, return_inverse=True)
        self.gather = sp.csr_matrix((wts, (slot, np.tile(np.arange(p), 4))), shape=(len(self.positions), p))

    def apply(self, x: np.ndarray) -> np.ndarray:
        return x[:, self.src] - self.coef * x[:, self.dst]

    def apply_t(self, u: np.ndarray) -> np.ndarray:
        return np.asarray(self.gt @ u.T).T

    def normal(self, d: np.ndarray, diag: np.ndarray, out: np.ndarray) -> np.ndarray:
        """``G' diag(d_k) G + diag(diag_k)`` for every output k, densely into ``out`` (K x N x N,
        reused across iterations: first-touching 200 MB each time cost more than the LAPACK)."""
        K, n = diag.shape
        flat = out.reshape(K, n * n)
        flat.fill(0.0)
        flat[:, self.positions] = (self.gather @ d.T).T
        out[:, np.arange(n), np.arange(n)] += diag
        return out


class NumericalBreakdown(ArithmeticError):
    """A Newton block no ridge can make positive definite (non-finite iterates)."""


def _invert_blocks(h: np.ndarray) -> np.ndarray:
    """In-place inverse of every SPD block (Cholesky); a block that fails gets a growing ridge
    (an inexact Newton step: the certificates do not depend on it).  float64 throughout: float32
    factors were slower in a one-off timing with OpenBLAS 0.3.31 on 500 x 500 blocks."""
    n = h.shape[1]
    low = np.tril_indices(n, -1)
    for k in range(h.shape[0]):
        ridge = 0.0
        scale = float(np.abs(np.diag(h[k])).max())
        while True:
            block = h[k] if ridge == 0 else h[k] + ridge * np.eye(n)
            c, info = lapack.dpotrf(block, lower=1, clean=0)
            if info == 0:
                inv, info = lapack.dpotri(c, lower=1)
                if info == 0:
                    break
            ridge = max(1e-12 * scale, ridge * 100)
            if not np.isfinite(ridge) or ridge > scale:
                raise NumericalBreakdown(f"Newton block {k} is not positive definite (diagonal scale {scale:g})")
        inv[low[1], low[0]] = inv[low]  # potri fills the lower triangle only
        h[k] = inv
    return h


def _schur(hinv: np.ndarray):
    """Cholesky factor of the row sums' Schur complement ``sum_k H_k^-1``; non-finite entries
    (LAPACK passes NaNs through with info 0, so a bad block shows up here) or a factorisation
    failure are a breakdown."""
    total = hinv.sum(axis=0)
    if not np.isfinite(total).all():
        raise NumericalBreakdown("non-finite Newton blocks")
    try:
        return sla.cho_factor(total, lower=True)
    except np.linalg.LinAlgError as err:
        raise NumericalBreakdown(f"the row sums' Schur complement is not positive definite: {err}") from err


def _max_step(v: np.ndarray, dv: np.ndarray) -> float:
    """Largest step in [0, 1/0.99] keeping ``v + step dv >= 0``."""
    neg = dv < 0
    return float(min(1.0 / 0.99, (-v[neg] / dv[neg]).min())) if neg.any() else 1.0 / 0.99


def structured_ipm(
    instance: MDPInstance,
    *,
    gap: float = 1e-3,
    max_iter: int = 100,
    time_limit: float | None = None,
    presolve: bool = True,
    step_frac: float = 0.99,
    progress: bool = False,
) -> IPMResult:
    """Solve the full perturbation LP to a certified relative ``gap`` (see the module docstring).

    Returns the repaired (exactly eps-mDP) mechanism of the best certified upper bound, the best
    certified lower bound, status ``"gap reached"``, ``"max_iter"``, ``"time limit"`` or ``"stalled"`` (two
    steps in a row shorter than 1e-3: the Newton directions have lost accuracy), and a
    history of both bounds per iteration.
    """
    if not 0 <= gap < 1:
        raise DataValidationError("gap", f"must be in [0, 1), got {gap!r}")
    N, K = instance.N, instance.K
    if K * N * N * 8 > MAX_BLOCK_BYTES:
        raise DataValidationError(
            "instance", f"N = {N}, K = {K}: the dense N x N blocks need {K * N * N * 8 / 1e9:.1f} GB; use mdp_benders"
        )
    start = time.perf_counter()
    g = instance.graph
    keep = essential_pairs(g) if presolve else np.ones(g.n_pairs, dtype=bool)
    rows = _Blocks(g.src[keep], g.dst[keep], g.coef[keep], N)
    c = np.ascontiguousarray(instance.weighted_cost.T)  # K x N, output-major
    state = _start(c, rows, K)
    best = {"ub": np.inf, "lb": -np.inf, "z": None, "u": None, "y": None}
    history, status = [], "max_iter"
    buffer = np.empty((K, N, N))
    for it in range(1, max_iter + 1):
        if time_limit is not None and time.perf_counter() - start > time_limit:
            status = "time limit"
            break
        tick = time.perf_counter()
        x, s, u, y, zx = state
        try:
            hinv = _invert_blocks(rows.normal(u / s, zx / x, buffer))
            schur = _schur(hinv)
        except NumericalBreakdown:
            status = "stalled"  # the certified bounds so far stand
            break
        factor_s = time.perf_counter() - tick
        state, mu, ap, ad = _mehrotra_step(c, rows, state, hinv, schur, step_frac)
        x, s, u, y, zx = state
        u_plus = np.maximum(u, 0.0)
        y_cert = _row_duals(c, rows.apply_t(u_plus))
        lb = float(y_cert.sum())
        z, t_mix = repair(instance, x.T)
        ub = float((instance.weighted_cost * z).sum())
        if ub < best["ub"]:
            best.update(ub=ub, z=z)
        if lb > best["lb"]:
            best.update(lb=lb, u=u_plus, y=y_cert)
        rel = (best["ub"] - best["lb"]) / max(abs(best["ub"]), 1e-12)
        history.append(
            {
                "iteration": it,
                "LB": best["lb"],
                "best UB": best["ub"],
                "gap": rel,
                "mu": mu,
                "primal step": ap,
                "dual step": ad,
                "uniform weight in repair": t_mix,
                "factor s": factor_s,
                "elapsed s": time.perf_counter() - start,
            }
        )
        if progress:
            print(f"  iteration {it:3d}  LB {best['lb']:.8g}  UB {best['ub']:.8g}  gap {rel:.3g}", flush=True)
        if rel <= gap:
            status = "gap reached"
            break
        if max(ap, ad) < 1e-3 and len(history) > 1 and max(history[-2]["primal step"], history[-2]["dual step"]) < 1e-3:
            status = "stalled"  # numerical limit of the Newton solves: the certified bounds stand
            break
    info = {
        "pairs in the solve": int(keep.sum()),
        "pairs implied (presolve)": int((~keep).sum()),
        "seconds": time.perf_counter() - start,
    }
    multipliers = None
    if best["u"] is not None:
        multipliers = np.zeros((K, g.n_pairs))
        multipliers[:, keep] = best["u"]
    return IPMResult(
        best["z"], best["ub"], best["lb"], status, len(history), pd.DataFrame(history), info, multipliers, best["y"]
    )


def _newton(c, rows: _Blocks, state, hinv, schur, rx, rs, refine: int = 3):
    """The Newton direction for complementarity targets ``rx`` (x zx) and ``rs`` (s u), with the
    primal and dual residuals of ``state``; ``refine`` rounds of iterative refinement recover the
    accuracy the explicit block inverses lose as the iterates near the boundary."""
    x, s, u, y, zx = state
    r_p = 1.0 - x.sum(axis=0)
    r_g = -rows.apply(x) - s
    r_d = c - y[None, :] + rows.apply_t(u) - zx
    step = _reduced_solve(rows, state, hinv, schur, r_p, r_g, r_d, rx, rs)
    scale = max(_amax(r_d), _amax(rx / x), _amax(rs / s), 1e-300)
    for _ in range(refine):
        dx, ds, dy, du, dzx = step
        # equations 2, 4 and 5 hold by construction; refine the row sums (1) and dual rows (3)
        e_p = r_p - dx.sum(axis=0)
        e_d = r_d - (dy[None, :] - rows.apply_t(du) + dzx)
        if max(_amax(e_p), _amax(e_d) / scale) < 1e-12:
            break
        fix = _reduced_solve(rows, state, hinv, schur, e_p, np.zeros_like(r_g), e_d, 0.0, 0.0)
        step = tuple(a + b for a, b in zip(step, fix, strict=True))
    return step


def _amax(a) -> float:
    return float(np.abs(a).max(initial=0.0))


def _reduced_solve(rows: _Blocks, state, hinv, schur, r_p, r_g, r_d, rx, rs):
    """Solve the Newton system with right-hand sides (r_p, r_g, r_d, rx, rs) by eliminating
    dzx, ds and du, then dx per output block, then dy through the Schur complement."""
    x, s, u, y, zx = state
    q = r_d + rows.apply_t((rs - u * r_g) / s) - rx / x
    K, n = q.shape
    # sum_k H_k^-1 q_k as one flat product (the blocks are symmetric); memory-bound, measured 2x einsum
    dy = sla.cho_solve(schur, r_p + (q.reshape(1, K * n) @ hinv.reshape(K * n, n))[0])
    dx = np.matmul(hinv, (dy[None, :] - q)[:, :, None])[:, :, 0]
    ds = r_g - rows.apply(dx)
    du = (rs - u * ds) / s
    dzx = (rx - zx * dx) / x
    return dx, ds, dy, du, dzx


def _steps(state, d) -> tuple[float, float]:
    """Largest primal and dual steps in [0, 1/0.99] keeping (x, s) and (zx, u) non-negative."""
    x, s, u, _, zx = state
    dx, ds, _, du, dzx = d
    return min(_max_step(x, dx), _max_step(s, ds)), min(_max_step(zx, dzx), _max_step(u, du))


def _mehrotra_step(c, rows: _Blocks, state, hinv, schur, step_frac: float, correctors: int = 2):
    """One predictor-corrector step with up to ``correctors`` Gondzio centrality correctors
    (each re-uses the factorisation: one more solve instead of one more iteration); returns the
    new state, the old mu and the two step lengths."""
    x, s, u, y, zx = state
    n_cmp = x.size + s.size
    mu = ((x * zx).sum() + (s * u).sum()) / n_cmp
    dx, ds, dy, du, dzx = _newton(c, rows, state, hinv, schur, -x * zx, -s * u)
    ap, ad = (min(1.0, a) for a in _steps(state, (dx, ds, dy, du, dzx)))
    mu_aff = ((x + ap * dx) * (zx + ad * dzx)).sum() + ((s + ap * ds) * (u + ad * du)).sum()
    target = (mu_aff / n_cmp / mu) ** 3 * mu
    d = _newton(c, rows, state, hinv, schur, target - x * zx - dx * dzx, target - s * u - ds * du)
    ap, ad = _steps(state, d)
    for _ in range(correctors):
        d_new = _gondzio(rows, state, hinv, schur, d, ap, ad, target)
        ap_new, ad_new = _steps(state, d_new)
        if min(ap_new, ad_new) < 1.01 * min(ap, ad):
            break
        d, ap, ad = d_new, ap_new, ad_new
    ap, ad = min(1.0, step_frac * ap), min(1.0, step_frac * ad)
    dx, ds, dy, du, dzx = d
    new = (x + ap * dx, s + ap * ds, u + ad * du, y + ad * dy, zx + ad * dzx)
    return new, mu, ap, ad


def _gondzio(rows: _Blocks, state, hinv, schur, d, ap: float, ad: float, target: float, beta: float = 10.0):
    """Gondzio's corrector: at a longer trial step, pull the complementarity products back into
    ``[target / beta, beta target]`` (upper outliers only down to ``-beta target``)."""
    x, s, u, _, zx = state
    dx, ds, dy, du, dzx = d
    tp, td = min(1.0, 1.5 * ap + 0.1), min(1.0, 1.5 * ad + 0.1)
    vx = (x + tp * dx) * (zx + td * dzx)
    vs = (s + tp * ds) * (u + td * du)
    rx = np.maximum(np.clip(vx, target / beta, beta * target) - vx, -beta * target)
    rs = np.maximum(np.clip(vs, target / beta, beta * target) - vs, -beta * target)
    zero_p, zero_g, zero_d = np.zeros(x.shape[1]), np.zeros_like(s), np.zeros_like(x)
    fix = _reduced_solve(rows, state, hinv, schur, zero_p, zero_g, zero_d, rx, rs)
    return tuple(a + b for a, b in zip(d, fix, strict=True))


def _start(c: np.ndarray, rows: _Blocks, K: int):
    """Strictly feasible, roughly centred start: the uniform mechanism (every mDP row has slack
    ``(a - 1) / K``), ``u = theta / s`` and the row-sum multipliers ``y`` low enough that the
    reduced costs ``zx = c - y + G'u`` are at least ``theta / x``."""
    n = c.shape[1]
    x = np.full((K, n), 1.0 / K)
    s = -rows.apply(x)
    theta = max(float(np.abs(c).mean()) / K, 1e-8)
    u = theta / s
    reduced = c + rows.apply_t(u)
    y = reduced.min(axis=0) - theta * K
    zx = reduced - y[None, :]
    return x, s, u, y, zx
