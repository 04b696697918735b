"""The exponential mechanism of every private submodular algorithm (Def 2.7): ``Pr[j] ~ exp(b q_j)``.

Scores are centred before they are scaled: ``b (q_j - max q)`` has its largest logit exactly 0,
so the weights lie in ``(0, 1]`` and keep the score gaps ``q_j - max q`` at full precision.
Scaling first (``b q_j``, then centring in log space) lost those gaps once ``b q_j`` was large: a
4-way tie at 1e16 gave probabilities summing to 0.54 and a Gumbel-max biased toward index 0.
The distribution is unchanged, since ``exp(b q_j)`` and ``exp(b (q_j - m))`` differ by a common
factor ``exp(b m)``.

``b = inf`` is the argmax (lowest index on ties) and ``b = 0`` is uniform: the non-private and
the data-independent limits.

:func:`em_choice` draws its index with the exact core sampler
(:func:`dpmodels.core.selection.exponential_mechanism`: the scores read as the dyadic rationals
they are, rejection with exact ``Bernoulli(exp(-gamma))`` coins on the generator's raw words);
the float probabilities it also returns are for reports and tests only.  The inverse temperature
``eps / (2 Delta)`` is an exact Fraction (:func:`inverse_temperature`), so the law drawn is the
one the accountant charges for, not its float rounding.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from dpmodels.core.errors import DataValidationError, PrivacyParameterError
from dpmodels.core.noise import exact
from dpmodels.core.selection import exponential_mechanism

__all__ = ["em_probabilities", "em_choice", "centred_logits", "inverse_temperature"]


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


def inverse_temperature(epsilon, sensitivity) -> Fraction | float:
    """``eps' = eps / (2 Delta)`` exactly, the inverse temperature of every EM of the paper.

    ``eps`` and ``Delta`` are read as the decimals they print as (``0.1`` is ``1/10``; a Fraction
    stays itself), so ``eps'`` is the rational the privacy proof uses; ``eps = inf`` gives ``inf``."""
    if math.isinf(float(epsilon)):
        return math.inf
    return exact(epsilon, "epsilon") / (2 * exact(sensitivity, "sensitivity"))


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


def em_choice(scores, inv_temp, rng) -> tuple[int, np.ndarray]:
    """``(index, probabilities)``: the index drawn exactly by the core exponential mechanism, the
    probabilities (floats, :func:`em_probabilities`) for reporting.

    ``inv_temp`` is a Fraction (:func:`inverse_temperature`), an int, or a float read as the dyadic
    rational it is; ``inf`` is the argmax (lowest index on ties), drawing nothing.

    Parameters
    ----------
    scores : array_like
        One finite score per candidate.
    inv_temp : Fraction, int or float
        The inverse temperature ``eps / (2 Delta)``; ``inf`` is the argmax.
    rng : numpy.random.Generator
        The mechanism's stream.

    Returns
    -------
    tuple
        ``(index, probabilities)``.
    """
    q, beta = _check_em_inputs(scores, inv_temp)
    probs = em_probabilities(q, beta)
    if math.isinf(beta):
        return int(np.argmax(probs)), probs
    return exponential_mechanism(q, inv_temp, rng), probs
