"""``dpmodels bench cluster``: TopDown and Benders on a Dask cluster of separate worker processes,
measured beside the serial run in one run (issue 25).

(a) TopDown: one synthetic census (``--preset``, default ``county``) measured once, then
    post-processed serially, on the cluster and on a process pool of the same size: the seconds,
    the speed-up over serial, whether every release is the serial one cell for cell, and the bytes
    each task sends: the whole :class:`~dpmodels.topdown.node_data.NodeProblem` (what every task
    carried before :mod:`dpmodels.topdown.wire`) against the shipped problem, plus the public
    context sent once per worker.
(b) Benders (``mdp/grid``, default a 6 x 20 strip, K = 20, 2 blocks, where the block rounds take
    about as long as the master): serially, on the cluster with every block shipped and solved cold each
    iteration (a plain ``concurrent.futures`` view of the client: the route before issue 25) and with
    the blocks resident on the workers (:mod:`dpmodels.metricdp.benders.resident`): seconds, status,
    iterations and bounds against the serial run's, and the bytes sent per iteration.

The cluster is a ``LocalCluster`` of ``--workers`` single-threaded worker processes started here, or
the running scheduler at ``--scheduler tcp://host:port``.
"""

from __future__ import annotations

import logging
import os
import pickle
import time
from contextlib import contextmanager

from dpmodels.core import options as std
from dpmodels.core.commands import executor_name, nonnegative_float, positive_int
from dpmodels.core.runner import experiment

__all__ = ["COMMAND", "topdown_on_cluster", "benders_on_cluster", "task_bytes", "cluster"]

log = logging.getLogger(__name__)


@contextmanager
def cluster(scheduler: str | None = None, workers: int = 2):
    """A Dask client: of the scheduler at ``scheduler``, or of a LocalCluster of ``workers`` processes."""
    from dpmodels.core.clusters import connect_scheduler, import_distributed

    if scheduler:
        with connect_scheduler(scheduler) as ex:
            yield ex.client
        return
    distributed = import_distributed()
    with (
        distributed.LocalCluster(
            n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None, silence_logs=logging.ERROR
        ) as local,
        distributed.Client(local, set_as_default=False) as client,
    ):
        yield client


def _timed(fn, *args, **kwargs):
    tick = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - tick


def task_bytes(data, measurements, result, options=None) -> dict:
    """Pickled bytes of every child solve of ``result``: the whole problem (before) and shipped (now).

    Every parent the driver sent to the executor (two children or more, a nonzero histogram) is
    rebuilt by :func:`~dpmodels.topdown.driver.node_problem` from the released histogram.

    Parameters
    ----------
    data : TopDownData
        The census (its public parts are read).
    measurements : Measurements
        The noisy answers.
    result : TopDownResult
        The release whose solves are measured.
    options : NodeOptions, optional
        The solves' options (they went with every task before).
    """
    import numpy as np

    from dpmodels.topdown.driver import node_problem
    from dpmodels.topdown.solve import NodeOptions
    from dpmodels.topdown.wire import shared_context, ship

    options = options or NodeOptions()
    geo, counts = data.geography, result.node_counts.tocsr()
    before, after, shared = [], [], 0
    for p in range(geo.n_regions):
        parent = counts[p].toarray().ravel()
        if len(geo.children(p)) < 2 or not parent.any():
            continue
        problem = node_problem(data, measurements, p, parent)
        before.append(len(pickle.dumps((problem, options))))
        after.append(len(pickle.dumps(ship(problem))))
        shared = len(pickle.dumps((shared_context(problem), options)))
    before, after = np.array(before), np.array(after)
    return {
        "tasks": len(before),
        "mean bytes before": float(before.mean()),
        "max bytes before": int(before.max()),
        "mean bytes now": float(after.mean()),
        "max bytes now": int(after.max()),
        "shared bytes (once per worker and level)": shared,
        "total bytes before": int(before.sum()),
        "total bytes now": int(after.sum()),
    }


def _interleaved(runs: dict, repeats: int) -> tuple[dict, dict]:
    """Run every ``runs[label]()`` in turn, ``repeats`` rounds (A B A B ...: a change of the machine's
    load hits every run alike); ``({label: seconds of each round}, {label: last result})``."""
    seconds: dict[str, list[float]] = {label: [] for label in runs}
    last: dict = {}
    for _ in range(repeats):
        for label, run in runs.items():
            last[label], took = _timed(run)
            seconds[label].append(took)
    return seconds, last


def _timing(seconds: dict, label: str, reference: str) -> dict:
    """The median seconds of ``label`` and its median speed-up over ``reference``, round by round."""
    import statistics

    ratios = [r / t for r, t in zip(seconds[reference], seconds[label], strict=True)]
    return {"seconds": statistics.median(seconds[label]), "speed-up": statistics.median(ratios)}


