"""What a run publishes (``release``) and what it evaluated on the true data (``diagnostics``).

A private run's output is the chosen set (or k-vector, or point ``x_T``), the choices that built
it, and public parameters.  Its value ``F_D(S)`` or ``f_D(x_T)`` is computed on the true data, is
not covered by the privacy accounting, and so lives apart, in :class:`TrueDataDiagnostics`.
Release objects hold plain tuples, so two releases compare with ``==``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["TrueDataDiagnostics", "GreedyRelease", "ContinuousRelease", "epsilon_spent"]


@dataclass(frozen=True)
class TrueDataDiagnostics:
    """Values evaluated on the true (private) data, for reports and tests only: never publish them.

    ``value``: ``F_D(S)`` of a greedy-type run, ``f_D(x_T)`` of a continuous-greedy run.
    ``rounded_value``: ``F_D(S)`` of the rounded set of a continuous-greedy run (``None`` if unrounded).
    """

    value: float
    rounded_value: float | None = None


@dataclass(frozen=True)
class GreedyRelease:
    """Everything a greedy-type mechanism (Mitrovic, Alg. 3, Alg. 4) publishes, and nothing else.

    ``S``: the set as a 0/1 mask, or the k-vector; ``order``: the element (or ``(e, i)`` pair) each
    exponential mechanism chose, in turn; ``epsilon``: the basic-composition total charged
    (``inf`` for the non-private greedy, which has no accountant).
    """

    S: tuple
    order: tuple
    epsilon: float


@dataclass(frozen=True)
class ContinuousRelease:
    """Everything Algorithm 1 or 2 publishes, and nothing else.

    ``x``: ``x_T``; ``directions``: the chosen ``y_t``; ``S``: the rounded base as a 0/1 mask
    (``None`` if unrounded); ``epsilon``: the basic-composition total charged; ``info``: the
    public run parameters (cover, sizes, widths and public bounds).
    """

    x: tuple
    directions: tuple
    S: tuple | None
    epsilon: float
    info: tuple


def as_tuple(values) -> tuple:
    """A numpy array (or list of scalars) as a tuple of Python scalars."""
    return tuple(np.asarray(values).tolist())


def epsilon_spent(accountant) -> float:
    """The basic-composition total of ``accountant`` (summed exactly, then rounded once: ``3 x 0.1``
    gives ``0.3``); ``inf`` without one (a non-private run)."""
    return math.inf if accountant is None else float(accountant.basic_exact()[0])
