"""What the TopDown family shows the ``dpmodels`` command: ``compare``, ``bench`` and ``release topdown``.

The library functions live in ``compare.py``, ``compare_report.py``, ``bench.py`` and
``release.py``; this module declares the commands (standard options from
:mod:`dpmodels.core.options`, the runner :mod:`dpmodels.core.runner`) and returns their tables.
The comparison's default (the ``tiny`` synthetic census, 4 budgets x 3 runs) finishes in
seconds; larger geographies are behind ``--preset small|county|state``.
"""

from __future__ import annotations

import argparse

from dpmodels.core import options as std
from dpmodels.core.commands import Command, Family, HelpFormatter, add_progress, positive_float, positive_int
from dpmodels.core.errors import DataValidationError
from dpmodels.core.options import Names, one_of
from dpmodels.core.runner import Result, experiment
from dpmodels.core.settings import parse_settings

__all__ = ["FAMILY"]

#: The built-in geography of ``compare topdown`` (a newcomer's first run).
COMPARE_PRESET = "tiny"
#: The outputs of ``release topdown`` and their help.
RELEASE_OUTPUTS = {
    "--out-microdata": "where to write the released microdata CSV (one row per person, in the columns of --layout)",
    "--out-histograms": "where to write the per-level histograms CSV (region, level, attributes, count; "
    "cells with count 0 are left out)",
}


# ---------------------------------------------------------------------- compare
def _compare_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--preset",
        default=COMPARE_PRESET,
        help="synthetic geography: tiny (seconds), small, county or state (the larger take minutes)",
    )
    p.add_argument(
        "--configs",
        nargs="+",
        default=None,
        help="configurations (default: lp-first flow no-edits; also l2-highs auto paper-weights paper-objective "
        "query-rounder)",
    )
    p.add_argument(
        "--estimators",
        action="store_true",
        help="compare estimators instead: GLS (best linear unbiased), TopDown, the 2019 algorithm and PGSR's DP",
    )
    _level_shares_argument(p, " (not with --estimators)")


COMPARE_OPTIONS = (
    std.settings(
        "generator option of topdown/synthetic, e.g. --set races=4 --set edits=false "
        "--set fanout=2,2,2,1,3 --set seed=3 (repeatable)"
    ),
    std.epsilon([0.5, 1.0, 2.0, 4.0]),
    std.runs(3, "noisy runs per epsilon"),
    std.time_limit(None, "seconds per solve"),
    std.seed(0, "noise seed (experiments, not releases)"),
    std.executor("the (epsilon, run) tasks"),
)


def _load(args):
    import dpmodels.instances as instances
    from dpmodels.instances.topdown import PRESETS

    if args.preset not in PRESETS:
        raise DataValidationError("--preset", f"must be one of {sorted(PRESETS)}, got {args.preset!r}")
    settings = parse_settings(args.set)
    if "preset" in settings:
        raise DataValidationError("--set", "use --preset, not --set preset=...")
    for key, value in settings.items():
        if isinstance(value, str) and value.lower() in ("true", "false"):
            settings[key] = value.lower() == "true"
        elif key == "fanout" and isinstance(value, str | int):
            try:
                settings[key] = tuple(int(v) for v in str(value).split(","))
            except ValueError:
                raise DataValidationError("--set", f"fanout expects comma-separated integers, got {value!r}") from None
    if "child_groups" in settings:  # geocode prefixes as written: 01001 is not the number 1001
        settings["child_groups"] = dict(pair.split("=", 1) for pair in args.set)["child_groups"]
    seed = settings.pop("seed", 0)
    return instances.generate("topdown/synthetic", seed=seed, preset=args.preset, **settings)


