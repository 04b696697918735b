"""TopDown releases on a user's data: person records -> private microdata and per-level histograms.

:func:`release` measures through a :class:`~dpmodels.core.session.PrivacySession` (secure
randomness, exact double-geometric noise charged in epsilon, or with ``noise="discrete-gaussian"``
the exact discrete Gaussian charged in zCDP rho; every scale checked before anything is drawn)
and post-processes the noisy answers with the public knowledge only: the schema, the
geography and the invariant totals.  Floating-point Laplace (``noise="laplace"`` of
:func:`~dpmodels.topdown.mechanism.measure`) stays a research option of ``compare``: it
leaks through its low bits, so a release refuses it.  ``dpmodels release topdown`` wraps
:func:`release` for files: the released microdata CSV, the per-level histograms CSV and
the JSON ledger.

The public parts are declared, never read off the records: a private release refuses data whose
geography was derived from the records (the blocks where persons live), and persons outside the
declared blocks or the schema's values are left out by stated rules
(:data:`~dpmodels.topdown.data.BOUNDING_RULES`) instead of refusing the release.
:func:`release_facts` states all of it for the release's manifest.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpmodels.core.errors import DataValidationError, PrivacyParameterError
from dpmodels.core.executors import resolve_executor
from dpmodels.core.facts import ReleaseFacts
from dpmodels.core.hierarchy import Hierarchy
from dpmodels.core.session import PrivacySession

from .data import BOUNDING_RULES, PublicKnowledge, Schema, TopDownData
from .driver import TopDownResult, histogram_frame, topdown
from .interleaved import check_options
from .mechanism import Measurements, Strategy, default_strategy, level_unit_shares, measure, plan_measurement
from .production import STRUCTURAL_ZERO_RULE
from .solve import NodeOptions
from .zcdp import GAUSSIAN, gaussian_facts, level_l2_deltas

__all__ = [
    "RELEASE_NOISE",
    "RELEASE_NOISES",
    "HARD_CHECKS",
    "NEIGHBOURS",
    "PublicParts",
    "release",
    "measure_release",
    "release_facts",
    "histogram_frame",
]

RELEASE_NOISE = "geometric"  # the exact double-geometric sampler: a release's default noise (pure DP)
#: The noises a release draws: the default, and the exact discrete Gaussian (zCDP, charged in rho).
RELEASE_NOISES = (RELEASE_NOISE, GAUSSIAN)
#: The hard public constraints of a release (edits and GQ facts may be relaxed by a logged fallback).
HARD_CHECKS = ("negative cells", "invariant totals off", "structural zeros off", "inconsistent parents")
#: The neighbour relation a release is calibrated for (``measure``'s ``neighbours``).
NEIGHBOURS = "substitution"


@dataclass(frozen=True)
class PublicParts:
    """What the post-processing may see besides the measurements: nothing drawn from the records."""

    schema: Schema
    geography: Hierarchy
    knowledge: PublicKnowledge


def release(
    session: PrivacySession,
    epsilon,
    strategy: Strategy | None = None,
    level_shares=None,
    options: NodeOptions | None = None,
    executor=None,
    progress: bool = False,
    noise: str = RELEASE_NOISE,
    *,
    rho=None,
) -> TopDownResult:
    """Spend ``epsilon`` of ``session`` on one TopDown measurement; returns the post-processed release.

    Only the measurement runs inside the session (noise from ``session.rng``); the driver
    then sees the noisy answers and :class:`PublicParts`.  The options, the executor and
    the noise are checked before anything is drawn, and so is the geography: on the secure
    generator, data whose geography was derived from the records (``from_csv`` without
    ``blocks``) are refused, since which blocks exist would then depend on the persons (a
    person alone in a block makes it appear).  The session charges before it runs the
    mechanism, so these checks and every scale of the measurement
    (:func:`~dpmodels.topdown.mechanism.plan_measurement`) run before it: a refusal costs no
    budget.  The measurement is calibrated for substitution neighbours whose replacement record
    may be left out by the bounding rules (``measure(..., records_may_leave=True)``).

    Parameters
    ----------
    session
        The privacy session holding the :class:`~dpmodels.topdown.data.TopDownData`.
    epsilon
        The budget this release spends from the session (None with the discrete Gaussian).
    strategy, level_shares
        The query sets with their shares, and the per-level shares (defaults: the E2E shape,
        uniform levels); public choices, stated by :func:`release_facts`.
    options
        The post-processing's :class:`~dpmodels.topdown.solve.NodeOptions`.
    executor, progress
        Where the solves of a level run, and whether to show progress.
    noise
        ``"geometric"`` (exact discrete Laplace, pure DP) or ``"discrete-gaussian"`` (exact discrete
        Gaussian, zCDP: the session charges ``rho``); floating-point Laplace is refused.
    rho
        The zCDP budget this release spends with the discrete Gaussian (split as an epsilon would be).
    """
    if options is not None and not isinstance(options, NodeOptions):
        raise DataValidationError("options", f"must be a NodeOptions, got {type(options).__name__}")
    if options is not None:  # passes refused before the draw, like every public choice
        check_options(options, (strategy or default_strategy(session._data.schema)).queries)
    with resolve_executor(executor) as pool:  # a bad executor is refused here, before the draw
        measured, public = measure_release(session, epsilon, strategy, level_shares, noise, rho=rho)
        return topdown(
            measured, public.knowledge, public.schema, public.geography, options, executor=pool, progress=progress
        )


def measure_release(
    session: PrivacySession,
    epsilon,
    strategy: Strategy | None = None,
    level_shares=None,
    noise: str = RELEASE_NOISE,
    *,
    rho=None,
) -> tuple[Measurements, PublicParts]:
    """Spend ``epsilon`` of ``session`` on the TopDown measurement alone: the noisy answers and the
    public parts a post-processing takes.

    :func:`release` is this followed by :func:`~dpmodels.topdown.driver.topdown`; run apart
    (``dpmodels measure topdown``, then ``dpmodels postprocess topdown``) with the same
    generator, the two steps give the same release.  The parameters are :func:`release`'s.
    """
    if noise not in RELEASE_NOISES:
        raise PrivacyParameterError(
            "noise",
            f"a release draws exact noise ({' or '.join(map(repr, RELEASE_NOISES))}); {noise!r} is refused "
            "(floating-point Laplace leaks through its low bits: research comparisons only)",
        )
    # The session charges before it runs the mechanism: everything public is checked first.  The
    # data are read for their declared parts only (geography, schema, the invariant root total).
    _check_before_charging(session._data, session.private, epsilon, strategy, level_shares, noise, rho)
    mechanism = _measurement(strategy, level_shares, session.private, noise)
    if noise == GAUSSIAN:
        return session.run("TopDown measurement", mechanism, rho=rho)
    return session.run("TopDown measurement", mechanism, epsilon)


def _measurement(strategy: Strategy | None, level_shares, private: bool, noise: str = RELEASE_NOISE):
    """The session's mechanism: exact noisy answers, and the public parts for the post-processing."""
    gaussian = noise == GAUSSIAN

    def run(data: TopDownData, amount, rng):
        _require_declared_geography(data, private)
        epsilon, rho = (None, amount) if gaussian else (amount, None)
        measured = measure(
            data, epsilon, strategy, level_shares, noise, NEIGHBOURS, rng=rng, records_may_leave=True, rho=rho
        )
        return (measured, PublicParts(data.schema, data.geography, data.knowledge)), measured.ledger

    return run


