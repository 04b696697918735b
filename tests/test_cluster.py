"""Dask clusters reached by address (issue 25), on a real LocalCluster of two worker processes: no mocks.

Oracles: the serial run of the same work (a release's bytes, TopDown's histograms cell for cell,
Benders' status and bounds), the worker processes' ids (the work ran there, not here), Dask's own
view of its workers, and a port nothing listens on.
"""

from __future__ import annotations

import logging
import os
import socket

import numpy as np
import pytest
from cluster_tasks import with_shared, worker_pid
from release_cases import topdown as topdown_case

from dpmodels import cli
from dpmodels.core.clusters import DaskExecutor, check_scheduler_address
from dpmodels.core.errors import DataValidationError
from dpmodels.core.executors import map_tasks, resolve_executor

distributed = pytest.importorskip("distributed")
dask = pytest.importorskip("dask")


@pytest.fixture(scope="module")
def cluster():
    """One LocalCluster of two single-threaded worker processes for the module."""
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None, silence_logs=logging.ERROR
    ) as local:
        yield local


@pytest.fixture(scope="module")
def client(cluster):
    with distributed.Client(cluster, set_as_default=False) as c:
        yield c


@pytest.fixture
def fast_timeout():
    """Dask's connect timeout at half a second, so that an unreachable scheduler is refused quickly."""
    with dask.config.set({"distributed.comm.timeouts.connect": "500ms"}):
        yield


class _Lines(logging.Handler):
    def __init__(self):
        super().__init__(logging.INFO)
        self.lines: list[str] = []

    def emit(self, record):
        self.lines.append(record.getMessage())


@pytest.fixture
def cluster_log():
    """What dpmodels.core.clusters logs at INFO, read from its own logger: whatever an earlier test in this
    process did to the handlers, propagation or levels of the loggers above it (commands configure them)."""
    logger, lines = logging.getLogger("dpmodels.core.clusters"), _Lines()
    state = (logger.level, logger.disabled, logging.root.manager.disable)
    logger.setLevel(logging.INFO)
    logger.disabled = False
    logging.disable(logging.NOTSET)
    logger.addHandler(lines)
    yield lines.lines
    logger.removeHandler(lines)
    logger.setLevel(state[0])
    logger.disabled = state[1]
    logging.disable(state[2])


