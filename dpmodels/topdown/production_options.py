"""What ``dpmodels release topdown`` does with the production options (issue 25): ``--passes``
(and ``--l2-passes``, ``--l2-tolerance``, ``--rounder-passes`` within them), ``--rounder``,
``--budget-preset``, ``--level-shares`` (the options are declared in :mod:`.commands`;
``--structural-zeros`` goes to the loader), and the manifest's list of the nodes that used the failsafe.

``--level-shares`` (also on ``measure topdown`` and ``compare topdown``) splits the budget over the
geography's levels, root first, as exact fractions that sum to exactly 1; with ``--budget-preset`` it
replaces the preset's geolevel shares and keeps the preset's query shares within each level.

Imported when the command runs; it imports the algorithms lazily.
"""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction

from dpmodels.core.errors import DataValidationError

__all__ = [
    "parse_passes",
    "parse_level_shares",
    "level_shares_for",
    "level_shares_source",
    "production_release",
    "production_facts",
    "production_details",
]


def parse_passes(text: str | None, flag: str = "--passes") -> tuple[tuple[str, ...], ...]:
    """``"total; rest"`` -> ``(("total",), ("rest",))``: passes split by ``;``, query sets by ``,``.

    Parameters
    ----------
    text : str or None
        The ``--passes`` value (None: no passes).
    flag : str, default "--passes"
        The option's name in errors (``--l2-passes``, ``--rounder-passes`` take the same form).
    """
    if text is None:
        return ()
    passes = tuple(tuple(q.strip() for q in p.split(",") if q.strip()) for p in text.split(";"))
    if not passes or any(not p for p in passes):
        raise DataValidationError(flag, f"expected query sets separated by ',' and passes by ';', got {text!r}")
    return passes


def parse_level_shares(text: str | None) -> tuple[Fraction, ...] | None:
    """``"1/6,1/6,1/6,1/6,1/6,1/6"`` -> six exact Fractions, root first; None when not given.

    Each share is a ratio (``104/4099``) or a decimal (``0.25``), read exactly, and > 0 (every level is
    measured); together they sum to exactly 1.  Nothing is rounded or rescaled: shares that do not add
    up are refused, naming ``--level-shares``.

    Parameters
    ----------
    text : str or None
        The ``--level-shares`` value.
    """
    if text is None:
        return None
    from dpmodels.core.errors import PrivacyParameterError
    from dpmodels.core.noise import parse_number

    shares = []
    for k, item in enumerate((part.strip() for part in text.split(",")), start=1):
        try:
            value = parse_number(item, "--level-shares")
        except PrivacyParameterError:
            raise DataValidationError(
                "--level-shares",
                f"share {k} ({item!r}) is not an exact fraction: give ratios such as 1/6 or decimals such as 0.25, "
                "separated by commas",
            ) from None
        if value <= 0:
            raise DataValidationError(
                "--level-shares", f"share {k} is {item}: every level is measured, so every share must be > 0"
            )
        shares.append(value)
    total = sum(shares)
    if total != 1:
        raise DataValidationError("--level-shares", f"the shares sum to {total}, not exactly 1 (nothing is rescaled)")
    return tuple(shares)


def level_shares_for(args, n_levels: int | None = None) -> tuple[Fraction, ...] | None:
    """``--level-shares`` parsed (:func:`parse_level_shares`) and, given the geography's number of
    levels, checked to name one share per level; None when not given.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed command (``level_shares`` may be absent).
    n_levels : int, optional
        The geography's levels (None: the count is checked once the data are read).
    """
    shares = parse_level_shares(getattr(args, "level_shares", None))
    if shares is not None and n_levels is not None and len(shares) != n_levels:
        raise DataValidationError(
            "--level-shares", f"needs one share per geography level, root first ({n_levels}), got {len(shares)}"
        )
    return shares


def level_shares_source(args) -> str:
    """Where the release's level shares came from, as the manifest states it (``--level-shares`` given).

    Parameters
    ----------
    args : argparse.Namespace
        The parsed command.
    """
    if getattr(args, "budget_preset", None) is not None:
        return f"--level-shares, replacing the {args.budget_preset} preset's geolevel shares (its query shares kept)"
    return "--level-shares"


def production_release(args, data) -> dict:
    """The keyword arguments of :func:`~dpmodels.topdown.release.release` and ``release_facts`` that the
    production options set: ``strategy``, ``level_shares`` (a preset's, or ``--level-shares``, which
    replaces the preset's geolevel shares) and ``options`` (passes, inner passes, rounder).

    Parameters
    ----------
    args : argparse.Namespace
        The parsed command.
    data : TopDownData
        The loaded data (its declared schema and geography only).
    """
    out = {}
    if args.budget_preset is not None:
        from .budget_presets import budget_preset

        preset = budget_preset(args.budget_preset, data.schema, data.geography.n_levels)
        out.update(strategy=preset.strategy, level_shares=preset.level_shares)
    if getattr(args, "level_shares", None) is not None:
        out["level_shares"] = level_shares_for(args, data.geography.n_levels)  # replaces a preset's
    passes = parse_passes(args.passes)
    inner = {
        "l2_passes": parse_passes(getattr(args, "l2_passes", None), "--l2-passes"),
        "rounder_passes": parse_passes(getattr(args, "rounder_passes", None), "--rounder-passes"),
    }
    rounder = getattr(args, "rounder", "cells")
    if passes or rounder == "queries" or any(inner.values()):
        from .solve import NodeOptions

        objective = "queries" if rounder == "queries" else "l1"
        tol = getattr(args, "l2_tolerance", 0.1)
        out["options"] = NodeOptions(passes=passes, objective=objective, l2_tolerance=tol, **inner)
    return out


def production_facts(facts, args, data):
    """The manifest's facts with the budget preset stated (its levels and exact geolevel shares) and,
    when ``--level-shares`` gave the level shares, where they came from.

    Parameters
    ----------
    facts : ReleaseFacts
        The release's facts.
    args : argparse.Namespace
        The parsed command.
    data : TopDownData
        The loaded data.
    """
    declared = dict(facts.declared)
    if getattr(args, "level_shares", None) is not None:
        declared["level_shares_from"] = level_shares_source(args)
    if args.budget_preset is not None:
        from .budget_presets import budget_preset

        declared.update(budget_preset(args.budget_preset, data.schema, data.geography.n_levels).facts())
    return replace(facts, declared=declared)


def production_details(result) -> dict:
    """The manifest's details of the failsafe: every parent whose solve used it, by name.

    Parameters
    ----------
    result : TopDownResult
        The release.
    """
    from .production import failsafe_nodes

    return {"failsafe nodes": failsafe_nodes(result.log)}
