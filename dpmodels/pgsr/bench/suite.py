"""``dpmodels bench pgsr``: the PGSR speed and memory bars, measured side by side in one run.

(a) The paper's Figure 7 sweep: on the taxi-like shape with N = 5..50, the same Model 1
    (truncated domains, epsilon = 1) solved exactly by ``pgsr_dp`` and its continuous
    relaxation solved by ``clarabel`` and ``highs``; ratios are relaxed time / DP time.
(b) The full census-like shape (3,197 regions x N = 1,000) end to end, the paper's table DPs
    beside the solvers whose cost does not grow with the domain (:mod:`.census`), one child
    process per (epsilon, variant) so each peak memory is its own.

Numbers depend on the machine and its load; the ratios are what to read.
"""

from __future__ import annotations

import logging
import time

import numpy as np
import pandas as pd

from dpmodels.core.facade import solve
from dpmodels.core.relax import relax_integer_vars

from ..domains import Domains
from ..mechanism import measure
from ..models import build_hierarchical_qip
from ..warmup import warm_up
from .census import CENSUS_VARIANTS, census_in_child, census_table, check_agreement

__all__ = ["figure7_sweep", "census_report", "run_bench"]

log = logging.getLogger(__name__)

BAR_SECONDS = 10.0
BAR_GIGABYTES = 2.0
BAR_VARIANT = "M_H^dp/windows/full"


def _timed_solve(model, solver: str, time_limit: float | None):
    tick = time.perf_counter()
    try:
        res = solve(model, solver, time_limit=time_limit)
    except Exception as err:  # a backend failure is a measurement, not a crash
        return time.perf_counter() - tick, None, f"{type(err).__name__}"
    status = res.termination_condition.name
    return time.perf_counter() - tick, res.incumbent_objective, status


def figure7_sweep(sizes, time_limit: float = 120.0, epsilon: float = 1.0, seed: int = 0) -> pd.DataFrame:
    """pgsr_dp on Model 1 vs clarabel and highs on Model 1-R, same noisy instance per N."""
    from dpmodels.instances.pgsr import taxi_like

    from ..algorithms.hierarchical import solve_hierarchical

    rows = []
    highs_gave_up = False
    warm_up()
    for N in sizes:
        data = taxi_like(seed=seed, N=N)
        noisy, _ = measure(data, epsilon, "counts", rng=seed + N)
        tick = time.perf_counter()
        model = build_hierarchical_qip(noisy, domains="truncated", on_infeasible="widen")
        build = time.perf_counter() - tick
        relaxed = relax_integer_vars(model)
        dom: Domains = model._dpmodels_structure.data.domains
        row = {"N": N, "regions": data.hierarchy.n_regions, "variables": len(model.n), "G": data.G, "build s": build}
        row["pgsr_dp s"], row["pgsr_dp obj"], _ = _timed_solve(model, "pgsr_dp", None)
        tick = time.perf_counter()
        solve_hierarchical(noisy, dom)
        row["solve_data s"] = time.perf_counter() - tick
        row["clarabel s"], row["clarabel obj"], row["clarabel status"] = _timed_solve(
            relaxed.clone(), "clarabel", time_limit
        )
        if highs_gave_up:
            row["highs s"], row["highs obj"], row["highs status"] = np.nan, None, "skipped (limit hit at smaller N)"
        else:
            row["highs s"], row["highs obj"], row["highs status"] = _timed_solve(relaxed.clone(), "highs", time_limit)
            highs_gave_up = row["highs status"] != "convergenceCriteriaSatisfied"
        row["clarabel / pgsr_dp"] = row["clarabel s"] / row["pgsr_dp s"]
        row["highs / pgsr_dp"] = row["highs s"] / row["pgsr_dp s"]
        rows.append(row)
        log.info("%s", _sweep_line(row))
    return pd.DataFrame(rows)


def _sweep_line(row: dict) -> str:
    highs = f"{row['highs s']:8.2f}" if np.isfinite(row["highs s"]) else "       -"
    ratio = f"{row['highs / pgsr_dp']:9.1f}x" if np.isfinite(row["highs / pgsr_dp"]) else "         -"
    limit = "" if row["highs status"] == "convergenceCriteriaSatisfied" else f"  highs: {row['highs status']}"
    return (
        f"N={row['N']:3d} vars={row['variables']:6d}  pgsr_dp {row['pgsr_dp s']:7.3f}s "
        f"(solve_data {row['solve_data s']:7.3f}s)  clarabel {row['clarabel s']:7.3f}s "
        f"= {row['clarabel / pgsr_dp']:7.1f}x  highs {highs}s = {ratio}{limit}"
    )


def run_bench(sizes, time_limit: float, census_scale: float | None, epsilons=(1.0,), variants=tuple(CENSUS_VARIANTS)):
    """Run (a) and (b) (every census variant at every epsilon): the ratios and the bars.

    Returns
    -------
    dpmodels.core.runner.Result
        One row per run (``part``: sweep or census), the report to print, and the JSON document
        ``{"sweep": [...], "census": [...]}``.
    """
    from dpmodels.core.runner import Result

    document: dict = {}
    shown: list[str] = []
    frames = []
    if sizes:
        log.info("(a) Figure 7 sweep, taxi-like shape, epsilon = 1, truncated domains, time limit %gs", time_limit)
        sweep = figure7_sweep(sizes, time_limit)
        document["sweep"] = sweep.to_dict(orient="records")
        ok = sweep["pgsr_dp obj"] + 1e-6 >= sweep["clarabel obj"].astype(float)
        shown.append(f"(a) Figure 7 sweep, taxi-like shape, epsilon = 1, truncated domains, time limit {time_limit:g}s")
        shown += [_sweep_line(row) for row in document["sweep"]]
        shown.append(f"    relaxed optimum <= integer optimum on every N: {bool(ok.all())}")
        frames.append(sweep.assign(part="sweep"))
    if census_scale is not None:
        document["census"], lines = census_report(census_scale, epsilons, variants)
        shown += lines
        frames.append(
            pd.DataFrame(document["census"]).drop(columns=["L1 per level"], errors="ignore").assign(part="census")
        )
    table = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    return Result(table, ["\n".join(shown)], document=document)


def census_report(scale: float, epsilons, variants) -> tuple[list[dict], list[str]]:
    """Run every variant at every epsilon in child processes: the runs, and the table, the checks
    and the bar as lines to print."""
    runs = []
    for epsilon in epsilons:
        for variant in variants:
            log.info("(b) census-like, scale %g, epsilon %g: %s (child process)", scale, epsilon, variant)
            runs.append(census_in_child(variant, epsilon, scale))
    lines = [f"(b) census-like, scale {scale:g}", census_table(runs)]
    lines += [f"    {verdict}" for verdict in check_agreement(runs)]
    if scale == 1.0:
        for r in runs:
            if r.get("variant") == BAR_VARIANT and "error" not in r:
                fast, small = r["seconds"] <= BAR_SECONDS, r["peak RSS GB"] <= BAR_GIGABYTES
                lines.append(
                    f"    bar at epsilon {r['epsilon']:g} ({BAR_VARIANT}): <= {BAR_SECONDS:g} s "
                    f"{'met' if fast else 'NOT met'}; peak RSS <= {BAR_GIGABYTES:g} GB {'met' if small else 'NOT met'}"
                )
    return runs, lines
