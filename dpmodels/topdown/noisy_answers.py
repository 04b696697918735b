"""The noisy answers of a TopDown measurement (:func:`dpmodels.topdown.mechanism.measure`): the query
matrices in exact integers, the rows drawn in parts, and the answers plus exact noise.  Split from
:mod:`.mechanism`, which plans the budget and calls these."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import scipy.sparse as sp

from dpmodels.core.errors import DataValidationError
from dpmodels.core.noise import EXACT_RANGE, double_geometric_variance, laplace, noisy_integers

from .zcdp import GAUSSIAN, noisy_gaussian_answers

__all__ = ["row_chunks", "answer_matrices", "noisy_answers"]


def row_chunks(rows: np.ndarray, answers_per_row: int) -> list[np.ndarray]:
    """``rows`` in consecutive parts of at most :data:`~dpmodels.core.samplers.DRAW_CHUNK` answers (one
    row at least), drawn in order: independent draws, the law of one pass, one part's arrays at a time.

    Parameters
    ----------
    rows : numpy.ndarray
        The regions of one level, in order.
    answers_per_row : int
        The answers each region's query set has.
    """
    from dpmodels.core.samplers import DRAW_CHUNK

    per = max(1, DRAW_CHUNK // max(answers_per_row, 1))
    return [rows[a : a + per] for a in range(0, len(rows), per)]


def answer_matrices(strategy, noise: str, population) -> dict[str, sp.csr_matrix]:
    """The query matrices the answers are computed with: int64 for exact noise, refused if not integer.

    With exact (integer) noise, a non-integer coefficient makes a non-integer answer whose
    fractional part survives the noise and separates neighbours: refused, naming the query set.
    Every answer is at most ``max |coefficient| x population`` in magnitude; one that could reach
    ``2^52`` is refused too (the population is the root's invariant total, which is public).

    Parameters
    ----------
    strategy : Strategy
        The query sets measured (:class:`~dpmodels.topdown.mechanism.Strategy`).
    noise : {"geometric", "discrete-gaussian", "laplace"}
        The noise drawn: exact integer noise, or the research-only floating-point Laplace.
    population : int
        The public root total bounding every answer.
    """
    out = {}
    for q in strategy.queries:
        a = sp.csr_matrix(q.matrix)
        if noise == "laplace":
            out[q.name] = a.astype(np.float64)
            continue
        coefficients = np.asarray(a.data, dtype=np.float64)
        integral = np.isfinite(coefficients).all() and (coefficients == np.round(coefficients)).all()
        if not integral:
            raise DataValidationError(
                f"query set {q.name!r}",
                "has non-integer coefficients: exact integer noise needs integer answers (a fractional part "
                "would survive the noise and tell neighbouring data apart)",
            )
        largest = int(np.abs(coefficients).max()) if coefficients.size else 0
        if largest * max(int(population), 1) >= EXACT_RANGE // 2:
            raise DataValidationError(
                f"query set {q.name!r}", "its answers could reach 2^52 (coefficients x population): not exact"
            )
        out[q.name] = a.astype(np.int64)
    return out


def noisy_answers(noise: str, answers: sp.spmatrix, scale: Fraction, rng) -> tuple[np.ndarray, float]:
    """The noisy answers as float64 and the noise variance.

    Exact noise: ``truth + Z`` in int64 (:func:`noisy_integers`), then converted to float64 (post-
    processing of exact integers below ``2^53``, so the conversion is exact).  Laplace: in float64.

    Parameters
    ----------
    noise : {"geometric", "discrete-gaussian", "laplace"}
        The noise drawn.
    answers : scipy.sparse matrix
        The true answers (regions x answers, exact integers for exact noise).
    scale : fractions.Fraction
        The noise scale (``b`` of the discrete Laplace, ``sigma^2`` of the discrete Gaussian).
    rng
        The randomness (a secure generator on a release).
    """
    if noise == GAUSSIAN:
        return noisy_gaussian_answers(answers, scale, rng)
    truth = answers.toarray()
    if noise == "geometric":
        return noisy_integers(truth, scale, rng).astype(np.float64), double_geometric_variance(scale)
    return truth + laplace(scale, truth.shape, rng), 2 * float(scale) ** 2
