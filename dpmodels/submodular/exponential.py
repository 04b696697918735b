"""The exponential mechanism of every private submodular algorithm (Def 2.7): ``Pr[j] ~ exp(b q_j)``.

Scores are centred before they are scaled: ``b (q_j - max q)`` has its largest logit exactly 0,
so the weights lie in ``(0, 1]`` and keep the score gaps ``q_j - max q`` at full precision.
Scaling first (``b q_j``, then centring in log space) lost those gaps once ``b q_j`` was large: a
4-way tie at 1e16 gave probabilities summing to 0.54 and a Gumbel-max biased toward index 0.
The distribution is unchanged, since ``exp(b q_j)`` and ``exp(b (q_j - m))`` differ by a common
factor ``exp(b m)``.

``b = inf`` is the argmax (lowest index on ties) and ``b = 0`` is uniform: the non-private and
the data-independent limits.
"""

from __future__ import annotations

import math

import numpy as np

from dpmodels.core.errors import DataValidationError, PrivacyParameterError

__all__ = ["em_probabilities", "em_choice", "centred_logits"]


def _check_em_inputs(scores, inv_temp) -> tuple[np.ndarray, float]:
    """Finite scores and an inverse temperature in ``[0, inf]``: a NaN would make the EM's argmax
    (and so its output) deterministic, silently voiding the privacy guarantee."""
    q = np.asarray(scores, dtype=np.float64)
    if q.size == 0:
        raise DataValidationError("scores", "the exponential mechanism needs at least one candidate")
    if not np.all(np.isfinite(q)):
        raise DataValidationError("scores", f"must all be finite, got {q[~np.isfinite(q)][:3].tolist()}")
    inv_temp = float(inv_temp)
    if math.isnan(inv_temp) or inv_temp < 0:
        raise PrivacyParameterError("inv_temp", f"must be in [0, inf], got {inv_temp!r}")
    return q, inv_temp


def _inv_temp(epsilon: float, sensitivity: float) -> float:
    """``eps' = eps / (2 Delta)``, the inverse temperature of every EM of the paper (``inf`` stays ``inf``)."""
    return math.inf if math.isinf(epsilon) else epsilon / (2.0 * sensitivity)


def centred_logits(q: np.ndarray, inv_temp: float) -> np.ndarray:
    """``inv_temp * (q - max q)`` for a finite ``inv_temp``: the largest logit is exactly 0.

    ``inv_temp = 0`` gives all zeros directly (``0 * -inf`` would be NaN when a gap overflows)."""
    if inv_temp == 0.0:
        return np.zeros(q.size)
    return inv_temp * (q - q.max())


def _argmax_mass(q: np.ndarray) -> np.ndarray:
    p = np.zeros(q.size)
    p[int(np.argmax(q))] = 1.0
    return p


def em_probabilities(scores, inv_temp: float) -> np.ndarray:
    """``Pr[j] ~ exp(inv_temp * q_j)``, computed from the centred scores; ``inf`` puts all mass on
    the lowest-index argmax, ``0`` is uniform."""
    q, inv_temp = _check_em_inputs(scores, inv_temp)
    if math.isinf(inv_temp):
        return _argmax_mass(q)
    weights = np.exp(centred_logits(q, inv_temp))  # in (0, 1], the leader's is 1: no overflow
    return weights / weights.sum()


def em_choice(scores, inv_temp: float, rng) -> tuple[int, np.ndarray]:
    """Sample by the Gumbel-max trick ``argmax_j (inv_temp (q_j - max q) + G_j)``; returns
    (index, probabilities).

    Floating point: a candidate whose probability is below about ``2^-53`` relative to the
    leader can never win (probability 0), a delta-level caveat shared by the base samplers."""
    q, inv_temp = _check_em_inputs(scores, inv_temp)
    probs = em_probabilities(q, inv_temp)
    if math.isinf(inv_temp):
        return int(np.argmax(probs)), probs
    return int(np.argmax(centred_logits(q, inv_temp) + rng.gumbel(size=q.size))), probs
