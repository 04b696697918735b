"""What the submodular family shows the ``dpmodels`` command: ``compare``, ``bench`` and ``release submodular``.

The library functions live in ``compare.py``, ``bench.py`` and ``release.py``; this module declares
the commands (standard options from :mod:`dpmodels.core.options`, the runner
:mod:`dpmodels.core.runner`, and :mod:`dpmodels.core.release` for the release) and returns their tables.  The
comparison's default (the greedy trap of spec 8.4, 3 budgets x 5 seeds) finishes in seconds;
larger instances are behind ``--instance submodular/coverage --set n=...``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from dpmodels.core import options as std
from dpmodels.core.commands import Command, Family, positive_float, positive_int
from dpmodels.core.errors import DataValidationError
from dpmodels.core.options import LazyHelp, Names, one_of
from dpmodels.core.runner import Result, experiment
from dpmodels.core.settings import parse_settings

__all__ = ["FAMILY"]


# ---------------------------------------------------------------------- compare
def _compare_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--T", type=positive_int, default=None, help="continuous-greedy steps (default: the rank r)")


COMPARE_OPTIONS = (
    std.instance("submodular/trap", "a submodular/... instance or generator name (`dpmodels instances`)"),
    std.settings("generator option, e.g. --set n=200 --set seed=3 (repeatable)"),
    std.epsilon([0.1, 1.0, 10.0], "the paper's input epsilons"),
    std.runs(5, "runs per randomized method and epsilon (seeds 0, 1, ...)"),
)


def _run_compare(args) -> Result:
    import dpmodels.instances as instances

    from .compare import compare_submodular, plot_curve, privacy_utility
    from .data import KSubmodularInstance, SubmodularInstance

    inst = instances.load(args.instance, **parse_settings(args.set))
    if not isinstance(inst, SubmodularInstance | KSubmodularInstance):
        raise DataValidationError("--instance", f"{args.instance!r} is not a submodular instance")
    table, opt = compare_submodular(inst, args.epsilon, args.runs, args.T, progress=args.progress)
    F, M = inst.function, inst.matroid
    head = (
        f"instance: {inst.name}  |E| = {F.n}  rank = {M.r}  matroid = {M.kind}  "
        f"Delta = {F.sensitivity}  OPT = {opt:.6g} (true data, diagnostic)"
    )
    curve = privacy_utility(table)
    return Result(table, [head, curve], figure=lambda path: plot_curve(curve, path))


# ---------------------------------------------------------------------- bench
def _bench_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--sizes", type=positive_int, nargs="+", default=[100, 1000, 10000], help="ground-set sizes |E|")
    p.add_argument("--rank", type=positive_int, default=10, help="rank r of the uniform matroid (and T = r)")
    p.add_argument("--samples", type=positive_int, default=4, help="m of the sampled-gradient run")
    p.add_argument("--sampled-max", type=positive_int, default=1000, help="largest |E| for the sampled-gradient run")
    p.add_argument(
        "--graphic",
        type=positive_int,
        nargs=2,
        default=[1000, 5000],
        metavar=("V", "E"),
        help="one greedy extension step on a random graphic matroid of V vertices and E edges",
    )


BENCH_OPTIONS = (
    std.epsilon(None, "also time private Alg. 1 and Mitrovic's greedy at these input epsilons (secure, exact)"),
)


def _run_bench(args) -> Result:
    from .bench import run_bench

    return run_bench(args.sizes, args.rank, args.samples, args.sampled_max, args.epsilon or (), args.graphic)


# ---------------------------------------------------------------------- release
#: The input files of ``release submodular``, by option.
RELEASE_INPUTS = ("--coverage", "--elements", "--partition", "--weights")


#: The private algorithms ``release submodular --algorithm`` takes.
SET_FUNCTION_ALGORITHMS = Names("dpmodels.submodular.release", "SET_FUNCTION_ALGORITHMS")


def _release_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--coverage", required=True, help="element,user CSV: one row per element a user covers (private)")
    ground = p.add_mutually_exclusive_group(required=True)
    ground.add_argument("--elements", help="public ground set: a CSV with an element column (uniform matroid, --rank)")
    ground.add_argument("--partition", help="public ground set and parts: an element,part CSV (with --capacity)")
    p.add_argument("--rank", type=positive_int, help="with --elements: select at most this many elements")
    p.add_argument("--capacity", type=positive_int, help="with --partition: select at most this many per part")
    p.add_argument("--weights", help="user,weight CSV, one row per user (default: every user weighs 1)")
    p.add_argument(
        "--max-weight",
        type=positive_float,
        help="declared public bound on any user's weight, the sensitivity Delta (needed with --weights)",
    )
    p.add_argument(
        "--users",
        type=positive_int,
        help="declared public number of users (users covering no element may be left out of the files); "
        "required: it sizes the private algorithms, so only an experiment (--not-private) may count the users "
        "named in the files instead",
    )
    p.add_argument(
        "--algorithm",
        default="mitrovic",
        type=one_of(SET_FUNCTION_ALGORITHMS, "algorithm"),
        help=LazyHelp(
            lambda: (
                "private algorithm, one of "
                + ", ".join(SET_FUNCTION_ALGORITHMS())
                + ": Mitrovic's greedy, or continuous greedy (Alg. 1, Alg. 2) with swap rounding"
            )
        ),
    )
    p.add_argument("--T", type=positive_int, help="continuous-greedy steps of alg1/alg2 (default: the rank r)")
    std.add_release_options(p, {"--out": "where to write the selected elements CSV (element,step or element,x)"})


def _run_release(args) -> int:
    from dpmodels.core.release import ReleaseOutcome, ReleaseSpec, run_release
    from dpmodels.instances.submodular import from_csv

    from .release import input_epsilon, release, release_facts, selection_frame

    _check_release_flags(args)

    def load():
        return from_csv(
            args.coverage,
            elements=args.elements,
            partition=args.partition,
            rank=args.rank,
            capacity=args.capacity,
            weights=args.weights,
            max_weight=args.max_weight,
            n_users=args.users,
        )

    def run(session, inst, epsilon) -> ReleaseOutcome:
        F, M = inst.function, inst.matroid
        options = {} if args.T is None else {"T": args.T}
        eps = input_epsilon(args.algorithm, F, M, epsilon, **options)
        label = f"submodular {args.algorithm} (input epsilon {eps}, rank {M.r})"
        released = release(session, args.algorithm, M, eps, label=label, **options)
        frame = selection_frame(released, inst.labels)
        summary = [
            f"selected {len(frame)} of {F.n} elements ({M.kind} matroid, rank {M.r}) with "
            f"{args.algorithm} at input epsilon {float(eps):.6g}, Delta = {F.sensitivity:g}"
        ]
        if args.users is None:
            summary.append("NOT private: the number of users was counted in the files (declare it with --users)")
        facts = release_facts(M, args.algorithm, n_users=args.users, max_weight=args.max_weight, T=args.T)
        details = {"input epsilon": str(eps), "rank": M.r, "matroid": M.kind}
        sampler = "exact exponential mechanism (rejection with exact Bernoulli(exp(-gamma)) coins)"
        return ReleaseOutcome({"--out": frame}, facts, summary, details=details, sampler=sampler)

    spec = ReleaseSpec(
        "submodular",
        inputs={flag: _given(args, flag) for flag in RELEASE_INPUTS},
        outputs={"--out": args.out},
        load=load,
        run=run,
        name=Path(args.coverage).stem,
        session_data=lambda inst: inst.function,
    )
    return run_release(args, spec)


def _given(args, flag: str):
    return getattr(args, flag.lstrip("-").replace("-", "_"))


def _check_release_flags(args) -> None:
    """Flags that belong together, refused before any file is read."""
    if args.elements and args.rank is None:
        raise DataValidationError("--rank", "is required with --elements (the uniform matroid's rank)")
    if args.elements and args.capacity is not None:
        raise DataValidationError("--capacity", "goes with --partition, not --elements")
    if args.partition and args.capacity is None:
        raise DataValidationError("--capacity", "is required with --partition (the elements allowed per part)")
    if args.partition and args.rank is not None:
        raise DataValidationError("--rank", "goes with --elements; a partition matroid takes --capacity")
    if (args.weights is None) != (args.max_weight is None):
        raise DataValidationError("--max-weight", "and --weights go together (the declared bound of the weights)")
    if args.T is not None and args.algorithm not in ("alg1", "alg2"):
        raise DataValidationError("--T", f"applies to alg1 and alg2, not {args.algorithm}")
    if args.users is None and not args.not_private:
        raise DataValidationError(
            "--users",
            "is required: the declared public number of users (it sizes the private algorithms, so it must not be "
            "counted in the private files; only an experiment declared --not-private may leave it out)",
        )


FAMILY = Family(
    name="submodular",
    package="dpmodels.submodular",
    summary="private submodular maximization: greedy, continuous greedy, Alg. 1-4, exact samplers",
    compare=experiment(
        "greedy vs continuous greedy vs private algorithms, ratio to the MILP OPT, privacy-utility",
        _run_compare,
        options=COMPARE_OPTIONS,
        arguments=_compare_arguments,
        table="all runs, one row per (method, epsilon, seed)",
        plot="the privacy-utility curve",
    ),
    bench=experiment(
        "continuous greedy vs greedy as |E| grows (sparse coverage), evaluations, time and memory",
        _run_bench,
        options=BENCH_OPTIONS,
        arguments=_bench_arguments,
        table="the measurements, one row per (|E|, method)",
        json_help="the measurements",
    ),
    release=Command(
        "select elements privately: coverage CSV (element,user) on a declared matroid",
        _release_arguments,
        _run_release,
    ),
)
