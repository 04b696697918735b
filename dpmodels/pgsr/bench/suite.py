"""``dpmodels bench pgsr``: the PGSR speed and memory bars, measured side by side in one run.

(a) The paper's Figure 7 sweep: on the taxi-like shape with N = 5..50, the same Model 1
    (truncated domains, epsilon = 1) solved exactly by ``pgsr_dp`` and its continuous
    relaxation solved by ``clarabel`` and ``highs``; ratios are relaxed time / DP time.
(b) The full census-like shape (3,197 regions x N = 1,000) end to end, the paper's table DPs
    beside the solvers whose cost does not grow with the domain (:mod:`.census`), one child
    process per (epsilon, variant) so each peak memory is its own.

Under ``noise="discrete-gaussian"`` both parts measure with the exact discrete Gaussian (zCDP):
the sweep at ``rho = 1/2`` (what its pure ``epsilon = 1`` implies, ``eps^2 / 2``), the census part
at each given ``rho``; the speed bar is stated for the paper's noise only.

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
#: The sweep's budget under each noise, and its words: the paper's epsilon 1, or the rho it implies.
SWEEP_BUDGET = {"discrete-laplace": ("epsilon", 1.0), "discrete-gaussian": ("rho", 0.5)}


def _timed_solve(model, solver: str, time_limit: float | None):
    tick = time.perf_counter()
    try:
        res = solve(model, solver, time_limit=time_limit)
    except Exception as err:  # a backend failure is a measurement, not a crash
        return time.perf_counter() - tick, None, f"{type(err).__name__}"
    status = res.termination_condition.name
    return time.perf_counter() - tick, res.incumbent_objective, status


def figure7_sweep(
    sizes, time_limit: float = 120.0, epsilon: float | None = 1.0, seed: int = 0, noise="discrete-laplace", rho=None
) -> pd.DataFrame:
    """pgsr_dp on Model 1 vs clarabel and highs on Model 1-R, same noisy instance per N.

    Parameters
    ----------
    sizes : sequence of int
        The N of each taxi-like instance.
    time_limit : float
        Seconds per highs/clarabel solve.
    epsilon : float or None
        The measurement's budget under the discrete Laplace (None with the discrete Gaussian).
    seed : int
        The instances' and the noise's seed (a benchmark, not a release).
    noise : str
        ``"discrete-laplace"`` or ``"discrete-gaussian"`` (:func:`~dpmodels.pgsr.mechanism.measure`).
    rho : float, optional
        The zCDP budget under the discrete Gaussian.
    """
    from dpmodels.instances.pgsr import taxi_like

    from ..algorithms.hierarchical import solve_hierarchical

    rows = []
    highs_gave_up = False
    warm_up()
    for N in sizes:
        data = taxi_like(seed=seed, N=N)
        noisy, _ = measure(data, epsilon, "counts", rng=seed + N, noise=noise, rho=rho)
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


def run_bench(
    sizes,
    time_limit: float,
    census_scale: float | None,
    epsilons=None,
    variants=tuple(CENSUS_VARIANTS),
    *,
    noise: str = "discrete-laplace",
    rhos=None,
):
    """Run (a) and (b) (every census variant at every budget): the ratios and the bars.

    Parameters
    ----------
    sizes : sequence of int
        The sweep's N (empty: no sweep).
    time_limit : float
        Seconds per highs/clarabel solve.
    census_scale : float or None
        The census part's scale (None: no census part).
    epsilons : sequence, optional
        The census part's budgets under the discrete Laplace (default 1; not with the discrete Gaussian).
    variants : sequence of str
        The census variants (:data:`~dpmodels.pgsr.bench.census.CENSUS_VARIANTS`).
    noise : str
        ``"discrete-laplace"`` (the paper's) or ``"discrete-gaussian"`` (zCDP; budgets ``rhos``).
    rhos : sequence, optional
        The census part's zCDP budgets under the discrete Gaussian.

    Returns
    -------
    dpmodels.core.runner.Result
        One row per run (``part``: sweep or census), the report to print, and the JSON document
        ``{"sweep": [...], "census": [...]}``.
    """
    from dpmodels.core.runner import Result

    budgets = _budgets(noise, epsilons, rhos)
    document: dict = {}
    shown: list[str] = []
    frames = []
    if sizes:
        unit, value = SWEEP_BUDGET[noise]
        words = "" if noise == "discrete-laplace" else ", exact discrete Gaussian (zCDP)"
        head = f"(a) Figure 7 sweep, taxi-like shape, {unit} = {value:g}{words}, truncated domains"
        log.info("%s, time limit %gs", head, time_limit)
        sweep = figure7_sweep(
            sizes,
            time_limit,
            epsilon=value if unit == "epsilon" else None,
            noise=noise,
            rho=value if unit == "rho" else None,
        )
        document["sweep"] = sweep.to_dict(orient="records")
        ok = sweep["pgsr_dp obj"] + 1e-6 >= sweep["clarabel obj"].astype(float)
        shown.append(f"{head}, time limit {time_limit:g}s")
        shown += [_sweep_line(row) for row in document["sweep"]]
        shown.append(f"    relaxed optimum <= integer optimum on every N: {bool(ok.all())}")
        frames.append(sweep.assign(part="sweep"))
    if census_scale is not None:
        document["census"], lines = census_report(census_scale, budgets, variants, noise)
        shown += lines
        frames.append(
            pd.DataFrame(document["census"]).drop(columns=["L1 per level"], errors="ignore").assign(part="census")
        )
    table = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    return Result(table, ["\n".join(shown)], document=document)


def _budgets(noise: str, epsilons, rhos) -> list[float]:
    """The census part's budgets in the unit of ``noise``; a budget in the other unit is refused."""
    from dpmodels.core.errors import DataValidationError

    if noise not in SWEEP_BUDGET:
        raise DataValidationError("noise", f"must be one of {list(SWEEP_BUDGET)}, got {noise!r}")
    if noise == "discrete-gaussian":
        if epsilons is not None:
            raise DataValidationError("epsilons", "the discrete Gaussian is charged in rho (zCDP): pass rhos= only")
        if not rhos:
            raise DataValidationError("rhos", "the discrete Gaussian needs one or more zCDP budgets rho")
        return [float(r) for r in rhos]
    if rhos is not None:
        raise DataValidationError("rhos", "go with noise='discrete-gaussian'; the discrete Laplace takes epsilons")
    return [float(e) for e in (epsilons or (1.0,))]


def census_report(scale: float, budgets, variants, noise: str = "discrete-laplace") -> tuple[list[dict], list[str]]:
    """Run every variant at every budget (epsilon, or rho under the discrete Gaussian) in child processes:
    the runs, and the table, the checks and the bar as lines to print."""
    runs = []
    unit = SWEEP_BUDGET[noise][0]
    for budget in budgets:
        for variant in variants:
            log.info("(b) census-like, scale %g, %s %g: %s (child process)", scale, unit, budget, variant)
            runs.append(census_in_child(variant, budget, scale, noise))
    words = "" if noise == "discrete-laplace" else ", exact discrete Gaussian (zCDP)"
    lines = [f"(b) census-like, scale {scale:g}{words}", census_table(runs)]
    lines += [f"    {verdict}" for verdict in check_agreement(runs)]
    if scale == 1.0 and noise == "discrete-laplace":
        for r in runs:
            if r.get("variant") == BAR_VARIANT and "error" not in r:
                fast, small = r["seconds"] <= BAR_SECONDS, r["peak RSS GB"] <= BAR_GIGABYTES
                lines.append(
                    f"    bar at epsilon {r['epsilon']:g} ({BAR_VARIANT}): <= {BAR_SECONDS:g} s "
                    f"{'met' if fast else 'NOT met'}; peak RSS <= {BAR_GIGABYTES:g} GB {'met' if small else 'NOT met'}"
                )
    return runs, lines
