"""All-or-nothing outputs: a release's files are written aside and moved into place together at the end.

``release topdown --out-histograms /dev/full`` used to leave a microdata CSV with no ledger, and
``release pgsr --out records.csv --records records.csv`` destroyed its input.  Here:

* :func:`check_targets` refuses, before any work, an output that is a folder, sits in a missing
  folder, is not a regular file (``/dev/full``), already exists (unless ``force``), is an input
  (always, even with ``force``: same path, symlink or hard link), or repeats another output;
* :class:`StagedOutputs` writes each output to a hidden temporary file beside its target
  (``.<name>.<pid>-<token>.dpmodels-partial``, same file system, so the final move is an atomic
  ``rename``); the temporaries are flushed to disk first, then every target is replaced in one
  short step with SIGINT and SIGTERM held back, the manifest last: **a release is complete exactly
  when its manifest exists** (it lists the SHA-256 of every other output);
* on an error, Ctrl-C (SIGINT) or ``kill`` (SIGTERM, turned into ``KeyboardInterrupt`` while a
  release runs) the temporaries are removed and no target is touched.  Only SIGKILL, which no
  process can intercept, can stop the final moves part-way (a window of a few renames); its
  orphaned temporaries are removed by the next release that writes in the same folder.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import secrets
import signal
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

from .errors import DataValidationError

__all__ = ["check_targets", "file_record", "StagedOutputs", "interruptible"]

_PARTIAL = ".dpmodels-partial"


def check_targets(targets: dict[str, Path], inputs: dict[str, object], force: bool = False) -> dict[str, Path]:
    """Validate output paths before any work; returns them as Paths by option.

    Parameters
    ----------
    targets
        Output option -> path (outputs, ledger, manifest).
    inputs
        Input option -> path (or None): no output may be one of them.
    force
        Allow replacing existing regular files (never an input).
    """
    paths = {flag: Path(path) for flag, path in targets.items()}
    sources = {flag: Path(path) for flag, path in inputs.items() if path}
    seen: dict[Path, str] = {}
    for flag, out in paths.items():
        if out.is_dir():
            raise DataValidationError(flag, f"{out} is a directory; give a file name")
        if not out.parent.is_dir():
            raise DataValidationError(flag, f"the folder {out.parent} does not exist")
        for source_flag, source in sources.items():
            if _same_file(out, source):
                raise DataValidationError(flag, f"{out} would overwrite the input {source_flag}")
        if out.exists() or out.is_symlink():
            if not out.is_file():
                raise DataValidationError(flag, f"{out} exists and is not a regular file; a release writes files")
            if not force:
                raise DataValidationError(flag, f"{out} exists; pass --force to replace it (the inputs never)")
        other = seen.setdefault(out.resolve(), flag)
        if other != flag:
            raise DataValidationError(flag, f"must differ from {other} ({out})")
    return paths


def _same_file(a: Path, b: Path) -> bool:
    if a.resolve() == b.resolve():
        return True
    try:
        return a.exists() and b.exists() and os.path.samefile(a, b)
    except OSError:
        return False


def file_record(path) -> dict:
    """``{"path", "sha256", "bytes"}`` of a file (its absolute path; read in 1 MiB blocks)."""
    digest = hashlib.sha256()
    size = 0
    with open(path, "rb") as handle:
        while block := handle.read(1 << 20):
            digest.update(block)
            size += len(block)
    return {"path": str(Path(path).resolve()), "sha256": digest.hexdigest(), "bytes": size}


#: The signals a commit holds back until its moves are done.
HELD_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def _raise_interrupt(signum, frame):
    raise KeyboardInterrupt(f"signal {signal.Signals(signum).name}")


@contextlib.contextmanager
def interruptible() -> Iterator[None]:
    """While a release runs, SIGTERM raises ``KeyboardInterrupt`` like Ctrl-C, so that cleanup runs."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """SIGINT and SIGTERM held back (delivered when the block ends), on the main thread.

    The Python handlers are swapped for ones that only note the signal, and the first signal noted is
    raised again once the block ends, under the handlers restored.  Blocking the signals with
    ``pthread_sigmask`` instead holds them for the main thread only: a Ctrl-C sent to the process can
    land on another thread (a solver's, Dask's), and Python then runs its handler on the main thread
    inside the block, between two of the moves."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    arrived: list[int] = []
    previous = {sig: signal.signal(sig, lambda signum, frame: arrived.append(signum)) for sig in HELD_SIGNALS}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, signal.SIG_DFL if handler is None else handler)  # None: not set from Python
        if arrived:
            signal.raise_signal(arrived[0])


