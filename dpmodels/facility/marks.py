"""Exact marks of the facility mechanism: ``Bernoulli(P[N_u + Lap(b_ℓ) >= f/λ^ℓ])``, no Laplace drawn.

Algorithm 2 publishes only which nodes are marked, so the noisy counts never need to exist.
A floating-point Laplace draw leaks through its low bits (Mironov 2012); instead each noisy
node's mark is drawn exactly from its law (the one :func:`~dpmodels.facility.mechanism.run_tree`
documents): with ``x = τ - N_u`` and ``γ = |x| / b``, ``p_u = P[mark] = ½ e^{-γ}`` if ``x > 0``
and ``1 - ½ e^{-γ}`` otherwise (what :func:`dpmodels.core.selection.laplace_exceeds` samples
for one node).

Every float (``f``, ``λ^ℓ`` as the mechanism computes it, the scales ``b_ℓ``) is read as the
dyadic rational it is, so ``γ`` is an exact Fraction.  A node is marked iff ``V_u < p_u`` for a
uniform real ``V_u`` whose binary digits are the generator's raw 64-bit words, compared
lazily: the first word ``U`` decides unless it falls within the few units of ``p_u 2^64``
left open by rigorous integer bounds on ``e^{-γ}`` (alternating Taylor series in fixed point,
rounded outward); then further words and tighter bounds follow (probability about
``2^-62`` per node).  ``P[V_u < p_u] = p_u`` exactly, nodes use disjoint words, so the marks
are independent with exactly the Laplace-tail law.

Why this sampler rather than a Bernoulli(exp) rejection chain per node: it reads exactly one
word per noisy node, in node order, whatever the counts (a rejection chain reads a
data-dependent number of words, a timing signal), it is one vectorised comparison, and runs
on neighbouring count vectors with the same seed share every ``V_u``: nodes whose count did
not change get the same mark, as with a shared Laplace draw.  Nodes with equal ``(ℓ, N_u)``
share one ``γ`` and one pair of bounds.
"""

from __future__ import annotations

import math
from fractions import Fraction
from functools import lru_cache

import numpy as np

from dpmodels.core.samplers import raw_words

__all__ = [
    "level_thresholds",
    "exact_spend",
    "float_above",
    "mark_gammas",
    "exp_neg_bounds",
    "tail_bounds",
    "draw_marks",
]

WORD = 64


def level_thresholds(f: float, lam: float, lprime: int) -> list[Fraction]:
    """``τ_ℓ = f / λ^ℓ`` for ``ℓ < L'``, exactly, from the floats ``f`` and ``λ^ℓ`` the mechanism uses."""
    weights = lam ** np.arange(lprime, dtype=float)
    return [Fraction(float(f)) / Fraction(float(w)) for w in weights]


def exact_spend(scales) -> Fraction:
    """``Σ_ℓ 1/b_ℓ`` exactly: the ε of Laplace(b_ℓ) marks with sensitivity 1 per level (basic composition)."""
    return sum((1 / Fraction(float(b)) for b in np.asarray(scales, dtype=float)), Fraction(0))


def float_above(value: Fraction) -> float:
    """The smallest float ``>= value`` (``float()`` rounds to nearest; one step up when that fell below)."""
    out = float(value)
    return math.nextafter(out, math.inf) if Fraction(out) < value else out


# ----------------------------------------------------------------------------- the law per group
def mark_gammas(counts, levels, scales, thresholds) -> tuple[np.ndarray, list[Fraction], np.ndarray]:
    """Group the noisy nodes by ``(ℓ, N_u)``: ``(group of each node, γ per group, x > 0 per group)``."""
    pairs, group = _level_count_pairs(np.asarray(levels, dtype=np.int64), np.asarray(counts, dtype=np.int64))
    b = [Fraction(float(s)) for s in np.asarray(scales, dtype=float)]
    gammas, above = [], np.empty(len(pairs), dtype=bool)
    for g, (lvl, count) in enumerate(pairs.tolist()):
        x = thresholds[lvl] - count
        gammas.append(abs(x) / b[lvl])
        above[g] = x > 0
    return group, gammas, above


