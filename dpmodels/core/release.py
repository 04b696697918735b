"""The shared tail of every ``dpmodels release <family>`` command: :func:`run_release`.

A family declares its release as a :class:`ReleaseSpec`: its input and output files, how to load
the data (with the *declared* public facts), and how to run its mechanism through a
:class:`~dpmodels.core.session.PrivacySession` (returning a :class:`ReleaseOutcome`: the tables,
its :class:`~dpmodels.core.facts.ReleaseFacts` and a summary).  :func:`run_release` does the rest,
in this order, so that nothing is drawn before everything that can be checked was checked:

1. the outputs, ledger and manifest paths (:func:`~dpmodels.core.staging.check_targets`: no
   existing file without ``--force``, never an input, no device), the seed policy and the budget's
   syntax;
2. the family's own up-front checks (e.g. the memory a declared ``N`` needs), then the data;
3. the SHA-256 of every input;
4. the budget: a fresh one of ``--epsilon``, or the declared dataset's in ``--budget-db``, charged
   before any noise is drawn (a request beyond what remains is refused, exit 2, nothing written);
5. the mechanism, then every output, the JSON ledger and the manifest written aside and moved into
   place together (:class:`~dpmodels.core.staging.StagedOutputs`, the manifest last), and the
   charge marked released in the database with the outputs' hashes.
"""

from __future__ import annotations

import json
import logging
import shlex
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

import pandas as pd

from .budget import BudgetDatabase
from .errors import DataValidationError
from .facts import ReleaseFacts
from .manifest import build_manifest, options_of
from .noise import as_epsilon, exact
from .options import add_release_options as add_common_arguments
from .randomness import release_rng
from .runner import LOGGER, configure_logging, verbosity
from .session import PrivacySession
from .staging import StagedOutputs, check_targets, file_record, interruptible

__all__ = [
    "ReleaseSpec",
    "ReleaseOutcome",
    "run_release",
    "add_common_arguments",
    "ledger_path",
    "manifest_path",
    "requested_amount",
    "check_budget_unit",
]

log = logging.getLogger(LOGGER)


def manifest_path(out: Path, given=None) -> Path:
    """The manifest's path: ``given``, or ``<out stem>.manifest.json`` beside the output."""
    return Path(given) if given else out.with_name(out.stem + ".manifest.json")


def ledger_path(out: Path, given=None) -> Path:
    """The ledger's path: ``given``, or ``<out stem>.ledger.json`` beside the output."""
    return Path(given) if given else out.with_name(out.stem + ".ledger.json")


# ---------------------------------------------------------------------- the runner
@dataclass
class ReleaseOutcome:
    """What a family's release produced, for :func:`run_release` to write.

    Parameters
    ----------
    frames
        Output option -> table, written as Parquet when that option's path ends in ``.parquet``
        (or ``.pq``), else as CSV; or a dict, written as JSON.
    facts
        The family's statements for the manifest.
    summary
        Lines printed before the "wrote" lines (public facts of the release only).
    ledger
        The JSON ledger to write (default: the session's).
    details
        Family details for the manifest (mechanism, solver status, checks).
    sampler
        The noise sampler, in words.
    """

    frames: dict[str, pd.DataFrame]
    facts: ReleaseFacts
    summary: list[str] = field(default_factory=list)
    ledger: dict | None = None
    details: dict = field(default_factory=dict)
    sampler: str = "exact discrete Laplace (double geometric) on int64 counts (Canonne-Kamath-Steinke, Alg. 2)"


@dataclass
class ReleaseSpec:
    """A family's release command, declared for :func:`run_release`.

    Parameters
    ----------
    family
        The command's family name.
    inputs
        Input option -> path (None when not given); hashed, and never overwritten.
    outputs
        Output option -> path (None when an optional output was not asked for).
    load
        Reads the data with the declared public facts (no noise).
    run
        ``run(session, data, amount) -> ReleaseOutcome``: the mechanism through the session, which
        charges ``amount`` before drawing (``data`` is what ``load`` returned).
    unit
        The budget's unit (``"epsilon"``, ``"rho"`` for a zCDP noise, given by ``--rho``, or
        ``"epsilon_per_km"`` for metric DP).
    name
        The dataset's name when no ``--dataset`` is declared (e.g. the data file's stem).
    prepare
        Checks to run before the data is read (e.g. the memory a declared size needs).
    session_data
        What the session holds, from what ``load`` returned (default: all of it), e.g. a set
        function without the instance's public labels.
    """

    family: str
    inputs: dict[str, object]
    outputs: dict[str, object]
    load: Callable[[], object]
    run: Callable[[PrivacySession, object, Fraction], ReleaseOutcome]
    unit: str = "epsilon"
    name: str = "dataset"
    prepare: Callable[[], None] | None = None
    session_data: Callable[[object], object] | None = None


