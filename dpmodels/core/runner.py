"""The one runner of the experiment commands (``compare`` and ``bench``).

A family declares a command with :func:`experiment`: its help, the standard options it takes
(:mod:`dpmodels.core.options`, each with the family's default), its own few options, and a run
function that returns a table (a pandas DataFrame) or a :class:`Result` (the table, what stdout
shows, a JSON document, a figure).  The runner does the rest, the same way for every family:

* stdout carries results only (the tables); progress, notes and "wrote ..." go to the
  ``dpmodels`` logger on stderr: ``-q`` shows warnings only (and hides progress bars), ``-v``
  shows debug messages too;
* the outputs (``--csv``, ``--parquet``, ``--json``, ``--plot`` .png/.pdf/.svg) are checked
  before any work and written all or nothing: each to a temporary file beside it, moved into
  place together at the end (:class:`~dpmodels.core.staging.StagedOutputs`);
* Ctrl-C (or SIGTERM) ends with ``dpmodels: interrupted``, exit code 130, and no output file,
  also when numba reports the interrupt as a ``SystemError`` (:func:`run_command`).

This module imports the standard library only at import time (pandas when it writes).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .commands import Command, add_outputs, add_progress, check_outputs
from .errors import DataValidationError, DPModelsError
from .options import Option, add_verbosity

__all__ = ["Result", "experiment", "run_experiment", "run_command", "configure_logging", "LOGGER", "interrupt_of"]

#: The logger of every dpmodels command (progress, notes, "wrote ..."): stderr, never stdout.
LOGGER = "dpmodels"
log = logging.getLogger(LOGGER)

#: Logging level by verbosity: -q, default, -v.
LEVELS = {-1: logging.WARNING, 0: logging.INFO, 1: logging.DEBUG}


@dataclass
class Result:
    """What an experiment's run function returns (a bare DataFrame is ``Result(table)``).

    Parameters
    ----------
    table : pandas.DataFrame
        The rows: written by ``--csv``, ``--parquet`` and (unless ``document``) ``--json``.
    report : sequence of str or DataFrame
        What stdout shows, in order (a DataFrame without its index); empty: the table.
    document : object, optional
        What ``--json`` writes instead of the table's records (e.g. a bench's nested report).
    figure : callable, optional
        ``figure(path)`` draws ``--plot`` (its format follows the path's suffix); ``None``: no
        figure for this run (a ``--plot`` given is then not written, with a warning).
    exit_code : int
        0 done, 1 the run found a failure it reports (the outputs are still written).
    """

    table: Any
    report: Sequence[Any] = ()
    document: Any = None
    figure: Callable[[Path], None] | None = None
    exit_code: int = 0


def experiment(
    help: str,
    run: Callable[[argparse.Namespace], Any],
    *,
    options: Sequence[Option] = (),
    arguments: Callable[[argparse.ArgumentParser], None] | None = None,
    table: str = "the table",
    json_help: str | None = None,
    plot: str | None = None,
) -> Command:
    """Declare an experiment command: standard options, own options, and a run function.

    Parameters
    ----------
    help : str
        The command's one-line help.
    run : callable
        ``run(args)`` returns a DataFrame or a :class:`Result`; ``args.progress`` says whether
        to show progress bars.  Import heavy modules inside it.
    options : sequence of Option
        The standard options it takes, with its defaults (:mod:`dpmodels.core.options`).
    arguments : callable, optional
        Adds the command's own options to its parser.
    table : str
        What one row of the table is, e.g. ``"one row per run"`` (the outputs' help).
    json_help : str, optional
        What ``--json`` writes when it is not the table (a :attr:`Result.document`).
    plot : str, optional
        What ``--plot`` draws; ``None``: the command has no ``--plot``.
    """

    def add_arguments(parser: argparse.ArgumentParser) -> None:
        for option in options:
            option.add(parser)
        if arguments is not None:
            arguments(parser)
        outputs = {"csv": f"{table}, as CSV", "parquet": f"{table}, as Parquet (needs pyarrow)"}
        outputs["json"] = json_help or f"{table}, as JSON records"
        if plot:
            outputs["plot"] = plot
        add_outputs(parser, **outputs)
        add_progress(parser)
        add_verbosity(parser)

    return Command(help, add_arguments, lambda args: run_experiment(run, args))


# ---------------------------------------------------------------------- running
def run_experiment(run: Callable[[argparse.Namespace], Any], args: argparse.Namespace) -> int:
    """Run one experiment: check the outputs, compute, show the results, write the files.

    Parameters
    ----------
    run : callable
        The command's run function (see :func:`experiment`).
    args : argparse.Namespace
        The parsed command line (with the runner's options).

    Returns
    -------
    int
        The exit code (the result's, 0 unless it reports a failure).
    """
    configure_logging(verbosity(args))
    paths = check_outputs(args)
    if "parquet" in paths:
        _require_parquet_engine()
    args.progress = not args.no_progress and log.isEnabledFor(logging.INFO)
    log.debug("options: %s", {k: v for k, v in vars(args).items() if not k.startswith("_") and k != "run"})
    tick = time.perf_counter()
    with _interrupts_unwrapped(), _sigterm_interrupts():
        result = _as_result(run(args))
        log.debug("computed in %.2f s", time.perf_counter() - tick)
        show(result)
        write_outputs(result, paths)
    return result.exit_code


def _as_result(value) -> Result:
    if isinstance(value, Result):
        return value
    if hasattr(value, "to_csv"):
        return Result(value)
    raise TypeError(f"an experiment returns a DataFrame or a Result, got {type(value).__name__}")


def show(result: Result) -> None:
    """Print the results on stdout: each report item (a DataFrame without its index), or the table.

    Parameters
    ----------
    result : Result
        What the run returned.
    """
    for item in result.report or [result.table]:
        print(item.to_string(index=False) if hasattr(item, "to_string") else item)
    sys.stdout.flush()


def write_outputs(result: Result, paths: dict[str, Path]) -> None:
    """Write every output given, all or nothing: temporary files beside the targets, moved together.

    Parameters
    ----------
    result : Result
        The table, document and figure to write.
    paths : dict
        Output kind (``csv``, ``parquet``, ``json``, ``plot``) -> path, as checked.
    """
    from .staging import StagedOutputs

    paths = dict(paths)
    if "plot" in paths and result.figure is None:
        log.warning("--plot: this run draws no figure; %s not written", paths.pop("plot"))
    if not paths:
        return
    writers = {
        "csv": lambda p: result.table.to_csv(p, index=False),
        "parquet": lambda p: _parquet_ready(result.table).to_parquet(p, index=False),
        "json": lambda p: p.write_text(_json_text(result), encoding="utf-8"),
        "plot": lambda p: _draw(result.figure, p, paths["plot"].suffix),
    }
    with StagedOutputs({f"--{kind}": path for kind, path in paths.items()}, force=True) as stage:
        for kind in paths:
            stage.write(f"--{kind}", writers[kind])
            log.debug("staged --%s", kind)
        stage.commit()
    for path in paths.values():
        log.info("wrote %s", path)


def _parquet_ready(table):
    """The table with every column of mixed Python types as text (Parquet columns have one type;
    a bench's ``status`` may hold a word in one row and a number in another)."""
    fixed = table.copy()
    for column in fixed.select_dtypes(include="object").columns:
        values = fixed[column].tolist()
        kinds = {type(v) for v in values if not _missing(v)}
        if len(kinds) > 1:
            fixed[column] = [None if _missing(v) else str(v) for v in values]
    return fixed


def _missing(value) -> bool:
    return value is None or (isinstance(value, float) and value != value)


def _json_text(result: Result) -> str:
    if result.document is None:
        return result.table.to_json(orient="records", indent=1) + "\n"
    return json.dumps(result.document, indent=2, default=_jsonable) + "\n"


def _jsonable(value):
    """numpy scalars as numbers; anything else json cannot write as its text."""
    item = getattr(value, "item", None)
    return item() if callable(item) else str(value)


def _draw(figure: Callable[[Path], None], staged: Path, suffix: str) -> None:
    """Draw to a temporary name ending in the target's suffix (the format), then onto ``staged``."""
    drawn = staged.with_name(staged.name + suffix)
    try:
        figure(drawn)
        os.replace(drawn, staged)
    finally:
        drawn.unlink(missing_ok=True)


def _require_parquet_engine() -> None:
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        raise DataValidationError("--parquet", "needs pyarrow (pip install pyarrow); use --csv otherwise") from None


# ---------------------------------------------------------------------- logging
class _StderrHandler(logging.StreamHandler):
    """Writes to the ``sys.stderr`` of the moment (a redirect or a test's capture made later)."""

    def __init__(self):
        super().__init__(sys.stderr)

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, value):
        pass


class _Formatter(logging.Formatter):
    """Progress and notes as they are; other levels prefixed ``dpmodels: warning: ...``."""

    def format(self, record: logging.LogRecord) -> str:
        text = record.getMessage()
        return text if record.levelno == logging.INFO else f"dpmodels: {record.levelname.lower()}: {text}"


def verbosity(args: argparse.Namespace) -> int:
    """-1 with ``-q``, 1 with ``-v``, 0 otherwise.

    Parameters
    ----------
    args : argparse.Namespace
        Parsed arguments (without ``quiet``/``verbose``: 0).
    """
    return -1 if getattr(args, "quiet", False) else 1 if getattr(args, "verbose", False) else 0


def configure_logging(level: int = 0) -> logging.Logger:
    """Route the ``dpmodels`` logger to stderr at a verbosity (-1 warnings, 0 info, 1 debug).

    Parameters
    ----------
    level : int
        -1 (``-q``), 0 or 1 (``-v``).

    Returns
    -------
    logging.Logger
        The ``dpmodels`` logger (one handler however often this is called).
    """
    logger = logging.getLogger(LOGGER)
    if not any(isinstance(h, _StderrHandler) for h in logger.handlers):
        handler = _StderrHandler()
        handler.setFormatter(_Formatter())
        logger.addHandler(handler)
    logger.setLevel(LEVELS[level])
    logger.propagate = False
    return logger


# ---------------------------------------------------------------------- interrupts and exit codes
def interrupt_of(error: BaseException) -> KeyboardInterrupt | None:
    """The KeyboardInterrupt behind ``error``: itself, or one in its ``__cause__``/``__context__``
    chain (numba reports Ctrl-C inside a compiled function as ``SystemError: CPUDispatcher(...)
    returned a result with an exception set``, caused by the KeyboardInterrupt).

    Parameters
    ----------
    error : BaseException
        The exception a run ended with.
    """
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        if isinstance(error, KeyboardInterrupt):
            return error
        seen.add(id(error))
        error = error.__cause__ or error.__context__
    return None


@contextlib.contextmanager
def _interrupts_unwrapped() -> Iterator[None]:
    """Re-raise an interrupt that another exception wraps as the KeyboardInterrupt it is."""
    try:
        yield
    except Exception as err:
        interrupt = interrupt_of(err)
        if interrupt is None:
            raise
        log.debug("an interrupt reported as %s: %s", type(err).__name__, err)
        raise KeyboardInterrupt(str(interrupt)) from err


@contextlib.contextmanager
def _sigterm_interrupts() -> Iterator[None]:
    from .staging import interruptible

    with interruptible():
        yield


def run_command(args: argparse.Namespace) -> int:
    """Run a parsed ``dpmodels`` command and map its end to an exit code and one stderr line.

    0 done; 1 the run failed (``dpmodels: the run failed: ...``); 2 bad input
    (``dpmodels: error: ...``, naming the option); 130 interrupted (``dpmodels: interrupted``),
    whatever wraps the KeyboardInterrupt.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed command line; ``args.run(args)`` runs it.
    """
    try:
        check_outputs(args)  # before any work: a bad output path must not cost a run
        with _interrupts_unwrapped():
            return args.run(args)
    except DPModelsError as err:
        print(f"dpmodels: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("dpmodels: interrupted", file=sys.stderr)
        return 130
    except Exception as err:  # the run itself failed (a solver error, a crash): exit code 1
        print(f"dpmodels: the run failed: {type(err).__name__}: {err}", file=sys.stderr)
        return 1