def topdown_on_cluster(client, preset: str, races: int, epsilon: float, seed: int, workers: int, repeats: int = 2):
    """Serial, Dask and process-pool post-processing of one measured census: one row each.

    Each executor first runs once untimed (``first run s``: the workers' imports and first solves),
    then the three take turns for ``repeats`` rounds: ``seconds`` is the median, ``speed-up`` the
    median of the round-by-round ratios to serial; every release is compared with the serial one
    cell for cell.
    """
    from contextlib import ExitStack
    from functools import partial

    import dpmodels.instances as instances
    from dpmodels.core.executors import resolve_executor
    from dpmodels.topdown.driver import topdown
    from dpmodels.topdown.mechanism import measure

    data = instances.generate("topdown/synthetic", preset=preset, races=races, seed=seed)
    meas = measure(data, epsilon, rng=seed)
    specs = {"serial": None, f"dask ({workers} workers)": client, f"process pool ({workers})": workers}
    with ExitStack() as stack:
        runs = {
            label: partial(topdown, meas, data.knowledge, data.schema, data.geography, executor=executor)
            for label, executor in ((k, stack.enter_context(resolve_executor(v))) for k, v in specs.items())
        }
        first = {label: _timed(run)[1] for label, run in runs.items()}  # one pool per executor for every run
        seconds, results = _interleaved(runs, repeats)
    reference = results["serial"]
    rows = []
    for label, result in results.items():
        same = (result.node_counts != reference.node_counts).nnz == 0
        row = {"part": "topdown", "run": label, **_timing(seconds, label, "serial"), "first run s": first[label]}
        rows.append({**row, "same release as serial": same, "broken constraints": int(sum(result.checks.values()))})
        log.info(
            "  topdown %-22s %7.2f s (first run %.2f s)  same as serial: %s", label, row["seconds"], first[label], same
        )
    rows[0].update(task_bytes(data, meas, reference), persons=data.population, regions=data.geography.n_regions)
    return rows


def _import_benders() -> None:
    import dpmodels.metricdp.benders.resident  # noqa: F401


def _benders_row(label: str, res, timing: dict, ref) -> dict:
    same = (
        res.status == ref.status
        and abs(res.upper_bound - ref.upper_bound) <= 1e-9 * max(1.0, abs(ref.upper_bound))
        and abs(res.lower_bound - ref.lower_bound) <= 1e-9 * max(1.0, abs(ref.lower_bound))
    )
    row = {"part": "benders", "run": label, **timing, "status": res.status, "iterations": res.iterations}
    row["master s"] = float(res.history["master s"].sum())  # the same work in every run of the serial iterates
    row["block rounds s"] = float(res.history["subproblems s"].sum() + res.history["recovery s"].sum())
    row.update({"upper bound": res.upper_bound, "lower bound": res.lower_bound, "same result as serial": same})
    log.info("  benders %-30s %7.2f s  %s in %d iterations", label, row["seconds"], res.status, res.iterations)
    return row


def benders_on_cluster(client, rows: int, cols: int, K: int, blocks: int, gap: float, repeats: int = 2) -> list[dict]:
    """Benders serially and with resident blocks on the cluster (taking turns for ``repeats``
    rounds: median seconds, median round-by-round speed-up), and once with the blocks shipped cold
    every iteration (the route before; its speed-up is against the serial median): one row each."""
    import statistics
    from functools import partial

    import numpy as np

    import dpmodels.instances as instances
    from dpmodels.metricdp.benders import benders, build_subproblems
    from dpmodels.metricdp.partition import partition

    inst = instances.from_settings("mdp/grid", {"rows": rows, "cols": cols, "K": K, "epsilon": 1.0})
    part = partition(inst, "k-m-DV", M=blocks)
    client.run(_import_benders)  # the workers' imports are not Benders' time
    runs = {
        "serial": partial(benders, inst, part, gap=gap),
        "dask, blocks resident": partial(benders, inst, part, gap=gap, executor=client),
    }
    seconds, results = _interleaved(runs, repeats)
    ref = results["serial"]
    out = [_benders_row(label, results[label], _timing(seconds, label, "serial"), ref) for label in runs]
    shipped, took = _timed(benders, inst, part, gap=gap, executor=client.get_executor())  # a plain Executor
    timing = {"seconds": took, "speed-up": statistics.median(seconds["serial"]) / took}
    out.insert(1, _benders_row("dask, blocks shipped (before)", shipped, timing, ref))
    subs = build_subproblems(inst, part, part.all_boundary)
    zy = np.zeros(len(part.all_boundary) * inst.K)
    out[0]["bytes per iteration before"] = sum(len(pickle.dumps((s, zy))) for s in subs)
    out[0]["bytes per iteration now (per thread)"] = len(pickle.dumps(zy))
    out[0]["blocks"] = len(subs)
    return out


