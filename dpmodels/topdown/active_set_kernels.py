"""Compiled (numba) loops of the active-set L2 solver (:mod:`.active_set`).

One iteration of the primal-dual active-set method assembles a small dense system over the active
rows' multipliers and the free columns that have no quadratic term, and then reads the primal
point, the bound multipliers and the next active set off its solution.  Both steps walk every stored
entry of the constraint matrix (and, for the system, every pair of entries in a column); in numpy
they took about as long as the factorisation on the block-level solves of the state preset (a
profile of the numpy prototype, issue 25).  The LAPACK factorisation stays in scipy.

Conventions: the constraint matrix ``A`` (equality rows first, then the ``<=`` rows) is given by its
CSC arrays; ``row_pos[j]`` is row ``j``'s position in the system (-1: the row is off, an inactive
``<=`` row), ``col_pos[i]`` a free zero-curvature column's position (-1 otherwise).
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["assemble", "read_off"]


@njit(cache=True)
def assemble(indptr, indices, data, d, c, lbz, active, row_pos, col_pos, b, size, n_rows, delta):
    """The system ``K0 u = r`` of one iteration, ``u`` = (multipliers of the ``n_rows`` rows on, free
    zero-curvature columns): ``K0 = [[-A_F D_F^-1 A_F', A_0], [A_0', 0]]`` with ``F`` the free
    columns with curvature and ``0`` the free ones without, ``r = [b - A_act lb_act + A_F D_F^-1 c_F,
    -c_0]`` (the rows on only).  Returned regularised, ``K = K0 + shift diag(-1 (rows), +1 (columns))``
    with ``shift = delta max(1, max|K0|)`` (quasi-definite, so always factorisable), with the shift."""
    k0 = np.zeros((size, size))
    r = np.zeros(size)
    for j in range(len(row_pos)):
        if row_pos[j] >= 0:
            r[row_pos[j]] = b[j]
    for i in range(len(d)):
        start, stop = indptr[i], indptr[i + 1]
        if active[i]:
            for p in range(start, stop):
                pj = row_pos[indices[p]]
                if pj >= 0:
                    r[pj] -= data[p] * lbz[i]
        elif d[i] > 0:
            w = 1.0 / d[i]
            for p in range(start, stop):
                pj = row_pos[indices[p]]
                if pj < 0:
                    continue
                r[pj] += data[p] * w * c[i]
                for q in range(start, stop):
                    qj = row_pos[indices[q]]
                    if qj >= 0:
                        k0[pj, qj] -= w * data[p] * data[q]
        else:
            t = col_pos[i]
            r[t] = -c[i]
            for p in range(start, stop):
                pj = row_pos[indices[p]]
                if pj >= 0:
                    k0[pj, t] += data[p]
                    k0[t, pj] += data[p]
    shift = 1.0
    for u in range(size):
        for v in range(size):
            shift = max(shift, abs(k0[u, v]))
    shift *= delta
    for u in range(size):
        k0[u, u] += -shift if u < n_rows else shift
    return k0, r, shift


@njit(cache=True)
def read_off(indptr, indices, data, d, c, lbz, bounded, active, row_pos, col_pos, sol, b, n_eq, eps_dual, eps_primal):
    """The iterate read off the system's solution ``sol``: the point ``z``, the row multipliers
    ``lam`` (0 on rows off), the bound multipliers ``nu = D z + c + A' lam`` and the next active set,
    by the primal-dual active-set rule with a dead band: an active column stays active unless
    ``nu < -eps_dual``, a free one becomes active when ``z < lb - eps_primal``; a ``<=`` row on stays
    on unless ``lam < -eps_dual``, one off comes on when ``A z > b + eps_primal``.  At a fixed point
    the KKT conditions hold within the bands (without them, rounding noise on degenerate indices,
    ``z = lb`` and ``nu = 0``, made the method cycle)."""
    n, m = len(d), len(row_pos)
    lam = np.zeros(m)
    for j in range(m):
        if row_pos[j] >= 0:
            lam[j] = sol[row_pos[j]]
    z = np.empty(n)
    nu = np.empty(n)
    az = np.zeros(m)
    new_active = np.zeros(n, dtype=np.bool_)
    for i in range(n):
        g = 0.0
        for p in range(indptr[i], indptr[i + 1]):
            g += data[p] * lam[indices[p]]
        if active[i]:
            z[i] = lbz[i]
        elif d[i] > 0:
            z[i] = -(c[i] + g) / d[i]
        else:
            z[i] = sol[col_pos[i]]
        nu[i] = d[i] * z[i] + c[i] + g
        if active[i]:
            new_active[i] = nu[i] >= -eps_dual
        else:
            new_active[i] = bounded[i] and z[i] < lbz[i] - eps_primal
        for p in range(indptr[i], indptr[i + 1]):
            az[indices[p]] += data[p] * z[i]
    new_on = np.ones(m, dtype=np.bool_)
    for j in range(n_eq, m):
        if row_pos[j] >= 0:
            new_on[j] = lam[j] >= -eps_dual
        else:
            new_on[j] = az[j] > b[j] + eps_primal
    return z, lam, nu, new_active, new_on, az
