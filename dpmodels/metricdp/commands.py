"""What the metric-DP family shows the ``dpmodels`` command: ``compare``, ``bench`` and ``release mdp``.

The library functions live in ``compare.py``, ``bench/`` and ``release.py``;
this module declares the commands (standard options from :mod:`dpmodels.core.options`, the runner
:mod:`dpmodels.core.runner`) and returns their tables; ``release mdp`` is :mod:`.release_command`.  The
comparison's default is a small grid (8 x 10 cells, K = 20, eps = 1/km) that every method
answers in seconds, each capped at ``--time-limit`` 20 s; the paper's scale is behind flags
(``--instance mdp/paper-grid --blocks 25 --time-limit 300``, or ``dpmodels bench mdp``).
"""

from __future__ import annotations

import argparse

from dpmodels.core import options as std
from dpmodels.core.commands import Command, Family, positive_float, positive_int
from dpmodels.core.errors import DataValidationError
from dpmodels.core.options import LazyHelp, Names, one_of
from dpmodels.core.runner import Result, experiment
from dpmodels.core.settings import parse_settings

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
    "compile s",
    "exactly mDP",
    "max privacy loss / eps",
    "loss vs exponential mechanism %",
    "boundary records",
)
COMPARE_METHODS = ("full LP simplex", "structured IPM", "Benders k-m-DV", "exponential mechanism")


#: Names the options take, declared by the family's modules (read when checked or shown).
METHODS = Names("dpmodels.metricdp.compare", "METHODS")
PARTITIONERS = Names("dpmodels.metricdp.partition", "PARTITIONERS")
SWEEP_METHODS = Names("dpmodels.metricdp.bench.sweep", "SWEEP_METHODS")


# ---------------------------------------------------------------------- compare
def _compare_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--methods",
        nargs="+",
        type=one_of(METHODS, "method"),
        default=list(COMPARE_METHODS),
        metavar="METHOD",
        help=LazyHelp(lambda: "any of: " + ", ".join(f"'{m}'" for m in METHODS())),
    )
    p.add_argument("--blocks", type=positive_int, default=4, help="M, the Benders blocks (the paper: 25 for N = 500)")
    std.solver_option("mdp_benders", "gap", "; the IPM stops at the same gap").add(p)
    p.add_argument(
        "--max-iter",
        type=positive_int,
        default=None,
        help="iteration cap of Benders and the structured IPM (default: their declared max_iter, 500 and 100)",
    )
    p.add_argument("--partitions", action="store_true", help="also print the partition table (Tables 1-2)")
    p.add_argument(
        "--utility", type=positive_float, nargs="*", metavar="EPS", help="epsilons of a privacy-utility sweep (Fig. 7)"
    )


COMPARE_OPTIONS = (
    std.instance(
        COMPARE_INSTANCE,
        "mdp/grid, mdp/paper-grid (the paper's N = 500, K = 100: use --blocks 25), mdp/gaussian, mdp/road-like",
    ),
    std.settings(
        "generator option, e.g. --set rows=20 --set cols=25 --set K=100 --set epsilon=1 (repeatable; "
        f"default for the built-in instance: {' '.join(f'{k}={v}' for k, v in COMPARE_SETTINGS.items())})"
    ),
    std.time_limit(20.0, "seconds per method, a cap (the built-in grid needs a few; the paper-scale runs: 300)"),
    std.executor("the Benders subproblems"),
)


def _load(args):
    import dpmodels.instances as instances

    defaults = COMPARE_SETTINGS if args.instance == COMPARE_INSTANCE else None
    return instances.from_settings(args.instance, parse_settings(args.set), defaults)


def _run_compare(args) -> Result:
    from .compare import compare_mdp, partition_table, plot_bounds, privacy_utility

    data = _load(args)
    if args.blocks > data.N:
        raise DataValidationError("--blocks", f"must be at most N = {data.N}, got {args.blocks}")
    table, histories = compare_mdp(
        data,
        args.methods,
        args.blocks,
        args.gap,
        args.time_limit,
        executor=args.executor,
        max_iter=args.max_iter,
        progress=args.progress,
    )
    report = [
        f"instance: {data.name}  N = {data.N}  K = {data.K}  eps = {data.epsilon}  eta = {data.eta}  "
        f"neighbouring pairs = {data.graph.n_pairs}",
        "\nexpected loss of each mechanism (objective), certified lower bound, audit (all columns: --csv):",
        table[[c for c in SHOWN if c in table.columns]],
    ]
    if args.partitions:
        report += ["\npartitions (mean ± 1.96 sd over 3 seeds):", partition_table(data, args.blocks)]
    if args.utility:
        report += ["\nprivacy-utility (expected loss):", privacy_utility(data, args.utility, progress=args.progress)]
    figure = None
    if histories:
        optimum = table.loc[table.method.str.startswith("full LP"), "objective"].dropna()
        best = float(optimum.iloc[0]) if len(optimum) else None
        figure = lambda path: plot_bounds(histories, path, best)  # noqa: E731
    return Result(table, report, figure=figure)


