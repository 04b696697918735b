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

__all__ = ["add_common_arguments", "check_output_path", "ledger_path", "open_session", "finish"]


def add_common_arguments(parser: argparse.ArgumentParser) -> None:
    """The options every release takes: budget, output, ledger, and the seed policy."""
    parser.add_argument("--epsilon", required=True, help="total privacy budget of this release (e.g. 1 or 0.5)")
    parser.add_argument("--out", required=True, help="where to write the release")
    parser.add_argument("--ledger", help="where to write the JSON privacy ledger (default: beside --out)")
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
    """Validate the paths and the budget, then open the session (no noise drawn yet)."""
    out = check_output_path(args.out, "--out")
    ledger = ledger_path(out, args.ledger)
    if ledger.resolve() == out.resolve():
        raise DataValidationError("--ledger", "must differ from --out")
    session = PrivacySession(data, args.epsilon, seed=args.seed, not_private=args.not_private, name=name)
    return session, out, ledger


def finish(session: PrivacySession, written: list[Path], ledger: Path) -> int:
    """Write the ledger and say what was written; exit code 0."""
    session.write_ledger(ledger)
    for path in written:
        print(f"wrote {path}")
    print(f"wrote {ledger} (epsilon spent {session.spent_epsilon} of {session.epsilon}; {session.randomness})")
    return 0