def _targets(args, spec: ReleaseSpec) -> dict[str, Path]:
    outputs = {flag: Path(path) for flag, path in spec.outputs.items() if path}
    first = next(iter(outputs.values()))
    targets = dict(outputs)
    targets["--ledger"] = ledger_path(first, args.ledger)
    targets["--manifest"] = manifest_path(first, args.manifest)
    inputs = dict(spec.inputs)
    if args.budget_db:
        inputs["--budget-db"] = args.budget_db
    return check_targets(targets, inputs, force=args.force)


def _check_budget_flags(args) -> None:
    if bool(args.budget_db) != bool(args.dataset):
        raise DataValidationError(
            "--dataset" if args.budget_db else "--budget-db", "--budget-db and --dataset go together"
        )


def _command(args) -> list[str]:
    """The command line as the user typed it (``cli.main`` records its arguments on ``args``)."""
    return ["dpmodels", *getattr(args, "_argv", sys.argv[1:])]


def _open_session(args, spec: ReleaseSpec, data, amount, rng, inputs: dict, targets: dict) -> PrivacySession:
    if args.budget_db:
        return PrivacySession.from_database(
            data,
            args.budget_db,
            args.dataset,
            rng=rng,
            not_private=args.not_private,
            command=shlex.join(_command(args)),
            inputs=inputs,
            outputs={flag: str(path) for flag, path in targets.items()},
        )
    return PrivacySession(data, amount, unit=spec.unit, rng=rng, not_private=args.not_private, name=spec.name)


def run_release(args, spec: ReleaseSpec) -> int:
    """Run one ``dpmodels release <family>`` end to end (see the module docstring); exit code 0.

    Parameters
    ----------
    args
        The parsed command line (with :func:`add_common_arguments`' options).
    spec
        The family's declaration.
    """
    configure_logging(verbosity(args))
    _check_budget_flags(args)
    targets = _targets(args, spec)
    _require_parquet(targets)
    amount = requested_amount(args, spec.unit)
    rng = release_rng(args.seed, not_private=args.not_private)
    if spec.prepare is not None:
        spec.prepare()
    data = spec.load()
    inputs = {flag: file_record(path) for flag, path in spec.inputs.items() if path}
    with interruptible(), StagedOutputs(targets, force=args.force) as stage:
        held = data if spec.session_data is None else spec.session_data(data)
        session = _open_session(args, spec, held, amount, rng, inputs, targets)
        try:
            outcome = spec.run(session, data, amount)
            written = _stage_outputs(stage, outcome, session, args, spec, inputs)
            stage.commit(then=lambda: _record_release(args, session, written, targets))
        except BaseException as err:
            _record_failure(args, session, err)
            raise
    for line in outcome.summary:
        print(line)
    for flag, path in targets.items():
        if flag not in ("--ledger", "--manifest"):
            log.info("wrote %s", path)
    log.info("wrote %s (%s; %s)", targets["--ledger"], _spent_words(session), session.randomness)
    log.info("wrote %s", targets["--manifest"])
    return 0


def requested_amount(args, unit: str):
    """The release's budget in ``unit``, exact: ``--rho`` for a zCDP release, else ``--epsilon``; a
    budget given in the other unit, or a ``--delta`` without ``--rho``, is refused before anything runs.

    Parameters
    ----------
    args
        The parsed command line (``--rho`` and ``--delta`` exist only where a family declares a zCDP
        noise, :func:`~dpmodels.core.options.add_release_options`).
    unit
        The unit the family's mechanism is charged in.
    """
    check_budget_unit(args, unit)
    if unit == "rho":
        return as_epsilon(args.rho, "--rho")
    return as_epsilon(args.epsilon, "--epsilon")


def check_budget_unit(args, unit: str) -> None:
    """Refuse a budget given in the wrong unit, naming the flag: ``--epsilon`` (or no ``--rho``) with a
    zCDP noise, ``--rho`` with a pure-DP noise, ``--delta`` without ``--rho``.  Releases
    (:func:`requested_amount`) and experiments taking ``--noise`` and ``--rho`` (e.g. ``compare pgsr``)
    share it.

    Parameters
    ----------
    args
        The parsed command line (``--rho``, ``--delta`` and ``--noise`` where the command declares them;
        ``--epsilon`` is None when not given).
    unit
        The unit the chosen noise is charged in: ``"rho"`` for a zCDP noise, else a pure-DP unit.
    """
    rho, delta = getattr(args, "rho", None), getattr(args, "delta", None)
    noise = getattr(args, "noise", None)
    if unit == "rho":
        if rho is None:
            raise DataValidationError(
                "--rho", "this noise is zCDP: its budget is rho, not a pure-DP epsilon (give --rho, not --epsilon)"
            )
        if getattr(args, "epsilon", None) is not None:
            raise DataValidationError("--epsilon", f"{noise} is zCDP: its budget is --rho alone, not --epsilon")
        if delta is not None:
            check_delta(delta)
        return
    if rho is not None:
        raise DataValidationError(
            "--rho", f"a zCDP budget needs a zCDP noise (e.g. --noise discrete-gaussian); {noise} takes --epsilon"
        )
    if delta is not None:
        raise DataValidationError("--delta", "states the epsilon of a --rho at that delta; it goes with --rho only")


