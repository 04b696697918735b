"""The standard options of the experiment commands (``compare`` and ``bench``), each declared once.

A family's command lists the standard options it takes, each with its own default and, where
the words differ, its own help; the flag, its type, its check and the attribute it sets are
written here only:

===================  =============================================  =====================
option               what                                           attribute
===================  =============================================  =====================
``--instance``       an instance or generator name                  ``args.instance``
``--set KEY=VALUE``  an instance option (repeatable)                ``args.set`` (list)
``--epsilon``        one or several privacy budgets                 ``args.epsilon`` (list)
``--runs``           the run count (never ``--seeds``/``--repeat``)  ``args.runs``
``--seed``           seed of an experiment's randomness             ``args.seed``
``--executor``       where independent runs run                     ``args.executor``
``--time-limit``     seconds per solve (or per run)                 ``args.time_limit``
``--noise``          the noise drawn (a family drawing a zCDP one)  ``args.noise``
``--rho``            zCDP budgets, with a zCDP ``--noise``          ``args.rho`` (list)
===================  =============================================  =====================

Every experiment also takes the outputs (``--csv``, ``--parquet``, ``--json``, and ``--plot``
when it draws a figure), ``-q``/``--quiet``, ``-v``/``--verbose`` and ``--no-progress``; the
runner (:mod:`dpmodels.core.runner`) adds those.  The release commands' options (an exact
budget, output files, ledger, manifest, budget database, a seed only for an experiment declared
not private) are declared here too, once (:func:`add_release_options`), and so are the options
a solver plugin declares (:func:`solver_option`).

This module imports the standard library only: a family's ``commands.py`` reads it at import.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass, field

from .commands import executor_name, nonnegative_int, positive_float, positive_int
from .names import LazyHelp, Names, one_of  # re-exported: the families' commands import them from here

__all__ = [
    "Option",
    "add_verbosity",
    "STANDARD_FLAGS",
    "instance",
    "settings",
    "epsilon",
    "runs",
    "seed",
    "executor",
    "time_limit",
    "noise",
    "rho",
    "Names",
    "one_of",
    "LazyHelp",
    "solver_option",
    "add_release_options",
]

#: Attribute set on every argparse action a standard option adds (the tests read it).
MARK = "dpmodels_standard"


@dataclass(frozen=True)
class Option:
    """A standard option as one command uses it: the flag and what ``add_argument`` gets.

    Parameters
    ----------
    name : str
        The standard option's name (``"epsilon"``, ``"runs"``...).
    flags : tuple of str
        Its flags, e.g. ``("--epsilon",)``.
    kwargs : dict
        ``add_argument``'s keywords: the standard type and the command's default and help.
    """

    name: str
    flags: tuple[str, ...]
    kwargs: dict = field(default_factory=dict)

    def add(self, parser: argparse.ArgumentParser) -> argparse.Action:
        """Add the option to ``parser``; the action is marked as standard."""
        action = parser.add_argument(*self.flags, **self.kwargs)
        setattr(action, MARK, self.name)
        return action


def instance(default: str | None, help: str = "instance or generator name (`dpmodels instances`)") -> Option:
    """``--instance NAME``: the instance or generator a command runs on.

    Parameters
    ----------
    default : str or None
        The command's built-in instance.
    help : str
        What the name may be for this command.
    """
    return Option("instance", ("--instance",), {"default": default, "metavar": "NAME", "help": help})


def settings(help: str = "instance option, e.g. --set N=20 (repeatable)") -> Option:
    """``--set KEY=VALUE``: an option of the instance or generator, repeatable (``args.set``).

    Parameters
    ----------
    help : str
        Examples of this command's keys.
    """
    return Option("set", ("--set",), {"action": "append", "default": [], "metavar": "KEY=VALUE", "help": help})


def epsilon(default: Sequence[float] | None, help: str = "privacy budgets") -> Option:
    """``--epsilon EPS [EPS ...]``: one or several budgets, each a finite number > 0 (``args.epsilon``).

    Parameters
    ----------
    default : sequence of float or None
        The command's budgets (``None``: not given).
    help : str
        What the budgets are for this command.
    """
    given = None if default is None else list(default)
    return Option(
        "epsilon",
        ("--epsilon",),
        {"type": positive_float, "nargs": "+", "default": given, "metavar": "EPS", "help": help},
    )


def runs(default: int | None, help: str = "runs per epsilon") -> Option:
    """``--runs N``: the run count, an integer > 0 (``args.runs``); the one name in every family.

    Parameters
    ----------
    default : int or None
        The command's count (``None`` when it depends on other options; say so in ``help``).
    help : str
        What one run is for this command.
    """
    return Option("runs", ("--runs",), {"type": positive_int, "default": default, "metavar": "N", "help": help})


def seed(default: int = 0, help: str = "seed of the experiment's randomness (experiments, not releases)") -> Option:
    """``--seed S``: an integer >= 0 (``args.seed``).

    Parameters
    ----------
    default : int
        The command's seed.
    help : str
        What the seed drives for this command.
    """
    return Option("seed", ("--seed",), {"type": nonnegative_int, "default": default, "metavar": "S", "help": help})


def executor(what: str = "independent runs", default: str = "serial") -> Option:
    """``--executor``: serial, process, dask, a number of processes or a Dask scheduler address (``args.executor``).

    Parameters
    ----------
    what : str
        What runs on the executor for this command.
    default : str
        The command's executor.
    """
    text = (
        f"where {what} run: serial, process, a number of processes, dask (the scheduler in "
        "DASK_SCHEDULER_ADDRESS, else a local cluster), or a Dask scheduler tcp://host:port or tls://host:port"
    )
    return Option("executor", ("--executor",), {"type": executor_name, "default": default, "help": text})


def time_limit(default: float | None, help: str = "seconds per solve") -> Option:
    """``--time-limit SECONDS``: a finite number > 0 (``args.time_limit``).

    Parameters
    ----------
    default : float or None
        The command's limit (``None``: none).
    help : str
        What the limit applies to for this command.
    """
    kwargs = {"type": positive_float, "default": default, "metavar": "SECONDS", "help": help}
    return Option("time_limit", ("--time-limit",), kwargs)


def noise(noises: Sequence[str], help: str = "the noise drawn") -> Option:
    """``--noise NAME``: the noise an experiment draws, one of ``noises`` (``args.noise``), the first the default.

    A noise charged in zCDP rho takes its budgets from :func:`rho`, the others from :func:`epsilon`;
    :func:`dpmodels.core.release.check_budget_unit` refuses a mismatch, as a release does.

    Parameters
    ----------
    noises : sequence of str
        The noises the family draws, its default first.
    help : str
        What the noise applies to for this command.
    """
    names = list(noises)
    kwargs = {"choices": names, "default": names[0], "help": f"{help} (default {names[0]})"}
    return Option("noise", ("--noise",), kwargs)


def rho(default: Sequence[float] | None = None, help: str = "zCDP budgets (with a zCDP --noise)") -> Option:
    """``--rho RHO [RHO ...]``: one or several zCDP budgets, each a finite number > 0 (``args.rho``).

    Parameters
    ----------
    default : sequence of float or None
        The command's budgets (``None``: not given; a zCDP ``--noise`` then needs them).
    help : str
        What the budgets are for this command.
    """
    given = None if default is None else list(default)
    return Option(
        "rho", ("--rho",), {"type": positive_float, "nargs": "+", "default": given, "metavar": "RHO", "help": help}
    )


#: The standard options' flags (the runner's are added by :mod:`dpmodels.core.runner`).
STANDARD_FLAGS = (
    "--instance",
    "--set",
    "--epsilon",
    "--runs",
    "--seed",
    "--executor",
    "--time-limit",
    "--noise",
    "--rho",
)


# ---------------------------------------------------------------------- options a solver plugin declares
#: The string default argparse passes through the type when the option is not given: the plugin's default.
DECLARED = "declared"


def solver_option(solver: str, name: str, help_extra: str = "") -> Option:
    """``--<name>``: option ``name`` as plugin ``solver`` declares it (description, default, domain),
    so the command line offers exactly what the plugin declares.  The plugin is read when the
    option is parsed or its help shown, not when the parser is built.

    Parameters
    ----------
    solver : str
        The plugin's name, e.g. ``"mdp_benders"``.
    name : str
        One of its declared options, e.g. ``"gap"``.
    help_extra : str
        Words appended to the plugin's description.
    """

    def declared():
        from .capabilities import capabilities

        caps = capabilities(solver)
        if caps is None or name not in caps.options:
            raise ValueError(f"solver {solver!r} declares no option {name!r}")
        return caps.options[name]

    def parse(text: str):
        option = declared()
        if text == DECLARED:
            return option.default
        try:
            return option.parse(_scalar(text))
        except (TypeError, ValueError) as err:
            raise argparse.ArgumentTypeError(f"{option.doc}: {err}") from None

    parse.__name__ = name
    text = LazyHelp(lambda: f"{declared().doc} ({solver}'s option {name}, default {declared().default!r}){help_extra}")
    return Option(name, (f"--{name.replace('_', '-')}",), {"type": parse, "default": DECLARED, "help": text})


def _scalar(text: str):
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            continue
    return text


# ---------------------------------------------------------------------- the release commands' options
#: The single output of a release that writes one file.
RELEASE_OUTPUTS = {"--out": "where to write the release"}


def add_release_options(
    parser: argparse.ArgumentParser,
    outputs: dict[str, str] | None = None,
    *,
    epsilon_help: str | None = None,
    noises: Sequence[str] | None = None,
) -> None:
    """The options every release takes: budget, output files, ledger, manifest, budget database,
    ``--force`` and the seed policy; and, for a family that draws a zCDP noise, ``--noise``,
    ``--rho`` and ``--delta``.

    Parameters
    ----------
    parser
        The family's ``release`` parser.
    outputs
        Each required output option and its help (default: one ``--out``); the ledger and the
        manifest go beside the first.
    epsilon_help
        Replaces the help of ``--epsilon`` (metric DP: epsilon per unit of distance).
    noises
        The noises the family draws, the default first (``args.noise``); given, the budget is
        ``--epsilon`` or ``--rho`` (zCDP, for a noise charged in rho: the release runner refuses a
        mismatch), and ``--delta`` names the delta at which the manifest states the epsilon a
        ``--rho`` implies.  Families without it have no ``--noise``, ``--rho`` or ``--delta``.
    """
    outputs = outputs or RELEASE_OUTPUTS
    add_verbosity(parser)
    budget = parser.add_mutually_exclusive_group(required=True) if noises else parser
    budget.add_argument(
        "--epsilon",
        required=not noises,
        help=epsilon_help or "privacy budget of this release: a decimal (1, 0.5, 1e-3) or a ratio (1/3)",
    )
    if noises:
        budget.add_argument(
            "--rho", help="zCDP budget of this release (with a zCDP --noise): a decimal or a ratio (1/2)"
        )
        parser.add_argument(
            "--noise", choices=list(noises), default=noises[0], help=f"the noise drawn (default {noises[0]})"
        )
        parser.add_argument(
            "--delta",
            help="with --rho: a delta at which the manifest also states the epsilon the rho implies "
            "(Canonne-Kamath-Steinke, rounded up)",
        )
    for flag, text in outputs.items():
        parser.add_argument(flag, required=True, help=text)
    first = next(iter(outputs))
    parser.add_argument("--ledger", help=f"where to write the JSON privacy ledger (default: beside {first})")
    parser.add_argument(
        "--manifest", help=f"where to write the JSON release manifest (default: beside {first}, .manifest.json)"
    )
    parser.add_argument(
        "--budget-db",
        metavar="FILE",
        help="budget database to charge (dpmodels budget init); with --dataset. Without it the budget is --epsilon "
        "for this release alone",
    )
    parser.add_argument("--dataset", help="the declared dataset name whose budget --budget-db charges")
    parser.add_argument("--force", action="store_true", help="replace existing output files (never an input)")
    parser.add_argument(
        "--seed", type=int, help="reproducible noise for an experiment: refused unless --not-private is given"
    )
    parser.add_argument(
        "--not-private", action="store_true", help="declare the output NOT private (needed with --seed)"
    )


def add_verbosity(parser: argparse.ArgumentParser) -> None:
    """``-q``/``--quiet`` (warnings only, no progress bars) and ``-v``/``--verbose`` (debug too).

    Parameters
    ----------
    parser : argparse.ArgumentParser
        A command's parser.
    """
    group = parser.add_mutually_exclusive_group()
    group.add_argument("-q", "--quiet", action="store_true", help="print only the results (warnings still on stderr)")
    group.add_argument("-v", "--verbose", action="store_true", help="also log debug messages on stderr")