def _check_before_charging(data: TopDownData, private: bool, epsilon, strategy, level_shares, noise, rho) -> None:
    """Refuse, from public facts only, what the mechanism would refuse: nothing is charged or drawn."""
    _require_declared_geography(data, private)
    plan_measurement(data, epsilon, strategy, level_shares, noise, NEIGHBOURS, records_may_leave=True, rho=rho)


def _plan(data: TopDownData, strategy: Strategy, level_shares, rho):
    """The discrete Gaussian measurement a release of ``rho`` makes, planned (recorded, not drawn)."""
    return plan_measurement(data, None, strategy, level_shares, GAUSSIAN, NEIGHBOURS, records_may_leave=True, rho=rho)


def _require_declared_geography(data: TopDownData, private: bool) -> None:
    """Refuse, before any draw, a geography derived from the records in a private session."""
    if private and not data.geography_declared:
        raise DataValidationError(
            "blocks",
            f"the geography of {data.name!r} was derived from the records (the blocks that have persons, which "
            "depend on them); a private release needs the declared block list, empty blocks too: give it with "
            "--blocks FILE (Python: instances.topdown.from_csv(..., blocks=FILE)). Only a session declared not "
            "private (--not-private) may take the blocks from the data; nothing was drawn",
        )


def release_facts(
    data: TopDownData,
    strategy: Strategy | None = None,
    level_shares=None,
    options: NodeOptions | None = None,
    *,
    noise: str = RELEASE_NOISE,
    rho=None,
) -> ReleaseFacts:
    """What a TopDown release states in its manifest, from the declared inputs and options only.

    Reads the schema, the geography, the public knowledge's ``total_level``, zeros, edits and GQ
    facts, and the strategy's and levels' shares; never the person counts (the invariant totals
    are described, not given: the release itself carries them).  A geography derived from the
    records is not a declared fact: its sizes are left out and a note says the output is not private.

    Parameters
    ----------
    data
        The data of the release (only its declared parts are read).
    strategy
        The query sets and their shares (default :func:`~dpmodels.topdown.mechanism.default_strategy`).
    level_shares
        The per-level budget shares (default uniform over the levels).
    options
        The post-processing options (default :class:`~dpmodels.topdown.solve.NodeOptions`).
    noise
        ``"geometric"`` (pure DP) or ``"discrete-gaussian"`` (zCDP: the squared L2 sensitivity of every
        query set at every level, and given ``rho`` the exact rho and ``sigma^2`` of each, as the
        measurement's ledger records them; :func:`~dpmodels.topdown.zcdp.gaussian_facts`).
    rho
        The release's zCDP budget, with the discrete Gaussian.
    """
    if noise not in RELEASE_NOISES:
        raise PrivacyParameterError("noise", f"a release draws {' or '.join(map(repr, RELEASE_NOISES))}, not {noise!r}")
    geo, kn, schema = data.geography, data.knowledge, data.schema
    strategy = strategy or default_strategy(schema)
    shares = level_unit_shares(level_shares, geo.n_levels)
    declared = {
        "schema": {a.name: a.size for a in schema.attributes},
        "cells": schema.size,
        "total_level": kn.total_level,
        "strategy": [
            {"query_set": q.name, "rows": q.rows, "share": "per level" if strategy.per_level else str(share)}
            for q, share in zip(strategy.queries, strategy.shares, strict=True)
        ],
        "level_shares": [str(v) for v in shares],
        "structural_zero_cells": len(kn.structural_zeros),
        "edits": [e.name for e in kn.edits],
    }
    if strategy.per_level:  # the production's allocation: query-set shares level by level
        declared["strategy_shares_per_level"] = [[str(v) for v in row] for row in strategy.per_level]
    if options is not None and options.passes:
        declared["passes"] = [list(p) for p in options.passes]
    if options is not None and options.l2_passes:  # the production's inner passes (inner_passes.py)
        declared["l2_passes"] = [list(p) for p in options.l2_passes]
        declared["l2_tolerance"] = options.l2_tolerance
    if options is not None and options.rounder_passes:
        declared["rounder_passes"] = [list(p) for p in options.rounder_passes]
    if options is not None and options.objective == "queries":
        declared["rounder"] = "queries: |Q_r y - round(Q_r phi)| per measured marginal row (the 2020 production's)"
    notes = list(_NOTES)
    gaussian = noise == GAUSSIAN
    if gaussian:
        deltas = [level_l2_deltas(strategy, geo, lv, NEIGHBOURS, True) for lv in range(1, geo.n_levels + 1)]
        plan = None if rho is None else _plan(data, strategy, shares, rho)
        declared.update(gaussian_facts(deltas, plan))
        notes = [_GAUSSIAN_NOTES.get(note, note) for note in notes]
    if data.geography_declared:
        declared["blocks"] = len(geo.leaves)
        declared["regions_per_level"] = [int(v) for v in geo.level_sizes()]
    else:
        notes.insert(0, _DERIVED_GEOGRAPHY_NOTE)
    return ReleaseFacts(
        privacy_unit="one person (one row of the persons file: its block and its attribute values)",
        neighbours=f"{NEIGHBOURS}: {_L2_NEIGHBOURS_TEXT if gaussian else _NEIGHBOURS_TEXT}",
        declared=declared,
        invariants=_invariants(data),
        bounding=BOUNDING_RULES + ((STRUCTURAL_ZERO_RULE,) if len(kn.structural_zeros) else ()),
        post_processing=_post_processing(options or NodeOptions()),
        flavor="zCDP" if gaussian else "pure DP",
        notes=tuple(notes),
    )


