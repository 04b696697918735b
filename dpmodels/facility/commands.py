"""What the facility-location family shows the ``dpmodels`` command: ``compare``, ``bench`` and
``release facility``.

The library functions live in ``compare.py``, ``bench.py`` and ``release.py``; this module
only declares their arguments and calls them (the shared tail is :mod:`dpmodels.core.commands`).
The comparison's default (20 and 50 points, 5 budgets, 20 runs) finishes in seconds;
larger point sets are behind ``--sizes`` (the MIP reference grows quickly beyond a few hundred).
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from dpmodels.core.commands import (
    Command,
    Family,
    add_outputs,
    add_progress,
    nonnegative_int,
    positive_float,
    positive_int,
    report_written,
)
from dpmodels.core.errors import DataValidationError
from dpmodels.core.release import add_common_arguments

from .frt import RADIUS_MODES

__all__ = ["FAMILY"]

#: The largest user point set ``compare facility`` solves the MIP reference of.
MAX_MIP_POINTS = 400


# ---------------------------------------------------------------------- compare
def _compare_arguments(p: argparse.ArgumentParser) -> None:
    from .mechanism import BASELINES

    p.add_argument(
        "--epsilon", type=positive_float, nargs="+", default=[0.25, 0.5, 1.0, 2.0, 5.0], help="privacy budgets"
    )
    p.add_argument(
        "--sizes",
        type=positive_int,
        nargs="+",
        default=[20, 50],
        help="numbers of points in the unit square (the MIP reference slows beyond a few hundred)",
    )
    p.add_argument("--runs", type=positive_int, default=20, help="runs (fresh tree and noise) per (n, ε, algorithm)")
    p.add_argument("--algorithms", nargs="+", default=["dp", "base"], help=f"any of {sorted(BASELINES)}")
    p.add_argument("--f", type=positive_float, default=0.5, help="facility opening cost")
    p.add_argument("--clusters", type=nonnegative_int, default=0, help="0: uniform points, k: k Gaussian clusters")
    p.add_argument("--points", help="your own points file (CSV/whitespace, one location per row) ...")
    p.add_argument("--counts", help="... and counts file (one integer per row; default: last column of --points)")
    p.add_argument("--solver", default="highs", help="MIP/LP backend of the reference (highs, scip, ...)")
    p.add_argument("--lam", type=float, default=1.5, help="lambda of the FRT tree, in (1, 2)")
    p.add_argument("--radius-mode", default="tight", choices=list(RADIUS_MODES), help="FRT radii")
    p.add_argument("--seed", type=int, default=0, help="seed of the points, trees and noise (experiments)")
    p.add_argument("--skip-stretch", action="store_true", help="leave out the FRT stretch table")
    p.add_argument("--skip-lower-bound", action="store_true", help="leave out the star lower-bound table")
    add_outputs(p, csv="the cost table, one row per (n, ε, algorithm)", plot="cost / opt against ε")
    add_progress(p)


def _run_compare(args) -> int:
    from .compare import compare_facility, lower_bound_table, plot_compare, stretch_table
    from .data import UFLInstance, check_lambda
    from .mechanism import BASELINES

    unknown = sorted(set(args.algorithms) - set(BASELINES))
    if unknown:
        raise DataValidationError("--algorithms", f"unknown {unknown}; choose from {sorted(BASELINES)}")
    lam = check_lambda(args.lam, "--lam")
    if args.counts and not args.points:
        raise DataValidationError("--counts", "needs --points (the locations)")
    instance = None
    if args.points:
        from dpmodels.instances.facility import from_files

        instance = from_files(args.points, args.counts, f=args.f)
        if instance.n > MAX_MIP_POINTS:
            raise DataValidationError(
                "--points", f"{instance.n} locations: the MIP reference is limited to {MAX_MIP_POINTS} here"
            )
        instance = UFLInstance(d=instance.distances, f=instance.f, N=instance.N, name=instance.name)
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
        progress=not args.no_progress,
    )
    print("cost of the private output (realized, original metric) vs MIP optimum and LP bound, mean over runs;")
    print("every 'true ... (diagnostic)' column is evaluated on the true client counts, never released:")
    print(table.round(4).to_string(index=False))
    if not args.skip_stretch:
        print("\nFRT stretch E[d_T]/d over 100 trees (uniform points), against the (18b) bound C·H_n:")
        print(stretch_table(lam=lam).round(3).to_string(index=False))
    if not args.skip_lower_bound:
        print("\nstar lower-bound family (ε = 1/m, n = 16, 300 draws): E cost / E opt must be >= 0.025/√ε")
        print(lower_bound_table().round(3).to_string(index=False))
    if args.csv:
        table.to_csv(args.csv, index=False)
        report_written(args.csv)
    if args.plot:
        plot_compare(table, args.plot)
        report_written(args.plot)
    return 0


# ---------------------------------------------------------------------- bench
def _bench_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--points", type=nonnegative_int, default=100_000, help="points of the pipeline run (0 skips it)")
    p.add_argument(
        "--sizes", type=positive_int, nargs="*", default=[32, 64, 128, 256, 512], help="HST leaves of the sweep"
    )
    p.add_argument("--time-limit", type=positive_float, default=300.0, help="seconds per highs solve")
    p.add_argument("--quick", action="store_true", help="10^4 points and sizes 32 64 128")
    add_outputs(p, json="the measurements")


def _run_bench(args) -> int:
    from .bench import run_bench

    if args.quick:
        args.points, args.sizes = 10_000, [32, 64, 128]
    run_bench(args.points, args.sizes, args.time_limit, args.json)
    return 0


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
    p.add_argument("--radius-mode", default="tight", choices=list(RADIUS_MODES), help="FRT radii")
    p.add_argument("--tree-out", help="also write the published tree (node, parent, level, rep_point, in_R, ...)")
    add_common_arguments(p, {"--out": "where to write the published facilities CSV (node, level, point, x, y, ...)"})


def _run_release(args) -> int:
    from dpmodels.core.release import ReleaseOutcome, ReleaseSpec, run_release
    from dpmodels.instances.facility import from_csv

    from .data import check_lambda
    from .release import MARK_NOISE, facilities_frame, release, release_facts, tree_frame

    f = _check_cost(args.f)
    lam = check_lambda(args.lam, "--lam")

    def run(session, data, epsilon) -> ReleaseOutcome:
        published = release(session, epsilon, lam=lam, radius_mode=args.radius_mode)
        rows, columns = data.info["rows"], data.info["columns"]
        frames = {"--out": facilities_frame(published, data.points, rows, columns)}
        if args.tree_out:
            frames["--tree-out"] = tree_frame(published, data.points, rows, columns)
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
    compare=Command(
        "DP facility location: private cost vs MIP optimum vs LP bound, stretch, lower bound",
        _compare_arguments,
        _run_compare,
    ),
    bench=Command(
        "FRT + mechanism on 10^5 points; UFL MIP on highs vs the tree DP as n grows",
        _bench_arguments,
        _run_bench,
    ),
    release=Command(
        "publish private facility locations for clients at points (points CSV with a count column)",
        _release_arguments,
        _run_release,
    ),
)
