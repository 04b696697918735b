"""``dpmodels release pgsr`` run through the shared release runner (its arguments: :mod:`.commands`).

The policy a private release keeps (``--N`` declared, groups above it in the size-N bin, the
memory a declared ``N`` needs checked before the records are read) lives here; the release itself
is :func:`dpmodels.pgsr.release.release` through :func:`dpmodels.core.release.run_release`.
``--noise discrete-gaussian`` releases under zCDP: the budget is ``--rho`` (the session and the
budget database charge it in rho; a dataset declared in epsilon refuses it) and the manifest
states the rho, its epsilon at ``--delta`` and the 1e-10 and 1e-6 it always reports.
"""

from __future__ import annotations

from pathlib import Path

from dpmodels.core.errors import DataValidationError

__all__ = ["run_release_command", "require_declared_options"]


def run_release_command(args) -> int:
    import numpy as np

    from dpmodels.core.release import ReleaseOutcome, ReleaseSpec, run_release
    from dpmodels.instances.pgsr import from_csv, read_hierarchy

    from .mechanism import GAUSSIAN_WORDS
    from .release import DEFAULT_MECHANISM, release, release_facts, release_frame

    args.mechanism = args.mechanism or DEFAULT_MECHANISM
    require_declared_options(args)
    tree = read_hierarchy(args.hierarchy)

    def load():
        data = from_csv(
            tree, counts=args.counts, records=args.records, N=args.N, overflow=args.overflow, z_max=args.z_max
        )
        if args.N is None:  # an experiment with N read from the data
            _require_release_memory(args, tree, data.N)
        return data

    gaussian = args.noise == "discrete-gaussian"

    def run(session, data, amount) -> ReleaseOutcome:
        shares = args.level_shares
        result = release(session, args.mechanism, amount, noise=args.noise, level_shares=shares)
        if not np.isfinite(result.counts).all():
            raise DataValidationError("--mechanism", f"{args.mechanism} returned no solution ({result.status})")
        rho = amount if gaussian else None
        facts = release_facts(data, args.mechanism, noise=args.noise, rho=rho, level_shares=shares)
        details = {"mechanism": args.mechanism, "solver": result.solver, "status": result.status, "noise": args.noise}
        details["weights"] = result.info["weights"]  # how the post-processing weighed the noisy values
        frames = {"--out": release_frame(data.hierarchy, result.counts)}
        if not gaussian:
            return ReleaseOutcome(frames, facts, details=details)
        sigma2 = ", ".join(facts.declared["sigma2_per_level"])
        sampler = f"{GAUSSIAN_WORDS}, Alg. 3, on int64 counts; sigma^2 per level (Delta_2^2 / (2 rho_level)): {sigma2}"
        return ReleaseOutcome(frames, facts, details=details, sampler=sampler)

    spec = ReleaseSpec(
        "pgsr",
        inputs={"--hierarchy": args.hierarchy, "--records": args.records, "--counts": args.counts},
        outputs={"--out": args.out},
        load=load,
        run=run,
        unit="rho" if gaussian else "epsilon",
        name=Path(args.records or args.counts).stem,
        prepare=(lambda: _require_release_memory(args, tree, args.N)) if args.N is not None else None,
    )
    return run_release(args, spec)


def require_declared_options(args) -> None:
    """A private release takes N from --N and counts groups above it in the size-N bin: a data-derived N
    or a refusal of large groups would make the output depend on one group with certainty.  Only an
    experiment declared --not-private (its ledger and manifest say NOT private) may do either."""
    if args.not_private:
        return
    if args.N is None:
        raise DataValidationError(
            "--N",
            "is required: N, the largest group size, is released (the size rows 1..N), so it must be declared "
            "from public knowledge, not read from the data (larger groups are counted in the size-N bin); only "
            "an experiment declared --not-private may leave it out",
        )
    if args.overflow != "top":
        raise DataValidationError(
            "--overflow",
            "error refuses data with a group larger than --N, so whether the release happens depends on one "
            "group; only an experiment declared --not-private may use it (top, the default, counts such "
            "groups in the size-N bin)",
        )


def _require_release_memory(args, tree, n_sizes: int) -> None:
    """Refuse, naming --N, a release whose estimated peak memory (declared sizes only) does not fit."""
    from dpmodels.core.resources import require_memory

    from .release import estimate_release_bytes

    budget = {"rho": args.rho} if args.noise == "discrete-gaussian" else {"epsilon": args.epsilon}
    if args.level_shares:
        budget = {}  # a level's share may be small: assume the widest tables
    estimate = estimate_release_bytes(tree, n_sizes, args.mechanism, z_max=args.z_max, **budget)
    what = f"{args.mechanism} on {tree.n_regions:,} regions x N = {n_sizes:,} sizes"
    require_memory(estimate, what, "--N")
