"""Exact bases of a laminar matroid: ``Pr[B] ~ exp(sum_{e in B} l_e)`` for rational ``l``.

The sequential method of :meth:`LaminarMatroid.sample_base`: elements are decided in turn,
``e`` is taken with probability ``Z_in / (Z_in + Z_out)``, where ``Z`` sums ``prod_{f in B}
lam_f`` (``lam = exp(l - max l)``) over the bases consistent with the decisions so far: the
top coefficient of a product, over the laminar tree, of generating polynomials truncated at each
set's capacity.  ``Z`` is a polynomial with non-negative coefficients in ``lam``, so evaluating it
at lower bounds of ``lam`` with every operation rounded down (decimal ``ROUND_FLOOR``) bounds it
from below, and likewise from above; each decision compares a lazily revealed uniform with the
resulting bounds on the probability (:class:`.coins.LazyUniform`) and doubles the digits
until they separate.  Decimal exponents are unbounded in practice, so no weight underflows.
"""

from __future__ import annotations

from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal
from fractions import Fraction

import numpy as np

from ..matroids import LaminarMatroid
from .coins import DIGITS, LazyUniform, decimal_context, decimal_exp_bounds

__all__ = ["sample_laminar"]

_ZERO, _ONE = Decimal(0), Decimal(1)


def _times_element(poly: list, lam: Decimal, state: int, cap: int, ctx) -> list:
    """``poly`` times the element's factor: ``1 + lam x`` (undecided), ``lam x`` (in) or ``1`` (out)."""
    if state == -1:
        return poly
    shifted = [_ZERO] + [ctx.multiply(lam, c) for c in poly]
    if state == 0:
        shifted = [ctx.add(a, b) for a, b in zip(poly + [_ZERO], shifted, strict=True)]
    return shifted[: cap + 1]


def _times(a: list, b: list, cap: int, ctx) -> list:
    """The product of two polynomials, truncated after degree ``cap``."""
    out = [_ZERO] * min(len(a) + len(b) - 1, cap + 1)
    for i, x in enumerate(a):
        if x:
            for j in range(min(len(b), cap + 1 - i)):
                out[i + j] = ctx.add(out[i + j], ctx.multiply(x, b[j]))
    return out


def _tree(M: LaminarMatroid, node: int, lam: list, state: np.ndarray, ctx) -> list:
    """Coefficients of the node's generating polynomial (as ``LaminarMatroid._tree_polynomial``, linear)."""
    cap, direct, children = M._laminar_tree()[1][node]
    poly = [_ONE]
    for k in children:
        poly = _times(poly, _tree(M, k, lam, state, ctx), cap, ctx)
    for e in direct:
        poly = _times_element(poly, lam[e], int(state[e]), cap, ctx)
    return poly


def _weight(M: LaminarMatroid, lam: list, state: np.ndarray, ctx) -> Decimal:
    """``Z``: the total weight of the bases consistent with ``state``, rounded as ``ctx`` says."""
    poly = _tree(M, M._laminar_tree()[0], lam, state, ctx)
    return poly[M.r] if len(poly) > M.r else _ZERO


def _take(M: LaminarMatroid, lam_bounds, state: np.ndarray, e: int, rng) -> bool:
    """Exactly ``Bernoulli(Z_in / (Z_in + Z_out))`` for element ``e``."""
    U, digits = LazyUniform(rng), DIGITS
    while True:
        down, up = decimal_context(digits, ROUND_FLOOR), decimal_context(digits, ROUND_CEILING)
        lo, hi = lam_bounds(digits)
        bounds = {}
        for s in (1, -1):
            state[e] = s
            bounds[s] = (_weight(M, lo, state, down), _weight(M, hi, state, up))
        state[e] = 0
        (in_lo, in_hi), (out_lo, out_hi) = bounds[1], bounds[-1]
        if not in_hi or not out_hi:  # no consistent base with (without) e: certain
            return bool(in_hi)
        p_lo = down.divide(in_lo, up.add(in_lo, out_hi))
        p_hi = min(_ONE, up.divide(in_hi, down.add(in_hi, out_lo)))
        answer = U.below(Fraction(p_lo), Fraction(p_hi))
        if answer is not None:
            return answer
        digits *= 2


def sample_laminar(M: LaminarMatroid, logits: list[int], den: int, rng) -> np.ndarray:
    """A base ``B`` with probability exactly ``~ exp(sum_{e in B} logits_e / den)``."""
    top = max(logits)
    gaps = [Fraction(v - top, den) for v in logits]
    cache: dict[int, tuple[list, list]] = {}

    def lam_bounds(digits: int) -> tuple[list, list]:
        if digits not in cache:
            pairs = [decimal_exp_bounds(x, digits) for x in gaps]
            cache[digits] = ([p[0] for p in pairs], [p[1] for p in pairs])
        return cache[digits]

    state = np.zeros(M.n, dtype=np.int8)  # 0 undecided, 1 in, -1 out
    left = M.r
    for e in range(M.n):
        if left == 0:
            state[e:] = -1
            break
        taken = _take(M, lam_bounds, state, e, rng)
        state[e] = 1 if taken else -1
        left -= taken
    return state == 1