class StagedOutputs:
    """Temporary files beside their targets, moved into place together by :meth:`commit`.

    Use as a context manager: leaving it without a commit (an error, an interrupt) removes every
    temporary file and leaves the targets as they were.

    Parameters
    ----------
    targets
        Option -> final path, in the order they are moved (put the manifest last).
    force
        Replace existing targets (checked again at commit: one that appeared meanwhile is refused).
    """

    def __init__(self, targets: dict[str, Path], force: bool = False):
        self.targets = {flag: Path(path) for flag, path in targets.items()}
        self.force = force
        self.staged: dict[str, Path] = {}
        self.committed = False
        self._token = secrets.token_hex(4)
        for folder in {p.parent for p in self.targets.values()}:
            _remove_orphans(folder)

    def __enter__(self) -> StagedOutputs:
        return self

    def __exit__(self, *exc) -> None:
        if not self.committed:
            self.discard()

    def path(self, flag: str) -> Path:
        """The temporary file to write ``flag``'s output to."""
        if flag not in self.targets:
            raise KeyError(flag)
        if flag not in self.staged:
            target = self.targets[flag]
            self.staged[flag] = target.with_name(f".{target.name}.{os.getpid()}-{self._token}{_PARTIAL}")
        return self.staged[flag]

    def write(self, flag: str, writer: Callable[[Path], object]) -> dict:
        """Call ``writer(temporary path)`` for ``flag``; returns the staged file's :func:`file_record`
        under the final path."""
        temp = self.path(flag)
        try:
            writer(temp)
        except OSError as err:
            raise DataValidationError(flag, f"cannot write {self.targets[flag]}: {err.strerror or err}") from err
        return file_record(temp) | {"path": str(self.targets[flag].resolve())}

    def write_text(self, flag: str, text: str) -> dict:
        return self.write(flag, lambda p: p.write_text(text, encoding="utf-8"))

    def commit(self, then: Callable[[], None] | None = None) -> None:
        """Flush every staged file, then move them all into place (in ``targets`` order) with SIGINT
        and SIGTERM held back; ``then`` runs inside the same protected step (e.g. recording the
        release in the budget database)."""
        missing = [flag for flag in self.targets if flag not in self.staged]
        if missing:
            raise RuntimeError(f"nothing staged for {missing}")
        for temp in self.staged.values():
            _fsync(temp)
        if not self.force:
            for flag, target in self.targets.items():
                if target.exists():
                    raise DataValidationError(flag, f"{target} appeared while the release ran; nothing was written")
        with _signals_held():
            for flag, target in self.targets.items():
                os.replace(self.staged[flag], target)
            self.committed = True
            for folder in {p.parent for p in self.targets.values()}:
                _fsync_dir(folder)
            if then is not None:
                then()

    def discard(self) -> None:
        """Remove every temporary file (the targets are untouched)."""
        for temp in self.staged.values():
            with contextlib.suppress(FileNotFoundError):
                temp.unlink()


def _fsync(path: Path) -> None:
    with open(path, "rb") as handle:
        os.fsync(handle.fileno())


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _remove_orphans(folder: Path) -> None:
    """Remove temporaries left by a release that was killed (its process no longer exists)."""
    for temp in folder.glob(f".*{_PARTIAL}"):
        pid = temp.name.rsplit(".", 2)[-2].split("-")[0] if temp.name.count(".") >= 2 else ""
        if pid.isdigit() and not _alive(int(pid)):
            with contextlib.suppress(OSError):
                temp.unlink()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
