"""Run independent pieces of work through one ``executor=`` argument.

Subtrees of a problem, per-parent solves of a level, Benders subproblems and
repeated trials of a privacy mechanism are all independent tasks.  Rather than a
home-made scheduler, dpmodels hands them to a standard
:class:`concurrent.futures.Executor`:

* ``None`` / ``"serial"``: run in-process, one after another (the default);
* ``"process"`` or an ``int`` n >= 1: a local process pool (all cores, or n workers);
* ``"dask"``: the Dask scheduler named by ``DASK_SCHEDULER_ADDRESS`` (or Dask's
  ``scheduler-address`` setting) if there is one, else a throw-away ``LocalCluster``;
* ``"tcp://host:port"`` or ``"tls://host:port"``: the Dask scheduler at that address;
* a ``distributed.Client``: run on that (possibly remote) Dask cluster;
* any ``concurrent.futures.Executor``: used as is, and left open for its owner.

:func:`resolve_executor` turns such a spec into an executor (or ``None`` for
serial) and cleans up what it created; :func:`map_tasks` maps a function over
items through it, returning results in input order.  On Dask the executor is a
:class:`~dpmodels.core.clusters.DaskExecutor`, whose ``client`` is the cluster's client.

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

from dpmodels.core.clusters import (
    DaskExecutor,
    configured_scheduler,
    connect_scheduler,
    import_distributed,
    local_cluster,
)
from dpmodels.core.errors import DataValidationError

__all__ = ["resolve_executor", "map_tasks", "chunk_bounds", "CHUNKS_PER_SLOT"]

_ACCEPTED = (
    "None or 'serial' (in-process), 'process' (process pool on all cores), "
    "an int n >= 1 (process pool with n workers), 'dask' (DASK_SCHEDULER_ADDRESS, else a local Dask cluster), "
    "a scheduler address tcp://host:port or tls://host:port, "
    "a distributed.Client, or a concurrent.futures.Executor instance"
)

#: ``map_tasks``' default ``shared``: no shared argument.
_NOTHING = object()


def _is_dask_client(spec: object) -> bool:
    """True if ``spec`` is a ``distributed.Client`` (without importing distributed)."""
    distributed = sys.modules.get("distributed")
    return distributed is not None and isinstance(spec, distributed.Client)


@contextmanager
def _dask(executor: str) -> Iterator[Executor]:
    """``"dask"``: the configured scheduler, else a local cluster; ``"tcp://..."``: that scheduler."""
    if executor != "dask":
        with connect_scheduler(executor) as ex:
            yield ex
        return
    import_distributed()
    configured = configured_scheduler()
    if configured is None:
        with local_cluster() as ex:
            yield ex
    else:
        with connect_scheduler(*configured) as ex:
            yield ex


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

    Pools and clusters created here are shut down on exit (a connection to a running
    scheduler is closed, the scheduler left running); an executor or Dask client passed in by
    the caller is left open.  A scheduler that cannot be reached, or any other spec, raises
    :class:`DataValidationError` on field ``executor``.

    Parameters
    ----------
    executor : None, str, int, distributed.Client or concurrent.futures.Executor
        The spec (see the module's docstring).
    """
    if executor is None or (isinstance(executor, str) and executor == "serial"):
        yield None
    elif isinstance(executor, Executor):
        yield executor
    elif _is_dask_client(executor):
        yield DaskExecutor(executor)
    elif isinstance(executor, str) and (executor == "dask" or "://" in executor):
        with _dask(executor) as ex:
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


def _run_serial(fn: Callable[..., Any], items: list, bar: tqdm, extra: tuple = ()) -> list:
    """Apply ``fn`` to each item (and ``extra``) in this process, in order."""
    results = []
    for i, item in enumerate(items):
        try:
            results.append(fn(item, *extra))
        except Exception as exc:
            _note_index(exc, i, len(items))
            raise
        bar.update()
    return results


#: Chunks per task slot of a pool or cluster: enough for the slots to balance uneven tasks.
CHUNKS_PER_SLOT = 4


def _task_slots(ex: Executor) -> int:
    """How many tasks ``ex`` runs at once: a Dask cluster's worker threads, a pool's workers."""
    if isinstance(ex, DaskExecutor):
        workers = ex.client.scheduler_info().get("workers", {})
        return max(1, sum(int(w.get("nthreads", 1)) for w in workers.values()))
    return max(1, int(getattr(ex, "_max_workers", None) or os.cpu_count() or 1))


