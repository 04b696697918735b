"""What the metric-DP family shows the ``dpmodels`` command: ``compare``, ``bench`` and ``release mdp``.

The library functions live in ``compare.py``, ``bench.py`` and ``release.py``; this module
only declares their arguments and calls them (the shared tail is :mod:`dpmodels.core.commands`;
``release mdp`` is declared in :mod:`.release_command`).  The
comparison's default is a small grid (8 x 10 cells, K = 20, eps = 1/km) that every method
answers in seconds, each capped at ``--time-limit`` 20 s; the paper's scale is behind flags
(``--instance mdp/paper-grid --blocks 25 --time-limit 300``, or ``dpmodels bench mdp``).
"""

from __future__ import annotations

import argparse

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
from dpmodels.core.settings import parse_settings

from .partition import PARTITIONERS
from .release_command import release_arguments, run_release_command

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
        release_arguments,
        run_release_command,
    ),
)
