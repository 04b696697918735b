"""GLS beside TopDown on the same noisy measurements: ``dpmodels compare topdown --estimators``.

Each ``(epsilon, run)`` measures a synthetic census **once** (discrete Laplace, the default
strategy) and hands the same noisy answers to every estimator:

* ``GLS`` - the best linear unbiased estimate of every region's histogram
  (:func:`dpmodels.topdown.gls.gls_estimate`): real-valued, unbiased, with intervals;
* ``TopDown`` - the driver as it runs by default (inverse-variance L2 with non-negativity, the
  invariants, GQ facts and edits, then the L1 rounding): integer, non-negative;
* ``2019 algorithm`` - the same driver with the 2019 paper's objectives (every query weighted 1 in
  the L2 fit, the paper's rounding objective ``-phi``);
* ``PGSR DP`` - PGSR's Model 1 solved exactly by its dynamic program
  (:func:`dpmodels.pgsr.algorithms.window.solve_exact`) on the part of the measurements it fits:
  the detailed histogram of every region as the "counts" over the cells, ``G`` the public root
  total, the structural zeros as domains ``[0, 0]``.
  Model 1 weighs every region alike and has no place for the marginals or for invariant totals
  below the root, which it does not use.

Public facts: with ``facts="shared"`` (the default) every estimator gets the same facts, the
invariant totals, the grouped child totals (PGSR's DP excepted: Model 1 has no place for them) and
the structural zeros; the group-quarters facts and the edits (inequalities, which the GLS cannot
use) are dropped for all.  With ``facts="all"`` the two TopDown estimators
also use them: the group-quarters facts zero every cell of a facility type a block does not have,
an advantage on sparse data that is information, not estimation.

Per ``(estimator, epsilon, run, level)`` (:func:`compare_estimators`, ``per_run``): the L1 error
of the level's cells and of its regions' totals, the root mean squared error per cell, and for
GLS the share of cells and of totals whose normal 95% interval covers the truth.  Over the runs
(``summary``): their means, and per cell the squared bias (``mean error^2 - variance / runs``,
unbiased) and the variance across runs, averaged over the level's cells.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from dpmodels.core.errors import DataValidationError
from dpmodels.core.executors import map_tasks
from dpmodels.core.noise import as_epsilon
from dpmodels.core.tree_gls import interval_halfwidth

from .data import TopDownData
from .driver import topdown
from .gls import gls_estimate
from .mechanism import Measurements, measure
from .solve import NodeOptions

__all__ = ["ESTIMATORS", "EstimatorComparison", "compare_estimators", "summarise_estimators"]

ESTIMATORS = ("GLS", "TopDown", "2019 algorithm", "PGSR DP")
#: The driver's options of the two TopDown estimators.
DRIVER_OPTIONS = {
    "TopDown": NodeOptions(),
    "2019 algorithm": NodeOptions(l2="clarabel", l1="highs", weights="paper", objective="paper"),
}


@dataclass
class EstimatorComparison:
    """The comparison's tables: one row per ``(estimator, epsilon, run, level)``, and the summary over runs."""

    per_run: pd.DataFrame
    summary: pd.DataFrame


def compare_estimators(
    data: TopDownData,
    epsilons: Sequence = (1, 4),
    runs: int = 5,
    estimators: Sequence[str] | None = None,
    seed: int = 0,
    level: float = 0.95,
    executor=None,
    progress: bool = False,
    facts: str = "shared",
) -> EstimatorComparison:
    """Every estimator on the same noisy measurements, per budget and run (module docstring).

    Parameters
    ----------
    data : TopDownData
        The synthetic census (its truth scores the estimates).
    epsilons : sequence, default (1, 4)
        The total budgets.
    runs : int, default 5
        Runs per budget (two or more for the bias and variance).
    estimators : sequence of str, optional
        Names of :data:`ESTIMATORS` (default: all).
    seed : int, default 0
        Fixes the noise of every ``(epsilon, run)`` (an experiment, not private).
    level : float, default 0.95
        The GLS intervals' nominal coverage.
    executor : str or Executor, optional
        Where the ``(epsilon, run)`` tasks run.
    progress : bool, default False
        Show a progress bar.
    facts : {"shared", "all"}, default "shared"
        ``"shared"``: every estimator uses the invariant totals and structural zeros only; ``"all"``:
        the TopDown estimators also use the group-quarters facts and edits.
    """
    if facts not in ("shared", "all"):
        raise DataValidationError("facts", f"must be 'shared' or 'all', got {facts!r}")
    names = list(ESTIMATORS if estimators is None else estimators)
    unknown = sorted(set(names) - set(ESTIMATORS))
    if unknown or not names:
        raise DataValidationError("estimators", f"choose from {list(ESTIMATORS)}, got {names}")
    if isinstance(runs, bool) or not isinstance(runs, int | np.integer) or runs < 1:
        raise DataValidationError("runs", f"must be an integer >= 1, got {runs!r}")
    interval_halfwidth(1.0, level)  # refuses a bad level before any run
    eps_list = [as_epsilon(e) for e in epsilons]
    if not eps_list:
        raise DataValidationError("epsilons", "need at least one epsilon")
    seeds = np.random.SeedSequence(seed).spawn(len(eps_list) * runs)
    shared = replace(data, knowledge=replace(data.knowledge, gq=None, edits=())) if facts == "shared" else data
    tasks = [(shared, names, eps, r, seeds[i * runs + r], level) for i, eps in enumerate(eps_list) for r in range(runs)]
    results = map_tasks(_run_task, tasks, executor=executor, progress=progress, desc="estimator runs")
    per_run = pd.DataFrame([row for rows, _ in results for row in rows])
    errors = [errs for _, errs in results]
    return EstimatorComparison(per_run, summarise_estimators(per_run, errors, data))


