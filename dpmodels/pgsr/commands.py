"""What the PGSR family shows the ``dpmodels`` command: ``compare``, ``bench`` and ``release pgsr``.

The library functions live in ``compare.py``, ``table7.py``, ``bench/`` and ``release.py``; this
module declares the commands (standard options from :mod:`dpmodels.core.options`, the runner
:mod:`dpmodels.core.runner`) and returns their tables; ``compare pgsr`` is :mod:`.compare_command`,
``release pgsr`` :mod:`.release_command`, ``measure``/``postprocess pgsr`` :mod:`.measure_command`.
The defaults finish in under 30 s on a small census-like instance; the paper's scale is
behind flags (``--table7`` for both of its shapes at full size, or e.g. ``--instance
pgsr/taxi-like --runs 30`` for one).
"""

from __future__ import annotations

import argparse

from dpmodels.core import options as std
from dpmodels.core.commands import Command, Family, nonnegative_int, positive_float, positive_int
from dpmodels.core.errors import DataValidationError
from dpmodels.core.options import Names, one_of
from dpmodels.core.runner import Result, experiment

__all__ = ["FAMILY"]

#: The noises ``--noise`` takes (compare, bench, release, measure), the default first (``mechanism.NOISES``).
NOISES = ("discrete-laplace", "discrete-gaussian")

COMPARE_INSTANCE = "pgsr/census-like"
#: The built-in default (a newcomer's first run): a census of 30,000 households in 6 states and 60
#: counties, sizes 1..20.  The mechanisms differ at every level there; on the taxi-like shape at a
#: tenth of its groups (273 taxis in 263 zones, the old default) every county-level error sat at
#: its ceiling 2G, and its 13,500 cells made the relaxed QPs through Pyomo take most of a minute.
COMPARE_SETTINGS = {"n_states": 6, "n_counties": 60, "households": 30_000, "N": 20, "outliers": 5}
#: ``--table7``: the largest shape (regions x sizes) on which the Pyomo QP/QIP mechanisms run by
#: default.  At the full census shape (3.2 million cells) building and solving those Pyomo models
#: on a generic QP solver takes far longer than the whole table may (ten minutes) and many GB;
#: ``--qp-max-cells 0`` runs them anyway.
TABLE7_QP_MAX_CELLS = 1_000_000


# ---------------------------------------------------------------------- compare (run in .compare_command)
def _compare_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--csv-hierarchy", help="your own data: a region,parent CSV, with --csv-counts or --csv-records")
    p.add_argument("--csv-counts", help="region,size,count (or wide) counts of the leaves (needs --csv-hierarchy)")
    p.add_argument("--csv-records", help="user,unit,region,quantity records (needs --csv-hierarchy)")
    p.add_argument(
        "--mechanisms",
        nargs="+",
        default=None,
        help="mechanisms to run (default: M_H^r M_H^dp M_c^r M_c^dp M_c^ch TopDown; also M_H, M_c, M_dp^OP)",
    )
    p.add_argument(
        "--qp-solver",
        default=None,
        help="backend of the relaxed models (M_H^r, M_c^r); default clarabel, except M_H^r with --table7: "
        "pgsr_relax (Model 1-R on the plain data, seconds at census scale)",
    )
    p.add_argument("--qip-solver", default="scip", help="backend of the exact QIPs (M_H, M_c)")
    p.add_argument(
        "--domains",
        choices=["truncated", "full"],
        default="truncated",
        help="variable domains: the paper's noisy +- 3 ceil(2 lambda^2), or [0, G]",
    )
    p.add_argument(
        "--calibration",
        choices=["sound", "paper"],
        default="sound",
        help="chain noise of M_c^ch: sound L|R_l|/eps, or the paper's L/eps (not eps-DP; discrete Laplace only)",
    )
    p.add_argument(
        "--table7",
        action="store_true",
        help="the paper's Table 7 and Figs. 8-9: the mechanisms on the census-like and taxi-like shapes at full "
        "scale, ours beside the paper's numbers (--set KEY=VALUE applies to both shapes, --set census.KEY=VALUE "
        "or taxi.KEY=VALUE to one; --plot draws Figs. 8-9)",
    )
    p.add_argument(
        "--shapes", nargs="+", choices=["census", "taxi"], default=None, help="with --table7: the shapes (default both)"
    )
    p.add_argument(
        "--qp-max-cells",
        type=nonnegative_int,
        default=None,
        help=f"with --table7: the largest shape (regions x sizes) on which M_H^r, M_c^r, M_H and M_c (Pyomo models "
        f"on a generic solver) run; on larger shapes their rows say 'not run' (default {TABLE7_QP_MAX_CELLS:,}; "
        "0 = no limit; at the census shape each takes minutes and many GB)",
    )