def _run_compare(args) -> Result:
    from dataclasses import replace

    from .compare import compare_topdown, resolve_configs
    from .compare_report import format_summary, plot_topdown, summary_table, violation_counts
    from .production_options import level_shares_for

    if args.estimators:
        from .compare_estimators_report import estimators_result

        for flag, given in (("--configs", args.configs), ("--level-shares", args.level_shares)):
            if given is not None:
                raise DataValidationError(flag, "does not apply with --estimators")
        return estimators_result(_load(args), args)
    try:
        configs = resolve_configs(args.configs)
    except DataValidationError as err:
        raise DataValidationError("--configs", err.problem) from None
    level_shares_for(args)  # their form and sum before the data are generated
    data = _load(args)
    shares = level_shares_for(args, data.geography.n_levels)  # one per level
    if args.time_limit is not None:
        configs = {name: replace(opts, time_limit=args.time_limit) for name, opts in configs.items()}
    kn = data.knowledge
    head = [
        f"instance: {data.name}  {data.geography.describe()}  cells = {data.schema.size}  "
        f"population = {data.population:,}  invariant totals down to level {kn.total_level}  edits = {len(kn.edits)}"
    ]
    for name, opts in configs.items():
        head.append(f"  {name}: L2 {opts.l2}, L1 {opts.l1}, edits {'on' if opts.edits else 'off'}")
    if shares is not None:
        head.append(f"  level shares (root first): {', '.join(map(str, shares))}")
    where = {"executor": args.executor, "progress": args.progress}
    runs = compare_topdown(data, args.epsilon, args.runs, configs, args.seed, level_shares=shares, **where)
    legend = (
        f"\nmean over {args.runs} runs per epsilon; L1 error summed over the nodes of each level; "
        "total error/node = |released - true population| per node; solve counts = how each parent's "
        "rounding was obtained; seconds = wall time of the level"
    )
    violations = violation_counts(runs).astype(object).fillna("-").to_string()
    report = [
        "\n".join(head),
        legend,
        format_summary(summary_table(runs)),
        "\nviolations of the public constraints (summed over runs; '-' = not imposed by the configuration):",
        violations,
    ]
    return Result(runs, report, figure=lambda path: plot_topdown(runs, path, title=data.name))


# ---------------------------------------------------------------------- bench
def _size(text: str) -> tuple[int, int]:
    """``16x512`` -> ``(16, 512)``: children x cells, both > 0."""
    try:
        children, cells = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected CHILDRENxCELLS such as 16x512, got {text!r}") from None
    if children < 1 or cells < 1:
        raise argparse.ArgumentTypeError(f"expected CHILDRENxCELLS, both > 0, got {text!r}")
    return children, cells


def _bench_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--sizes",
        type=_size,
        nargs="+",
        default=[(4, 64), (16, 512), (32, 1024), (64, 2016)],
        metavar="CHILDRENxCELLS",
        help="children x cells of the rounding and L2 sweeps, e.g. 16x512",
    )
    p.add_argument("--preset", default="state", help="synthetic geography of the end-to-end run (or 'none')")
    p.add_argument(
        "--races", type=positive_int, default=63, help="race categories (63 = the full 2016-cell PL94 schema)"
    )
    p.add_argument("--quick", action="store_true", help="sizes 4x64 16x512, the 'county' preset, 30 s limit")
    p.add_argument(
        "--no-previous",
        dest="compare_previous",
        action="store_false",
        help="skip the serial run of the previous (child-by-child) assembly beside the batched one",
    )
    p.add_argument(
        "--largest-state",
        type=positive_int,
        nargs="+",
        default=[],
        metavar="COUNTIES",
        help="also run the largest state's shape (58 counties, ~39 M persons) with this many of its counties, "
        "e.g. 1 2 4 (58 = the whole state), each serially in a fresh process, with its peak memory",
    )
    p.add_argument(
        "--solver-settings",
        action="store_true",
        help="also time Clarabel's and HiGHS's settings side by side on every node solve of the --preset run, "
        "and the solver floor (the solver calls alone) per million persons",
    )


def _run_bench(args) -> Result:
    from .bench import run_bench_command

    return run_bench_command(args)


# ---------------------------------------------------------------------- release
#: The geographic levels ``--total-level`` takes, and the layouts of ``--persons``.
LEVELS = Names("dpmodels.instances.topdown", "LEVELS")
#: The 2020 production's named budget presets and structural zeros (issue 25).
BUDGET_PRESETS = Names("dpmodels.topdown.budget_presets", "BUDGET_PRESETS")
ZERO_SETS = Names("dpmodels.topdown.production", "STRUCTURAL_ZEROS")
LAYOUTS = Names("dpmodels.topdown.layouts", "LAYOUTS")


