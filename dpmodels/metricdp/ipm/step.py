"""One Mehrotra predictor-corrector step of :mod:`dpmodels.metricdp.ipm.driver` (with Gondzio correctors).

The state is ``(x, s, u, y, zx)``: the mechanism ``x`` (K x N, output-major), the slacks ``s``
and multipliers ``u`` of the mDP rows (K x pairs), the row sums' multipliers ``y`` (N) and the
reduced costs ``zx`` of ``x``.  Every direction is a solve with one factored Newton system
(:mod:`~dpmodels.metricdp.ipm.linalg`, dense or banded: the same methods), so correctors and
refinement cost a solve each, not a factorisation.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .linalg import Rows

__all__ = ["start", "mehrotra_step"]


def _amax(a) -> float:
    return float(np.abs(a).max(initial=0.0))


def _max_step(v: np.ndarray, dv: np.ndarray) -> float:
    """Largest step in [0, 1/0.99] keeping ``v + step dv >= 0``."""
    return min(1.0 / 0.99, _ratio_test(v, dv))


@njit(cache=True)
def _ratio_test(v, dv):
    """``min(-v / dv)`` over ``dv < 0`` (inf if none) for 2-D arrays of any memory order, in one
    pass: the masked numpy version allocated four temporaries of up to 1.5 million entries per
    call, 5 ms each at N = 2,000."""
    best = np.inf
    for i in range(v.shape[0]):
        for j in range(v.shape[1]):
            if dv[i, j] < 0.0:
                r = -v[i, j] / dv[i, j]
                if r < best:
                    best = r
    return best


def _newton(c, rows: Rows, state, system, rx, rs, refine: int = 3):
    """The Newton direction for complementarity targets ``rx`` (x zx) and ``rs`` (s u), with the
    primal and dual residuals of ``state``; ``refine`` rounds of iterative refinement recover the
    accuracy the explicit block inverses lose as the iterates near the boundary."""
    x, s, u, y, zx = state
    r_p = 1.0 - x.sum(axis=0)
    r_g = -rows.apply(x) - s
    r_d = c - y[None, :] + rows.apply_t(u) - zx
    step = _reduced_solve(rows, state, system, r_p, r_g, r_d, rx, rs)
    scale = max(_amax(r_d), _amax(rx / x), _amax(rs / s), 1e-300)
    for _ in range(refine):
        dx, ds, dy, du, dzx = step
        # equations 2, 4 and 5 hold by construction; refine the row sums (1) and dual rows (3)
        e_p = r_p - dx.sum(axis=0)
        e_d = r_d - (dy[None, :] - rows.apply_t(du) + dzx)
        if max(_amax(e_p), _amax(e_d) / scale) < 1e-12:
            break
        fix = _reduced_solve(rows, state, system, e_p, np.zeros_like(r_g), e_d, 0.0, 0.0)
        step = tuple(a + b for a, b in zip(step, fix, strict=True))
    return step


def _reduced_solve(rows: Rows, state, system, r_p, r_g, r_d, rx, rs):
    """Solve the Newton system with right-hand sides (r_p, r_g, r_d, rx, rs) by eliminating
    dzx, ds and du, then dx per output block, then dy through the Schur complement."""
    x, s, u, y, zx = state
    q = r_d + rows.apply_t((rs - u * r_g) / s) - rx / x
    dy = system.schur_solve(r_p + system.solve_sum(q))
    dx = system.solve(dy[None, :] - q)
    ds = r_g - rows.apply(dx)
    du = (rs - u * ds) / s
    dzx = (rx - zx * dx) / x
    return dx, ds, dy, du, dzx


def _steps(state, d) -> tuple[float, float]:
    """Largest primal and dual steps in [0, 1/0.99] keeping (x, s) and (zx, u) non-negative."""
    x, s, u, _, zx = state
    dx, ds, _, du, dzx = d
    return min(_max_step(x, dx), _max_step(s, ds)), min(_max_step(zx, dzx), _max_step(u, du))


def mehrotra_step(c, rows: Rows, state, system, step_frac: float, correctors: int = 2):
    """One predictor-corrector step with up to ``correctors`` Gondzio centrality correctors
    (each re-uses the factorisation: one more solve instead of one more iteration); returns the
    new state, the old mu and the two step lengths."""
    x, s, u, y, zx = state
    n_cmp = x.size + s.size
    mu = ((x * zx).sum() + (s * u).sum()) / n_cmp
    dx, ds, dy, du, dzx = _newton(c, rows, state, system, -x * zx, -s * u)
    ap, ad = (min(1.0, a) for a in _steps(state, (dx, ds, dy, du, dzx)))
    mu_aff = ((x + ap * dx) * (zx + ad * dzx)).sum() + ((s + ap * ds) * (u + ad * du)).sum()
    target = (mu_aff / n_cmp / mu) ** 3 * mu
    d = _newton(c, rows, state, system, target - x * zx - dx * dzx, target - s * u - ds * du)
    ap, ad = _steps(state, d)
    for _ in range(correctors):
        d_new = _gondzio(rows, state, system, d, ap, ad, target)
        ap_new, ad_new = _steps(state, d_new)
        if min(ap_new, ad_new) < 1.01 * min(ap, ad):
            break
        d, ap, ad = d_new, ap_new, ad_new
    ap, ad = min(1.0, step_frac * ap), min(1.0, step_frac * ad)
    dx, ds, dy, du, dzx = d
    new = (x + ap * dx, s + ap * ds, u + ad * du, y + ad * dy, zx + ad * dzx)
    return new, mu, ap, ad


def _gondzio(rows: Rows, state, system, d, ap: float, ad: float, target: float, beta: float = 10.0):
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
    fix = _reduced_solve(rows, state, system, zero_p, zero_g, zero_d, rx, rs)
    return tuple(a + b for a, b in zip(d, fix, strict=True))


def start(c: np.ndarray, rows: Rows, K: int):
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
