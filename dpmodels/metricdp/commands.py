"""What the metric-DP family shows the ``dpmodels`` command: ``compare``, ``bench`` and ``release mdp``.

The library functions live in ``compare.py``, ``bench.py`` and ``release.py``; this module
only declares their arguments and calls them (the shared tail is :mod:`dpmodels.core.commands`,
and :mod:`dpmodels.core.release` for the release).  The
comparison's default is a small grid (8 x 10 cells, K = 20, eps = 1/km) that every method
answers in seconds, each capped at ``--time-limit`` 20 s; the paper's scale is behind flags
(``--instance mdp/paper-grid --blocks 25 --time-limit 300``, or ``dpmodels bench mdp``).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from dpmodels.core.commands import (
    Command,
    Family,
    add_executor,
    add_outputs,
    add_progress,
    add_solver_option,
    positive_float,
    positive_int,
    report_written,
)
from dpmodels.core.errors import DataValidationError
from dpmodels.core.release import add_common_arguments
from dpmodels.core.settings import parse_settings

from .partition import PARTITIONERS

__all__ = ["FAMILY"]

COMPARE_INSTANCE = "mdp/grid"
#: The built-in default: an 8 x 10 grid (N = 80) with K = 20 outputs at eps = 1/km, a few seconds
#: per method (the generator's own default is the paper's 20 x 25 grid, N = 500, K = 100 at
#: eps = 10/km: minutes per method, 1.3 GB).
COMPARE_SETTINGS = {"rows": 8, "cols": 10, "K": 20, "epsilon": 1.0}
#: The columns printed (every column goes to ``--csv``).
SHOWN = (
    "method",
    "status",
    "objective",
    "bound",
    "iterations",
    "seconds",
    "exactly mDP",
    "max privacy loss / eps",
    "loss vs exponential mechanism %",
    "boundary records",
)
COMPARE_METHODS = ("full LP simplex", "structured IPM", "Benders k-m-DV", "exponential mechanism")


# ---------------------------------------------------------------------- compare
def _compare_arguments(p: argparse.ArgumentParser) -> None:
    from .compare import METHODS

    p.add_argument(
        "--instance",
        default=COMPARE_INSTANCE,
        help="mdp/grid, mdp/paper-grid (the paper's N = 500, K = 100: use --blocks 25), mdp/gaussian, mdp/road-like",
    )
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="generator option, e.g. --set rows=20 --set cols=25 --set K=100 --set epsilon=1 (repeatable; "
        f"default for the built-in instance: {' '.join(f'{k}={v}' for k, v in COMPARE_SETTINGS.items())})",
    )
    p.add_argument(
        "--methods",
        nargs="+",
        default=list(COMPARE_METHODS),
        help="any of: " + ", ".join(f"'{m}'" for m in METHODS),
    )
    p.add_argument("--blocks", type=positive_int, default=4, help="M, the Benders blocks (the paper: 25 for N = 500)")
    add_solver_option(p, "mdp_benders", "gap", help_extra="; the IPM stops at the same gap")
    p.add_argument(
        "--max-iter",
        type=positive_int,
        default=None,
        help="iteration cap of Benders and the structured IPM (default: their declared max_iter, 500 and 100)",
    )
    p.add_argument(
        "--time-limit",
        type=positive_float,
        default=20.0,
        help="seconds per method, a cap (the built-in grid needs a few; the paper-scale runs: 300)",
    )
    p.add_argument("--partitions", action="store_true", help="also print the partition table (Tables 1-2)")
    p.add_argument(
        "--utility", type=positive_float, nargs="*", metavar="EPS", help="epsilons of a privacy-utility sweep (Fig. 7)"
    )
    add_executor(p, "the Benders subproblems")
    add_outputs(p, csv="the comparison, one row per method", plot="the bound trajectories of Benders and the IPM")
    add_progress(p)


def _load(args):
    import dpmodels.instances as instances

    defaults = COMPARE_SETTINGS if args.instance == COMPARE_INSTANCE else None
    return instances.from_settings(args.instance, parse_settings(args.set), defaults)


def _run_compare(args) -> int:
    from .compare import METHODS, compare_mdp, partition_table, plot_bounds, privacy_utility

    unknown = [m for m in args.methods if m not in METHODS]
    if unknown:
        raise DataValidationError("--methods", f"unknown {unknown}; choose from {list(METHODS)}")
    data = _load(args)
    print(
        f"instance: {data.name}  N = {data.N}  K = {data.K}  eps = {data.epsilon}  eta = {data.eta}  "
        f"neighbouring pairs = {data.graph.n_pairs}"
    )
    if args.blocks > data.N:
        raise DataValidationError("--blocks", f"must be at most N = {data.N}, got {args.blocks}")
    progress = not args.no_progress
    table, histories = compare_mdp(
        data,
        args.methods,
        args.blocks,
        args.gap,
        args.time_limit,
        executor=args.executor,
        max_iter=args.max_iter,
        progress=progress,
    )
    print("\nexpected loss of each mechanism (objective), certified lower bound, audit (all columns: --csv):")
    print(table[[c for c in SHOWN if c in table.columns]].to_string(index=False))
    if args.partitions:
        print("\npartitions (mean ± 1.96 sd over 3 seeds):")
        print(partition_table(data, args.blocks).to_string(index=False))
    if args.utility:
        print("\nprivacy-utility (expected loss):")
        print(privacy_utility(data, args.utility, progress=progress).to_string(index=False))
    if args.csv:
        table.to_csv(args.csv, index=False)
        report_written(args.csv)
    if args.plot:
        if histories:
            optimum = table.loc[table.method.str.startswith("full LP"), "objective"].dropna()
            plot_bounds(histories, args.plot, float(optimum.iloc[0]) if len(optimum) else None)
            report_written(args.plot)
        else:
            print(f"no iterative method ran (Benders, structured IPM): {args.plot} not written")
    return 0


# ---------------------------------------------------------------------- bench
def _bench_arguments(p: argparse.ArgumentParser) -> None:
    from .bench_sweep import SWEEP_METHODS

    p.add_argument("--epsilon", type=positive_float, nargs="+", default=[10.0, 1.0], help="per-km budgets")
    p.add_argument("--blocks", type=positive_int, nargs="+", default=[25], help="Benders partitions to try (M)")
    p.add_argument("--partitioner", default="k-m-DV", choices=list(PARTITIONERS), help="partitioner of Benders")
    p.add_argument("--time-limit", type=positive_float, default=300.0, help="seconds per run")
    p.add_argument("--rows", type=positive_int, default=20, help="grid rows (the paper: 20)")
    p.add_argument("--cols", type=positive_int, default=25, help="grid columns (the paper: 25)")
    p.add_argument("--cell-km", type=positive_float, default=1.0, help="cell spacing; 1.5 gives a 4-neighbour grid")
    p.add_argument(
        "--sweep-n",
        type=positive_int,
        nargs="+",
        metavar="N",
        help="the paper's Fig. 6 instead: runtime vs N on 1 km grids of N cells (e.g. 250 500 750 1000 2000), "
        "every method in its own child process, certified gaps under the absolute 0.01 and relative 1e-3 rules",
    )
    p.add_argument(
        "--methods",
        nargs="+",
        choices=list(SWEEP_METHODS),
        default=list(SWEEP_METHODS),
        help="methods of --sweep-n",
    )
    p.add_argument(
        "--repeat",
        type=positive_int,
        default=1,
        help="runs of each --sweep-n measurement (each in its own child); the table shows medians and the range",
    )
    add_outputs(p, json="the measurements", plot="runtime vs N (with --sweep-n)")


def _run_bench(args) -> int:
    if args.sweep_n:
        return _run_sweep(args)
    if args.plot:
        raise DataValidationError("--plot", "is the runtime-vs-N plot of --sweep-n; give --sweep-n")
    if args.repeat != 1:
        raise DataValidationError("--repeat", "repeats the runs of --sweep-n; give --sweep-n")
    from .bench import run_bench

    cells = args.rows * args.cols
    too_many = [m for m in args.blocks if m > cells]
    if too_many:
        raise DataValidationError("--blocks", f"must be at most rows x cols = {cells}, got {too_many}")
    run_bench(
        args.epsilon, args.blocks, args.partitioner, args.time_limit, args.rows, args.cols, args.json, args.cell_km
    )
    return 0


def _run_sweep(args) -> int:
    from .bench_sweep import grid_shape, run_sweep

    for n in args.sweep_n:
        grid_shape(n)  # a size that is no grid fails here, before any run
    run_sweep(args.sweep_n, args.epsilon, args.methods, args.time_limit, args.json, args.plot, args.repeat)
    return 0


# ---------------------------------------------------------------------- release
RELEASE_INSTANCE = "mdp/grid"
#: The built-in public domain of ``release mdp``: an 8 x 10 grid of 1 km cells, K = 20 output cells.
RELEASE_SETTINGS = {"rows": 8, "cols": 10, "K": 20}


def _release_arguments(p: argparse.ArgumentParser) -> None:
    from .release import SOLVERS

    p.add_argument(
        "--records",
        required=True,
        help="user,record CSV, one row per user: the secret location, a cell index of the grid (row-major, "
        "cell = row x cols + col) or a location label of --points",
    )
    domain = p.add_mutually_exclusive_group()
    domain.add_argument(
        "--instance",
        help=f"public domain: an mdp generator shaped by --set (default {RELEASE_INSTANCE} with "
        f"{' '.join(f'{k}={v}' for k, v in RELEASE_SETTINGS.items())})",
    )
    domain.add_argument(
        "--points",
        help="public domain: a CSV of candidate locations (location, then coordinates in km or lat,lon; "
        "optional prior column); every location is an output",
    )
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="generator option of --instance, e.g. --set rows=3 --set cols=4 --set K=12 --set cell_km=1 "
        "(--set seed picks the generator's public output cells and cost destinations, never the noise)",
    )
    p.add_argument(
        "--eta", type=positive_float, default=2.0, help="neighbour radius in km: locations within eta get mDP rows"
    )
    p.add_argument(
        "--outside",
        metavar="LABEL",
        help="the fallback location: a record naming no location of the domain is perturbed as if it were there "
        "(a location label of --points, or a cell index; default: the domain's centre, the location with the "
        "least largest distance to the others)",
    )
    p.add_argument("--solver", choices=list(SOLVERS), default="mdp_ipm", help="solver of the perturbation LP")
    add_solver_option(p, "mdp_ipm", "gap", help_extra="; highs solves to its own tolerance (not certified)")
    p.add_argument(
        "--time-limit", type=positive_float, default=None, help="seconds for the solve (the incumbent stays exact)"
    )
    add_common_arguments(
        p,
        {"--out": "where to write the released user,released CSV"},
        epsilon_help="privacy per km, per record: Pr[o | x] <= exp(epsilon d(x, x')) Pr[o | x'] for neighbouring "
        "locations (local metric DP, not a session budget)",
    )


def _run_release(args) -> int:
    import pandas as pd

    from dpmodels.core.release import ReleaseOutcome, ReleaseSpec, run_release
    from dpmodels.instances.metricdp import records_from_csv

    from .release import NOISE, release, release_facts

    epsilon = _per_km(args.epsilon)

    def load():
        instance = _release_domain(args, epsilon)
        fallback = _fallback(instance, args.outside)  # a public declaration, checked before the records are read
        labels = instance.info.get("labels") or [str(i) for i in range(instance.N)]
        users, records = records_from_csv(args.records, labels, cells="labels" not in instance.info)
        return {"instance": instance, "fallback": fallback, "labels": labels, "users": users, "records": records}

    def mechanism(data, amount, rng):
        result = release(
            data["instance"],
            data["records"],
            rng,
            not_private=args.not_private,
            outside=data["fallback"],
            users=data["users"],
            solver=args.solver,
            gap=args.gap,
            time_limit=args.time_limit,
            name=Path(args.records).name,
        )
        return result, result.ledger

    def run(session, data, amount) -> ReleaseOutcome:
        result = session.run("metric-DP perturbation of every record", mechanism, amount)
        instance, labels = data["instance"], data["labels"]
        frame = pd.DataFrame({"user": data["users"], "released": [labels[i] for i in result.released]})
        mech = result.mechanism
        gap = "not certified" if mech.gap is None else f"certified gap {mech.gap:.2g}"
        summary = [
            f"domain {instance.name}: {instance.N} locations, {instance.K} outputs, eps = {instance.epsilon:g}/km, "
            f"eta = {instance.eta:g} km; mechanism by {mech.solver} ({mech.status}): expected loss {mech.loss:.6g} "
            f"({gap}), exactly mDP: {result.audit['exactly mDP']}",
            f"a record outside the domain is perturbed as if it were at {labels[data['fallback']]!r} (the stated rule)",
        ]
        facts = release_facts(instance, outside=data["fallback"], solver=args.solver, gap=args.gap)
        ledger = result.to_dict() | {"budget": session.to_dict()}
        details = {"optimisation": mech.as_dict(), "audit": result.audit}
        return ReleaseOutcome({"--out": frame}, facts, summary, ledger=ledger, details=details, sampler=NOISE)

    spec = ReleaseSpec(
        "mdp",
        inputs={"--records": args.records, "--points": args.points},
        outputs={"--out": args.out},
        load=load,
        run=run,
        unit="epsilon_per_km",
        name=Path(args.records).stem,
    )
    return run_release(args, spec)


def _fallback(instance, label) -> int:
    """``--outside``: the declared fallback location's index (default: the domain's centre)."""
    from .release import fallback_location

    try:
        return fallback_location(instance, label)
    except DataValidationError as err:
        raise DataValidationError("--outside", err.problem) from None


def _per_km(text) -> float:
    """``--epsilon`` (privacy per km) read exactly (:func:`~dpmodels.core.noise.as_epsilon`), as a float."""
    from dpmodels.core.noise import as_epsilon

    return float(as_epsilon(text, "--epsilon"))


def _release_domain(args, epsilon: float):
    """The public metric: a points file, or a generated (or built-in) instance at ``epsilon`` and ``--eta``."""
    import dpmodels.instances as instances
    from dpmodels.instances.metricdp import locations_from_csv

    from .data import MAX_EXPONENT, MDPInstance

    if epsilon * args.eta > MAX_EXPONENT:  # before a generator exponentiates it
        raise DataValidationError(
            "--epsilon",
            f"epsilon * eta = {epsilon * args.eta:g}: exp(eps d) overflows double precision (limit {MAX_EXPONENT:g})",
        )
    if args.points:
        if args.set:
            raise DataValidationError("--set", "shapes a generated --instance, not --points")
        return locations_from_csv(args.points, epsilon, args.eta)
    name = args.instance or RELEASE_INSTANCE
    settings = parse_settings(args.set)
    for key, flag in (("epsilon", "--epsilon"), ("eta", "--eta")):
        if key in settings:
            raise DataValidationError("--set", f"{key} is given by {flag}")
    defaults = RELEASE_SETTINGS if name == RELEASE_INSTANCE else None
    generated = instances.is_generator(name)
    privacy = {"epsilon": epsilon, "eta": args.eta} if generated else {}
    data = instances.from_settings(name, settings, defaults, **privacy)
    if not generated and isinstance(data, MDPInstance):
        data = data.with_privacy(epsilon, args.eta)
    if not isinstance(data, MDPInstance):
        raise DataValidationError("--instance", f"{name!r} is not a metric-DP instance")
    return data


FAMILY = Family(
    name="mdp",
    package="dpmodels.metricdp",
    summary="metric DP: the perturbation LP, Benders over partitions, a structured interior point",
    compare=Command(
        "metric DP: full LP vs structured IPM vs Benders (partitioners) vs the exponential mechanism",
        _compare_arguments,
        _run_compare,
    ),
    bench=Command(
        "paper-scale grid: full LP vs structured IPM vs Benders at eps = 10/km and 1/km",
        _bench_arguments,
        _run_bench,
    ),
    release=Command(
        "perturb each user's location with the optimal audited mDP mechanism (records CSV on a public grid)",
        _release_arguments,
        _run_release,
    ),
)