def nobody_listens() -> str:
    """``tcp://127.0.0.1:<port>`` of a port that was free a moment ago (nothing listens there)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"tcp://127.0.0.1:{port}"


def worker_pids(client) -> set[int]:
    return set(client.run(os.getpid).values())


# ---------------------------------------------------------------------- reaching a scheduler
def test_an_address_runs_the_tasks_on_that_cluster_and_says_so(cluster, client, cluster_log):
    address = cluster.scheduler_address
    with resolve_executor(address) as ex:
        assert isinstance(ex, DaskExecutor) and ex.client.scheduler.address == address
        pids = set(map_tasks(worker_pid, range(6), executor=ex))
    assert pids <= worker_pids(client) and os.getpid() not in pids
    assert any(f"connected to the Dask scheduler at {address}: 2 workers, 2 threads" in line for line in cluster_log)
    assert client.status == "running"  # the connection is closed, the cluster left running


def test_dask_connects_to_DASK_SCHEDULER_ADDRESS(cluster, client, monkeypatch, cluster_log):
    monkeypatch.setenv("DASK_SCHEDULER_ADDRESS", cluster.scheduler_address)
    with resolve_executor("dask") as ex:
        assert ex.client.scheduler.address == cluster.scheduler_address  # no new local cluster
        assert set(map_tasks(worker_pid, range(4), executor=ex)) <= worker_pids(client)
    assert any("(from DASK_SCHEDULER_ADDRESS)" in line for line in cluster_log)


def test_an_unreachable_scheduler_is_refused_with_its_address_and_the_timeout(fast_timeout):
    address = nobody_listens()
    with pytest.raises(DataValidationError) as info:
        with resolve_executor(address):
            pass  # pragma: no cover
    assert info.value.field == "executor"
    assert f"could not reach the Dask scheduler at {address} within 0.5 s" in info.value.problem
    assert "distributed.comm.timeouts.connect" in info.value.problem


def test_an_unreachable_DASK_SCHEDULER_ADDRESS_is_named_as_such(fast_timeout, monkeypatch):
    address = nobody_listens()
    monkeypatch.setenv("DASK_SCHEDULER_ADDRESS", address)
    with pytest.raises(DataValidationError, match=rf"at {address} \(from DASK_SCHEDULER_ADDRESS\) within 0.5 s"):
        with resolve_executor("dask"):
            pass  # pragma: no cover


def test_DASK_SCHEDULER_ADDRESS_without_a_scheme_is_tcp_and_a_bad_one_is_named(cluster, client, monkeypatch):
    monkeypatch.setenv("DASK_SCHEDULER_ADDRESS", cluster.scheduler_address.removeprefix("tcp://"))
    with resolve_executor("dask") as ex:
        assert ex.client.scheduler.address == cluster.scheduler_address
    monkeypatch.setenv("DASK_SCHEDULER_ADDRESS", "udp://127.0.0.1:8786")
    with pytest.raises(DataValidationError, match=r"scheme 'udp' is not supported.*\(from DASK_SCHEDULER_ADDRESS\)"):
        with resolve_executor("dask"):
            pass  # pragma: no cover


def test_tls_without_tls_settings_is_refused_naming_the_settings(fast_timeout):
    with pytest.raises(DataValidationError, match="TLS needs its settings: distributed.comm.tls.ca-file"):
        with resolve_executor(nobody_listens().replace("tcp://", "tls://")):
            pass  # pragma: no cover


@pytest.mark.parametrize(
    "address", ["tcp://10.0.0.5:8786", "tls://scheduler.example.org:8786", "tcp://[::1]:8786", "tcp://host"]
)
def test_scheduler_address_forms_accepted(address):
    assert check_scheduler_address(address) == address


@pytest.mark.parametrize(
    "address, problem",
    [
        ("udp://host:8786", "scheme 'udp' is not supported"),
        ("tcp://host:0", "port 0 is not in 1..65535"),
        ("tcp://host:70000", "port 70000 is not in 1..65535"),
        ("tcp://", "is not a scheduler address"),
        ("tcp://a b:1", "is not a scheduler address"),
        ("tcp://host:8786/path", "is not a scheduler address"),
    ],
)
def test_malformed_addresses_are_refused_by_the_command_line(address, problem, capsys):
    assert cli.main(["compare", "topdown", "--executor", address]) == 2
    assert problem in capsys.readouterr().err


# ---------------------------------------------------------------------- what goes over the wire
def test_shared_data_reaches_each_worker_once(client):
    payload = np.arange(8.0) * 3
    out = map_tasks(with_shared, range(8), executor=client, shared=payload)
    assert [value for _, _, value in out] == list(payload)  # every task read the shared data
    copies = {}
    for pid, identity, _ in out:
        copies.setdefault(pid, set()).add(identity)
    assert all(len(ids) == 1 for ids in copies.values()), copies  # one copy per worker, not one per task
    assert map_tasks(with_shared, range(3), shared=payload) == [(os.getpid(), id(payload), v) for v in payload[:3]]


# The workers import dpmodels' families (pyomo, scipy, pandas) for the tests below: seconds each.
@pytest.mark.slow
def test_topdown_serial_process_pool_and_cluster_give_one_release(client):
    from dpmodels import instances
    from dpmodels.topdown.driver import topdown
    from dpmodels.topdown.mechanism import measure

    data = instances.generate("topdown/synthetic", preset="small", seed=4)
    meas = measure(data, 1.0, rng=5)
    args = (meas, data.knowledge, data.schema, data.geography)
    serial, on_cluster, pooled = topdown(*args), topdown(*args, executor=client), topdown(*args, executor=2)
    assert (serial.node_counts != on_cluster.node_counts).nnz == 0
    assert (serial.node_counts != pooled.node_counts).nnz == 0
    for other in (on_cluster, pooled):
        assert serial.log.drop(columns="seconds").equals(other.log.drop(columns="seconds"))


@pytest.mark.slow
def test_release_from_the_command_line_on_the_cluster_is_the_serial_one(cluster, tmp_path, capsys):
    case = topdown_case(tmp_path)
    seeded = ["--epsilon", "1", "--seed", "3", "--not-private", "--force"]
    assert cli.main([*case.argv, *seeded, "-q"]) == 0
    serial = {flag: path.read_bytes() for flag, path in case.outputs.items()}
    capsys.readouterr()
    assert cli.main([*case.argv, *seeded, "--executor", cluster.scheduler_address]) == 0
    assert f"connected to the Dask scheduler at {cluster.scheduler_address}" in capsys.readouterr().err
    assert {flag: path.read_bytes() for flag, path in case.outputs.items()} == serial


def test_the_command_line_refuses_an_unreachable_scheduler_before_any_work(tmp_path, capsys, fast_timeout):
    case = topdown_case(tmp_path)
    address = nobody_listens()
    argv = [*case.argv, "--epsilon", "1", "--seed", "3", "--not-private", "--executor", address]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert f"dpmodels: error: executor: could not reach the Dask scheduler at {address} within 0.5 s" in err
    assert not any(path.exists() for path in case.written)  # nothing drawn, nothing written


# ---------------------------------------------------------------------- Benders
def mdp_case(rows=6, cols=8, K=10, blocks=3):
    """A grid whose k-m-DV partition has three blocks with internal records (10 iterations to 1e-3)."""
    from dpmodels import instances
    from dpmodels.metricdp.partition import partition

    inst = instances.from_settings("mdp/grid", {"rows": rows, "cols": cols, "K": K, "epsilon": 1.0})
    return inst, partition(inst, "k-m-DV", M=blocks)


@pytest.mark.slow
def test_benders_blocks_stay_on_the_workers_and_solve_as_serially(client):
    from dpmodels.metricdp.benders import ResidentBlocks, build_subproblems, held_blocks, solve_block
    from dpmodels.metricdp.mechanism import exponential_mechanism

    inst, part = mdp_case()
    y = part.all_boundary
    points = [exponential_mechanism(inst)[y].ravel(), np.full(len(y) * inst.K, 1.0 / inst.K)]
    local = build_subproblems(inst, part, y)
    expected = [[solve_block(sub, point) for sub in local] for point in points]  # serially, warm-started
    blocks = ResidentBlocks(client, build_subproblems(inst, part, y))
    try:
        got = [blocks.solve(point) for point in points]
        held = client.run(held_blocks, blocks.token)
    finally:
        blocks.close()
    assert sorted(b for h in held.values() for b in h) == sorted(sub.block for sub in local)  # each once
    assert sum(bool(h) for h in held.values()) == 2  # on both workers
    assert all(all(h.values()) for h in held.values())  # each block's LP built and kept between rounds
    for want_round, got_round in zip(expected, got, strict=True):
        for want, have in zip(want_round, got_round, strict=True):
            assert (have.block, have.feasible, have.value, have.const) == (
                want.block,
                want.feasible,
                want.value,
                want.const,
            )
            np.testing.assert_array_equal(have.coeff, want.coeff)
    assert not any(client.run(held_blocks, blocks.token).values())  # freed at the end


@pytest.mark.slow
def test_benders_on_the_cluster_gives_the_serial_run(client):
    from dpmodels.metricdp.benders import benders

    inst, part = mdp_case()
    serial = benders(inst, part, gap=1e-3)
    on_cluster = benders(inst, part, gap=1e-3, executor=client)
    assert (on_cluster.status, on_cluster.iterations) == (serial.status, serial.iterations)
    assert on_cluster.upper_bound == pytest.approx(serial.upper_bound, rel=1e-9)
    assert on_cluster.lower_bound == pytest.approx(serial.lower_bound, rel=1e-9)


@pytest.mark.slow
def test_a_worker_leaving_with_its_blocks_is_reported_not_waited_for():
    from dpmodels.metricdp.benders import ResidentBlocks, build_subproblems

    inst, part = mdp_case()
    subs = build_subproblems(inst, part, part.all_boundary)
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None, silence_logs=logging.CRITICAL
        ) as local,
        distributed.Client(local, set_as_default=False) as c,
    ):
        blocks = ResidentBlocks(c, subs)
        c.retire_workers([blocks.groups[0][0]])
        with pytest.raises(RuntimeError, match="left the cluster with their Benders blocks"):
            blocks.solve(np.full(len(part.all_boundary) * inst.K, 1.0 / inst.K))


@pytest.mark.slow
def test_bench_cluster_reports_the_serial_results_on_the_cluster(tmp_path):
    import json

    out = tmp_path / "cluster.json"
    assert cli.main(["bench", "cluster", "--quick", "--json", str(out), "-q"]) == 0
    found = json.loads(out.read_text())
    assert [r["run"] for r in found["topdown"]][0] == "serial" and len(found["benders"]) == 3
    assert all(r["same release as serial"] for r in found["topdown"])
    resident = found["benders"][-1]
    assert resident["run"] == "dask, blocks resident" and resident["same result as serial"]
    assert found["topdown"][0]["max bytes now"] < found["topdown"][0]["max bytes before"]


@pytest.mark.parametrize(
    "address, warned",
    [("tcp://10.0.0.5:8786", True), ("tcp://scheduler.example:8786", True), ("tls://10.0.0.5:8786", False),
     ("tcp://127.0.0.1:8786", False), ("tcp://localhost:8786", False), ("tcp://[::1]:8786", False)],
)  # fmt: skip
def test_a_scheduler_reached_in_clear_across_the_network_is_warned_of(address, warned):
    from dpmodels.core.clusters import unencrypted_warning

    text = unencrypted_warning(address)
    assert (text is not None) == warned and (not warned or "not encrypted" in text and "tls://" in text)
