"""Tests of dpmodels.core.executors: serial, process pool, user executors and Dask."""

from __future__ import annotations

import logging
import os
import sys
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from multiprocessing import get_context
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpmodels.core.errors import DataValidationError
from dpmodels.core.executors import CHUNKS_PER_SLOT, chunk_bounds, map_tasks, resolve_executor

distributed = pytest.importorskip("distributed")

ITEMS = list(range(12))


# Task functions: module level so they pickle (by reference, as module + name).


def keyed_work(item: int) -> tuple[int, float]:
    """Seeded numpy work whose result depends only on the item."""
    rng = np.random.default_rng(1000 + item)
    a = rng.standard_normal((30, 30))
    return item, float(np.sort(a @ a.T, axis=None)[-5:].sum() + item)


def worker_pid(_item: int) -> int:
    """The id of the process that ran the task."""
    return os.getpid()


def fail_on_three(item: int) -> int:
    """Raise for item 3 only."""
    if item == 3:
        raise ValueError(f"item {item} is bad")
    return item


EXPECTED = [keyed_work(i) for i in ITEMS]


@pytest.fixture(scope="module", autouse=True)
def _workers_can_import_this_module():
    """Let spawned workers (Dask's, or a spawn process pool) unpickle the task functions.

    Under ``--import-mode=importlib`` pytest imports this file as a module whose
    root is not on ``sys.path``; spawned children copy the parent's ``sys.path``,
    so appending that root here makes the module importable there too.
    """
    depth = len(__name__.split("."))
    root = str(Path(__file__).resolve().parents[depth - 1])
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(sys, "path", [*sys.path, root])
        yield


