"""What the submodular family shows the ``dpmodels`` command: ``compare`` and ``bench submodular``.

The library functions live in ``compare.py`` and ``bench.py``; this module only declares
their arguments and calls them (the shared tail is :mod:`dpmodels.core.commands`).  The
comparison's default (the greedy trap of spec 8.4, 3 budgets x 5 seeds) finishes in seconds;
larger instances are behind ``--instance submodular/coverage --set n=...``.
"""

from __future__ import annotations

import argparse

from dpmodels.core.commands import (
    Command,
    Family,
    add_outputs,
    add_progress,
    positive_float,
    positive_int,
    report_written,
)
from dpmodels.core.errors import DataValidationError
from dpmodels.core.settings import parse_settings

__all__ = ["FAMILY"]


# ---------------------------------------------------------------------- compare
def _compare_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--instance",
        default="submodular/trap",
        help="a submodular/... instance or generator name (`dpmodels instances`)",
    )
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="generator option, e.g. --set n=200 --set seed=3 (repeatable)",
    )
    p.add_argument(
        "--epsilon", type=positive_float, nargs="+", default=[0.1, 1.0, 10.0], help="the paper's input epsilons"
    )
    p.add_argument("--seeds", type=positive_int, default=5, help="runs per randomized method and epsilon")
    p.add_argument("--T", type=positive_int, default=None, help="continuous-greedy steps (default: the rank r)")
    add_outputs(p, csv="all runs, one row per (method, epsilon, seed)", plot="the privacy-utility curve")
    add_progress(p)


def _run_compare(args) -> int:
    import dpmodels.instances as instances

    from .compare import compare_submodular, plot_curve, privacy_utility
    from .data import KSubmodularInstance, SubmodularInstance

    inst = instances.load(args.instance, **parse_settings(args.set))
    if not isinstance(inst, SubmodularInstance | KSubmodularInstance):
        raise DataValidationError("--instance", f"{args.instance!r} is not a submodular instance")
    table, opt = compare_submodular(inst, args.epsilon, args.seeds, args.T, progress=not args.no_progress)
    F, M = inst.function, inst.matroid
    print(
        f"instance: {inst.name}  |E| = {F.n}  rank = {M.r}  matroid = {M.kind}  "
        f"Delta = {F.sensitivity}  OPT = {opt:.6g} (true data, diagnostic)"
    )
    curve = privacy_utility(table)
    print(curve.to_string(index=False))
    if args.csv:
        table.to_csv(args.csv, index=False)
        report_written(args.csv)
    if args.plot:
        plot_curve(curve, args.plot)
        report_written(args.plot)
    return 0


# ---------------------------------------------------------------------- bench
def _bench_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--sizes", type=positive_int, nargs="+", default=[100, 1000, 10000], help="ground-set sizes |E|")
    p.add_argument("--rank", type=positive_int, default=10, help="rank r of the uniform matroid (and T = r)")
    p.add_argument("--samples", type=positive_int, default=4, help="m of the sampled-gradient run")
    p.add_argument("--sampled-max", type=positive_int, default=1000, help="largest |E| for the sampled-gradient run")
    p.add_argument(
        "--private",
        type=positive_float,
        nargs="*",
        default=[],
        metavar="EPS",
        help="also time private Alg. 1 and Mitrovic's greedy at these input epsilons (secure, exact)",
    )
    add_outputs(p, json="the measurements")


def _run_bench(args) -> int:
    from .bench import run_bench

    run_bench(args.sizes, args.rank, args.samples, args.sampled_max, args.json, args.private)
    return 0


FAMILY = Family(
    name="submodular",
    package="dpmodels.submodular",
    summary="private submodular maximization: greedy, continuous greedy, Alg. 1-4, exact samplers",
    compare=Command(
        "greedy vs continuous greedy vs private algorithms, ratio to the MILP OPT, privacy-utility",
        _compare_arguments,
        _run_compare,
    ),
    bench=Command(
        "continuous greedy vs greedy as |E| grows (sparse coverage), evaluations, time and memory",
        _bench_arguments,
        _run_bench,
    ),
)