# ---------------------------------------------------------------------- bench
def _bench_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--blocks", type=positive_int, nargs="+", default=[25], help="Benders partitions to try (M)")
    p.add_argument(
        "--partitioner",
        default="k-m-DV",
        type=one_of(PARTITIONERS, "partitioner"),
        help=LazyHelp(lambda: "partitioner of Benders: " + ", ".join(PARTITIONERS())),
    )
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
        type=one_of(SWEEP_METHODS, "method"),
        default=None,
        metavar="METHOD",
        help=LazyHelp(lambda: "methods of --sweep-n (default all: " + " ".join(SWEEP_METHODS()) + ")"),
    )


BENCH_OPTIONS = (
    std.epsilon([10.0, 1.0], "per-km budgets"),
    std.time_limit(300.0, "seconds per run"),
    std.runs(
        None,
        "with --sweep-n: runs of each measurement, each in its own child; the table shows medians and the "
        "range (default 1)",
    ),
)


def _run_bench(args) -> Result:
    if args.sweep_n:
        return _run_sweep(args)
    if args.plot:
        raise DataValidationError("--plot", "is the runtime-vs-N plot of --sweep-n; give --sweep-n")
    for flag in ("runs", "methods"):
        if getattr(args, flag) is not None:
            raise DataValidationError(f"--{flag}", "applies to the runs of --sweep-n; give --sweep-n")
    from .bench import run_bench

    cells = args.rows * args.cols
    too_many = [m for m in args.blocks if m > cells]
    if too_many:
        raise DataValidationError("--blocks", f"must be at most rows x cols = {cells}, got {too_many}")
    return run_bench(args.epsilon, args.blocks, args.partitioner, args.time_limit, args.rows, args.cols, args.cell_km)


def _run_sweep(args) -> Result:
    from .bench.sweep import grid_shape, run_sweep

    for n in args.sweep_n:
        grid_shape(n)  # a size that is no grid fails here, before any run
    methods = args.methods or SWEEP_METHODS()
    return run_sweep(args.sweep_n, args.epsilon, methods, args.time_limit, args.runs or 1)


# ---------------------------------------------------------------------- release (run in .release_command)
RELEASE_INSTANCE = "mdp/grid"
#: The built-in public domain of ``release mdp``: an 8 x 10 grid of 1 km cells, K = 20 output cells.
RELEASE_SETTINGS = {"rows": 8, "cols": 10, "K": 20}
#: The solvers ``--solver`` takes (read when checked or shown).
SOLVERS = std.Names("dpmodels.metricdp.mechanism", "SOLVERS")


def _release_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--records",
        required=True,
        help="user,record CSV, one row per user: the secret location, a cell index of the grid (row-major, "
        "cell = row x cols + col) or a location label of --points",
    )
    domain = p.add_mutually_exclusive_group()
    std.instance(
        None,
        f"public domain: an mdp generator shaped by --set (default {RELEASE_INSTANCE} with "
        f"{' '.join(f'{k}={v}' for k, v in RELEASE_SETTINGS.items())})",
    ).add(domain)
    domain.add_argument(
        "--points",
        help="public domain: a CSV of candidate locations (location, then coordinates in km or lat,lon; "
        "optional prior column); every location is an output",
    )
    std.settings(
        "generator option of --instance, e.g. --set rows=3 --set cols=4 --set K=12 --set cell_km=1 "
        "(--set seed picks the generator's public output cells and cost destinations, never the noise)"
    ).add(p)
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
    p.add_argument(
        "--solver",
        type=std.one_of(SOLVERS, "solver"),
        default="mdp_ipm",
        help=std.LazyHelp(lambda: f"solver of the perturbation LP: {', '.join(SOLVERS())}"),
    )
    std.solver_option("mdp_ipm", "gap", "; highs solves to its own tolerance (not certified)").add(p)
    std.time_limit(None, "seconds for the solve (the incumbent stays exact)").add(p)
    std.add_release_options(
        p,
        {"--out": "where to write the released user,released CSV"},
        epsilon_help="privacy per km, per record: Pr[o | x] <= exp(epsilon d(x, x')) Pr[o | x'] for neighbouring "
        "locations (local metric DP, not a session budget)",
    )


def _run_release(args) -> int:
    from .release_command import run_release_command

    return run_release_command(args, RELEASE_INSTANCE, RELEASE_SETTINGS)


FAMILY = Family(
    name="mdp",
    package="dpmodels.metricdp",
    summary="metric DP: the perturbation LP, Benders over partitions, a structured interior point",
    compare=experiment(
        "metric DP: full LP vs structured IPM vs Benders (partitioners) vs the exponential mechanism",
        _run_compare,
        options=COMPARE_OPTIONS,
        arguments=_compare_arguments,
        table="the comparison, one row per method",
        plot="the bound trajectories of Benders and the IPM",
    ),
    bench=experiment(
        "paper-scale grid: full LP vs structured IPM vs Benders at eps = 10/km and 1/km",
        _run_bench,
        options=BENCH_OPTIONS,
        arguments=_bench_arguments,
        table="the measurements, one row per run (with --sweep-n: per epsilon, N and method)",
        json_help="the measurements (with --sweep-n: every run)",
        plot="runtime vs N (with --sweep-n)",
    ),
    release=Command(
        "perturb each user's location with the optimal audited mDP mechanism (records CSV on a public grid)",
        _release_arguments,
        _run_release,
    ),
)