COMPARE_OPTIONS = (
    std.instance(COMPARE_INSTANCE),
    std.settings(
        "generator option, e.g. --set scale=1 --set N=20 (repeatable; default for the built-in "
        f"instance: {' '.join(f'{k}={v}' for k, v in COMPARE_SETTINGS.items())})"
    ),
    std.epsilon(None, "privacy budgets of the discrete Laplace (default 0.1 0.5 1; a zCDP --noise takes --rho)"),
    std.noise(NOISES, "the noise measured: the paper's discrete Laplace, or the discrete Gaussian (zCDP, with --rho)"),
    std.rho(None, "zCDP budgets of --noise discrete-gaussian, each split evenly over the levels (e.g. 0.05 0.5)"),
    std.runs(None, "noisy runs per budget (default 5, 1 with --table7; the paper: 30)"),
    std.seed(0, "seed of the synthetic noise (experiments, not releases)"),
    std.time_limit(None, "seconds per QIP/QP solve"),
    std.executor(),
)


def _run_compare(args) -> Result:
    from .compare_command import run_compare

    return run_compare(args, COMPARE_INSTANCE, COMPARE_SETTINGS, TABLE7_QP_MAX_CELLS)


# ---------------------------------------------------------------------- bench
#: The census variants ``--census-variants`` takes (read when a value is checked or the help shown).
CENSUS_VARIANTS = Names("dpmodels.pgsr.bench.census", "CENSUS_VARIANTS")


def _bench_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--sizes",
        type=positive_int,
        nargs="+",
        default=[5, 10, 15, 20, 25, 30, 35, 40, 45, 50],
        help="group-size counts N of the taxi-like sweep",
    )
    p.add_argument("--census-scale", type=positive_float, default=1.0, help="census-like scale (1 = 1.18e8 households)")
    p.add_argument(
        "--census-variants",
        nargs="+",
        type=one_of(CENSUS_VARIANTS, "variant"),
        default=None,
        metavar="VARIANT",
        help=std.LazyHelp(
            lambda: (
                "mechanism/solver/domains runs of the census part, one child process each (default all: "
                + " ".join(CENSUS_VARIANTS())
                + ")"
            )
        ),
    )
    p.add_argument("--skip-sweep", action="store_true")
    p.add_argument("--skip-census", action="store_true")
    p.add_argument("--census-only", action="store_true", help="only the census run (same as --skip-sweep)")
    p.add_argument("--quick", action="store_true", help="N in (5, 10, 20), 30 s limit, census scale 0.1")


BENCH_OPTIONS = (
    std.epsilon(
        None,
        "budgets of the census run (default 1; Table 7: 0.1 0.5 1; the table DPs at 0.1 take minutes and ~10 GB)",
    ),
    std.noise(
        NOISES,
        "the noise measured: the paper's discrete Laplace, or the discrete Gaussian (zCDP; the census run at each "
        "--rho, the sweep at rho 1/2, what its epsilon 1 implies)",
    ),
    std.rho(None, "zCDP budgets of the census run with --noise discrete-gaussian"),
    std.time_limit(120.0, "seconds per highs/clarabel solve"),
)


def _run_bench(args) -> Result:
    from .bench import run_bench

    if args.quick:
        args.sizes, args.time_limit, args.census_scale = [5, 10, 20], 30.0, 0.1
    if args.census_only and args.skip_census:
        raise DataValidationError("--census-only", "cannot be combined with --skip-census")
    from dpmodels.core.release import check_budget_unit

    gaussian = args.noise == "discrete-gaussian"
    check_budget_unit(args, "rho" if gaussian else "epsilon")
    return run_bench(
        sizes=[] if args.skip_sweep or args.census_only else args.sizes,
        time_limit=args.time_limit,
        census_scale=None if args.skip_census else args.census_scale,
        epsilons=None if gaussian else args.epsilon,
        variants=args.census_variants or CENSUS_VARIANTS(),
        noise=args.noise,
        rhos=args.rho if gaussian else None,
    )


# ---------------------------------------------------------------------- release (run in .release_command)
#: The mechanisms ``--mechanism`` takes, and the one it defaults to (read when checked or shown).
MECHANISMS = std.Names("dpmodels.pgsr.postprocessing", "MECHANISMS")


def _default_mechanism() -> str:
    from .release import DEFAULT_MECHANISM

    return DEFAULT_MECHANISM


