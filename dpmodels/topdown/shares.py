"""Budget shares, exact: the per-level shares and a strategy's per-query-set shares (spec 2.3).

Shares are :class:`fractions.Fraction`; given as floats or text they must sum to 1 within 1e-9 and
are then made exact (divided by their sum), so the ledger charges exactly the declared budget.
"""

from __future__ import annotations

from fractions import Fraction

from dpmodels.core.errors import DataValidationError
from dpmodels.core.noise import exact

__all__ = ["unit_shares", "level_row", "level_unit_shares", "measured_steps"]


def unit_shares(values, field: str) -> list[Fraction] | None:
    """Positive shares summing to 1 within 1e-9 (spec 2.3), made exact; None if not.

    Parameters
    ----------
    values : sequence
        The shares (Fractions, or numbers or text made exact).
    field : str
        The field an error names.
    """
    shares = [exact(v, field) for v in values]
    total = sum(shares)
    if not shares or any(v <= 0 for v in shares) or abs(total - 1) > Fraction(1, 10**9):
        return None
    return [v / total for v in shares]


def level_row(row, k: int, n: int) -> tuple[Fraction, ...]:
    """One level's query-set shares: non-negative (0: not measured there), summing to 1 within 1e-9 (made
    exact), one per query set.

    Parameters
    ----------
    row : sequence
        The shares of level ``k + 1``.
    k : int
        The row's index (0 = the root), for errors.
    n : int
        The number of query sets.
    """
    field = f"strategy.per_level[{k}]"
    shares = [exact(v, field) for v in row]
    if len(shares) != n:
        raise DataValidationError(field, f"needs one share per query set ({n}), got {len(shares)}")
    positive = unit_shares([v for v in shares if v > 0], field)
    if any(v < 0 for v in shares) or positive is None:
        raise DataValidationError(field, f"must be non-negative and sum to 1, got {[str(v) for v in shares]}")
    it = iter(positive)
    return tuple(next(it) if v > 0 else Fraction(0) for v in shares)


def level_unit_shares(level_shares, n_levels: int) -> list[Fraction]:
    """The per-level budget shares (default uniform), exact and summing to 1.

    Parameters
    ----------
    level_shares : sequence of Fraction or None
        One positive share per level, summing to 1; None for equal shares.
    n_levels : int
        The geography's number of levels.

    Returns
    -------
    list of Fraction
    """
    shares = level_shares if level_shares is not None else [Fraction(1, n_levels)] * n_levels
    if len(shares) != n_levels:
        raise DataValidationError("level_shares", f"need one share per level ({n_levels}), got {len(shares)}")
    unit = unit_shares(shares, "level_shares")
    if unit is None:
        raise DataValidationError("level_shares", f"must be positive and sum to 1, got {[str(v) for v in shares]}")
    return unit


def measured_steps(strategy, geo):
    """``(level, rows, query set, share)`` of every measurement a strategy makes, level by level in
    hierarchy order; a query set with share 0 at a level is not measured there.  The pure-DP and the
    zCDP plans both walk this, so they record and draw the same steps in the same order.

    Parameters
    ----------
    strategy : Strategy
        The query sets and their shares per level (:meth:`Strategy.shares_at`).
    geo : Hierarchy
        The geography; ``rows`` are the region indices of a level.
    """
    import numpy as np

    for level in range(1, geo.n_levels + 1):
        rows = np.arange(*geo.level_slice(level).indices(geo.n_regions))
        for query, share in zip(strategy.queries, strategy.shares_at(level), strict=True):
            if share != 0:
                yield level, rows, query, share