_NEIGHBOURS_TEXT = (
    "one person's record is replaced by any other record, its block included (a person may move between "
    "blocks). A replacement that the bounding rules leave out makes the pair a removal, which the calibration "
    "covers: levels of two or more regions have sensitivity 2 max_a |A e_a|_1 per query set, a single-region "
    "level max(within-region substitution, max_a |A e_a|_1)"
)
_L2_NEIGHBOURS_TEXT = (
    "one person's record is replaced by any other record, its block included (a person may move between "
    "blocks). A replacement that the bounding rules leave out makes the pair a removal, which the calibration "
    "covers: the squared L2 sensitivity of a query set at a level of two or more regions is "
    "max(2 max_a |A e_a|_2^2, max_{a != b} |A (e_a - e_b)|_2^2), at a single-region level "
    "max(max_{a != b} |A (e_a - e_b)|_2^2, max_a |A e_a|_2^2)"
)
_DERIVED_GEOGRAPHY_NOTE = (
    "NOT PRIVATE: the geography was derived from the records (the blocks that have persons), so which blocks "
    "exist depends on the data; the numbers of blocks and regions are not declared facts"
)
_NOTES = (
    "the unit is a row of the persons file: a person with k rows is protected at k times the budget",
    "the invariant totals are exact (as in the Census): a person who moves between two invariant regions "
    "changes both totals by one, and a person whom a bounding rule leaves out (e.g. moved to an unlisted "
    "block) is missing from every total down to the nation's: unprotected",
    "a malformed input (an unreadable file, a missing column, a blank value, a geocode that is not 15 digits, "
    "a block listed twice) refuses the whole release; the bounding rules never do",
    "noise is exact discrete Laplace added to integer answers in int64; the float64 values the post-processing "
    "reads are exact conversions of the noisy integers",
)
#: The notes that differ under zCDP (group privacy of k rows costs k^2 rho; the noise).
_GAUSSIAN_NOTES = {
    _NOTES[0]: "the unit is a row of the persons file: a person with k rows is protected at k^2 times the rho "
    "(zCDP group privacy)",
    _NOTES[3]: "noise is the exact discrete Gaussian (Canonne-Kamath-Steinke) added to integer answers in int64; the "
    "float64 values the post-processing reads are exact conversions of the noisy integers, weighed by the "
    "discrete Gaussian's variance",
}