@pytest.fixture(scope="module")
def dask_client():
    """One real two-process Dask cluster shared by the module's tests."""
    with (
        distributed.LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            dashboard_address=":0",
            silence_logs=logging.ERROR,
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        yield client


@pytest.fixture
def thread_pool():
    with ThreadPoolExecutor(max_workers=3) as pool:
        yield pool


# --- ordered, identical results on every backend -------------------------------------


@pytest.mark.parametrize("spec", [None, "serial", "process", 2])
def test_local_specs_give_ordered_results(spec):
    assert map_tasks(keyed_work, ITEMS, executor=spec) == EXPECTED


def test_user_thread_pool_is_used_and_left_open(thread_pool):
    assert map_tasks(keyed_work, iter(ITEMS), executor=thread_pool) == EXPECTED
    assert thread_pool.submit(fail_on_three, 7).result() == 7  # still usable


def test_user_spawn_process_pool_is_used_and_left_open():
    with ProcessPoolExecutor(max_workers=2, mp_context=get_context("spawn")) as pool:
        assert map_tasks(keyed_work, ITEMS, executor=pool) == EXPECTED
        assert os.getpid() not in map_tasks(worker_pid, range(4), executor=pool)
        assert pool.submit(fail_on_three, 5).result() == 5


def test_dask_client_gives_ordered_results_and_stays_open(dask_client):
    assert map_tasks(keyed_work, ITEMS, executor=dask_client) == EXPECTED
    assert dask_client.status == "running"
    assert map_tasks(keyed_work, ITEMS[:3], executor=dask_client) == EXPECTED[:3]


def test_dask_executor_instance_is_accepted(dask_client):
    ex = dask_client.get_executor()
    assert map_tasks(keyed_work, ITEMS, executor=ex) == EXPECTED


def test_dask_string_starts_and_closes_local_cluster():
    with resolve_executor("dask") as ex:
        client = ex.client
        assert map_tasks(keyed_work, ITEMS, executor=ex) == EXPECTED
        pids = set(map_tasks(worker_pid, range(8), executor=ex))
        assert os.getpid() not in pids
    assert client.status == "closed"


def test_map_tasks_accepts_dask_string():
    assert map_tasks(keyed_work, ITEMS[:4], executor="dask") == EXPECTED[:4]


@pytest.mark.parametrize("spec", [None, "serial", "process", 2])
def test_empty_items(spec):
    assert map_tasks(keyed_work, [], executor=spec) == []


# --- work really leaves the parent process --------------------------------------------


def test_serial_and_threads_run_in_parent(thread_pool):
    parent = os.getpid()
    assert set(map_tasks(worker_pid, range(4))) == {parent}
    assert set(map_tasks(worker_pid, range(4), executor=thread_pool)) == {parent}


@pytest.mark.parametrize("spec", ["process", 2])
def test_process_pool_runs_in_other_processes(spec):
    pids = map_tasks(worker_pid, range(8), executor=spec)
    assert os.getpid() not in pids


def test_int_spec_sets_pool_size():
    with resolve_executor(2) as ex:
        assert ex._max_workers == 2
    with resolve_executor("process") as ex:
        assert ex._max_workers == os.cpu_count()


def test_dask_runs_in_other_processes(dask_client):
    pids = set(map_tasks(worker_pid, range(8), executor=dask_client))
    worker_pids = set(dask_client.run(os.getpid).values())
    assert os.getpid() not in pids
    assert pids <= worker_pids


# --- errors -------------------------------------------------------------------------


def _assert_fails_at_index_three(spec):
    with pytest.raises(ValueError, match="item 3 is bad") as info:
        map_tasks(fail_on_three, ITEMS, executor=spec)
    assert type(info.value) is ValueError
    assert any("item index 3 " in note for note in info.value.__notes__)


@pytest.mark.parametrize("spec", [None, "process", 2])
def test_exception_carries_failing_index(spec):
    _assert_fails_at_index_three(spec)


def test_exception_from_thread_pool(thread_pool):
    _assert_fails_at_index_three(thread_pool)
    assert thread_pool.submit(fail_on_three, 1).result() == 1


def test_exception_from_dask(dask_client):
    _assert_fails_at_index_three(dask_client)
    assert map_tasks(fail_on_three, [1, 2], executor=dask_client) == [1, 2]


def test_exception_with_progress_bar():
    with pytest.raises(ValueError, match="item index 3 "):
        map_tasks(fail_on_three, ITEMS, executor=2, progress=True)


class _Sentinel:
    pass


@pytest.mark.parametrize("spec", [0, -1, 2.5, True, "gpu", "Process", "", "threads", _Sentinel(), [2]])
def test_bad_spec_raises_data_validation_error(spec):
    with pytest.raises(DataValidationError, match="executor") as info:
        with resolve_executor(spec):
            pass  # pragma: no cover
    assert info.value.field == "executor"
    assert repr(spec) in info.value.problem
    assert "'process'" in info.value.problem and "Executor" in info.value.problem


def test_bad_spec_in_map_tasks():
    with pytest.raises(DataValidationError, match="executor"):
        map_tasks(keyed_work, ITEMS, executor="gpu")


def test_missing_distributed_gives_install_hint(monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)  # makes the import fail
    with pytest.raises(ImportError, match=r"pip install dpmodels\[dask\]"):
        with resolve_executor("dask"):
            pass  # pragma: no cover
    assert map_tasks(keyed_work, ITEMS[:2]) == EXPECTED[:2]  # serial needs no dask


# --- progress bar -------------------------------------------------------------------


@pytest.mark.parametrize("spec", [None, 2])
def test_progress_bar_counts_every_task(spec, capsys):
    out = map_tasks(keyed_work, ITEMS, executor=spec, progress=True, desc="trials")
    assert out == EXPECTED
    err = capsys.readouterr().err
    assert "trials" in err and f"{len(ITEMS)}/{len(ITEMS)}" in err


def test_progress_bar_with_dask(dask_client, capsys):
    assert map_tasks(keyed_work, ITEMS, executor=dask_client, progress=True) == EXPECTED
    assert f"{len(ITEMS)}/{len(ITEMS)}" in capsys.readouterr().err


def test_no_progress_output_by_default(capsys):
    map_tasks(keyed_work, ITEMS[:3], executor=2)
    assert capsys.readouterr().err == ""


# ---------------------------------------------------------------- chunks
@settings(max_examples=60, deadline=None)
@given(st.integers(0, 3000), st.integers(1, 64))
def test_chunks_cover_the_items_in_order_about_four_per_slot(n_items, slots):
    bounds = chunk_bounds(n_items, slots)
    starts = [a for a, _ in bounds]
    assert starts == sorted(starts) and all(a < b for a, b in bounds)
    assert [i for a, b in bounds for i in range(a, b)] == list(range(n_items))  # every item once, in order
    assert len(bounds) <= CHUNKS_PER_SLOT * slots
    if n_items >= CHUNKS_PER_SLOT * slots:
        assert len(bounds) > (CHUNKS_PER_SLOT * slots) // 2  # enough chunks to balance the slots


class _CountingPool(ThreadPoolExecutor):
    """A real thread pool that counts the tasks submitted to it."""

    def __init__(self, workers):
        super().__init__(max_workers=workers)
        self.submitted = 0

    def submit(self, fn, /, *args, **kwargs):
        self.submitted += 1
        return super().submit(fn, *args, **kwargs)


def test_a_pool_gets_one_task_per_chunk_and_the_results_in_order():
    with _CountingPool(3) as pool:
        out = map_tasks(keyed_work, range(500), executor=pool)
    assert out == [keyed_work(i) for i in range(500)]
    assert pool.submitted == len(chunk_bounds(500, 3)) == CHUNKS_PER_SLOT * 3
