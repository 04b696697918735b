"""``dpmodels bench mdp --sweep-n``: the paper's Fig. 6, runtime against N, with certified gaps.

For each epsilon, N and method, one child process (so its peak memory is its own) builds a
grid of 1 km cells with N records (:func:`grid_shape`: 250 -> 10 x 25, 500 -> 20 x 25,
1,000 -> 25 x 40, 2,000 -> 40 x 50), K = min(100, N) outputs, eta = 2 km, and runs one method
under a time limit:

* ``highs-simplex``, ``highs-ipm``, ``highs-pdlp`` (HiGHS's first-order method, an anchor):
  the full LP, audited (a point that is not repaired and audited is never called certified);
* ``mdp_ipm``: the structured interior point (certified bounds every iteration);
* ``mdp_benders``: Benders over a k-m-DV partition with M = N / 20 blocks (the paper's 25 at
  N = 500).

Each run goes to the certified relative gap 1e-3 and is timed under both stopping rules, the
paper's absolute gap 0.01 and the relative gap 1e-3, side by side
(:mod:`~dpmodels.metricdp.bench.runs`); ``--runs`` runs each measurement several times.
"""

from __future__ import annotations

import json
import logging
import math
import resource
import subprocess
import sys

import numpy as np
import pandas as pd

from dpmodels.core.errors import DataValidationError

from .runs import RULES, benders_run, highs_run, ipm_run

__all__ = ["SWEEP_METHODS", "RULES", "grid_shape", "sweep_run", "run_sweep", "sweep_table", "plot_sweep"]

SWEEP_METHODS = ("highs-simplex", "highs-ipm", "highs-pdlp", "mdp_ipm", "mdp_benders")
#: Seconds a child may run past its time limit (instance, audit, imports) before it is stopped.
CHILD_MARGIN = 180.0

log = logging.getLogger(__name__)


def grid_shape(n: int) -> tuple[int, int]:
    """``rows x cols = n`` with ``rows <= cols <= 4 rows``, as square as possible; else an error."""
    if n < 4:
        raise DataValidationError("--sweep-n", f"N must be at least 4, got {n}")
    rows = max(r for r in range(1, math.isqrt(n) + 1) if n % r == 0)
    if n // rows > 4 * rows:
        raise DataValidationError(
            "--sweep-n", f"N = {n} is no grid of rows x cols with cols <= 4 rows (e.g. 250, 500, 1000, 2000)"
        )
    return rows, n // rows


