"""The shared tail of every ``dpmodels release <family>`` command.

A release reads a user's files, opens a :class:`~dpmodels.core.session.PrivacySession` on
them, runs one family's mechanism, and writes the output with the session's JSON ledger
beside it.  Everything that can be checked is checked before any noise is drawn: the
output paths (folder exists, not a directory), the budget, the seed policy.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from .errors import DataValidationError
from .session import PrivacySession

__all__ = [
    "add_common_arguments",
    "check_output_path",
    "ledger_path",
    "check_release_paths",
    "refuse_overwriting_inputs",
    "open_session",
    "open_release",
    "finish",
]

#: The single output of a release that writes one file.
DEFAULT_OUTPUTS = {"--out": "where to write the release"}


def add_common_arguments(
    parser: argparse.ArgumentParser, outputs: dict[str, str] | None = None, *, epsilon_help: str | None = None
) -> None:
    """The options every release takes: budget, output files, ledger, and the seed policy.

    ``outputs`` maps each required output option to its help (default: one ``--out``); the
    ledger goes beside the first.  ``epsilon_help`` replaces the help of ``--epsilon`` for a
    release whose epsilon is not a session budget (metric DP: epsilon per unit of distance).
    """
    outputs = outputs or DEFAULT_OUTPUTS
    parser.add_argument(
        "--epsilon", required=True, help=epsilon_help or "total privacy budget of this release (e.g. 1 or 0.5)"
    )
    for flag, text in outputs.items():
        parser.add_argument(flag, required=True, help=text)
    first = next(iter(outputs))
    parser.add_argument("--ledger", help=f"where to write the JSON privacy ledger (default: beside {first})")
    parser.add_argument(
        "--seed", type=int, help="reproducible noise for an experiment: refused unless --not-private is given"
    )
    parser.add_argument(
        "--not-private", action="store_true", help="declare the output NOT private (needed with --seed)"
    )


def check_output_path(path, field: str) -> Path:
    """``path`` as a Path whose folder exists and which is not a directory; raises naming ``field``."""
    out = Path(path)
    if out.is_dir():
        raise DataValidationError(field, f"{out} is a directory; give a file name")
    if not out.parent.is_dir():
        raise DataValidationError(field, f"the folder {out.parent} does not exist")
    return out


def ledger_path(out: Path, given=None) -> Path:
    """The ledger's path: ``given``, or ``<out stem>.ledger.json`` beside the output."""
    if given:
        return check_output_path(given, "--ledger")
    return out.with_name(out.stem + ".ledger.json")


def open_session(args, data, name: str) -> tuple[PrivacySession, Path, Path]:
    """Validate ``--out``, the ledger and the budget, then open the session (no noise drawn yet)."""
    session, outs, ledger = open_release(args, data, name, ["--out"])
    return session, outs["--out"], ledger


def check_release_paths(args, flags) -> tuple[dict[str, Path], Path]:
    """The output options ``flags`` and the ledger as paths: folders exist, none a directory, all
    distinct.  Returns the paths by option and the ledger's path."""
    outs = {flag: check_output_path(getattr(args, flag.lstrip("-").replace("-", "_")), flag) for flag in flags}
    ledger = ledger_path(next(iter(outs.values())), args.ledger)
    seen: dict[Path, str] = {}
    for flag, path in [*outs.items(), ("--ledger", ledger)]:
        other = seen.setdefault(path.resolve(), flag)
        if other != flag:
            raise DataValidationError(flag, f"must differ from {other} ({path})")
    return outs, ledger


def refuse_overwriting_inputs(outputs: dict[str, Path], inputs: dict[str, object]) -> None:
    """No output (option -> path) may replace an input file (option -> path or None)."""
    sources = {Path(path).resolve(): flag for flag, path in inputs.items() if path}
    for flag, path in outputs.items():
        source = sources.get(Path(path).resolve())
        if source:
            raise DataValidationError(flag, f"{path} would overwrite the input {source}")


def open_release(args, data, name: str, flags) -> tuple[PrivacySession, dict[str, Path], Path]:
    """Validate the output options ``flags`` (folders exist, all distinct), the ledger and the
    budget, then open the session (no noise drawn yet).  Returns the paths by option."""
    outs, ledger = check_release_paths(args, flags)
    session = PrivacySession(data, args.epsilon, seed=args.seed, not_private=args.not_private, name=name)
    return session, outs, ledger


def finish(session: PrivacySession, written: list[Path], ledger: Path) -> int:
    """Write the ledger and say what was written; exit code 0."""
    session.write_ledger(ledger)
    for path in written:
        print(f"wrote {path}")
    print(f"wrote {ledger} (epsilon spent {session.spent_epsilon} of {session.epsilon}; {session.randomness})")
    return 0
