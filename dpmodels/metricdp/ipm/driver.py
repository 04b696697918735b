"""A structured interior-point method for the perturbation LP, with certified bounds (spec 2.2).

The full LP ``min <C_hat, Z>`` s.t. ``Z[i, k] <= exp(eps d_ij) Z[j, k]`` (every neighbouring
pair, every output), ``sum_k Z[i, k] = 1``, ``Z >= 0`` has far more rows (N_pairs * K, 373k
on the paper's grid after presolve) than columns (N * K = 50k).  A general interior-point
code such as HiGHS's IPX works with normal equations in the row space; here the Newton
system is reduced to the *column* space, where it is block-diagonal by output -- the mDP rows
of output k touch only column k -- plus the N row sums:

    H_k = G' D_k G + diag(zx_k / x_k)   (N x N, one per output),
    (sum_k H_k^-1) dy = r                (the N x N Schur complement of the row sums).

The blocks are sparse (the mDP graph's pattern: about 12 neighbours per record on a 1 km
grid); in a reverse Cuthill-McKee order they factor in a band of half-width b (about twice a
grid's short side), and the dense Schur complement comes from the Takahashi recurrence on the
band factors: ``K N^2 b`` flops per iteration instead of the dense ``K N^3``, and ``K N b``
memory instead of ``K N^2`` (:mod:`~dpmodels.metricdp.ipm.linalg`, ``system="band"``; the
dense LAPACK path, ``system="dense"``, stays for small or badly banded graphs).  Mehrotra
predictor-corrector with Gondzio correctors (:mod:`~dpmodels.metricdp.ipm.step`), started
strictly primal feasible at the uniform mechanism.

Every iteration is *certified*: the upper bound is the loss of an exactly eps-mDP mechanism
(the iterate made stochastic and mixed with the uniform mechanism just enough to satisfy
every mDP row of the original graph, :func:`~dpmodels.metricdp.privacy_audit.repair`; near the
end also the iterate purified to a near-vertex, :mod:`~dpmodels.metricdp.ipm.recovery`), and the
lower bound is the weak-duality bound ``sum_i min_k (C_hat + G'u)[i, k]`` of the clipped
multipliers ``u >= 0``, valid for any u (:func:`dual_bound`).  The run stops when the
certified relative gap is below ``gap``.

Compiled kernels and time limits: the band kernels, the ratio test and the mDP closure are numba
functions cached on disk; on a cold cache their first call compiles them (measured 36 s on a
2-core machine).  :func:`warm_up` compiles them on a 4 x 5 grid once per process *before* the
clock of a run starts, so ``time_limit`` counts the method's own seconds whatever the cache
state; the seconds the warm-up took are reported as ``info["compile s"]``.  The bounds start
from :func:`~dpmodels.metricdp.lp.assignment_bound` (the LP without its mDP rows, >= 0), so a
run stopped early still reports a certified lower bound.

Presolve: a pair ``(i, j)`` whose row is implied by a two-hop path ``i - m - j`` with
``d_im + d_mj = d_ij`` (collinear cells of a grid) is left out of the solve; the repair and
the audit still check every original row.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import scipy.sparse as sp

from dpmodels.core.errors import DataValidationError

from ..data import MDPGraph, MDPInstance
from ..lp import assignment_bound
from ..privacy_audit import repair
from .linalg import NumericalBreakdown, Rows, newton_system
from .recovery import PURIFY_BELOW, purify
from .step import mehrotra_step, start

__all__ = ["IPMResult", "NumericalBreakdown", "essential_pairs", "dual_bound", "structured_ipm", "warm_up"]


@dataclass
class IPMResult:
    """Certified incumbent and bound of the structured IPM, with its per-iteration history.

    ``multipliers`` and ``row_duals`` certify ``lower_bound``: ``multipliers[k, p] >= 0`` is the
    multiplier of the mDP row of pair ``p`` of ``instance.graph`` and output ``k`` (0 for pairs left
    out by presolve) and ``row_duals[i] = min_k (C_hat + G'u)[i, k]`` that of record i's row sum,
    so ``C_hat + G'u - row_duals >= 0`` (dual feasibility of the full LP) and ``row_duals.sum()``
    is ``lower_bound`` (before an iteration improves it: ``u = 0``, the assignment bound).
    ``info["compile s"]``: the seconds :func:`warm_up` took before the clock started (0 once warm).

    Attributes
    ----------
    z : numpy.ndarray or None
        The best exactly eps-mDP matrix found (its loss is ``upper_bound``).
    upper_bound, lower_bound : float
        The certified bounds on the LP's optimum.
    status : str
        Why the iterations stopped.
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
def structured_ipm(
    instance: MDPInstance,
    *,
    gap: float = 1e-3,
    max_iter: int = 100,
    time_limit: float | None = None,
    presolve: bool = True,
    step_frac: float = 0.99,
    progress: bool = False,
    system: str = "auto",
) -> IPMResult:
    """Solve the full perturbation LP to a certified relative ``gap`` (see the module docstring).

    Returns the repaired (exactly eps-mDP) mechanism of the best certified upper bound, the best
    certified lower bound, status ``"gap reached"``, ``"max_iter"``, ``"time limit"`` or ``"stalled"`` (two
    steps in a row shorter than 1e-3: the Newton directions have lost accuracy), and a
    history of both bounds per iteration.  ``system`` picks the Newton system: ``"band"``,
    ``"dense"`` or ``"auto"`` (:func:`~dpmodels.metricdp.ipm.linalg.newton_system`).
    ``time_limit`` is checked between iterations and counts from after :func:`warm_up`.

    Parameters
    ----------
    instance : MDPInstance
        The instance (records, outputs, metric, prior, ``eps`` per km, ``eta``).
    gap : float
        The certified relative gap to stop at, in ``[0, 1)``.
    max_iter : int
        The iteration cap.
    time_limit : float, optional
        Seconds for the iterations.
    presolve : bool
        Leave out the pairs whose rows are implied by two-hop paths.
    step_frac : float
        The fraction of the longest feasible step taken.
    progress : bool
        Show a progress bar.
    system : str
        ``"band"``, ``"dense"`` or ``"auto"``.

    Returns
    -------
    IPMResult
        The repaired incumbent, both certified bounds and their certificate, status and history.
    """
    if not 0 <= gap < 1:
        raise DataValidationError("gap", f"must be in [0, 1), got {gap!r}")
    compile_s = warm_up()  # numba's compile is not the method's time: before the clock
    start_time = time.perf_counter()
    N, K, g = instance.N, instance.K, instance.graph
    keep = essential_pairs(g) if presolve else np.ones(g.n_pairs, dtype=bool)
    rows = Rows(g.src[keep], g.dst[keep], g.coef[keep], N)
    newton = newton_system(rows, K, system)
    c = np.ascontiguousarray(instance.weighted_cost.T)  # K x N, output-major
    state = start(c, rows, K)
    best = {"ub": np.inf, "lb": assignment_bound(instance), "z": None, "source": None}
    best.update(u=np.zeros((K, int(keep.sum()))), y=_row_duals(c, np.zeros_like(c)))  # the certificate of u = 0
    history, status = [], "max_iter"
    for it in range(1, max_iter + 1):
        if time_limit is not None and time.perf_counter() - start_time > time_limit:
            status = "time limit"
            break
        tick = time.perf_counter()
        x, s, u, y, zx = state
        try:
            newton.factor(u / s, zx / x)
        except NumericalBreakdown:
            status = "stalled"  # the certified bounds so far stand
            break
        factor_s = time.perf_counter() - tick
        state, mu, ap, ad = mehrotra_step(c, rows, state, newton, step_frac)
        row = _certify(instance, c, rows, state, best)
        row.update(iteration=it, mu=mu, **{"primal step": ap, "dual step": ad, "factor s": factor_s})
        row["elapsed s"] = time.perf_counter() - start_time
        history.append(row)
        if progress:
            print(f"  iteration {it:3d}  LB {best['lb']:.8g}  UB {best['ub']:.8g}  gap {row['gap']:.3g}", flush=True)
        if row["gap"] <= gap:
            status = "gap reached"
            break
        if max(ap, ad) < 1e-3 and len(history) > 1 and max(history[-2]["primal step"], history[-2]["dual step"]) < 1e-3:
            status = "stalled"  # numerical limit of the Newton solves: the certified bounds stand
            break
    info = {
        "pairs in the solve": int(keep.sum()),
        "pairs implied (presolve)": int((~keep).sum()),
        "Newton system": newton.name,
        "bandwidth": int(getattr(newton, "w", N) - 1) if newton.name == "band" else None,
        "seconds": time.perf_counter() - start_time,
        "compile s": compile_s,
    }
    multipliers = np.zeros((K, g.n_pairs))
    multipliers[:, keep] = best["u"]
    return IPMResult(
        best["z"], best["ub"], best["lb"], status, len(history), _frame(history), info, multipliers, best["y"]
    )


HISTORY = (
    "iteration",
    "LB",
    "best UB",
    "gap",
    "UB from",
    "purified UB",
    "mu",
    "primal step",
    "dual step",
    "uniform weight in repair",
)


def _frame(history: list[dict]) -> pd.DataFrame:
    """The per-iteration history, bounds first."""
    columns = [*HISTORY, "factor s", "elapsed s"]
    return pd.DataFrame(history, columns=columns)


def _certify(instance: MDPInstance, c: np.ndarray, rows: Rows, state, best: dict) -> dict:
    """Both certificates of an iterate, kept in ``best`` when they improve it: the loss of the
    repaired (exactly eps-mDP) mechanism -- the iterate's, and near the end its purified point's
    (:func:`~dpmodels.metricdp.ipm.recovery.purify`) -- and the weak-duality bound of the clipped
    multipliers."""
    x, _, u, _, zx = state
    u_plus = np.maximum(u, 0.0)
    y_cert = _row_duals(c, rows.apply_t(u_plus))
    lb = float(y_cert.sum())
    if lb > best["lb"]:
        best.update(lb=lb, u=u_plus, y=y_cert)
    z, t_mix = repair(instance, x.T)
    row = {"uniform weight in repair": t_mix, "purified UB": np.nan}
    _offer(best, z, float((instance.weighted_cost * z).sum()), "iterate")
    if _relative_gap(best) <= PURIFY_BELOW:
        z, row["purified UB"], _ = purify(instance, x, zx)
        _offer(best, z, row["purified UB"], "purified")
    return {"LB": best["lb"], "best UB": best["ub"], "gap": _relative_gap(best), "UB from": best["source"], **row}


def _offer(best: dict, z: np.ndarray, ub: float, source: str) -> None:
    if ub < best["ub"]:
        best.update(ub=ub, z=z, source=source)


def _relative_gap(best: dict) -> float:
    return (best["ub"] - best["lb"]) / max(abs(best["ub"]), 1e-12)


# ---------------------------------------------------------------------- compiled kernels
_WARM_LOCK = threading.RLock()
_WARM = {"phase": "cold"}


def warm_up() -> float:
    """Compile (or load from numba's cache) every kernel the method calls, once per process.

    Runs the method on a 4 x 5 grid with K = 4 to a gap small enough to purify, so the band
    kernels, the ratio test and the mDP closure are compiled for the argument types of a real run
    (a test checks that a later run compiles nothing).  Another thread waits until it is done.

    Returns
    -------
    float
        Seconds spent now: the compile or cache load on the first call; 0.0 after it, and
        inside the warm-up's own run.
    """
    with _WARM_LOCK:
        if _WARM["phase"] != "cold":
            return 0.0
        _WARM["phase"] = "warming"
        tick = time.perf_counter()
        try:
            structured_ipm(_tiny_grid(), gap=1e-9, system="band")
        except BaseException:
            _WARM["phase"] = "cold"
            raise
        _WARM["phase"] = "warm"
        return time.perf_counter() - tick


def _tiny_grid() -> MDPInstance:
    """A 4 x 5 grid of 1 km cells, 4 outputs, loss = distance to the output, uniform prior."""
    xy = np.array([(r, c) for r in range(4) for c in range(5)], dtype=np.float64)
    d = np.sqrt(((xy[:, None, :] - xy[None, :, :]) ** 2).sum(axis=2))
    outputs = [0, 7, 12, 19]
    return MDPInstance(d, d[:, outputs], np.full(20, 1 / 20), 1.0, 2.0, d_ro=d[:, outputs], name="warm-up grid")
