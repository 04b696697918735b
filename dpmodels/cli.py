"""The ``dpmodels`` command.

dpmodels instances                      list built-in instances and generators
dpmodels formulations                   every registered model shape, its builder and problem class
dpmodels solvers [NAME]                 every solver: what it solves, exact or not, its options
dpmodels compare <family> [options]     compare a family's mechanisms and formulations (``dpmodels compare --help``)
dpmodels bench <family>|noise|startup|cluster [options]
                                        speed and memory bars, ratios measured in one run
dpmodels release <family> [options]
                                        a private release of your data files, with its ledger and manifest
dpmodels measure <family> [options]     the release's noisy measurements alone, as a measurement file
dpmodels postprocess <family> [options] post-process a measurement file (drawn here or by another tool)
dpmodels budget init|show [options]      a budget database: declare a dataset's budget, see what was spent

Each family declares its commands once, in ``dpmodels/<family>/commands.py`` (a
:class:`~dpmodels.core.commands.Family` named ``FAMILY``); this module loops over the families
found by convention (:func:`dpmodels.core.families.family_names`), with no list of its own.  Every
``compare <family>`` finishes in under a minute with no arguments; the paper-scale runs are
behind flags (see each ``--help``).  Exit codes: 0 done, 1 the run failed, 2 bad arguments (or a budget
that does not fit), 130 interrupted.
"""

from __future__ import annotations

import argparse
import sys

from dpmodels.cluster_bench import COMMAND as CLUSTER_BENCH
from dpmodels.core.bench_command import COMMAND as NOISE_BENCH
from dpmodels.core.budget_commands import INIT as BUDGET_INIT
from dpmodels.core.budget_commands import SHOW as BUDGET_SHOW
from dpmodels.core.commands import Command, Family, HelpFormatter
from dpmodels.core.errors import DPModelsError
from dpmodels.core.families import family_module, family_names
from dpmodels.core.runner import run_command
from dpmodels.core.startup import COMMAND as STARTUP_BENCH


def main(argv: list[str] | None = None) -> int:
    try:
        parser = _parser()
        args = parser.parse_args(argv)
    except SystemExit as done:  # argparse: --help / --version (0) or bad arguments (2)
        return int(done.code or 0)
    except KeyboardInterrupt:  # Ctrl-C before the run started
        print("dpmodels: interrupted", file=sys.stderr)
        return 130
    args._argv = list(sys.argv[1:] if argv is None else argv)  # recorded with releases and budget charges
    if not getattr(args, "command", None):
        parser.print_help()
        return 2
    return run_command(args)  # exit codes, one stderr line per failure, Ctrl-C -> 130 with no partial file


def _parser() -> argparse.ArgumentParser:
    from dpmodels import __version__

    parser = argparse.ArgumentParser(prog="dpmodels", description="Optimization models for differential privacy.")
    parser.add_argument("--version", action="version", version=f"dpmodels {__version__}")
    sub = parser.add_subparsers(dest="command")

    inst = sub.add_parser("instances", help="list built-in instances and generators")
    inst.set_defaults(run=_run_instances)
    forms = sub.add_parser("formulations", help="every registered model shape, its builder and problem class")
    forms.set_defaults(run=_run_formulations)
    solv = sub.add_parser("solvers", help="every solver: what it solves, exact or not, its options")
    solv.add_argument("name", nargs="?", help="one solver: its declared options in full")
    solv.set_defaults(run=_run_solvers)

    cmp_ = sub.add_parser("compare", help="compare mechanisms / formulations of a family")
    cmp_sub = cmp_.add_subparsers(dest="family", required=True)
    bench = sub.add_parser("bench", help="measured speed and memory bars")
    bench_sub = bench.add_subparsers(dest="family", required=True)
    rel = sub.add_parser("release", help="private release of your data (secure exact noise, budget, ledger, manifest)")
    rel_sub = rel.add_subparsers(dest="family", required=True)
    meas = sub.add_parser("measure", help="a release's noisy measurements alone, as a file (budget, ledger, manifest)")
    meas_sub = meas.add_subparsers(dest="family", required=True)
    post = sub.add_parser("postprocess", help="post-process a noisy-measurement file, drawn here or by another tool")
    post_sub = post.add_subparsers(dest="family", required=True)
    budget = sub.add_parser("budget", help="the budget database: declare a dataset's budget, show what was spent")
    budget_sub = budget.add_subparsers(dest="action", required=True)
    _add_command(budget_sub, "init", BUDGET_INIT)
    _add_command(budget_sub, "show", BUDGET_SHOW)
    for family in families():
        _add_family(
            family,
            {"compare": cmp_sub, "bench": bench_sub, "release": rel_sub, "measure": meas_sub, "postprocess": post_sub},
        )
    _add_command(bench_sub, "noise", NOISE_BENCH)
    _add_command(bench_sub, "startup", STARTUP_BENCH)
    _add_command(bench_sub, "cluster", CLUSTER_BENCH)
    return parser


def families() -> tuple[Family, ...]:
    """What the command line shows of each family: the ``FAMILY`` its ``commands.py`` declares,
    for every family found by :func:`~dpmodels.core.families.family_names` (no list here)."""
    return tuple(family_module(name, "commands").FAMILY for name in family_names())


def __getattr__(name: str):
    if name == "FAMILIES":  # the declared families, read on first use
        return families()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _add_family(family, verbs: dict) -> None:
    """``compare``, ``bench`` (and ``release``, ``measure``, ``postprocess``) subcommands of one family."""
    for verb, sub in verbs.items():
        command = getattr(family, verb)
        if command is not None:
            _add_command(sub, family.name, command, family.aliases, family.summary)


def _add_command(sub, name: str, command: Command, aliases=(), family: str = "") -> None:
    description = f"{command.help}. Family: {family}." if family else command.help
    parser = sub.add_parser(
        name, help=command.help, description=description, aliases=list(aliases), formatter_class=HelpFormatter
    )
    command.add_arguments(parser)
    parser.set_defaults(run=command.run)


def _run_formulations(args) -> int:
    from dpmodels.core.formulations import formulations

    for f in formulations():
        relaxable = f" ({f.problem_class(True)} relaxed)" if f.integer else ""
        print(f"{f.name:28s} {f.problem_class():5s}{relaxable:15s} {f.builder.__name__}: {f.doc}")
    return 0


def _run_solvers(args) -> int:
    from dpmodels.core.capabilities import BACKENDS, capabilities

    from .solvers import load_plugins

    known = [*BACKENDS, *sorted(set(load_plugins()) - set(BACKENDS))]
    names = [args.name] if args.name else known
    for name in names:
        caps = capabilities(name)
        if caps is None:
            raise DPModelsError(f"no solver {name!r} declares capabilities; known: {', '.join(known)}")
        solves = ", ".join(sorted(caps.problem_classes or caps.formulations))
        print(f"{name:26s} {'exact' if caps.exact else 'not exact':9s} solves {solves}")
        print(f"{'':26s} {caps.guarantee}; time limit {'yes' if caps.time_limit else 'refused'}")
        if args.name:
            print(f"{'':26s} options: {'none' if not caps.options else ''}")
            for option in caps.options.values():
                print(f"{'':28s}{option.name} (default {option.default!r}): {option.doc}")
    return 0


def _run_instances(args) -> int:
    from dpmodels import instances

    for name, text in instances.available().items():
        print(f"{name:28s} {text}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