# ---------------------------------------------------------------------- one run (in a child)
def sweep_run(method: str, n: int, epsilon: float, time_limit: float, seed: int = 0) -> dict:
    """Build the N-record grid and run ``method`` on it in this process; seconds, peak memory,
    certified bounds and the seconds at which each stopping rule was met.

    Parameters
    ----------
    method : str
        One of :data:`SWEEP_METHODS`.
    n : int
        The number of records (the grid's shape: :func:`grid_shape`).
    epsilon : float
        The privacy level per km.
    time_limit : float
        Seconds for the run.
    seed : int
        The grid generator's seed (public outputs and cost destinations).
    """
    import dpmodels.instances as instances

    rows, cols = grid_shape(n)
    inst = instances.generate("mdp/grid", seed=seed, rows=rows, cols=cols, K=min(100, n), epsilon=epsilon)
    out = {"eps": epsilon, "N": n, "grid": f"{rows}x{cols}", "K": inst.K, "method": method}
    out["mDP rows"] = inst.graph.n_pairs * inst.K
    if method.startswith("highs-"):
        out.update(highs_run(inst, method.split("-")[1], time_limit))
    elif method == "mdp_ipm":
        out.update(ipm_run(inst, time_limit))
    elif method == "mdp_benders":
        out.update(benders_run(inst, time_limit, "k-m-DV", max(2, round(n / 20))))
    else:
        raise DataValidationError("--methods", f"unknown {method!r}; choose from {list(SWEEP_METHODS)}")
    out["peak GB"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6
    return out


def _in_child(method: str, n: int, epsilon: float, time_limit: float) -> dict:
    code = (
        "import json, warnings; warnings.simplefilter('ignore'); "
        "from dpmodels.metricdp.bench.sweep import sweep_run; "
        f"print(json.dumps(sweep_run({method!r}, {n!r}, {epsilon!r}, {time_limit!r}), default=float))"
    )
    base = {"eps": epsilon, "N": n, "method": method}
    try:
        proc = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=time_limit + CHILD_MARGIN
        )
    except subprocess.TimeoutExpired:
        return {**base, "status": f"stopped after {time_limit + CHILD_MARGIN:g} s"}
    if proc.returncode != 0:
        return {**base, "status": "error", "error": proc.stderr.strip().splitlines()[-1:]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


# ---------------------------------------------------------------------- the sweep
def run_sweep(sizes, epsilons=(10.0,), methods=SWEEP_METHODS, time_limit: float = 300.0, runs: int = 1):
    """Every (epsilon, N, method) in its own child process, ``runs`` times; logs each run as it
    ends; the table has both stopping rules side by side and each method's time over HiGHS
    simplex's (medians over the runs, with the range of the seconds).

    Returns
    -------
    dpmodels.core.runner.Result
        The table (one row per (epsilon, N, method)), the JSON document (every run), the figure.
    """
    from dpmodels.core.runner import Result

    for n in sizes:
        grid_shape(n)  # every size checked before the first run
    if runs < 1:
        raise DataValidationError("--runs", f"must be at least 1, got {runs}")
    head = (
        f"mDP sweep (Fig. 6): 1 km grids, K = min(100, N), eta = 2 km, time limit {time_limit:g} s per run, "
        f"{runs} run(s) each"
    )
    log.info("%s", head)
    log.info("load before timing: %s", _load())
    done = []
    for eps in epsilons:
        for n in sizes:
            for method in methods:
                for run in range(1, runs + 1):
                    r = {**_in_child(method, n, eps, time_limit), "run": run}
                    done.append(r)
                    log.info("  eps %g N %5d %-14s run %d %s", eps, n, method, run, _line(r))
    log.info("load after: %s", _load())
    frame = sweep_table(done)
    with pd.option_context("display.width", 220, "display.max_columns", 30):
        shown = [head, "\n" + frame.to_string(index=False, float_format=lambda v: f"{v:.3g}")]
    return Result(frame, shown, document=done, figure=lambda path: plot_sweep(frame, path))


def _load() -> str:
    import os

    return "load average " + " ".join(f"{v:.2f}" for v in os.getloadavg()) + f" on {os.cpu_count()} cores"


def _fmt(v, spec: str = ".1f") -> str:
    return "-" if v is None or (isinstance(v, float) and not np.isfinite(v)) else format(v, spec)


def _line(r: dict) -> str:
    if "seconds" not in r:
        return f"{r['status']} {r.get('error', '')}"
    return (
        f"{r['status']:<14} {_fmt(r['seconds'])} s, peak {_fmt(r['peak GB'], '.2f')} GB, "
        f"certified gap {_fmt(r['rel gap'], '.2e')} (abs {_fmt(r['abs gap'], '.2e')})"
    )


MEASURED = ("seconds", "peak GB", "rel gap", "abs gap", *[f"s to {rule}" for rule in RULES])


def sweep_table(runs: list[dict]) -> pd.DataFrame:
    """One row per (epsilon, N, method): the medians over its runs of seconds, peak memory,
    certified gaps and, per rule, the seconds to meet it (a rule met in fewer than half the runs
    has no median: not met), the seconds' range, and the ratio to HiGHS simplex's (same epsilon
    and N) under the same rule.

    Parameters
    ----------
    runs : list of dict
        Rows returned by :func:`sweep_run`.
    """
    frame = pd.DataFrame(runs)
    for col in MEASURED:
        if col not in frame:
            frame[col] = np.nan
        frame[col] = pd.to_numeric(frame[col], errors="coerce")
    keys = ["eps", "N", "method"]
    groups = frame.groupby(keys, sort=False)
    frame = groups[list(MEASURED)].agg(_median_if_most).reset_index()
    frame.insert(3, "status", groups["status"].agg(lambda v: " / ".join(dict.fromkeys(map(str, v)))).to_numpy())
    frame["runs"] = groups.size().to_numpy()
    frame["seconds min"] = groups["seconds"].min().to_numpy()
    frame["seconds max"] = groups["seconds"].max().to_numpy()
    for rule in RULES:
        ref = frame[frame.method == "highs-simplex"].set_index(["eps", "N"])[f"s to {rule}"]
        keys = pd.MultiIndex.from_frame(frame[["eps", "N"]])
        frame[f"x simplex ({rule})"] = frame[f"s to {rule}"].to_numpy() / ref.reindex(keys).to_numpy()
    cols = ["eps", "N", "method", "status", "runs", "seconds", "seconds min", "seconds max", "peak GB"]
    cols += ["rel gap", "abs gap"]
    for rule in RULES:
        cols += [f"s to {rule}", f"x simplex ({rule})"]
    return frame[cols]


def _median_if_most(values: pd.Series) -> float:
    """The median of the runs' values when at least half of them have one, else NaN."""
    return float(values.median()) if 2 * values.notna().sum() >= len(values) else np.nan


def plot_sweep(frame: pd.DataFrame, path: str | None = None):
    """Seconds to each stopping rule against N (log scales), one colour per method
    (:mod:`dpmodels.core.figures`) and one line style per epsilon, one legend below.

    Writes ``path`` (PNG, PDF or SVG by its suffix) when given; returns the figure."""
    from dpmodels.core.figures import figure_style, log_axis, method_style, new_figure, save_figure, shared_legend

    styles = ["-", "--", ":", "-."]
    columns = [f"s to {rule}" for rule in RULES]
    with figure_style():
        fig, axes = new_figure(1, len(RULES), figsize=(10, 4), sharey=True, interactive=path is None)
        for ax, rule in zip(axes, RULES, strict=True):
            for e, (eps, by_eps) in enumerate(frame.groupby("eps", sort=False)):
                for method, grp in by_eps.groupby("method", sort=False):
                    ok = grp.dropna(subset=[f"s to {rule}"])
                    style = method_style(method) | {"label": f"{method}, ε = {eps:g}"}
                    ax.plot(ok.N, ok[f"s to {rule}"], styles[e % 4], **style)
            log_axis(ax, frame["N"], axis="x")
            ax.set(xlabel="N (records)", title=f"certified {rule} (missing: not met)")
        log_axis(axes[0], frame[columns].to_numpy().ravel())
        axes[0].set_ylabel("time to the certified gap (s)")
        shared_legend(fig, axes)
        fig.suptitle("metric-DP perturbation LP: runtime against N (Fig. 6)")
        if path is not None:
            save_figure(fig, path)
    return fig