class _ValuesFormatter(HelpFormatter):
    """The release's help: as everywhere, but a text of several lines (the table of values) is kept line by line."""

    def _fill_text(self, text, width, indent):
        text = str(text)
        if "\n" not in text:
            return super()._fill_text(text, width, indent)
        return "".join(indent + line for line in text.splitlines(keepends=True))


def _values_help() -> str:
    from .layouts import values_help

    return values_help()


def _release_arguments(p: argparse.ArgumentParser) -> None:
    _persons_arguments(p)
    _production_arguments(p)
    std.executor("the solves of a level").add(p)
    add_progress(p)
    std.add_release_options(p, RELEASE_OUTPUTS, noises=("geometric", "discrete-gaussian"))  # release.RELEASE_NOISES


def _measure_arguments(p: argparse.ArgumentParser) -> None:
    _persons_arguments(p)
    outputs = {"--out": "where to write the measurement table (.csv, or .parquet)"}
    std.add_release_options(p, outputs, noises=("geometric", "discrete-gaussian"))  # release.RELEASE_NOISES
    p.add_argument("--facts", help="where to write the declared facts JSON (default: beside --out, .facts.json)")
    _level_shares_argument(p)


def _level_shares_argument(p: argparse.ArgumentParser, extra: str = "") -> None:
    """``--level-shares`` of release, measure and compare topdown (parsed by :mod:`.production_options`)."""
    p.add_argument(
        "--level-shares",
        metavar="SHARES",
        help="the budget's split over the geography levels, root first: one exact fraction per level, separated by "
        "commas, summing to exactly 1, e.g. 1/6,1/6,1/6,1/6,1/6,1/6 or the 2020 production's "
        "104/4099,1440/4099,447/4099,687/4099,1256/4099,165/4099 (default: equal shares)" + extra,
    )


def _postprocess_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--measurements", required=True, help="the measurement table (.csv or .parquet), any tool's")
    p.add_argument("--facts", help="its declared facts JSON (default: beside --measurements, .facts.json)")
    p.add_argument("--layout", default="labels", type=one_of(LAYOUTS, "layout"), help="the microdata's columns")
    for flag, text in RELEASE_OUTPUTS.items():
        p.add_argument(flag, required=True, help=text)
    p.add_argument("--manifest", help="where to write the JSON manifest (default: beside the microdata)")
    p.add_argument("--force", action="store_true", help="replace existing output files (never an input)")
    std.executor("the solves of a level").add(p)
    add_progress(p)
    std.add_verbosity(p)


def _production_arguments(p: argparse.ArgumentParser) -> None:
    """The 2020 production's options of ``release topdown`` (issue 25; run by :mod:`.production_options`)."""
    p.add_argument(
        "--passes",
        help="interleaved passes, coarse first: query sets split by ',', passes by ';', 'rest' for the others, e.g. "
        "'total; rest' or 'hhgq; rest'; each pass holds the earlier passes' rounded answers exactly",
    )
    p.add_argument(
        "--l2-passes",
        help="the production's L2 passes within each pass, written as --passes: each minimises its own query sets' "
        "squared error, the earlier ones' answers held within --l2-tolerance, e.g. 'total; rest'",
    )
    p.add_argument(
        "--l2-tolerance",
        type=positive_float,
        default=0.1,
        help="how far an earlier L2 pass's answers may move in a later one (default 0.1, the production's)",
    )
    p.add_argument(
        "--rounder-passes",
        help="the production's rounder passes within each pass, written as --passes (with --rounder queries): each "
        "rounds judged by its own query sets, holding the earlier ones' rounded answers exactly",
    )
    p.add_argument(
        "--rounder",
        default="cells",
        type=one_of(lambda: ("cells", "queries"), "rounder"),
        help="the rounding objective: cells (2019: the cells' L1 distance to the L2 solution) or queries (the 2020 "
        "production's: each measured marginal row's rounded answer)",
    )
    p.add_argument(
        "--budget-preset",
        type=one_of(BUDGET_PRESETS, "preset"),
        help="pl94-2020: the 2020 production's geolevel and query shares (exact fractions); with --rho",
    )
    _level_shares_argument(p, "; with --budget-preset, they replace its geolevel shares (its query shares kept)")
    p.add_argument(
        "--structural-zeros",
        type=one_of(ZERO_SETS, "set"),
        help="declare structural zeros (production: no one under 18 in a nursing facility; adult-only: nor in "
        "correctional, college or military quarters); persons in them are left out",
    )


