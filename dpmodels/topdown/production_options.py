"""What ``dpmodels release topdown`` does with the production options (issue 25): ``--passes``
(and ``--l2-passes``, ``--l2-tolerance``, ``--rounder-passes`` within them), ``--rounder``,
``--budget-preset`` (the options are declared in :mod:`.commands`; ``--structural-zeros`` goes to the
loader), and the manifest's list of the nodes that used the failsafe.

Imported when the command runs; it imports the algorithms lazily.
"""

from __future__ import annotations

from dataclasses import replace

from dpmodels.core.errors import DataValidationError

__all__ = [
    "parse_passes",
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


def production_release(args, data) -> dict:
    """The keyword arguments of :func:`~dpmodels.topdown.release.release` and ``release_facts`` that the
    production options set: ``strategy``, ``level_shares`` (a preset) and ``options`` (passes, inner
    passes, rounder).

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
    """The manifest's facts with the budget preset stated (its levels and exact geolevel shares).

    Parameters
    ----------
    facts : ReleaseFacts
        The release's facts.
    args : argparse.Namespace
        The parsed command.
    data : TopDownData
        The loaded data.
    """
    if args.budget_preset is None:
        return facts
    from .budget_presets import budget_preset

    preset = budget_preset(args.budget_preset, data.schema, data.geography.n_levels)
    return replace(facts, declared={**facts.declared, **preset.facts()})


def production_details(result) -> dict:
    """The manifest's details of the failsafe: every parent whose solve used it, by name.

    Parameters
    ----------
    result : TopDownResult
        The release.
    """
    from .production import failsafe_nodes

    return {"failsafe nodes": failsafe_nodes(result.log)}
