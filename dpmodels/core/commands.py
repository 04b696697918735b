"""The shape every family shows the ``dpmodels`` command, and the tail every command shares.

A family declares a :class:`Family`: its ``compare`` and ``bench`` commands (and ``release``
when it has one), each a :class:`Command` with its arguments and its run function.  The
command line (``dpmodels/cli.py``) loops over the families; nothing else wires them.

The shared tail, written once here: typed argument checks (``--runs 0``, ``--gap -1`` and
``N=6.5`` fail at parse time, exit code 2), output files checked before any work (folder
exists, suffix right: a plot is a ``.png``, ``.pdf`` or ``.svg``) and the ``--executor`` type.
The standard options (``--instance``, ``--epsilon``, ``--runs``..., the release options and a
plugin's declared options) are declared in :mod:`dpmodels.core.options`, and the experiments run
through :mod:`dpmodels.core.runner` (outputs, logging, interrupts, exit codes).
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from .clusters import check_scheduler_address
from .errors import DataValidationError

__all__ = [
    "Command",
    "Family",
    "HelpFormatter",
    "OUTPUT_SUFFIXES",
    "positive_int",
    "nonnegative_int",
    "positive_float",
    "nonnegative_float",
    "add_outputs",
    "check_outputs",
    "add_progress",
    "executor_name",
]


@dataclass(frozen=True)
class Command:
    """One subcommand: its help line, how it adds its arguments, and how it runs (exit code)."""

    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]


@dataclass(frozen=True)
class Family:
    """What a family shows the command line: ``dpmodels compare|bench|release|measure|postprocess <name>``.

    ``measure`` and ``postprocess`` are a release in two steps with a measurement file between
    them (:mod:`dpmodels.core.measurements`); a family without them leaves them None.
    """

    name: str
    package: str
    summary: str
    compare: Command
    bench: Command
    release: Command | None = None
    measure: Command | None = None
    postprocess: Command | None = None
    aliases: tuple[str, ...] = field(default_factory=tuple)


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Shows an option's default when it has one to show: not for flags, empty lists, ``None``,
    or a help that already says its default."""

    def _get_help_string(self, action):
        text, default = action.help or "", action.default
        empty = default is None or default is False or (isinstance(default, list | tuple) and not default)
        if empty or default is argparse.SUPPRESS or "default" in text:
            return text
        return super()._get_help_string(action)


# ---------------------------------------------------------------------- typed arguments
def _number(cast, test, words):
    def parse(text: str):
        try:
            value = cast(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {words}, got {text!r}") from None
        if (isinstance(value, float) and not math.isfinite(value)) or not test(value):
            raise argparse.ArgumentTypeError(f"expected {words}, got {text!r}")
        return value

    parse.__name__ = words
    return parse


positive_int = _number(int, lambda v: v > 0, "an integer > 0")
nonnegative_int = _number(int, lambda v: v >= 0, "an integer >= 0")
positive_float = _number(float, lambda v: v > 0, "a finite number > 0")
nonnegative_float = _number(float, lambda v: v >= 0, "a finite number >= 0")


# ---------------------------------------------------------------------- outputs
#: Suffixes each output option accepts (a plot's format follows its suffix: PNG, PDF or SVG).
OUTPUT_SUFFIXES = {"csv": (".csv",), "parquet": (".parquet",), "plot": (".png", ".pdf", ".svg"), "json": (".json",)}


def add_outputs(parser: argparse.ArgumentParser, **helps: str) -> None:
    """Add output options, e.g. ``add_outputs(p, csv="one row per run", plot="error vs eps")``.

    Each is checked by :func:`check_outputs` before the command does any work."""
    for name, text in helps.items():
        if name not in OUTPUT_SUFFIXES:
            raise ValueError(f"unknown output kind {name!r}; known: {sorted(OUTPUT_SUFFIXES)}")
        metavar = "FILE" + "|".join(OUTPUT_SUFFIXES[name])
        parser.add_argument(f"--{name}", metavar=metavar, help=f"write {text}")
    known = parser.get_default("_outputs") or ()
    parser.set_defaults(_outputs=(*known, *(name for name in helps if name not in known)))


def check_outputs(args: argparse.Namespace) -> dict[str, Path]:
    """Every output option given: its folder exists, it is not a folder, its suffix is right,
    and no two outputs are the same file.  Raises naming the option; returns the paths."""
    paths: dict[str, Path] = {}
    for name in getattr(args, "_outputs", ()):
        given = getattr(args, name, None)
        if not given:
            continue
        flag, path = f"--{name}", Path(given)
        if path.is_dir():
            raise DataValidationError(flag, f"{path} is a folder; give a file name")
        if not path.parent.is_dir():
            raise DataValidationError(flag, f"the folder {path.parent} does not exist")
        if path.suffix.lower() not in OUTPUT_SUFFIXES[name]:
            raise DataValidationError(flag, f"{path} must end in {', '.join(OUTPUT_SUFFIXES[name])}")
        for other, seen in paths.items():
            if seen.resolve() == path.resolve():
                raise DataValidationError(flag, f"is the same file as --{other}")
        paths[name] = path
    return paths


# ---------------------------------------------------------------------- executor, progress
def executor_name(text: str):
    """``--executor``'s type: serial, process, dask, a number of processes (>= 1), or a Dask
    scheduler address ``tcp://host:port`` / ``tls://host:port`` (its form checked here; whether the
    scheduler answers is checked when the command opens the executor, before any work)."""
    if text.isdigit():
        if int(text) < 1:
            raise argparse.ArgumentTypeError("a number of processes must be >= 1")
        return int(text)
    if "://" in text:
        try:
            return check_scheduler_address(text)
        except DataValidationError as err:
            raise argparse.ArgumentTypeError(err.problem) from None
    if text not in ("serial", "process", "dask"):
        raise argparse.ArgumentTypeError(
            f"expected serial, process, dask, a number or a scheduler address tcp://host:port, got {text!r}"
        )
    return text


def add_progress(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")
