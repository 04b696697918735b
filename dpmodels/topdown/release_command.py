"""``dpmodels release topdown`` (and the person reading ``measure topdown`` shares): run when the
command runs, so the parser in :mod:`dpmodels.topdown.commands` stays light at start-up."""

from __future__ import annotations

import logging
from pathlib import Path

from dpmodels.core.errors import DataValidationError

#: The outputs of ``dpmodels release topdown`` (their help is in :data:`dpmodels.topdown.commands.RELEASE_OUTPUTS`).
OUTPUT_FLAGS = ("--out-microdata", "--out-histograms")

__all__ = ["run_release_command", "load_persons", "require_blocks", "layout_facts", "report_checks"]


def run_release_command(args) -> int:
    """``dpmodels release topdown``: read the persons, charge, release, write all outputs or none."""
    from dpmodels.core.release import ReleaseOutcome, ReleaseSpec, run_release

    from .layouts import write_ppmf
    from .production_options import level_shares_for, production_details, production_facts, production_release
    from .release import histogram_frame, release, release_facts
    from .zcdp import gaussian_sampler

    require_blocks(args)
    level_shares_for(args)  # their form and sum before anything is read; their count once the geography is
    gaussian = args.noise == "discrete-gaussian"
    if args.budget_preset is not None and not gaussian:
        raise DataValidationError(
            "--budget-preset",
            f"{args.budget_preset!r} is a zCDP allocation (shares of rho): it needs --noise discrete-gaussian --rho",
        )

    def run(session, data, amount) -> ReleaseOutcome:
        budget = {"noise": args.noise, "rho": amount if gaussian else None}
        epsilon = None if gaussian else amount
        chosen = production_release(args, data)  # the preset's strategy, the level shares, the passes
        result = release(session, epsilon, executor=args.executor, progress=not args.no_progress, **chosen, **budget)
        records = result.records(data.schema)
        frames = {
            "--out-microdata": records if args.layout == "labels" else write_ppmf(records, args.layout),
            "--out-histograms": histogram_frame(data.schema, result),
        }
        facts = production_facts(layout_facts(release_facts(data, **chosen, **budget), args.layout), args, data)
        details = {"checks": result.checks, **production_details(result)}  # with the failsafe's nodes
        outcome = ReleaseOutcome(frames, facts, summary=report_checks(result.checks), details=details)
        if gaussian:  # zCDP: the sampler with sigma^2 of every level and query set
            outcome.details["noise"], outcome.sampler = args.noise, gaussian_sampler(facts.declared)
        return outcome

    spec = ReleaseSpec(
        "topdown",
        inputs={"--persons": args.persons, "--blocks": args.blocks},
        outputs={flag: getattr(args, flag[2:].replace("-", "_")) for flag in OUTPUT_FLAGS},
        load=lambda: load_persons(args),
        run=run,
        unit="rho" if gaussian else "epsilon",
        name=Path(args.persons).stem,
    )
    return run_release(args, spec)


def load_persons(args):
    """The persons of ``--persons`` under the declared blocks, schema and layout (release and measure)."""
    from dpmodels.instances.topdown import from_csv

    declared = {"structural_zeros": getattr(args, "structural_zeros", None)}  # release only (issue 25)
    data = from_csv(
        args.persons,
        races=args.races,
        total_level=args.total_level,
        blocks=args.blocks,
        layout=args.layout,
        child_groups=args.child_groups,
        **declared,
    )
    if args.blocks is None:
        logging.getLogger("dpmodels").warning(
            "NOT private: the geography is the set of blocks in --persons (which blocks have "
            "persons depends on the data); give the public block list with --blocks"
        )
    return data


def layout_facts(facts, layout: str):
    """The manifest's facts with the layout of the persons and the microdata declared (and the PPMF codes' rules)."""
    from dataclasses import replace

    from .layouts import PL94_NOTE, PPMF_NOTE

    notes = (*facts.notes, {"ppmf": PPMF_NOTE, "ppmf-pl94": PL94_NOTE}[layout]) if layout != "labels" else facts.notes
    return replace(facts, declared={**facts.declared, "layout": layout}, notes=notes)


def require_blocks(args) -> None:
    """``--blocks`` is required unless the output is declared not private.

    The geography is public input: taken from the persons file, a person alone in a block makes
    the block appear in the release.  ``--not-private`` allows it for an experiment, whose ledger
    and manifest then say the output is not private.

    Parameters
    ----------
    args
        The parsed ``release topdown`` arguments (``blocks``, ``not_private``).
    """
    if args.blocks is None and not args.not_private:
        raise DataValidationError(
            "--blocks",
            "is required: the geography is public input, declared, never derived from the persons (a person alone "
            "in a block would make it appear). Give the list of every block, empty ones too, as a CSV with a "
            "geocode column; only an experiment declared --not-private may take the blocks from --persons",
        )


def report_checks(checks: dict) -> list[str]:
    """The public-constraint checks as a summary line; a broken hard constraint is a bug, said on stderr."""
    from .release import HARD_CHECKS

    broken = {name: checks[name] for name in HARD_CHECKS if checks.get(name)}
    if broken:
        logging.getLogger("dpmodels").warning("public constraints broken: %s", broken)
    return ["checks: " + ", ".join(f"{name} {count}" for name, count in checks.items())]