def check_delta(delta) -> str:
    """``--delta`` checked: a number in ``(0, 1)`` (the delta of an ``(eps, delta)`` statement)."""
    value = exact(delta, "--delta")
    if not 0 < value < 1:
        raise DataValidationError("--delta", f"must be in (0, 1), got {delta!r}")
    return str(delta)


def _stage_outputs(stage, outcome, session, args, spec, inputs) -> dict:
    written = {}
    for flag, frame in outcome.frames.items():
        if isinstance(frame, dict):
            written[flag] = stage.write_text(flag, json.dumps(frame, indent=2, default=str) + "\n")
        else:
            parquet = is_parquet(stage.targets[flag])
            written[flag] = stage.write(flag, lambda p, f=frame, pq=parquet: _write_frame(f, p, pq))
    state = session.to_dict()  # one read of the budget (a database read when it persists)
    ledger = outcome.ledger if outcome.ledger is not None else state
    written["--ledger"] = stage.write_text("--ledger", json.dumps(ledger, indent=2, default=str) + "\n")
    request = {
        "unit": session.charges[0].unit if session.charges else spec.unit,
        "amount": str(sum((c.epsilon for c in session.charges), Fraction(0))),
        "delta": str(sum((c.delta for c in session.charges), Fraction(0))),
        "declared_delta": getattr(args, "delta", None),
    }
    manifest = build_manifest(
        family=spec.family,
        dataset=args.dataset or session.name,
        command=_command(args),
        options=options_of(args),
        facts=outcome.facts,
        request=request,
        session=state,
        sampler=outcome.sampler,
        inputs=inputs,
        outputs=written,
        budget_database=_database_record(args, session, state),
        details=outcome.details,
    )
    stage.write_text("--manifest", json.dumps(manifest, indent=2, default=str) + "\n")
    return written


def is_parquet(path) -> bool:
    """Whether an output path asks for Parquet (``.parquet`` or ``.pq``); anything else is CSV."""
    return Path(path).suffix.lower() in (".parquet", ".pq")


def _write_frame(frame: pd.DataFrame, path: Path, parquet: bool) -> None:
    if parquet:
        frame.to_parquet(path, index=False)
    else:
        frame.to_csv(path, index=False)


def _require_parquet(targets: dict[str, Path]) -> None:
    """Refuse, before any budget is spent, a Parquet output without pyarrow."""
    wanted = [flag for flag, path in targets.items() if is_parquet(path)]
    if wanted:
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            raise DataValidationError(wanted[0], "writing Parquet needs pyarrow (pip install pyarrow)") from None


def _database_record(args, session: PrivacySession, state: dict) -> dict | None:
    if not args.budget_db:
        return None
    unit = state["budget_unit"]
    return {
        "path": str(Path(args.budget_db).resolve()),
        "dataset": args.dataset,
        "charge_ids": [c.database_id for c in session.charges],
        "unit": unit,
        "budget": state["budget"][unit],
        "spent_after_this_release": state["spent"][unit],
        "remaining": state["remaining"][unit],
    }


def _record_release(args, session: PrivacySession, written: dict, targets: dict) -> None:
    if not args.budget_db:
        return
    db = BudgetDatabase(args.budget_db)
    for charge in session.charges:
        if charge.database_id is not None and charge.status == "done":
            db.complete(charge.database_id, written, str(targets["--manifest"]))
            charge.status = "released"  # an interrupt arriving now finds the release complete


def _record_failure(args, session: PrivacySession, err: BaseException) -> None:
    """A release that failed after its charge: the charge stays, marked failed with the reason."""
    if not args.budget_db:
        return
    db = BudgetDatabase(args.budget_db)
    for charge in session.charges:
        if charge.database_id is not None and charge.status == "done":
            charge.status = "failed"
            db.fail(charge.database_id, f"outputs not written: {type(err).__name__}: {err}")


def _spent_words(session: PrivacySession) -> str:
    unit = session.unit.replace("_", " ")
    where = f" in {session.budget_location}" if session.budget_location != "this session" else ""
    return f"{unit} spent {session.spent_epsilon} of {session.epsilon}{where}"