def _run_task(task) -> tuple[list[dict], dict]:
    """One measurement, every estimator: the per-level rows and each estimator's errors (regions x cells)."""
    data, names, eps, run, seed_seq, level = task
    measured = measure(data, eps, rng=np.random.default_rng(seed_seq))
    truth = data.node_histograms_all().toarray().astype(np.float64)
    rows, errors = [], {}
    for name in names:
        tick = time.perf_counter()
        estimate, coverage = _estimate(name, data, measured, truth, level)
        seconds = time.perf_counter() - tick
        errors[name] = (float(eps), (estimate - truth).astype(np.float32))
        for row in _level_rows(data, estimate, truth, coverage):
            rows.append({"estimator": name, "epsilon": float(eps), "run": run, **row, "seconds": seconds})
    return rows, errors


def _estimate(name: str, data: TopDownData, measured: Measurements, truth: np.ndarray, level: float):
    """One estimator's histograms of every region, and (GLS) which cells and totals its intervals cover."""
    if name == "GLS":
        result = gls_estimate(measured, data.knowledge, data.schema, data.geography)
        cells = np.abs(result.estimate - truth) <= interval_halfwidth(result.variance, level) + 1e-9
        totals = np.abs(result.totals - truth.sum(axis=1)) <= interval_halfwidth(result.total_variance, level) + 1e-9
        return result.estimate, (cells, totals)
    if name == "PGSR DP":
        return _pgsr_dp(data, measured), None
    result = topdown(measured, data.knowledge, data.schema, data.geography, DRIVER_OPTIONS[name])
    return result.node_counts.toarray().astype(np.float64), None


def _pgsr_dp(data: TopDownData, measured: Measurements) -> np.ndarray:
    """PGSR's Model 1 on the detailed answers: integer, consistent, summing to the root's total."""
    from dpmodels.pgsr.algorithms.window import solve_exact
    from dpmodels.pgsr.data import NoisyGroupSizes
    from dpmodels.pgsr.domains import Domains

    detailed = np.array([[a.values for a in node if a.query == "detailed"][0] for node in measured.by_node])
    total = int(data.knowledge.root_total)
    noisy = NoisyGroupSizes(data.geography, detailed, total, "counts")
    hi = np.full(detailed.shape, total, dtype=np.int64)
    hi[:, np.asarray(data.knowledge.structural_zeros, dtype=np.int64)] = 0
    return solve_exact(noisy, Domains(np.zeros_like(hi), hi)).counts.astype(np.float64)


def _level_rows(data: TopDownData, estimate: np.ndarray, truth: np.ndarray, coverage) -> list[dict]:
    geo = data.geography
    out = []
    for lv in range(1, geo.n_levels + 1):
        sl = geo.level_slice(lv)
        err = estimate[sl] - truth[sl]
        row = {
            "level": lv,
            "nodes": sl.stop - sl.start,
            "L1 error": float(np.abs(err).sum()),
            "total L1 error": float(np.abs(err.sum(axis=1)).sum()),
            "RMSE/cell": float(np.sqrt((err**2).mean())),
            "negative cells": int((estimate[sl] < -1e-9).sum()),
            "CI coverage": float(coverage[0][sl].mean()) if coverage else np.nan,
            "CI coverage (totals)": float(coverage[1][sl].mean()) if coverage else np.nan,
        }
        out.append(row)
    return out


def summarise_estimators(per_run: pd.DataFrame, errors: list[dict], data: TopDownData) -> pd.DataFrame:
    """Means over runs per ``(estimator, epsilon, level)``, with the per-cell squared bias and variance.

    Parameters
    ----------
    per_run : pandas.DataFrame
        The rows of :func:`compare_estimators`.
    errors : list of dict
        Per run, estimator -> ``(epsilon, errors regions x cells)``.
    data : TopDownData
        The census (its levels).
    """
    keys = ["estimator", "epsilon", "level"]
    numeric = [c for c in per_run.columns if c not in keys + ["run"] and pd.api.types.is_numeric_dtype(per_run[c])]
    table = per_run.groupby(keys, sort=False)[numeric].mean().reset_index()
    table["runs"] = per_run.groupby(keys, sort=False)["run"].nunique().to_numpy()
    stacked: dict[tuple, list[np.ndarray]] = {}
    for run in errors:
        for name, (eps, err) in run.items():
            stacked.setdefault((name, eps), []).append(err.astype(np.float64))
    bias, variance = [], []
    geo = data.geography
    for name, eps, lv in table[keys].itertuples(index=False):
        draws = np.stack(stacked[(name, eps)])[:, geo.level_slice(int(lv))]
        r = draws.shape[0]
        if r < 2:
            bias.append(np.nan)
            variance.append(np.nan)
            continue
        var = draws.var(axis=0, ddof=1)
        bias.append(float((draws.mean(axis=0) ** 2 - var / r).mean()))
        variance.append(float(var.mean()))
    table["bias^2/cell"] = bias
    table["variance/cell"] = variance
    return table
