"""Run independent pieces of work through one ``executor=`` argument.

Subtrees of a problem, per-parent solves of a level, Benders subproblems and
repeated trials of a privacy mechanism are all independent tasks.  Rather than a
home-made scheduler, dpmodels hands them to a standard
:class:`concurrent.futures.Executor`:

* ``None`` / ``"serial"``: run in-process, one after another (the default);
* ``"process"`` or an ``int`` n >= 1: a local process pool (all cores, or n workers);
* ``"dask"``: a throw-away Dask ``LocalCluster`` on this machine;
* a ``distributed.Client``: run on that (possibly remote) Dask cluster;
* any ``concurrent.futures.Executor``: used as is, and left open for its owner.

:func:`resolve_executor` turns such a spec into an executor (or ``None`` for
serial) and cleans up what it created; :func:`map_tasks` maps a function over
items through it, returning results in input order.

Task functions must be picklable (defined at module level) for process pools and
Dask.  Each :func:`map_tasks` call with a spec such as ``"process"`` starts and
stops its own pool; to reuse one pool over many calls, open it once with
``with resolve_executor(spec) as ex:`` and pass ``executor=ex``.
"""

from __future__ import annotations

import numbers
import os
import sys
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Executor, Future, ProcessPoolExecutor, as_completed
from contextlib import contextmanager
from typing import Any

from tqdm import tqdm

from dpmodels.core.errors import DataValidationError

__all__ = ["resolve_executor", "map_tasks"]

_ACCEPTED = (
    "None or 'serial' (in-process), 'process' (process pool on all cores), "
    "an int n >= 1 (process pool with n workers), 'dask' (local Dask cluster), "
    "a distributed.Client, or a concurrent.futures.Executor instance"
)


def _import_distributed() -> Any:
    """Import :mod:`distributed` lazily, with an install hint if it is missing."""
    try:
        import distributed
    except ImportError as exc:
        raise ImportError(
            "executor='dask' needs dask.distributed, which is not installed; "
            "install the dask extra: pip install dpmodels[dask]"
        ) from exc
    return distributed


def _is_dask_client(spec: object) -> bool:
    """True if ``spec`` is a ``distributed.Client`` (without importing distributed)."""
    distributed = sys.modules.get("distributed")
    return distributed is not None and isinstance(spec, distributed.Client)


@contextmanager
def _dask_local_cluster() -> Iterator[Executor]:
    """Start a local Dask cluster (one single-threaded process per core), close it on exit."""
    distributed = _import_distributed()
    with (
        distributed.LocalCluster(n_workers=os.cpu_count(), threads_per_worker=1, processes=True) as cluster,
        distributed.Client(cluster) as client,
    ):
        yield client.get_executor()


def _pool_size(spec: object) -> int | None:
    """Worker count if ``spec`` asks for a local process pool, else ``None``."""
    if isinstance(spec, str):
        return os.cpu_count() if spec == "process" else None
    if isinstance(spec, numbers.Integral) and not isinstance(spec, bool) and spec >= 1:
        return int(spec)
    return None


@contextmanager
def resolve_executor(executor: object = None) -> Iterator[Executor | None]:
    """Yield ``None`` (serial) or a :class:`concurrent.futures.Executor` for a spec.

    Pools and clusters created here are shut down on exit; an executor or Dask
    client passed in by the caller is left open.  Any other spec raises
    :class:`DataValidationError` on field ``executor``.
    """
    if executor is None or (isinstance(executor, str) and executor == "serial"):
        yield None
    elif isinstance(executor, Executor):
        yield executor
    elif _is_dask_client(executor):
        yield executor.get_executor()
    elif isinstance(executor, str) and executor == "dask":
        with _dask_local_cluster() as ex:
            yield ex
    elif (workers := _pool_size(executor)) is not None:
        with ProcessPoolExecutor(max_workers=workers, mp_context=_pool_context()) as pool:
            yield pool
    else:
        raise DataValidationError("executor", f"got {executor!r}; expected {_ACCEPTED}")


def _pool_context():
    """Workers start from a fresh server process, never by forking this one.

    Forking a process whose solver libraries keep thread pools (HiGHS does after its first
    solve) copies their locked mutexes, and the workers hang; measured here on a TopDown run.
    """
    import multiprocessing

    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")


def _note_index(exc: BaseException, index: int, total: int) -> None:
    """Record on ``exc`` which item made it fail (shown in tracebacks and by pytest)."""
    exc.add_note(f"map_tasks: raised by the task for item index {index} (of {total} items)")


def _run_serial(fn: Callable[[Any], Any], items: list, bar: tqdm) -> list:
    """Apply ``fn`` to each item in this process, in order."""
    results = []
    for i, item in enumerate(items):
        try:
            results.append(fn(item))
        except Exception as exc:
            _note_index(exc, i, len(items))
            raise
        bar.update()
    return results


def _run_pooled(fn: Callable[[Any], Any], items: list, ex: Executor, bar: tqdm) -> list:
    """Submit every item to ``ex``, collect results by index; fail fast on the first error."""
    futures: list[Future] = []
    results: list[Any] = [None] * len(items)
    try:
        for i, item in enumerate(items):
            try:
                futures.append(ex.submit(fn, item))
            except Exception as exc:
                _note_index(exc, i, len(items))
                raise
        index = {fut: i for i, fut in enumerate(futures)}
        for fut in as_completed(futures):
            i = index[fut]
            try:
                results[i] = fut.result()
            except Exception as exc:
                _note_index(exc, i, len(items))
                raise
            bar.update()
    except BaseException:
        for fut in futures:
            fut.cancel()
        raise
    return results


def map_tasks(
    fn: Callable[[Any], Any],
    items: Iterable[Any],
    *,
    executor: object = None,
    progress: bool = False,
    desc: str | None = None,
) -> list:
    """Return ``[fn(item) for item in items]``, computed through ``executor``.

    ``executor`` is any spec accepted by :func:`resolve_executor`.  Results keep
    the input order whatever the completion order.  With ``progress=True`` a tqdm
    bar (labelled ``desc``) advances as tasks complete.  If a task raises, the
    pending tasks are cancelled and the original exception is re-raised with a
    note naming the failing item's index.
    """
    items = list(items)
    with (
        resolve_executor(executor) as ex,
        tqdm(total=len(items), desc=desc, disable=not progress) as bar,
    ):
        if ex is None:
            return _run_serial(fn, items, bar)
        return _run_pooled(fn, items, ex, bar)