def _invariants(data: TopDownData) -> dict:
    """The quantities released exactly, described (their values are in the release itself)."""
    kn, geo = data.knowledge, data.geography
    regions = int(np.sum(geo.level <= kn.total_level))
    out = {
        f"population of every region of levels 1..{kn.total_level}": (
            f"released exactly ({regions} regions; level 1 is the root): the released histograms of these regions "
            "sum to their true populations after the bounding rules"
        )
    }
    if kn.gq is not None:
        out["group-quarters facts"] = (
            "per block, which group-quarters types are present and their facility lower bounds: respected exactly"
        )
    if kn.gq is not None and kn.gq.upper is not None:
        out["occupancy caps"] = (
            "per block and group-quarters type, at most the declared persons: respected exactly by the release; "
            "they bind the release, not the data (data over a cap are measured as they are, never refused)"
        )
    for group in kn.child_groups:
        out[f"total of {' + '.join(group.regions)}"] = "released exactly (a grouped child total)"
    return out


def _post_processing(options: NodeOptions) -> str:
    if options.passes or options.l2_passes or options.rounder_passes:
        passes = _listed("pass", options.passes) or "one pass of every query set"
        l2 = rounder = ""
        if options.l2_passes:
            l2 = (
                f" in L2 passes ({_listed('L2 pass', options.l2_passes)}), each fitting its own query sets with the "
                f"earlier L2 passes' answers held within {options.l2_tolerance}"
            )
        if options.rounder_passes:
            rounder = (
                f" in rounder passes ({_listed('rounder pass', options.rounder_passes)}), each judged by its own query "
                "sets with the earlier rounder passes' rounded answers held exactly"
            )
        return (
            f"top down, level by level from the root, in interleaved passes ({passes}): each pass estimates the "
            f"children from that pass's noisy answers by weighted least squares{l2}, then rounds them{rounder}, "
            "holding the rounded answers of the earlier passes exactly; when"
            + _post_processing(NodeOptions()).split("; when", 1)[1]
        )
    return (
        "top down, level by level from the root: each parent's children are estimated by weighted least squares "
        f"(L2, {options.l2}) from their noisy answers, then rounded to non-negative integers summing to the parent "
        f"(L1, {options.l1}), keeping the invariant totals, structural zeros, group-quarters facts and "
        f"{'edits' if options.edits else 'no edits'}; when no solution meets them, edits are dropped, then the "
        "failsafe relaxes the parent sums to the least distance. It reads only the noisy answers and the declared "
        "facts; microdata are the block histograms written out one row per person"
    )


def _listed(word: str, passes) -> str:
    return "; ".join(f"{word} {k}: {', '.join(p)}" for k, p in enumerate(passes, start=1))
