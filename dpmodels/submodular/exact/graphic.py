"""Exact weighted spanning forests: ``Pr[B] ~ exp(sum_{e in B} l_e)`` for rational ``l`` (graphic matroids).

The sequential matrix-tree method (as :meth:`GraphicMatroid.sample_base`): edges are decided in
turn, edge ``e = uv`` is taken with probability ``p_e = lam_e / (lam_e + C(u, v))``, where
``lam = exp(l - max l)`` and ``C(u, v)`` is the effective conductance between ``u`` and ``v`` of
the undecided edges (taken edges contracted, refused ones deleted); a bridge is always taken.
Here every decision is an exact ``Bernoulli(p_e)``: a uniform ``U`` is revealed 64 bits at a
time and compared with rigorous bounds ``lo <= p_e <= hi``, which are refined until they
separate ``p_e`` from ``U``.  The bounds come from

1. interval arithmetic in floating point: ``lam`` bounded through the correctly rounded decimal
   ``exp``, then a star-mesh (Kron) elimination of positive numbers whose every ``+ * /`` is
   widened outward by one ulp (IEEE operations are correctly rounded, so the true value stays
   inside); this decides all but a ``~1e-10`` fraction of the edges;
2. exact rational arithmetic otherwise: ``C`` is increasing in every conductance (Rayleigh
   monotonicity), so evaluating the elimination exactly at the lower and upper ``lam`` bounds
   (decimal ``exp`` at growing precision) brackets ``p_e`` as tightly as needed.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from ..matroids import GraphicMatroid
from .coins import DIGITS, LazyUniform, exp_bounds

__all__ = ["sample_forest"]


def _down(x):
    return np.maximum(np.nextafter(x, -np.inf), 0.0)


def _up(x):
    return np.nextafter(x, np.inf)


def _float_bounds(lo: Fraction, hi: Fraction) -> tuple[float, float]:
    """Floats bracketing ``[lo, hi]`` (``float(Fraction)`` is correctly rounded; one ulp outward)."""
    return float(_down(float(lo))), float(_up(float(hi)))


class _Conductances:
    """The alive, contracted edges of the current graph as (lower, upper) float conductance matrices."""

    def __init__(self, M: GraphicMatroid, label, alive, lam_lo, lam_hi):
        V = M.n_vertices
        self.lo, self.hi = np.zeros((V, V)), np.zeros((V, V))
        for e in np.flatnonzero(alive):
            a, b = (int(x) for x in label[M.edges[e]])
            if a != b:
                for i, j in ((a, b), (b, a)):
                    self.lo[i, j] = _down(self.lo[i, j] + lam_lo[e])
                    self.hi[i, j] = _up(self.hi[i, j] + lam_hi[e])

    def between(self, u: int, v: int) -> tuple[float, float]:
        """Bounds on the effective conductance between ``u`` and ``v`` (Kron elimination, outward)."""
        lo, hi = self.lo, self.hi
        for k in range(lo.shape[0]):
            if k in (u, v):
                continue
            nbrs = np.flatnonzero(hi[k] > 0)
            if nbrs.size == 0:
                continue
            ck_lo = float(_down(math.fsum(lo[k, nbrs])))  # fsum: one correct rounding
            ck_hi = float(_up(math.fsum(hi[k, nbrs])))
            block = np.ix_(nbrs, nbrs)
            with np.errstate(divide="ignore", over="ignore"):
                lo[block] = _down(lo[block] + _down(_down(np.outer(lo[k, nbrs], lo[k, nbrs])) / ck_hi))
                hi[block] = _up(hi[block] + _up(_up(np.outer(hi[k, nbrs], hi[k, nbrs])) / ck_lo))
            lo[k, :] = lo[:, k] = hi[k, :] = hi[:, k] = 0.0
            lo[nbrs, nbrs] = hi[nbrs, nbrs] = 0.0  # self-loops carry no current
        return float(lo[u, v]), float(hi[u, v])


def _exact_conductance(M: GraphicMatroid, label, alive, lam: list[Fraction], u: int, v: int) -> Fraction:
    """The effective conductance between ``u`` and ``v`` in exact rational arithmetic."""
    C: dict[int, dict[int, Fraction]] = {}
    for e in np.flatnonzero(alive):
        a, b = (int(x) for x in label[M.edges[e]])
        if a != b:
            for i, j in ((a, b), (b, a)):
                row = C.setdefault(i, {})
                row[j] = row.get(j, Fraction(0)) + lam[e]
    for k in [k for k in C if k not in (u, v)]:
        row = C.pop(k)
        total = sum(row.values(), Fraction(0))
        for i in row:
            C[i].pop(k, None)
        for i in row:
            for j in row:
                if i != j:
                    C[i][j] = C[i].get(j, Fraction(0)) + row[i] * row[j] / total
    return C.get(u, {}).get(v, Fraction(0))


def _decide(lam_bounds, lam_f, conductances, M, label, alive, e, u, v, rng) -> bool:
    """Exact ``Bernoulli(lam_e / (lam_e + C(u, v)))`` (see the module docstring)."""
    U = LazyUniform(rng)
    c_lo, c_hi = conductances.between(u, v)
    l_lo, l_hi = lam_f[0][e], lam_f[1][e]
    p_lo = _down(l_lo / _up(l_lo + c_hi)) if l_lo > 0 else 0.0
    p_hi = min(1.0, float(_up(l_hi / _down(l_hi + c_lo)))) if l_hi + c_lo > 0 else 1.0
    answer = U.below(Fraction(float(p_lo)), Fraction(p_hi))
    digits = DIGITS
    while answer is None:
        digits *= 2
        lo, hi = zip(*(lam_bounds(x, digits) for x in range(M.n)), strict=True)
        cw_lo, cw_hi = (_exact_conductance(M, label, alive, list(b), u, v) for b in (lo, hi))
        answer = U.below(lo[e] / (lo[e] + cw_hi), hi[e] / (hi[e] + cw_lo))
    return answer


def sample_forest(M: GraphicMatroid, logits: list[int], den: int, rng) -> np.ndarray:
    """A spanning forest ``B`` with probability exactly ``~ exp(sum_{e in B} logits_e / den)``."""
    top = max(logits)
    gaps = [Fraction(v - top, den) for v in logits]

    def lam_bounds(e: int, digits: int) -> tuple[Fraction, Fraction]:
        return exp_bounds(gaps[e], digits)

    first = [_float_bounds(*lam_bounds(e, DIGITS)) for e in range(M.n)]
    lam_f = (np.array([b[0] for b in first]), np.array([b[1] for b in first]))
    label, alive, chosen = np.arange(M.n_vertices), np.ones(M.n, bool), np.zeros(M.n, bool)
    for e in range(M.n):
        u, v = (int(x) for x in label[M.edges[e]])
        alive[e] = False
        if u == v:
            continue
        bridge = not M._connected_without(label, alive, u, v)
        conductances = None if bridge else _Conductances(M, label, alive, *lam_f)
        if bridge or _decide(lam_bounds, lam_f, conductances, M, label, alive, e, u, v, rng):
            chosen[e] = True
            label[label == v] = u
    return chosen