def chunk_bounds(n_items: int, slots: int) -> list[tuple[int, int]]:
    """``[start, stop)`` of the chunks a pool or cluster gets: about :data:`CHUNKS_PER_SLOT` per slot,
    consecutive items, in item order.

    Parameters
    ----------
    n_items : int
        How many items are mapped.
    slots : int
        How many tasks the executor runs at once.
    """
    size = max(1, -(-n_items // (CHUNKS_PER_SLOT * slots)))
    return [(a, min(a + size, n_items)) for a in range(0, n_items, size)]


def _run_chunk(fn: Callable[..., Any], chunk: list, start: int, total: int, *extra) -> list:
    """``[fn(item, *extra) for item in chunk]`` on a worker; an error names the item's index in the map."""
    out = []
    for k, item in enumerate(chunk):
        try:
            out.append(fn(item, *extra))
        except Exception as exc:
            _note_index(exc, start + k, total)
            raise
    return out


def _run_pooled(fn: Callable[..., Any], items: list, ex: Executor, bar: tqdm, extra: tuple = ()) -> list:
    """Submit the items (and ``extra``) to ``ex`` in chunks, collect results by index; fail fast on the
    first error.

    One task per chunk of consecutive items, about :data:`CHUNKS_PER_SLOT` chunks per worker slot: a
    task's round trip (pickling, the scheduler's bookkeeping, the reply) is paid per chunk, not per
    item, and a scheduler serving many workers handles a few tasks per worker instead of thousands.
    """
    bounds = chunk_bounds(len(items), _task_slots(ex))
    futures: list[Future] = []
    results: list[Any] = [None] * len(bounds)
    try:
        for a, b in bounds:
            try:
                futures.append(ex.submit(_run_chunk, fn, items[a:b], a, len(items), *extra))
            except Exception as exc:
                _note_index(exc, a, len(items))
                raise
        index = {fut: i for i, fut in enumerate(futures)}
        for fut in as_completed(futures):
            i = index[fut]
            results[i] = fut.result()  # a task's error already names its item
            bar.update(bounds[i][1] - bounds[i][0])
    except BaseException:
        for fut in futures:
            fut.cancel()
        raise
    return [r for chunk in results for r in chunk]


@contextmanager
def _shared_arguments(ex: Executor | None, shared: object, n_items: int) -> Iterator[tuple]:
    """The extra arguments of every task: none, ``shared`` itself, or on Dask a reference to the
    copy sent once to every worker (released when the tasks are done)."""
    if shared is _NOTHING:
        yield ()
    elif isinstance(ex, DaskExecutor) and n_items > 0:
        [future] = ex.client.scatter([shared], broadcast=True, hash=False)  # one object, even a tuple or a dict
        try:
            yield (future,)
        finally:
            future.release()
    else:
        yield (shared,)


def map_tasks(
    fn: Callable[..., Any],
    items: Iterable[Any],
    *,
    executor: object = None,
    progress: bool = False,
    desc: str | None = None,
    shared: object = _NOTHING,
) -> list:
    """Return ``[fn(item) for item in items]`` (``fn(item, shared)`` with ``shared``), computed through ``executor``.

    Results keep the input order whatever the completion order.  If a task raises, the pending
    tasks are cancelled and the original exception is re-raised with a note naming the failing
    item's index.

    Parameters
    ----------
    fn : callable
        The task function (module level, so that it pickles).
    items : iterable
        One task per item.
    executor : optional
        Any spec :func:`resolve_executor` accepts.
    progress : bool, default False
        Show a tqdm bar (labelled ``desc``) that advances as tasks complete.
    desc : str, optional
        The bar's label.
    shared : optional
        What every task needs besides its item (e.g. public context): passed as ``fn``'s second
        argument.  On Dask it is sent to every worker once instead of with every task; a process
        pool pickles it with each task; serially it is passed as is.
    """
    items = list(items)
    with (
        resolve_executor(executor) as ex,
        tqdm(total=len(items), desc=desc, disable=not progress) as bar,
        _shared_arguments(ex, shared, len(items)) as extra,
    ):
        if ex is None:
            return _run_serial(fn, items, bar, extra)
        return _run_pooled(fn, items, ex, bar, extra)
