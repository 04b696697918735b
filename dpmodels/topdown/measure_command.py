"""``dpmodels measure topdown`` and ``dpmodels postprocess topdown``: a release in two steps, a file between.

``measure`` is a release whose output is the noisy measurement set (:mod:`dpmodels.core.measurements`,
the TopDown rows described in :mod:`dpmodels.topdown.measurements`), with the budget, ledger and
manifest of any release.  ``postprocess`` reads a measurement set (drawn here or by another tool),
never the persons, spends no budget, and writes the released microdata and histograms and a manifest
that records where the noise came from; all or nothing.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from pathlib import Path

__all__ = ["run_measure_command", "run_postprocess_command"]


def run_measure_command(args, load) -> int:
    """``measure topdown``: ``load()`` reads the persons with the declared blocks (as ``release``)."""
    from dpmodels.core.measurements import facts_path
    from dpmodels.core.release import ReleaseOutcome, ReleaseSpec, run_release

    from .measurements import measurement_set, public_facts
    from .production_options import level_shares_for, level_shares_source
    from .release import measure_release, release_facts

    gaussian = args.noise == "discrete-gaussian"
    level_shares_for(args)  # their form and sum before anything is read; their count once the geography is

    def run(session, data, amount) -> ReleaseOutcome:
        budget = {"noise": args.noise, "rho": amount if gaussian else None}
        shares = {"level_shares": level_shares_for(args, data.geography.n_levels)}
        measured, public = measure_release(session, None if gaussian else amount, **shares, **budget)
        facts = public_facts(public.schema, public.geography, public.knowledge, measured.strategy)
        found = measurement_set(measured, facts, f"dpmodels measure topdown ({session.randomness})")
        stated = dataclasses.replace(
            release_facts(data, **shares, **budget),
            post_processing="none: the output is the noisy measurement set (postprocess)",
        )
        if shares["level_shares"] is not None:
            stated = dataclasses.replace(
                stated, declared={**stated.declared, "level_shares_from": level_shares_source(args)}
            )
        frames = {"--out": found.table, "--facts": found.facts()}
        return ReleaseOutcome(frames, stated, details={"rows": len(found.table)})

    spec = ReleaseSpec(
        "topdown",
        inputs={"--persons": args.persons, "--blocks": args.blocks},
        outputs={"--out": args.out, "--facts": facts_path(args.out, args.facts)},
        load=load,
        run=run,
        unit="rho" if gaussian else "epsilon",
        name=Path(args.persons).stem,
    )
    return run_release(args, spec)


def run_postprocess_command(args) -> int:
    """Post-process a TopDown measurement set: microdata, histograms and a manifest, together or not at all."""
    from dpmodels.core.executors import resolve_executor
    from dpmodels.core.measurements import facts_path, read_measurements
    from dpmodels.core.release import manifest_path
    from dpmodels.core.runner import configure_logging, verbosity
    from dpmodels.core.staging import StagedOutputs, check_targets, file_record

    from .driver import topdown
    from .layouts import write_ppmf
    from .measurements import measurements_from_set
    from .production import failsafe_nodes
    from .release import histogram_frame

    log = configure_logging(verbosity(args))
    facts_file = facts_path(args.measurements, args.facts)
    inputs = {"--measurements": args.measurements, "--facts": facts_file}
    outputs = {"--out-microdata": Path(args.out_microdata), "--out-histograms": Path(args.out_histograms)}
    targets = check_targets(
        {**outputs, "--manifest": manifest_path(outputs["--out-microdata"], args.manifest)}, inputs, args.force
    )
    found = read_measurements(args.measurements, facts_file, family="topdown")
    measured, public = measurements_from_set(found)
    with resolve_executor(args.executor) as pool:
        result = topdown(
            measured, public.knowledge, public.schema, public.geography, executor=pool, progress=not args.no_progress
        )
    records = result.records(public.schema)
    frames = {
        "--out-microdata": records if args.layout == "labels" else write_ppmf(records, args.layout),
        "--out-histograms": histogram_frame(public.schema, result),
    }
    with StagedOutputs(targets, force=args.force) as stage:
        written = {flag: _write(stage, flag, frame, targets[flag]) for flag, frame in frames.items()}
        manifest = {
            "family": "topdown",
            "step": "postprocess",
            "noise_source": found.source,
            "budget_stated_by_the_measurement_file": measured.info["budget"],
            "budget_spent_here": "none: post-processing of noisy answers and declared facts only",
            "checks": result.checks,
            "failsafe nodes": failsafe_nodes(result.log),  # every parent whose solve used the failsafe
            "inputs": {flag: file_record(path) for flag, path in inputs.items()},
            "outputs": written,
        }
        stage.write_text("--manifest", json.dumps(manifest, indent=2, default=str) + "\n")
        stage.commit()
    broken = {k: v for k, v in result.checks.items() if v and k in _hard_checks()}
    if broken:
        logging.getLogger("dpmodels").warning("public constraints broken: %s", broken)
    print("checks: " + ", ".join(f"{name} {count}" for name, count in result.checks.items()))
    for path in targets.values():
        log.info("wrote %s", path)
    return 0


def _write(stage, flag: str, frame, target: Path) -> dict:
    from dpmodels.core.release import is_parquet

    parquet = is_parquet(target)  # the staged file's name ends in .dpmodels-partial
    return stage.write(flag, lambda p: frame.to_parquet(p, index=False) if parquet else frame.to_csv(p, index=False))


def _hard_checks() -> tuple[str, ...]:
    from .release import HARD_CHECKS

    return HARD_CHECKS
