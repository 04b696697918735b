"""``dpmodels bench startup``: how long the package and the command take to start, measured side
by side with ``import pyomo.environ`` (the floor any Pyomo-based tool pays) in one run.

Each command runs in a fresh process; the commands take turns within every repeat, so a load
change on a shared machine hits them alike.  The goal (issue 23): ``dpmodels --help`` and
``import dpmodels`` under 1 s, and the ``pyomo`` command not slowed by the entry point.
"""

from __future__ import annotations

import shutil
import statistics
import subprocess
import sys
import time

from . import options as std
from .runner import experiment

__all__ = ["STARTUP_COMMANDS", "bench_startup", "COMMAND"]

#: What is timed: label -> argv (``sys.executable`` stands for this interpreter).
STARTUP_COMMANDS = {
    "python -c 'import pyomo.environ'": [sys.executable, "-c", "import pyomo.environ"],
    "python -c 'import dpmodels'": [sys.executable, "-c", "import dpmodels"],
    "dpmodels --help": [sys.executable, "-m", "dpmodels.cli", "--help"],
    "python -c 'pass' (the interpreter)": [sys.executable, "-c", "pass"],
}


def _pyomo_version() -> dict[str, list[str]]:
    """``pyomo --version`` loads every ``pyomo.command`` entry point, ours included."""
    pyomo = shutil.which("pyomo")
    return {"pyomo --version": [pyomo, "--version"]} if pyomo else {}


def _seconds(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - start


def bench_startup(repeats: int = 5) -> list[dict]:
    """Wall seconds of each startup command over ``repeats`` interleaved runs.

    Parameters
    ----------
    repeats : int
        Runs of every command (after one untimed warm-up run each, which fills the OS cache).

    Returns
    -------
    list of dict
        One row per command: min, median and max seconds, and the median's ratio to
        ``import pyomo.environ``.
    """
    commands = {**STARTUP_COMMANDS, **_pyomo_version()}
    for argv in commands.values():
        _seconds(argv)
    times: dict[str, list[float]] = {label: [] for label in commands}
    for _ in range(repeats):
        for label, argv in commands.items():
            times[label].append(_seconds(argv))
    floor = statistics.median(times["python -c 'import pyomo.environ'"])
    return [
        {
            "command": label,
            "min s": min(t),
            "median s": statistics.median(t),
            "max s": max(t),
            "median / import pyomo.environ": statistics.median(t) / floor,
        }
        for label, t in times.items()
    ]


def _run(args):
    import pandas as pd

    from .runner import Result

    rows = [{**row, "runs": args.runs} for row in bench_startup(args.runs)]
    lines = [f"{'command':40s} {'min s':>7s} {'median s':>9s} {'max s':>7s} {'/ pyomo.environ':>16s}"]
    for row in rows:
        lines.append(
            f"{row['command']:40s} {row['min s']:7.3f} {row['median s']:9.3f} {row['max s']:7.3f} "
            f"{row['median / import pyomo.environ']:16.2f}"
        )
    return Result(pd.DataFrame(rows), ["\n".join(lines)], document={"startup": rows})


#: ``dpmodels bench startup`` (registered by the command line beside the families' benches).
COMMAND = experiment(
    "start-up time of import dpmodels and dpmodels --help beside import pyomo.environ",
    _run,
    options=(std.runs(5, "timed runs of every command"),),
    table="the timings, one row per command",
    json_help="the timings",
)
