"""``dpmodels measure pgsr`` and ``dpmodels postprocess pgsr``: a release in two steps, a file between.

``measure`` is a release whose output is the noisy measurement set (:mod:`dpmodels.core.measurements`:
the table and its facts JSON), with the budget, ledger and manifest of any release.  ``postprocess``
reads a measurement set (drawn here or by another tool), never the data, spends no budget, and writes
the released counts and a manifest that records where the noise came from; all or nothing.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

__all__ = ["run_measure_command", "run_postprocess_command", "KIND_MECHANISM"]

#: The mechanism whose facts a bare measurement of each kind states (its post-processing is left open).
KIND_MECHANISM = {"counts": "M_H^dp", "cumulative": "M_c^dp", "chain": "M_c^ch"}


def run_measure_command(args) -> int:
    from dpmodels.core.measurements import facts_path
    from dpmodels.core.release import ReleaseOutcome, ReleaseSpec, run_release
    from dpmodels.instances.pgsr import from_csv, read_hierarchy

    from .measurements import measurement_set
    from .release import measure_release, release_facts
    from .release_command import require_declared_options

    args.mechanism = KIND_MECHANISM[args.kind]
    require_declared_options(args)
    tree = read_hierarchy(args.hierarchy)

    def load():
        return from_csv(
            tree, counts=args.counts, records=args.records, N=args.N, overflow=args.overflow, z_max=args.z_max
        )

    gaussian = args.noise == "discrete-gaussian"

    def run(session, data, amount) -> ReleaseOutcome:
        noisy = measure_release(session, args.kind, amount, noise=args.noise, level_shares=args.level_shares)
        measurements = measurement_set(noisy, f"dpmodels measure pgsr ({session.randomness})")
        rho = amount if gaussian else None
        facts = dataclasses.replace(
            release_facts(data, args.mechanism, noise=args.noise, rho=rho, level_shares=args.level_shares),
            post_processing="none: the output is the noisy measurement set (dpmodels postprocess pgsr reads it)",
        )
        frames = {"--out": measurements.table, "--facts": measurements.facts()}
        return ReleaseOutcome(frames, facts, details={"kind": args.kind, "rows": len(measurements.table)})

    spec = ReleaseSpec(
        "pgsr",
        inputs={"--hierarchy": args.hierarchy, "--records": args.records, "--counts": args.counts},
        outputs={"--out": args.out, "--facts": facts_path(args.out, args.facts)},
        load=load,
        run=run,
        unit="rho" if gaussian else "epsilon",
        name=Path(args.records or args.counts).stem,
    )
    return run_release(args, spec)


def run_postprocess_command(args) -> int:
    """Post-process a measurement set: released counts and a manifest, written together or not at all."""
    import numpy as np

    from dpmodels.core.errors import DataValidationError
    from dpmodels.core.measurements import facts_path, read_measurements
    from dpmodels.core.release import is_parquet, manifest_path
    from dpmodels.core.runner import configure_logging, verbosity
    from dpmodels.core.staging import StagedOutputs, check_targets, file_record

    from .measurements import noisy_from_measurements
    from .postprocessing import postprocess
    from .release import DEFAULT_MECHANISM, release_frame
    from .weights import weighting_record

    log = configure_logging(verbosity(args))
    mechanism = args.mechanism or DEFAULT_MECHANISM
    facts_file = facts_path(args.measurements, args.facts)
    inputs = {"--measurements": args.measurements, "--facts": facts_file}
    targets = check_targets(
        {"--out": Path(args.out), "--manifest": manifest_path(Path(args.out), args.manifest)}, inputs, args.force
    )
    measurements = read_measurements(args.measurements, facts_file, family="pgsr")
    noisy = noisy_from_measurements(measurements)
    result = postprocess(mechanism, noisy)
    if not np.isfinite(result.counts).all():
        raise DataValidationError("--mechanism", f"{mechanism} returned no solution ({result.status})")
    frame = release_frame(noisy.hierarchy, result.counts)
    with StagedOutputs(targets, force=args.force) as stage:
        parquet = is_parquet(targets["--out"])  # the staged file's name ends in .dpmodels-partial
        out = stage.write("--out", lambda p: frame.to_parquet(p) if parquet else frame.to_csv(p, index=False))
        manifest = {
            "family": "pgsr",
            "step": "postprocess",
            "mechanism": mechanism,
            "status": result.status,
            "solver": result.solver,
            "noise_source": measurements.source,
            "budget_stated_by_the_measurement_file": noisy.info["budget"],
            "budget_spent_here": "none: post-processing of noisy values and declared facts only",
            "weights": weighting_record(noisy),
            "inputs": {flag: file_record(path) for flag, path in inputs.items()},
            "outputs": {"--out": out},
        }
        stage.write_text("--manifest", json.dumps(manifest, indent=2) + "\n")
        stage.commit()
    log.info("wrote %s (from noise drawn by %s)", targets["--out"], measurements.source)
    log.info("wrote %s", targets["--manifest"])
    return 0
