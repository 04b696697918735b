"""L1 and squared L2 sensitivities of the PGSR measurements, and the public bound ``z_max`` they rest on.

**Neighbour relation** (spec 2.1 and erratum A1, with the paper's ``z in {0, 1}``
generalised to a declared public bound ``z in {0, ..., z_max}``): ``D`` and ``D'`` differ
by one record, a person ``p`` with (clamped) quantity ``z <= z_max`` removed from (or added to)
a unit whose size is at least 1 in both, so its group size moves between ``s`` and
``s - z >= 1`` and ``G`` is unchanged.  Sizes above ``N`` count as ``N`` (``overflow="top"``);
write ``clip(s) = min(s, N)`` and ``m = clip(s) - clip(s - z) <= z <= z_max``.  Per level, the
unit lies in exactly one region ``r_j`` (regions of a level are disjoint), so:

* counts ``n^r``: ``n_{clip(s)}`` loses 1 and ``n_{clip(s-z)}`` gains 1 (or nothing moves
  when ``m = 0``): **2** (Lemma 4, unchanged by ``z``);
* cumulative ``c^r = (+)n^r``: ``c_k = #{groups of size <= k}`` gains 1 exactly for
  ``clip(s-z) <= k < clip(s)``: ``m <= z_max`` (Lemma 6 is the case ``z_max = 1``);
* chain of level ``l`` (size-major, then the level's ``|R_l|`` regions): node ``(k, j)``
  sits at position ``(k - 1)|R_l| + j``, and the running sum gains 1 on every position from
  ``(clip(s-z), j)`` up to just before ``(clip(s), j)``: ``m |R_l| <= |R_l| z_max`` (A2).

**Squared L2 sensitivities** (for the discrete Gaussian under zCDP, whose cost is
``rho = Delta_2^2 / (2 sigma^2)``): in all three cases every coordinate of the difference is 0
or +-1 (two cells of the counts, a run of ``m`` cumulative cells, a run of ``m |R_l|`` chain
positions), so ``||f(D) - f(D')||_2^2 = ||f(D) - f(D')||_1`` and the squared L2 sensitivity is
the L1 one: **2** for counts (``L2 = sqrt 2``), **z_max** for cumulative, **|R_l| z_max** for the
chain (:func:`level_l2_sensitivity`, exact integers).

All of them are reached when ``N > z_max`` (a unit of size ``z_max + 1`` losing a person with
``z = z_max``); ``tests/pgsr/test_privacy.py`` checks every removal by brute force (L1), and
``tests/pgsr/test_zcdp_mechanism.py`` every neighbouring pair of tiny datasets (squared L2).

**The bounding rules keep these sensitivities** (:mod:`dpmodels.pgsr.bounding`).  Each rule is
a fixed function of one record or of one unit, applied to ``D`` and ``D'`` alike, and depends on
declared facts only (``z_max``, the hierarchy, ``N``), never on other records:

* *clamping* a quantity to ``[0, z_max]``: the added or removed person then has ``z <= z_max``
  whatever the raw value, so the unit's size moves by at most ``z_max``: the case above
  (a raw quantity above ``z_max`` is the same neighbour as one of exactly ``z_max``);
* *leaving out* units outside the hierarchy's leaves: a record of such a unit changes nothing
  (distance 0, every sensitivity holds); a unit's region is one value for all its members (a
  unit naming two regions is a malformed table, refused), so the rule never splits a unit;
* *leaving out units of size 0*: a unit is a group exactly when its clamped size is >= 1, and
  the relation keeps it >= 1 on both sides; a record of quantity 0 added to or removed from
  a non-empty unit moves nothing;
* *the top bin* (``overflow="top"``): ``clip`` above, with no edge.  ``overflow="error"``
  instead refuses data with a group above ``N``, so a neighbour can turn a release into a
  refusal: no epsilon covers that, which is why it is for experiments only.

**Removals that empty a unit are not covered.**  ``G`` is public and released exactly, so a
neighbour with another ``G`` is told apart with certainty whatever the noise: no calibration
can make that pair epsilon-DP, and the ledger's epsilon holds only for the G-preserving
relation above (as in the paper's proofs).  Such a neighbour arises when the person was the
unit's only record, or when the unit's other members have quantity 0: the unit then has size 0
and is left out (rule above), so the data has ``G - 1`` groups; besides ``G``, that moves a
level's counts by 1, its cumulative vectors by ``N - clip(s) + 1 <= N`` and its chain by up to
``|R_l| N``, more than calibrated for.  Nothing is charged for such pairs: the guarantee to a
person who is alone in a unit rests on ``G`` being public knowledge in the first place (the
paper's assumption, erratum A1).
"""

from __future__ import annotations

import numbers

from dpmodels.core.errors import DataValidationError

__all__ = ["NEIGHBOURS", "level_sensitivity", "level_l2_sensitivity", "validate_z_max"]

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


def level_l2_sensitivity(kind: str, n_regions: int, z_max: int = 1) -> int:
    """Squared L2 sensitivity ``Delta_2^2`` of one level's measured vector under the relation above.

    Exact: 2 (counts), ``z_max`` (cumulative), ``|R_l| z_max`` (chain); see the module docstring.
    The discrete Gaussian at ``sigma^2`` on this vector is ``Delta_2^2 / (2 sigma^2)``-zCDP.
    """
    z_max = validate_z_max(z_max)
    if kind == "counts":
        return 1 + 1  # two cells, by 1 each
    if kind == "cumulative":
        return z_max  # m <= z_max consecutive cells, by 1 each
    if kind == "chain":
        return int(n_regions) * z_max  # m |R_l| <= |R_l| z_max consecutive positions, by 1 each
    raise DataValidationError("kind", f"must be 'counts', 'cumulative' or 'chain', got {kind!r}")
