"""The TopDown evaluation harness (spec section 5, *project-defined*: the paper has no experiments).

``compare_topdown`` runs TopDown post-processing configurations on one instance for every
epsilon and run.  A *configuration* is a named :class:`~dpmodels.topdown.solve.NodeOptions`.
Each ``(epsilon, run)`` pair is one task for the ``executor`` (serial, process pool, Dask): it
measures **once** and post-processes the same noisy answers with every configuration, so
configurations are compared on paired noise.  Every row of the result is one
``(config, epsilon, run, level)`` with the metrics of spec 5:

* ``L1 error``: ``sum over the level's nodes of sum_x |released - true|``;
* ``workload MAE``: mean absolute error of the strategy's marginals (pooled over their rows and
  the level's nodes), plus one ``MAE <query>`` column per measured query set;
* ``total error/node`` (mean) and ``max total error``: error of the node populations, 0 at
  the invariant levels;
* how the solves that released the level were obtained (final L1 step per parent, from
  ``result.log``): ``solves`` (parents solved), ``lp-integral``, ``mip``, ``flow``,
  ``already integral``, ``failsafe``, ``other``, the shortcuts ``one child`` and ``zero parent``
  (not counted in ``solves``), and ``edit fallbacks`` (parents whose solve dropped the edits);
* ``rounding distance``: ``sum ||H - H*||_1`` of the level's L1 roundings (the L1 objective;
  NaN if a parent needed the failsafe);
* ``d* max`` / ``d* sum`` of the failsafe solves (NaN when there were none);
* ``seconds`` (wall time of the level, ``result.level_seconds``), ``L2 seconds`` and ``L1 seconds``
  (summed over solves) and ``max solve seconds`` (slowest parent);
* ``edit-violating nodes``: nodes of the level whose histogram breaks an edit, counted for every
  configuration (expected > 0 only for configurations that drop the edits);
* ``check: <name>``: the run's violation counts ``result.checks`` (per run, repeated on every
  level row of the run; all must be 0, spec 5);
* ``noise digest``: a hash of the run's noisy measurements (identical across configurations).

The frame's tables (``summary_table`` averages the runs, ``format_summary``,
``violation_counts``) and ``plot_topdown`` are in :mod:`.compare_report`;
:func:`~dpmodels.topdown.driver.node_problem` rebuilds one of the solves for inspection.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
import scipy.sparse as sp

from dpmodels.core.errors import DataValidationError
from dpmodels.core.executors import map_tasks
from dpmodels.core.noise import as_epsilon

from .data import TopDownData
from .driver import TopDownResult, topdown
from .mechanism import Measurements, Strategy, default_strategy, measure
from .node_options import L2_BACKENDS
from .queries import is_identity
from .solve import NodeOptions

__all__ = [
    "CONFIGS",
    "CONFIG_ALIASES",
    "DEFAULT_CONFIGS",
    "resolve_configs",
    "compare_topdown",
    "level_metrics",
    "measurement_digest",
]


#: Named post-processing configurations.  The flow rounder cannot carry an edit row (the edit of
#: the synthetic data has coefficient 4, not a network row), and ``NodeOptions(l1="topdown_flow")``
#: with edits silently uses the LP-first HiGHS path instead; so the flow configuration drops the
#: edits, and "no edits" is its LP-first twin (same L1 problem, two backends).
CONFIGS: dict[str, NodeOptions] = {
    "L2 clarabel + LP-first highs": NodeOptions(l2="clarabel", l1="highs", edits=True),
    "L2 clarabel + flow rounder": NodeOptions(l2="clarabel", l1="topdown_flow", edits=False),
    "no edits": NodeOptions(l2="clarabel", l1="highs", edits=False),
    # HiGHS's QP active-set method can cycle on small L2 problems with a binding edit (seen: 12
    # variables, millions of iterations); the time limit turns that into a failed L2 solve.
    "L2 highs + LP-first highs": NodeOptions(l2="highs", l1="highs", edits=True, time_limit=30.0),
    "auto": NodeOptions(),
    "paper weights": NodeOptions(l2="clarabel", l1="highs", weights="paper"),
    "paper objective": NodeOptions(l2="clarabel", l1="highs", objective="paper"),
    "query rounder": NodeOptions(l2="clarabel", l1="highs", objective="queries"),  # the 2020 production's
}
DEFAULT_CONFIGS = ("L2 clarabel + LP-first highs", "L2 clarabel + flow rounder", "no edits")
#: Short names for the command line.
CONFIG_ALIASES = {
    "lp-first": "L2 clarabel + LP-first highs",
    "flow": "L2 clarabel + flow rounder",
    "no-edits": "no edits",
    "l2-highs": "L2 highs + LP-first highs",
    "paper-weights": "paper weights",
    "paper-objective": "paper objective",
    "query-rounder": "query rounder",
}
_METHODS = ("lp-integral", "mip", "flow", "already integral", "failsafe", "one child", "zero parent")
_SHORTCUTS = ("one child", "zero parent")


def resolve_configs(configs: Sequence[str] | Mapping[str, NodeOptions] | None = None) -> dict[str, NodeOptions]:
    """``{name: NodeOptions}`` from names/aliases of :data:`CONFIGS`, or a mapping given as is."""
    if configs is None:
        configs = DEFAULT_CONFIGS
    if isinstance(configs, Mapping):
        out = dict(configs)
        bad = [k for k, v in out.items() if not isinstance(v, NodeOptions)]
        if bad:
            raise DataValidationError("configs", f"values must be NodeOptions; not for {bad}")
    else:
        if isinstance(configs, str):
            configs = [configs]
        out = {}
        for name in configs:
            full = CONFIG_ALIASES.get(name, name)
            if full not in CONFIGS:
                known = sorted(CONFIGS) + sorted(CONFIG_ALIASES)
                raise DataValidationError("configs", f"unknown configuration {name!r}; choose from {known}")
            out[full] = CONFIGS[full]
    if not out:
        raise DataValidationError("configs", "need at least one configuration")
    for name, opts in out.items():
        if opts.l2 not in L2_BACKENDS:
            raise DataValidationError(f"configs[{name!r}].l2", f"unknown backend {opts.l2!r}")
        if opts.l1 not in ("highs", "topdown_flow"):
            raise DataValidationError(f"configs[{name!r}].l1", f"must be 'highs' or 'topdown_flow', got {opts.l1!r}")
    return out


# ---------------------------------------------------------------------- the harness
def compare_topdown(
    data: TopDownData,
    epsilons: Sequence = (0.5, 1, 2, 4),
    runs: int = 3,
    configs: Sequence[str] | Mapping[str, NodeOptions] | None = None,
    seed: int = 0,
    executor=None,
    progress: bool = False,
    strategy: Strategy | None = None,
    level_shares=None,
    noise: str = "geometric",
) -> pd.DataFrame:
    """One row per ``(config, epsilon, run, level)`` with the spec-5 metrics (module docstring).

    ``configs`` are names of :data:`CONFIGS` (or aliases) or a ``{name: NodeOptions}`` mapping;
    the default is :data:`DEFAULT_CONFIGS`.  ``seed`` fixes the noise of every ``(epsilon, run)``.

    Parameters
    ----------
    data : TopDownData
        The instance.
    epsilons : sequence
        The total budgets compared.
    runs : int, default 3
        Runs per budget.
    configs : sequence of str or mapping, optional
        Configuration names, or ``{name: NodeOptions}``.
    seed : int, default 0
        Fixes the noise of every ``(epsilon, run)`` (an experiment, not private).
    executor : str or Executor, optional
        Where the solves run.
    progress : bool, default False
        Show a progress bar.
    strategy : Strategy, optional
        The query sets.
    level_shares : sequence, optional
        Per-level budget shares.
    noise : {"geometric", "laplace"}, default "geometric"
        The noise.
    """
    configs = resolve_configs(configs)
    if isinstance(runs, bool) or not isinstance(runs, int | np.integer) or int(runs) < 1:
        raise DataValidationError("runs", f"must be an integer >= 1, got {runs!r}")
    runs = int(runs)
    eps_list = [as_epsilon(e) for e in epsilons]
    if not eps_list:
        raise DataValidationError("epsilons", "need at least one epsilon")
    strategy = strategy or default_strategy(data.schema)
    seeds = np.random.SeedSequence(seed).spawn(len(eps_list) * runs)
    tasks = [
        (data, configs, eps, run, seeds[i * runs + run], strategy, level_shares, noise)
        for i, eps in enumerate(eps_list)
        for run in range(runs)
    ]
    rows = map_tasks(_run_task, tasks, executor=executor, progress=progress, desc="TopDown runs")
    frame = pd.DataFrame([row for group in rows for row in group])
    check_cols = sorted(c for c in frame.columns if c.startswith("check: "))
    rest = [c for c in frame.columns if c not in check_cols]
    return frame[rest + check_cols]


def _run_task(task) -> list[dict]:
    """Every configuration on one ``(epsilon, run)``: one measurement, post-processed per config."""
    data, configs, eps, run, seed_seq, strategy, level_shares, noise = task
    measurements = measure(data, eps, strategy, level_shares, noise, rng=np.random.default_rng(seed_seq))
    digest = measurement_digest(measurements)
    rows = []
    for name, opts in configs.items():
        result = topdown(measurements, data.knowledge, data.schema, data.geography, opts)
        for row in level_metrics(data, result, measurements.strategy):
            rows.append(
                {
                    "config": name,
                    "epsilon": float(eps),
                    "run": run,
                    **row,
                    "noise digest": digest,
                    **{f"check: {k}": v for k, v in result.checks.items()},
                }
            )
    return rows


def measurement_digest(measurements: Measurements) -> str:
    """A short hash of every noisy answer (equal digests = the same noise draw)."""
    h = hashlib.sha1()
    for node in measurements.by_node:
        for meas in node:
            h.update(meas.query.encode())
            h.update(np.ascontiguousarray(meas.values, dtype=np.float64).tobytes())
    return h.hexdigest()[:16]


def level_metrics(data: TopDownData, result: TopDownResult, strategy: Strategy | None = None) -> list[dict]:
    """The per-level metrics of one TopDown release (one dict per level, level 1 = the root).

    Parameters
    ----------
    data : TopDownData
        The true data (the metrics compare against it).
    result : TopDownResult
        The release.
    strategy : Strategy, optional
        The measured query sets (their marginals are scored).
    """
    strategy = strategy or default_strategy(data.schema)
    geo = data.geography
    truth = data.node_histograms_all().toarray().astype(np.float64)
    released = sp.csr_matrix(result.node_counts).toarray().astype(np.float64)
    true_tot, rel_tot = truth.sum(axis=1), released.sum(axis=1)
    marginals = [q for q in strategy.queries if not is_identity(q.matrix, data.schema.size)]
    log = result.log
    edits = data.knowledge.edits
    out = []
    for level in range(1, geo.n_levels + 1):
        sl = geo.level_slice(level)
        t, r = truth[sl], released[sl]
        row = {
            "level": level,
            "nodes": sl.stop - sl.start,
            "invariant totals": level <= data.knowledge.total_level,
            "population": float(true_tot[sl].sum()),
            "L1 error": float(np.abs(r - t).sum()),
        }
        abs_err = []
        for q in strategy.queries:
            err = np.abs((r - t) @ q.matrix.T)
            row[f"MAE {q.name}"] = float(err.mean()) if err.size else 0.0
            if any(q is m for m in marginals):
                abs_err.append(np.asarray(err).ravel())
        pooled = np.concatenate(abs_err) if abs_err else np.empty(0)
        row["workload MAE"] = float(pooled.mean()) if pooled.size else np.nan
        terr = np.abs(rel_tot[sl] - true_tot[sl])
        row["total error/node"] = float(terr.mean())
        row["max total error"] = float(terr.max(initial=0))
        row.update(_log_metrics(log, level))
        row["seconds"] = float(result.level_seconds.get(level, np.nan))
        row["edit-violating nodes"] = int(sum((~e.holds(r)).sum() for e in edits)) if edits else 0
        out.append(row)
    return out


def _log_metrics(log: pd.DataFrame, level: int) -> dict:
    """Solve counts, d* and solve times of the parents that released ``level``."""
    out = {m: 0 for m in _METHODS}
    out.update(
        {
            "other": 0,
            "solves": 0,
            "edit fallbacks": 0,
            "rounding distance": np.nan,
            "d* max": np.nan,
            "d* sum": np.nan,
            "L2 seconds": 0.0,
            "L1 seconds": 0.0,
            "max solve seconds": 0.0,
        }
    )
    if log.empty:
        return out
    rows = log[log["level"] == level]
    if rows.empty:
        return out
    distances = []
    for _, steps in rows.groupby("node", sort=False):
        l1 = steps[steps["stage"] == "L1"]
        final = l1["method"].iloc[-1] if len(l1) else "none"
        out[final if final in _METHODS else "other"] += 1
        if final in _SHORTCUTS:
            continue
        out["solves"] += 1
        edits_used = steps["edits"].astype(bool)
        if edits_used.any() and not edits_used.iloc[-1]:
            out["edit fallbacks"] += 1
        if "objective" in l1 and final != "failsafe":
            distances.append(l1["objective"].iloc[-1])
    if distances and not pd.isna(distances).any():
        out["rounding distance"] = float(np.sum(distances))
    if "d_star" in rows:
        d = rows["d_star"].dropna().to_numpy(dtype=float)
        if d.size:
            out["d* max"], out["d* sum"] = float(d.max()), float(d.sum())
    secs = rows["seconds"].astype(float)
    out["L2 seconds"] = float(secs[rows["stage"] == "L2"].sum())
    out["L1 seconds"] = float(secs[rows["stage"] == "L1"].sum())
    out["max solve seconds"] = float(secs.groupby(rows["node"]).sum().max())
    return out