def _level_count_pairs(levels: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct ``(level, count)`` rows and each node's row: one int64 key when it fits (fast)."""
    if levels.size == 0:
        return np.empty((0, 2), dtype=np.int64), np.empty(0, dtype=np.int64)
    span = int(levels.max()) + 1
    if int(counts.max()) < 2**62 // span:
        keys, group = np.unique(counts * span + levels, return_inverse=True)
        pairs = np.stack([keys % span, keys // span], axis=1)
    else:
        pairs, group = np.unique(np.stack([levels, counts], axis=1), axis=0, return_inverse=True)
    return pairs, group.ravel()


# ----------------------------------------------------------------------------- rigorous bounds
@lru_cache(maxsize=64)
def _series_bounds(p: int, q: int, prec: int) -> tuple[int, int]:
    """Integers ``lo <= e^{-p/q} 2^prec <= hi`` for ``0 <= p/q <= 1``.

    The terms ``t_k = r^k/k!`` do not increase, so consecutive partial sums of the alternating
    series bracket ``e^{-r}``; each term is kept as a floor and a ceiling in fixed point and the
    sums take the side that keeps the bracket valid.
    """
    one = 1 << prec
    t_lo = t_hi = one
    lo_even = hi_even = one  # sums of the even terms (lower, upper)
    lo_odd = hi_odd = 0  # sums of the odd terms (lower, upper)
    k = 0
    while t_hi > 1 or k % 2 == 0:  # stop after an odd term: S_k (odd) <= e^{-r} <= S_{k-1} (even)
        k += 1
        t_lo = t_lo * p // (q * k)
        t_hi = -(-t_hi * p // (q * k))
        if k % 2:
            lo_odd, hi_odd = lo_odd + t_lo, hi_odd + t_hi
        else:
            lo_even, hi_even = lo_even + t_lo, hi_even + t_hi
    upper_previous = hi_even - (lo_odd - t_lo)  # S_{k-1} from above: the last (odd) term left out
    return max(lo_even - hi_odd, 0), upper_previous


def exp_neg_bounds(gamma: Fraction, bits: int) -> tuple[int, int]:
    """Integers ``lo <= e^{-γ} 2^bits <= hi`` (a few units apart) for a Fraction ``γ >= 0``."""
    whole = math.floor(gamma)
    if whole >= bits:  # e^{-γ} < 2^{-γ} <= 2^{-bits}
        return 0, 1
    prec = bits + 16 + 2 * (bits + whole).bit_length()
    frac = gamma - whole
    lo, hi = _series_bounds(frac.numerator, frac.denominator, prec)
    if whole:
        e_lo, e_hi = _series_bounds(1, 1, prec)
        for _ in range(whole):  # outward rounding at every product keeps the bracket valid
            lo = lo * e_lo >> prec
            hi = -(-hi * e_hi >> prec)
    shift = prec - bits
    return lo >> shift, -(-hi >> shift)


def tail_bounds(gamma: Fraction, above: bool, bits: int) -> tuple[int, int]:
    """Integers ``lo <= p 2^bits <= hi`` for ``p = ½ e^{-γ}`` (``above``) or ``1 - ½ e^{-γ}``."""
    e_lo, e_hi = exp_neg_bounds(gamma, bits)
    half_lo, half_hi = e_lo // 2, -(-e_hi // 2)
    if above:
        return half_lo, half_hi
    return (1 << bits) - half_hi, (1 << bits) - half_lo


# ----------------------------------------------------------------------------- the draw
def draw_marks(counts, levels, scales, thresholds, rng: np.random.Generator) -> np.ndarray:
    """Independent exact marks, ``P[mark_u] = P[counts_u + Lap(scales[ℓ_u]) >= thresholds[ℓ_u]]``.

    ``counts`` and ``levels`` describe the noisy nodes; ``thresholds`` are exact Fractions
    (:func:`level_thresholds`).  Reads one raw word per node in the given order, then (rarely)
    more for the nodes the first word leaves undecided.  Returns a boolean array aligned with
    ``counts``.
    """
    group, gammas, above = mark_gammas(counts, levels, scales, thresholds)
    words = raw_words(rng, group.size)
    bounds = [tail_bounds(g, a, WORD) for g, a in zip(gammas, above, strict=True)]
    lo = np.array([b[0] for b in bounds], dtype=np.uint64)  # p < 1, so lo < 2^64
    hi_minus_one = np.array([b[1] - 1 for b in bounds], dtype=np.uint64)  # hi >= 1
    marked = words < lo[group]
    for i in np.flatnonzero(~marked & (words <= hi_minus_one[group])):
        g = int(group[i])
        marked[i] = _refine(int(words[i]), gammas[g], bool(above[g]), rng)
    return marked


def _refine(prefix: int, gamma: Fraction, above: bool, rng) -> bool:
    """Decide ``V < p`` for the node whose first word could not: append words, tighten the bounds."""
    bits = WORD
    while True:
        bits += WORD
        prefix = (prefix << WORD) | int(raw_words(rng, 1)[0])
        lo, hi = tail_bounds(gamma, above, bits)
        if prefix < lo:  # V < (prefix + 1) 2^-bits <= lo 2^-bits <= p
            return True
        if prefix >= hi:  # V >= prefix 2^-bits >= hi 2^-bits >= p
            return False
