"""Dask clusters for the executors: a scheduler address, a local cluster, and the executor on a client.

``executor="tcp://host:port"`` (or ``tls://``) connects to a running Dask scheduler;
``executor="dask"`` connects to the scheduler named by ``DASK_SCHEDULER_ADDRESS`` (or Dask's
``scheduler-address`` setting) when there is one, else starts a local cluster.  The address is
checked by its form before anything is imported (:func:`check_scheduler_address`, the command
line's ``--executor`` type), then reached within Dask's connect timeout
(``distributed.comm.timeouts.connect``); a scheduler that does not answer is refused with an error
naming the address and the timeout, before any work.  TLS settings (certificates, keys) are read
from Dask's configuration, as ``distributed.security.Security()`` reads them.

:class:`DaskExecutor` is the :class:`concurrent.futures.Executor` the executors hand out on a Dask
client; it exposes the client, for work that needs more than ``submit``: data sent once per worker
(:func:`dpmodels.core.executors.map_tasks`' ``shared``) and state kept on a worker between tasks
(the Benders blocks).  Nothing here imports ``distributed`` at module import.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
from collections.abc import Iterator
from concurrent.futures import Executor, ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

from .errors import DataValidationError

__all__ = [
    "SCHEDULER_SCHEMES",
    "DaskExecutor",
    "check_scheduler_address",
    "unencrypted_warning",
    "configured_scheduler",
    "connect_scheduler",
    "local_cluster",
    "import_distributed",
]

log = logging.getLogger(__name__)

#: The schemes of a scheduler address that ``--executor`` takes: plain TCP, or TCP with TLS.
SCHEDULER_SCHEMES = ("tcp", "tls")

_ADDRESS = re.compile(r"(?P<scheme>[A-Za-z0-9+.-]+)://(?P<host>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+)(:(?P<port>\d+))?")


def check_scheduler_address(text: str) -> str:
    """Return ``text`` if it is a scheduler address ``tcp://host[:port]`` or ``tls://host[:port]``.

    Only the form is checked (no import, no network): the scheme, a host name, an IPv4 or a
    bracketed IPv6 address, and a port in 1..65535 (Dask's default 8786 when left out).

    Parameters
    ----------
    text : str
        The address, e.g. ``"tcp://10.0.0.5:8786"``.

    Raises
    ------
    DataValidationError
        On field ``executor``, saying what is wrong with the address.
    """
    match = _ADDRESS.fullmatch(text)
    if match is None:
        raise DataValidationError("executor", f"{text!r} is not a scheduler address scheme://host:port")
    scheme = match["scheme"].lower()
    if scheme not in SCHEDULER_SCHEMES:
        raise DataValidationError(
            "executor", f"{text!r}: scheme {scheme!r} is not supported; use tcp:// or tls:// (TCP with TLS)"
        )
    if match["port"] is not None and not 1 <= int(match["port"]) <= 65535:
        raise DataValidationError("executor", f"{text!r}: port {match['port']} is not in 1..65535")
    return text


def configured_scheduler() -> tuple[str, str] | None:
    """``(address, where it was set)`` of the scheduler ``"dask"`` connects to, or None.

    ``DASK_SCHEDULER_ADDRESS`` first (read at the call, so a variable set after Dask was imported
    counts), then Dask's ``scheduler-address`` setting (its YAML configuration); an address without
    a scheme is TCP, as Dask reads it.
    """
    env = os.environ.get("DASK_SCHEDULER_ADDRESS", "").strip()
    if env:
        return _with_scheme(env), "DASK_SCHEDULER_ADDRESS"
    import dask

    configured = dask.config.get("scheduler-address", default=None)
    return (_with_scheme(str(configured)), "Dask's scheduler-address setting") if configured else None


def _with_scheme(address: str) -> str:
    """``host:port`` as Dask reads it: TCP (``tcp://host:port``); an address with a scheme as is."""
    return address if "://" in address else f"tcp://{address}"


def import_distributed() -> Any:
    """Import :mod:`distributed` lazily, with an install hint if it is missing."""
    try:
        import distributed
    except ImportError as exc:
        raise ImportError(
            "a Dask executor needs dask.distributed, which is not installed; "
            "install the dask extra: pip install dpmodels[dask]"
        ) from exc
    return distributed


class DaskExecutor(Executor):
    """A :class:`concurrent.futures.Executor` on a Dask client; ``client`` is that client.

    ``submit`` runs a task on the cluster (``pure=False``: every call runs).  Shutting this
    executor down cancels nothing it did not submit and never closes the client, whose owner
    closes it.

    Parameters
    ----------
    client : distributed.Client
        A connected client.
    """

    def __init__(self, client: Any):
        self.client = client
        self._inner = client.get_executor(pure=False)

    def submit(self, fn, /, *args, **kwargs):
        """Schedule ``fn(*args, **kwargs)`` on the cluster; a :class:`concurrent.futures.Future`."""
        return self._inner.submit(fn, *args, **kwargs)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Wait for (or cancel) what this executor submitted; the client stays open."""
        self._inner.shutdown(wait=wait and not cancel_futures)

    def __repr__(self) -> str:
        return f"DaskExecutor({self.client.scheduler.address})"


def _connect_timeout() -> float:
    """Dask's connect timeout in seconds (``distributed.comm.timeouts.connect``, 30 s by default)."""
    import dask
    from dask.utils import parse_timedelta

    return float(parse_timedelta(dask.config.get("distributed.comm.timeouts.connect"), default="seconds"))


def _probe(address: str, timeout: float, connection_args: dict) -> dict:
    """The scheduler's ``identity`` (workers, threads), asked over one connection in a thread of
    its own (a caller inside a running event loop, e.g. a notebook, can call this too)."""
    from distributed.core import rpc

    async def identity() -> dict:
        async with rpc(address, timeout=timeout, connection_args=connection_args) as scheduler:
            return await scheduler.identity()

    with ThreadPoolExecutor(max_workers=1) as thread:
        return thread.submit(asyncio.run, identity()).result()


def _unreachable(address: str, source: str, timeout: float, exc: BaseException) -> DataValidationError:
    where = f" (from {source})" if source else ""
    hint = (
        "TLS needs its settings: distributed.comm.tls.ca-file, distributed.comm.tls.client.cert and .key in "
        "Dask's configuration (or DASK_DISTRIBUTED__COMM__TLS__... variables)"
        if isinstance(exc, TypeError)
        else "check that the scheduler runs, its address and port, and that this machine may reach it; "
        "the timeout is Dask's distributed.comm.timeouts.connect (DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT)"
    )
    return DataValidationError(
        "executor", f"could not reach the Dask scheduler at {address}{where} within {timeout:g} s: {exc}; {hint}"
    )


@contextmanager
def connect_scheduler(address: str, source: str = "") -> Iterator[DaskExecutor]:
    """Connect to the Dask scheduler at ``address``; yield a :class:`DaskExecutor`, close the client on exit.

    The scheduler is asked who it is first, within Dask's connect timeout: one that does not
    answer (or a ``tls://`` address without TLS settings) is refused with a
    :class:`DataValidationError` on ``executor`` naming the address, where it came from and the
    timeout.  The connection is logged: the address, workers and threads, the dashboard.

    Parameters
    ----------
    address : str
        ``tcp://host:port`` or ``tls://host:port``.
    source : str, optional
        Where the address came from (e.g. ``"DASK_SCHEDULER_ADDRESS"``), for messages.
    """
    try:
        check_scheduler_address(address)
    except DataValidationError as err:
        raise DataValidationError("executor", f"{err.problem} (from {source})" if source else err.problem) from None
    distributed = import_distributed()
    security = distributed.security.Security()  # TLS files from Dask's configuration
    timeout = _connect_timeout()
    try:
        identity = _probe(address, timeout, security.get_connection_args("client"))
    except (OSError, TimeoutError, TypeError, ValueError) as exc:
        raise _unreachable(address, source, timeout, exc) from None
    with distributed.Client(address, timeout=timeout, security=security, set_as_default=False) as client:
        where = f" (from {source})" if source else ""
        _describe(client, f"connected to the Dask scheduler at {address}{where}", identity)
        warning = unencrypted_warning(address)
        if warning:
            log.warning("%s", warning)
        yield DaskExecutor(client)


def unencrypted_warning(address: str) -> str | None:
    """What is said on connecting to a ``tcp://`` scheduler beyond this machine (None for ``tls://``
    or a loopback address): its tasks cross the network in clear.

    Parameters
    ----------
    address : str
        A checked scheduler address (:func:`check_scheduler_address`).
    """
    host = _ADDRESS.fullmatch(address).group("host").strip("[]")
    if not address.startswith("tcp://") or host in ("localhost", "::1") or host.startswith("127."):
        return None
    return (
        f"the connection to {address} is not encrypted: anyone on the network path can read and alter the tasks "
        "(noisy answers before their release); use tls:// with Dask's TLS settings (docs: Running on a cluster)"
    )


@contextmanager
def local_cluster() -> Iterator[DaskExecutor]:
    """Start a Dask ``LocalCluster`` (one single-threaded worker process per core); close it on exit."""
    distributed = import_distributed()
    with (
        distributed.LocalCluster(n_workers=os.cpu_count(), threads_per_worker=1, processes=True) as cluster,
        distributed.Client(cluster, set_as_default=False) as client,
    ):
        _describe(client, f"started a local Dask cluster at {cluster.scheduler_address}")
        yield DaskExecutor(client)


def _describe(client: Any, what: str, identity: dict | None = None) -> None:
    """Log the cluster: what was done, its workers and threads, its dashboard (if it has one)."""
    info = identity or client.scheduler_info()
    workers = info.get("n_workers", len(info.get("workers", {})))
    threads = info.get("total_threads", sum(w.get("nthreads", 0) for w in info.get("workers", {}).values()))
    board = client.dashboard_link if "dashboard" in info.get("services", {}) else "none (pip install bokeh)"
    log.info("dask: %s: %d workers, %d threads; dashboard %s", what, workers, threads, board)
    if workers == 0:
        log.warning("dask: the scheduler has no workers yet: tasks wait until workers join")