def _release_arguments(p: argparse.ArgumentParser) -> None:
    _data_arguments(p)
    p.add_argument(
        "--mechanism",
        type=std.one_of(MECHANISMS, "mechanism"),
        help=std.LazyHelp(lambda: f"mechanism, one of {', '.join(MECHANISMS())} (default {_default_mechanism()})"),
    )
    std.add_release_options(p, noises=NOISES)


def _measure_arguments(p: argparse.ArgumentParser) -> None:
    _data_arguments(p)
    p.add_argument(
        "--kind",
        choices=["counts", "cumulative", "chain"],
        default="counts",
        help="what to measure: counts (for M_H*, TopDown), cumulative (M_c*) or chain (M_c^ch)",
    )
    outputs = {"--out": "where to write the measurement table (.csv, or .parquet)"}
    std.add_release_options(p, outputs, noises=NOISES)
    p.add_argument("--facts", help="where to write the declared facts JSON (default: beside --out, .facts.json)")


def _postprocess_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--measurements", required=True, help="the measurement table (.csv or .parquet), any tool's")
    p.add_argument("--facts", help="its declared facts JSON (default: beside --measurements, .facts.json)")
    p.add_argument(
        "--mechanism",
        type=std.one_of(MECHANISMS, "mechanism"),
        help=std.LazyHelp(
            lambda: f"post-processing, one of {', '.join(MECHANISMS())} (default {_default_mechanism()})"
        ),
    )
    p.add_argument("--out", required=True, help="where to write the released counts (.csv, or .parquet)")
    p.add_argument("--manifest", help="where to write the JSON manifest (default: beside --out, .manifest.json)")
    p.add_argument("--force", action="store_true", help="replace existing output files (never an input)")
    std.add_verbosity(p)


def _data_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--hierarchy", required=True, help="region,parent CSV (the root's parent empty)")
    data = p.add_mutually_exclusive_group(required=True)
    data.add_argument("--records", help="user,unit,region,quantity CSV (one row per person)")
    data.add_argument("--counts", help="region,size,count CSV of the leaves (or wide: region + one column per size)")
    p.add_argument(
        "--N",
        type=positive_int,
        help="the declared largest group size, a public fact (required: the release shows sizes 1..N); only an "
        "experiment declared --not-private may leave it out and read N from the data",
    )
    p.add_argument(
        "--overflow",
        choices=["top", "error"],
        default="top",
        help="groups larger than --N: counted in the size-N bin ('N or more', the default), or refused "
        "(error: only with --not-private, since a refusal would depend on one group)",
    )
    p.add_argument("--z-max", type=positive_int, default=1, help="declared public bound on a quantity (clamped to it)")
    p.add_argument(
        "--level-shares",
        nargs="+",
        metavar="SHARE",
        help="the budget's split over the levels, one positive share per level, root first (e.g. 1 2 2 or 1/4 3/4; "
        "default even); the post-processing weighs each level by its noise variance",
    )


def _run_release(args) -> int:
    from .release_command import run_release_command

    return run_release_command(args)


def _run_measure(args) -> int:
    from .measure_command import run_measure_command

    return run_measure_command(args)


def _run_postprocess(args) -> int:
    from .measure_command import run_postprocess_command

    return run_postprocess_command(args)


FAMILY = Family(
    name="pgsr",
    package="dpmodels.pgsr",
    summary="hierarchical group sizes (PGSR): Models 1-4, DP plugins, Table 7",
    compare=experiment(
        "PGSR mechanisms on one instance (the paper's Table 7)",
        _run_compare,
        options=COMPARE_OPTIONS,
        arguments=_compare_arguments,
        table="one row per run",
        plot="error and time against epsilon (with --table7: Figs. 8-9)",
    ),
    bench=experiment(
        "pgsr_dp vs relaxed QPs (Figure 7 sweep) and the full census shape",
        _run_bench,
        options=BENCH_OPTIONS,
        arguments=_bench_arguments,
        table="the measurements, one row per run (part: sweep or census)",
        json_help="the measurements (seconds and peak memory of every run)",
    ),
    release=Command(
        "release group-size counts of a region hierarchy (records or counts CSVs)", _release_arguments, _run_release
    ),
    measure=Command(
        "the noisy measurements of a PGSR release, as a measurement file", _measure_arguments, _run_measure
    ),
    postprocess=Command(
        "post-process a PGSR measurement file (drawn here, with OpenDP, ...) into released counts",
        _postprocess_arguments,
        _run_postprocess,
    ),
)
