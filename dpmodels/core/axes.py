"""Axes of the shared figure look: log axes at decades that enclose the data, labelled with plain
numbers (:func:`log_axis`), and privacy budgets on an x axis labelled as given, never overprinting
(:func:`epsilon_axis`).  Re-exported by :mod:`dpmodels.core.figures`; matplotlib is imported inside
the functions only.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from .errors import DataValidationError

__all__ = ["plain_number", "log_axis", "epsilon_axis"]


def plain_number(value: float) -> str:
    """A tick label without exponent notation: 0.001, 0.5, 20, 1,000, 100,000.

    Parameters
    ----------
    value
        A positive tick position.
    """
    if value >= 1:
        return f"{value:,.0f}" if abs(value - round(value)) < 1e-9 * value else f"{value:,.4g}"
    return f"{value:.12f}".rstrip("0").rstrip(".")


def _positive(values: Iterable) -> list[float]:
    out = []
    for v in values:
        try:
            f = float(v)
        except (TypeError, ValueError):
            continue
        if math.isfinite(f) and f > 0:
            out.append(f)
    return out


def log_axis(ax, values: Iterable, *, axis: str = "y", include: Sequence[float] = (), bars: bool = False):
    """A log scale from a decade at or below the data to a decade at or above them (and
    ``include``, e.g. a ceiling), labelled at decades (and 2 and 5 between them when the range
    spans at most two decades) with plain numbers.

    Parameters
    ----------
    ax
        The axes.
    values
        The plotted values (non-positive and non-finite ones are ignored).
    axis
        ``"y"`` or ``"x"``.
    include
        Values the range must also contain (reference lines).
    bars
        Bars drawn up from the axis floor: the floor goes a decade lower when the smallest bar
        would otherwise be shorter than a factor of 2, so no bar looks empty.

    Returns
    -------
    tuple
        The axis limits (low, high).
    """
    from matplotlib.ticker import FixedLocator, FuncFormatter, LogLocator, NullFormatter

    if axis not in ("x", "y"):
        raise DataValidationError("axis", f"must be 'x' or 'y', got {axis!r}")
    data = _positive(values) + _positive(include)
    if not data:
        return None
    low = 10.0 ** math.floor(math.log10(min(data)) + 1e-12)
    if bars and min(_positive(values) or data) < 2 * low:
        low /= 10
    high = 10.0 ** math.ceil(math.log10(max(data)) - 1e-12)
    if high <= low:
        high = low * 10
    decades = round(math.log10(high / low))
    step = 1 if decades <= 8 else 2
    ticks = [low * 10.0**k for k in range(0, decades + 1, step)]
    if decades <= 2:
        ticks = sorted({t * m for t in ticks for m in (1, 2, 5) if t * m <= high * (1 + 1e-9)})
    target = ax.yaxis if axis == "y" else ax.xaxis
    (ax.set_yscale if axis == "y" else ax.set_xscale)("log")
    (ax.set_ylim if axis == "y" else ax.set_xlim)(low, high)
    target.set_major_locator(FixedLocator(ticks))
    target.set_major_formatter(FuncFormatter(lambda v, _: plain_number(v)))
    target.set_minor_locator(LogLocator(base=10, subs=tuple(range(2, 10))))
    target.set_minor_formatter(NullFormatter())
    return low, high


def epsilon_axis(ax, epsilons: Iterable, *, label: str = "privacy budget ε", log: bool = True) -> None:
    """Label the x axis at the given privacy budgets only, as given (0.25, 1, 5), on a log scale;
    a label that would crowd the one before it is left out (its tick stays).

    Parameters
    ----------
    ax
        The axes.
    epsilons
        The budgets plotted.
    label
        The axis label.
    log
        Log scale (budgets usually span decades).
    """
    from matplotlib.ticker import FixedFormatter, FixedLocator, NullLocator

    values = sorted(set(_positive(epsilons)))
    if not values:
        return
    if log:
        ax.set_xscale("log")
        pad = 10 ** (0.08 * max(math.log10(values[-1] / values[0]), 0.5))
        ax.set_xlim(values[0] / pad, values[-1] * pad)
    position = (lambda v: math.log10(v)) if log else float
    span = max(position(values[-1]) - position(values[0]), 1e-12)
    labels, last = [], None
    for v in values:
        crowded = last is not None and (position(v) - last) < 0.07 * span
        labels.append("" if crowded else f"{v:g}")
        last = last if crowded else position(v)
    ax.xaxis.set_major_locator(FixedLocator(values))
    ax.xaxis.set_major_formatter(FixedFormatter(labels))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xlabel(label)
