"""What the facility-location family shows the ``dpmodels`` command: ``compare``, ``bench`` and
``release facility``.

The library functions live in ``compare.py``, ``bench.py`` and ``release.py``; this module
declares the commands (standard options from :mod:`dpmodels.core.options`, the runner
:mod:`dpmodels.core.runner`) and returns their tables.
The comparison's default (20 and 50 points, 5 budgets, 20 runs) finishes in seconds;
larger point sets are behind ``--sizes`` (the MIP reference grows quickly beyond a few hundred).
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from dpmodels.core import options as std
from dpmodels.core.commands import Command, Family, nonnegative_int, positive_float, positive_int
from dpmodels.core.errors import DataValidationError
from dpmodels.core.options import LazyHelp, Names, one_of
from dpmodels.core.runner import Result, experiment

__all__ = ["FAMILY"]

#: The largest user point set ``compare facility`` solves the MIP reference of.
MAX_MIP_POINTS = 400


#: Names the options take, declared by the family's modules (read when checked or shown).
ALGORITHMS = Names("dpmodels.facility.mechanism", "BASELINES")
RADIUS_MODES = Names("dpmodels.facility.frt", "RADIUS_MODES")


def _radius_mode(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--radius-mode",
        default="tight",
        type=one_of(RADIUS_MODES, "radius mode"),
        help=LazyHelp(lambda: "FRT radii: " + ", ".join(RADIUS_MODES())),
    )


# ---------------------------------------------------------------------- compare
def _compare_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--sizes",
        type=positive_int,
        nargs="+",
        default=[20, 50],
        help="numbers of points in the unit square (the MIP reference slows beyond a few hundred)",
    )
    p.add_argument(
        "--algorithms",
        nargs="+",
        type=one_of(ALGORITHMS, "algorithm"),
        default=["dp", "base"],
        metavar="ALGORITHM",
        help=LazyHelp(lambda: f"any of {sorted(ALGORITHMS())}"),
    )
    p.add_argument("--f", type=positive_float, default=0.5, help="facility opening cost")
    p.add_argument("--clusters", type=nonnegative_int, default=0, help="0: uniform points, k: k Gaussian clusters")
    p.add_argument("--points", help="your own points file (CSV/whitespace, one location per row) ...")
    p.add_argument("--counts", help="... and counts file (one integer per row; default: last column of --points)")
    p.add_argument("--solver", default="highs", help="MIP/LP backend of the reference (highs, scip, ...)")
    p.add_argument("--lam", type=float, default=1.5, help="lambda of the FRT tree, in (1, 2)")
    _radius_mode(p)
    p.add_argument("--skip-stretch", action="store_true", help="leave out the FRT stretch table")
    p.add_argument("--skip-lower-bound", action="store_true", help="leave out the star lower-bound table")


COMPARE_OPTIONS = (
    std.epsilon([0.25, 0.5, 1.0, 2.0, 5.0]),
    std.runs(20, "runs (fresh tree and noise) per (n, ε, algorithm)"),
    std.seed(0, "seed of the points, trees and noise (experiments)"),
)


def _own_points(args):
    """``--points`` (and ``--counts``) as the instance of the comparison, or None."""
    from .data import UFLInstance

    if args.counts and not args.points:
        raise DataValidationError("--counts", "needs --points (the locations)")
    if not args.points:
        return None
    from dpmodels.instances.facility import from_files

    instance = from_files(args.points, args.counts, f=args.f)
    if instance.n > MAX_MIP_POINTS:
        raise DataValidationError(
            "--points", f"{instance.n} locations: the MIP reference is limited to {MAX_MIP_POINTS} here"
        )
    return UFLInstance(d=instance.distances, f=instance.f, N=instance.N, name=instance.name)


def _run_compare(args) -> Result:
    from .checks import check_lambda
    from .compare import compare_facility, lower_bound_table, plot_compare, stretch_table

    lam = check_lambda(args.lam, "--lam")
    instance = _own_points(args)
    table = compare_facility(
        args.epsilon,
        args.sizes,
        args.runs,
        args.seed,
        args.algorithms,
        args.f,
        args.clusters,
        args.solver,
        lam,
        args.radius_mode,
        instance,
        progress=args.progress,
    )
    report = [
        "cost of the private output (realized, original metric) vs MIP optimum and LP bound, mean over runs;\n"
        "every 'true ... (diagnostic)' column is evaluated on the true client counts, never released:",
        table.round(4),
    ]
    if not args.skip_stretch:
        report.append("\nFRT stretch E[d_T]/d over 100 trees (uniform points), against the (18b) bound C·H_n:")
        report.append(stretch_table(lam=lam).round(3))
    if not args.skip_lower_bound:
        report.append("\nstar lower-bound family (ε = 1/m, n = 16, 300 draws): E cost / E opt must be >= 0.025/√ε")
        report.append(lower_bound_table().round(3))
    return Result(table, report, figure=lambda path: plot_compare(table, path))


# ---------------------------------------------------------------------- bench
def _bench_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--points", type=nonnegative_int, default=100_000, help="points of the pipeline run (0 skips it)")
    p.add_argument(
        "--sizes", type=positive_int, nargs="*", default=[32, 64, 128, 256, 512], help="HST leaves of the sweep"
    )
    p.add_argument("--quick", action="store_true", help="10^4 points and sizes 32 64 128")


def _run_bench(args) -> Result:
    from .bench import run_bench

    if args.quick:
        args.points, args.sizes = 10_000, [32, 64, 128]
    return run_bench(args.points, args.sizes, args.time_limit)


# ---------------------------------------------------------------------- release
def _release_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--points",
        required=True,
        help="CSV with a header: coordinate columns (x,y,...; public) and a column of clients per point (private)",
    )
    p.add_argument("--count-column", default="count", help="the column of client counts in --points")
    p.add_argument("--f", type=float, required=True, help="facility opening cost f > 0 (in coordinate units)")
    p.add_argument("--lam", type=float, default=1.5, help="lambda of the FRT tree, in (1, 2)")
    _radius_mode(p)
    p.add_argument("--tree-out", help="also write the published tree (node, parent, level, rep_location, in_R, ...)")
    std.add_release_options(p, {"--out": "where to write the published facilities CSV (node, level, point, x, y, ...)"})


def _run_release(args) -> int:
    from dpmodels.core.release import ReleaseOutcome, ReleaseSpec, run_release
    from dpmodels.instances.facility import from_csv

    from .checks import check_lambda
    from .release import MARK_NOISE, facilities_frame, release, release_facts, tree_frame

    f = _check_cost(args.f)
    lam = check_lambda(args.lam, "--lam")

    def run(session, data, epsilon) -> ReleaseOutcome:
        published = release(session, epsilon, lam=lam, radius_mode=args.radius_mode)
        columns = data.info["columns"]
        frames = {"--out": facilities_frame(published, data.points, columns)}
        if args.tree_out:
            frames["--tree-out"] = tree_frame(published, data.points, columns)
        facts = release_facts(len(data.points), f, lam=lam, radius_mode=args.radius_mode)
        summary = [_report(published)]
        tree = published.tree
        details = {"epsilon used": tree.eps_used, "L'": tree.lprime, "scales": list(tree.scales), "R": len(tree.R)}
        return ReleaseOutcome(frames, facts, summary, details=details, sampler=MARK_NOISE)

    spec = ReleaseSpec(
        "facility",
        inputs={"--points": args.points},
        outputs={"--out": args.out, "--tree-out": args.tree_out},
        load=lambda: from_csv(args.points, f=f, count_column=args.count_column),
        run=run,
        name=Path(args.points).stem,
    )
    return run_release(args, spec)


def _check_cost(f: float) -> float:
    if not (math.isfinite(f) and f > 0):
        raise DataValidationError("--f", f"must be a finite number > 0, got {f}")
    return f


def _report(published) -> str:
    """The public parameters of the release (nothing computed from the counts but R)."""
    t = published.tree
    return (
        f"published {len(t.R)} candidate facilities (R) on a tree of {t.tree.n_nodes} nodes, L = {t.tree.L}, "
        f"L' = {t.lprime}, d_min = {published.scale:g}; epsilon used {t.eps_used:.6g} of {t.epsilon:g}"
    )


FAMILY = Family(
    name="facility",
    package="dpmodels.facility",
    summary="private facility location: FRT trees, the HST mechanism, MIP and LP references",
    compare=experiment(
        "DP facility location: private cost vs MIP optimum vs LP bound, stretch, lower bound",
        _run_compare,
        options=COMPARE_OPTIONS,
        arguments=_compare_arguments,
        table="the cost table, one row per (n, ε, algorithm)",
        plot="cost / opt against ε",
    ),
    bench=experiment(
        "FRT + mechanism on 10^5 points; UFL MIP on highs vs the tree DP as n grows",
        _run_bench,
        options=(std.time_limit(300.0, "seconds per highs solve"),),
        arguments=_bench_arguments,
        table="the measurements, one row per run (part: pipeline, tree_dp or tree_dp_scaling)",
        json_help="the measurements",
    ),
    release=Command(
        "publish private facility locations for clients at points (points CSV with a count column)",
        _release_arguments,
        _run_release,
    ),
)