# ---------------------------------------------------------------------- the command
def _address(text: str) -> str:
    """``--scheduler``'s type: a scheduler address (its form)."""
    import argparse

    if "://" not in text:
        raise argparse.ArgumentTypeError(f"expected a scheduler address tcp://host:port, got {text!r}")
    return executor_name(text)


def _arguments(p) -> None:
    p.add_argument(
        "--scheduler",
        type=_address,
        help="a running Dask scheduler tcp://host:port (default: a LocalCluster of --workers processes started here)",
    )
    p.add_argument("--workers", type=positive_int, default=2, help="worker processes of the LocalCluster")
    p.add_argument(
        "--preset",
        default="county",
        choices=("tiny", "small", "county", "state"),
        help="TopDown: the synthetic geography (tiny, small, county, state)",
    )
    p.add_argument("--races", type=positive_int, default=63, help="TopDown: cenrace categories (1..63)")
    grid = ("ROWS", "COLS", "K", "BLOCKS")
    p.add_argument("--grid", type=positive_int, nargs=4, default=[6, 20, 20, 2], metavar=grid, help="Benders: mdp/grid")
    p.add_argument("--gap", type=nonnegative_float, default=1e-3, help="Benders: the relative gap")
    p.add_argument("--skip", choices=("topdown", "benders"), action="append", default=[], help="leave a part out")
    p.add_argument("--quick", action="store_true", help="the tiny preset, a 6 x 8 grid (K = 10, 3 blocks), one round")


def _lines(rows: list[dict]) -> list[str]:
    lines = []
    for row in rows:
        same = row.get("same release as serial", row.get("same result as serial"))
        extra = (
            f"  {row['status']} in {row['iterations']} iterations; master {row['master s']:.2f} s, "
            f"block rounds {row['block rounds s']:.2f} s"
            if row["part"] == "benders"
            else ""
        )
        lines.append(
            f"  {row['part']:8s} {row['run']:32s} {row['seconds']:8.2f} s  speed-up {row['speed-up']:5.2f}x  "
            f"same as serial: {same}{extra}"
        )
        if "tasks" in row:
            lines.append(
                f"  {'':8s} bytes per task, {row['tasks']} tasks: before mean {row['mean bytes before']:,.0f} max "
                f"{row['max bytes before']:,}; now mean {row['mean bytes now']:,.0f} max {row['max bytes now']:,} "
                f"(+ {row['shared bytes (once per worker and level)']:,} public context once per worker and level)"
            )
        if "bytes per iteration before" in row:
            lines.append(
                f"  {'':8s} bytes sent per iteration: before {row['bytes per iteration before']:,} "
                f"({row['blocks']} blocks); now {row['bytes per iteration now (per thread)']:,} per thread"
            )
    return lines


def _run(args):
    import pandas as pd

    from dpmodels.core.runner import Result

    preset, grid = ("tiny", [6, 8, 10, 3]) if args.quick else (args.preset, args.grid)
    repeats = 1 if args.quick else args.runs
    document: dict = {"conditions": {"load average at the start (1 min)": os.getloadavg()[0], "cores": os.cpu_count()}}
    with cluster(args.scheduler, args.workers) as client:
        workers = len(client.scheduler_info(n_workers=-1)["workers"])
        header = f"Dask cluster {client.scheduler.address}: {workers} worker processes"
        log.info("%s", header)
        document["conditions"]["worker processes"] = workers
        if "topdown" not in args.skip:
            document["topdown"] = topdown_on_cluster(client, preset, args.races, 4.0, args.seed, workers, repeats)
        if "benders" not in args.skip:
            document["benders"] = benders_on_cluster(client, *grid, args.gap, repeats)
    rows = [*document.get("topdown", []), *document.get("benders", [])]
    report = [header, *_lines(rows)]
    must_match = [r for r in rows if "(before)" not in r["run"]]  # cold solves need not follow the serial iterates
    failed = any(not r.get("same release as serial", r.get("same result as serial", True)) for r in must_match)
    return Result(pd.DataFrame(rows), ["\n".join(report)], document=document, exit_code=int(failed))


#: ``dpmodels bench cluster`` (registered by the command line beside the families' benches).
COMMAND = experiment(
    "TopDown and Benders on a Dask cluster of worker processes beside serial: same result, speed-up, bytes per task",
    _run,
    options=(
        std.seed(0, "seed of the synthetic census and its noise (experiments, not releases)"),
        std.runs(2, "rounds in which serial and the cluster take turns (medians)"),
    ),
    arguments=_arguments,
    table="one row per run",
    json_help="the conditions and the rows of each part",
)