def _persons_arguments(p: argparse.ArgumentParser) -> None:
    p.formatter_class = _ValuesFormatter
    p.epilog = std.LazyHelp(_values_help)  # built when --help is shown: the parser imports no pandas
    p.add_argument(
        "--persons",
        required=True,
        help="person records (CSV or Parquet), one row per person: geocode (15 digits) + hhgq, votingage, hispanic, "
        "cenrace as value labels, or the Census codes with --layout ppmf (accepted values below)",
    )
    p.add_argument(
        "--layout",
        default="labels",
        type=one_of(LAYOUTS, "layout"),
        help="labels: geocode + value labels; ppmf: the Census microdata columns TABBLKST, TABBLKCOU, TABTRACTCE, "
        "TABBLKGRPCE, TABBLK, RTYPE, GQTYPE, QAGE, CENHISP, CENRACE; ppmf-pl94: the 2020 redistricting PPMF, GQTYPE_PL "
        "and VOTING_AGE for GQTYPE and QAGE (the released microdata are written in the same columns)",
    )
    p.add_argument("--races", type=positive_int, default=63, help="cenrace categories of the schema (1..63)")
    p.add_argument("--total-level", default="state", type=one_of(LEVELS, "level"), help="deepest invariant population")
    p.add_argument(
        "--child-groups",
        metavar="GROUPS",
        help="groups of sibling regions (geocode prefixes, children of an invariant region) whose total is "
        "invariant, released exactly (the production's AIAN and non-AIAN parts of a state): regions split by ',', "
        "groups by ';', e.g. '01001,01003;01005'",
    )
    p.add_argument(
        "--blocks",
        help="CSV with a geocode column: the public list of blocks, empty ones too (required; persons in "
        "other blocks are left out). Only an experiment declared --not-private may omit it and take the "
        "blocks that appear in --persons, which depend on the data",
    )


def _run_release(args) -> int:
    from .release_command import run_release_command

    return run_release_command(args)


def _run_measure(args) -> int:
    from .measure_command import run_measure_command
    from .release_command import load_persons, require_blocks

    require_blocks(args)
    return run_measure_command(args, lambda: load_persons(args))


def _run_postprocess(args) -> int:
    from .measure_command import run_postprocess_command

    return run_postprocess_command(args)


FAMILY = Family(
    name="topdown",
    package="dpmodels.topdown",
    summary="census TopDown: per-level L2 + L1 post-processing, flow rounder, releases of person records",
    compare=experiment(
        "TopDown post-processing configurations on a synthetic census (spec 5, project-defined)",
        _run_compare,
        options=COMPARE_OPTIONS,
        arguments=_compare_arguments,
        table="one row per (config, epsilon, run, level)",
        plot="error per level against epsilon and time",
    ),
    bench=experiment(
        "flow rounder vs HiGHS, tree L2 vs QP solvers, and a whole synthetic state end to end",
        _run_bench,
        options=(std.time_limit(120.0, "seconds per highs/clarabel solve"),),
        arguments=_bench_arguments,
        table="the measurements, one row per run (part: rounding, l2 or state)",
        json_help="the measurements",
    ),
    release=Command(
        "release census microdata and histograms with TopDown (person records CSV)",
        _release_arguments,
        _run_release,
    ),
    measure=Command(
        "the noisy measurements of a TopDown release, as a measurement file", _measure_arguments, _run_measure
    ),
    postprocess=Command(
        "post-process a TopDown measurement file (drawn here or elsewhere) into microdata and histograms",
        _postprocess_arguments,
        _run_postprocess,
    ),
)
