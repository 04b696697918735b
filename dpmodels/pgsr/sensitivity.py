"""L1 sensitivities of the PGSR measurements, and the public bound ``z_max`` they rest on.

**Neighbour relation** (spec 2.1 and erratum A1, with the paper's ``z in {0, 1}``
generalised to a declared public bound ``z in {0, ..., z_max}``): ``D`` and ``D'`` differ
by one record, a person ``p`` with quantity ``z <= z_max`` removed from (or added to) a
unit that is non-empty in both, so its group size moves between ``s`` and ``s - z >= 1``
and ``G`` is unchanged.  Sizes above ``N`` count as ``N`` (``overflow="top"``); write
``clip(s) = min(s, N)`` and ``m = clip(s) - clip(s - z) <= z <= z_max``.  Per level, the
unit lies in exactly one region ``r_j`` (regions of a level are disjoint), so:

* counts ``n^r``: ``n_{clip(s)}`` loses 1 and ``n_{clip(s-z)}`` gains 1 (or nothing moves
  when ``m = 0``): **2** (Lemma 4, unchanged by ``z``);
* cumulative ``c^r = (+)n^r``: ``c_k = #{groups of size <= k}`` gains 1 exactly for
  ``clip(s-z) <= k < clip(s)``: ``m <= z_max`` (Lemma 6 is the case ``z_max = 1``);
* chain of level ``l`` (size-major, then the level's ``|R_l|`` regions): node ``(k, j)``
  sits at position ``(k - 1)|R_l| + j``, and the running sum gains 1 on every position from
  ``(clip(s-z), j)`` up to just before ``(clip(s), j)``: ``m |R_l| <= |R_l| z_max`` (A2).

All three are reached when ``N > z_max`` (a unit of size ``z_max + 1`` losing a person with
``z = z_max``); ``tests/pgsr/test_privacy.py`` checks every removal by brute force.  With
``overflow="error"`` both data sets must also keep every size ``<= N``, since a refused input
would itself reveal a larger group; ``overflow="top"`` has no such edge.

**Removals that empty a unit are not covered.**  ``G`` is public and released exactly, so a
neighbour with another ``G`` is told apart with certainty whatever the noise: no calibration
can make that pair epsilon-DP, and the ledger's epsilon holds only for the G-preserving
relation above (as in the paper's proofs).  The code meets such a neighbour in two ways.
If only members with ``z = 0`` remain, ``from_records`` refuses the size-0 group.  If the
person was the unit's only record, the unit vanishes and ``from_records`` builds data with
``G - 1``; besides ``G``, that moves a level's counts by 1, its cumulative vectors by
``N - clip(s) + 1 <= N`` and its chain by up to ``|R_l| N``, more than calibrated for.
Nothing is charged for such pairs: the guarantee to a person who is alone in a unit rests
on ``G`` being public knowledge in the first place (the paper's assumption, erratum A1).
"""

from __future__ import annotations

import numbers

import numpy as np

from dpmodels.core.errors import DataValidationError

__all__ = ["NEIGHBOURS", "level_sensitivity", "require_quantities_within", "validate_z_max"]

#: The neighbour relation the ledgers' epsilons refer to (recorded with each noisy release).
NEIGHBOURS = "add or remove one record with quantity <= z_max in a unit that stays non-empty (G fixed)"


def validate_z_max(z_max) -> int:
    """``z_max`` as an int >= 1: the declared public bound on any one person's quantity."""
    if isinstance(z_max, bool) or not isinstance(z_max, numbers.Integral) or z_max < 1:
        raise DataValidationError(
            "z_max", f"must be an integer >= 1 (the public bound on one person's quantity), got {z_max!r}"
        )
    return int(z_max)


def level_sensitivity(kind: str, n_regions: int, z_max: int = 1) -> int:
    """L1 sensitivity of one level's measured vector under the relation above.

    ``n_regions`` is ``|R_l|``, which only the chain depends on.
    """
    z_max = validate_z_max(z_max)
    if kind == "counts":
        return 2
    if kind == "cumulative":
        return z_max
    if kind == "chain":
        return int(n_regions) * z_max
    raise DataValidationError("kind", f"must be 'counts', 'cumulative' or 'chain', got {kind!r}")


def require_quantities_within(users, quantities, z_max: int) -> None:
    """Refuse any quantity above ``z_max``: the noise is calibrated to that bound.

    The bound must come from public knowledge, not from the data (a data-derived bound
    would itself leak the largest quantity).
    """
    over = np.flatnonzero(np.asarray(quantities) > z_max)
    if len(over):
        i = int(over[0])
        user, value = np.asarray(users).tolist()[i], np.asarray(quantities).tolist()[i]
        raise DataValidationError(
            "quantity",
            f"user {user!r} has quantity {value}, above z_max = {z_max} "
            f"({len(over)} record(s) exceed it); declare a larger z_max, chosen from public knowledge "
            "rather than from the data, since the noise is calibrated to it",
        )
