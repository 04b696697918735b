"""Benders' block LPs kept on Dask workers for the whole run: each iteration ships a point, not the blocks.

Serially every block keeps its primal, ray and elastic LPs as persistent HiGHS models,
warm-started from one iteration to the next (:mod:`.subproblems`).  Sent to a pool task by task,
a block went over the wire every iteration and was solved cold on whichever worker took it (its
models stay behind: :meth:`Subproblem.__getstate__`): measured on the 8 x 10 grid (K = 20, 4
blocks), Dask was slower than serial.  Here the blocks are installed once on the workers of a Dask
cluster, each on one worker that keeps it (and its warm models) in memory until the run ends;
every iteration sends each worker the separation point once and gets back the blocks' outcomes
(cut, value, primal solution).  Each block then sees the same sequence of solves as serially, so
the run gives the serial run's iterates.

Blocks are spread over the workers' threads by size (largest first, onto the least loaded
thread).  A worker that dies loses its blocks: the next iteration fails with an error saying so
(start the run again).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np

from dpmodels.core.clusters import DaskExecutor

from .subproblems import BlockOutcome, Subproblem, solve_block

__all__ = ["ResidentBlocks", "resident_blocks", "held_blocks", "WATCH_SECONDS"]

#: How often a round of block solves checks that the workers holding its blocks are still there.
WATCH_SECONDS = 2.0

#: On a worker process: run token -> block -> its subproblem (with its persistent LPs once solved).
_HELD: dict[str, dict[int, Subproblem]] = {}


def _install(token: str, subs: list[Subproblem]) -> int:
    """On a worker: keep ``subs`` for the run ``token``."""
    _HELD.setdefault(token, {}).update({sub.block: sub for sub in subs})
    return len(subs)


def _solve_held(token: str, blocks: list[int], zy: np.ndarray) -> list[BlockOutcome]:
    """On a worker: solve its blocks ``blocks`` of run ``token`` at the point ``zy``, warm-started."""
    held = _HELD.get(token, {})
    missing = [b for b in blocks if b not in held]
    if missing:
        raise RuntimeError(f"Benders blocks {missing} are no longer on this worker (was it restarted?); run again")
    return [solve_block(held[b], zy) for b in blocks]


def held_blocks(token: str) -> dict[int, bool]:
    """On a worker: the blocks of run ``token`` it holds, each with whether its primal LP is built
    (a diagnostic: ``client.run(held_blocks, token)`` shows where the blocks live)."""
    return {block: sub._model is not None for block, sub in _HELD.get(token, {}).items()}


def _drop(token: str) -> None:
    """On a worker: forget the run ``token``'s blocks."""
    _HELD.pop(token, None)


def _slots(client) -> list[str]:
    """One entry per worker thread: the worker's address, repeated ``nthreads`` times."""
    workers = client.scheduler_info(n_workers=-1)["workers"]
    return [addr for addr, w in sorted(workers.items()) for _ in range(max(1, int(w.get("nthreads", 1))))]


def _spread(subs: list[Subproblem], n_slots: int) -> list[list[int]]:
    """Positions of ``subs`` per slot: largest block (stored entries) first onto the least loaded slot."""
    load = [0] * n_slots
    groups: list[list[int]] = [[] for _ in range(n_slots)]
    for i in sorted(range(len(subs)), key=lambda i: -subs[i].a.nnz):
        slot = min(range(n_slots), key=load.__getitem__)
        groups[slot].append(i)
        load[slot] += subs[i].a.nnz
    return groups


class ResidentBlocks:
    """The run's blocks held on the workers of a Dask client; :meth:`solve` is one round of block solves.

    Parameters
    ----------
    client : distributed.Client
        A client of a cluster with at least one worker.
    subs : list of Subproblem
        The run's blocks (their deadline already set).
    """

    def __init__(self, client, subs: list[Subproblem]):
        slots = _slots(client)
        if not slots:
            raise RuntimeError("the Dask cluster has no workers to hold the Benders blocks")
        self.client, self.subs, self.token = client, subs, uuid.uuid4().hex
        self.groups = [(addr, g) for addr, g in zip(slots, _spread(subs, len(slots)), strict=True) if g]
        by_worker: dict[str, list[int]] = {}
        for addr, group in self.groups:
            by_worker.setdefault(addr, []).extend(group)
        installs = [self._on(addr, _install, self.token, [subs[i] for i in group]) for addr, group in by_worker.items()]
        client.gather(installs)

    def _on(self, addr: str, fn, *args):
        return self.client.submit(fn, *args, workers=[addr], allow_other_workers=False, pure=False)

    def solve(self, zy: np.ndarray) -> list[BlockOutcome]:
        """Every block's outcome at the point ``zy``, in the order of ``subs``."""
        futures = [
            self._on(addr, _solve_held, self.token, [self.subs[i].block for i in group], zy)
            for addr, group in self.groups
        ]
        try:
            self._wait(futures)
            results = self.client.gather(futures)
        except BaseException:
            self.client.cancel(futures)
            raise
        out: list[BlockOutcome | None] = [None] * len(self.subs)
        for (_addr, group), outcomes in zip(self.groups, results, strict=True):
            for i, outcome in zip(group, outcomes, strict=True):
                out[i] = outcome
        return out

    def _wait(self, futures) -> None:
        """Wait for ``futures``; a task pinned to a worker that left would wait for ever: refuse it."""
        from distributed import wait

        with self.client.as_current():  # wait() uses the current client, which need not be the default
            while True:
                try:
                    wait(futures, timeout=WATCH_SECONDS)
                    return
                except TimeoutError:
                    present = set(self.client.scheduler_info(n_workers=-1)["workers"])
                    gone = sorted({addr for addr, _ in self.groups} - present)
                    if gone:
                        raise RuntimeError(
                            f"the Dask workers {gone} left the cluster with their Benders blocks; run again"
                        ) from None

    def close(self) -> None:
        """Free the blocks on the workers still there."""
        present = set(self.client.scheduler_info(n_workers=-1)["workers"])
        workers = sorted({addr for addr, _ in self.groups} & present)
        if workers:
            self.client.run(_drop, self.token, workers=workers, on_error="return")


@contextmanager
def resident_blocks(subs: list[Subproblem], executor) -> Iterator[object]:
    """On a Dask executor, a :class:`ResidentBlocks` for ``subs`` (freed on exit); else ``executor`` as is.

    Parameters
    ----------
    subs : list of Subproblem
        The run's blocks.
    executor : None or concurrent.futures.Executor
        What :func:`dpmodels.core.executors.resolve_executor` yielded.
    """
    if not isinstance(executor, DaskExecutor) or not subs:
        yield executor
        return
    blocks = ResidentBlocks(executor.client, subs)
    try:
        yield blocks
    finally:
        blocks.close()
