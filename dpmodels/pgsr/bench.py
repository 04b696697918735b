"""``dpmodels bench pgsr``: the PGSR speed and memory bars, measured side by side in one run.

(a) The paper's Figure 7 sweep: on the taxi-like shape with N = 5..50, the same Model 1
    (truncated domains, epsilon = 1) solved exactly by ``pgsr_dp`` and its continuous
    relaxation solved by ``clarabel`` and ``highs``; ratios are relaxed time / DP time.
(b) The full census-like shape (3,197 regions x N = 1,000) end to end through ``solve_data``,
    one child process per epsilon (default 1; Table 7's 0.1, 0.5, 1 with ``--epsilon``), so each
    run's peak memory is its own.

Numbers depend on the machine and its load; the ratios are what to read.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import time

import numpy as np
import pandas as pd

from dpmodels.core.facade import solve
from dpmodels.core.relax import relax_integer_vars

from .domains import Domains
from .dp import warm_up
from .mechanism import measure
from .models import build_hierarchical_qip

__all__ = ["figure7_sweep", "census_end_to_end", "run_bench"]

BAR_SECONDS = 10.0
BAR_GIGABYTES = 4.0


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

    from .dp import solve_hierarchical

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
        print(_sweep_line(row), flush=True)
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


def census_end_to_end(scale: float = 1.0, epsilon: float = 1.0, seed: int = 0) -> dict:
    """Generate, measure and post-process the census-like shape with pgsr_dp (in this process)."""
    from dpmodels.instances.pgsr import census_like

    from .chain_dp import solve_chain
    from .dp import solve_hierarchical

    out: dict = {"scale": scale, "epsilon": epsilon}
    tick = time.perf_counter()
    warm_up()  # the M_H^dp kernels; the chain DP's below
    tiny = census_like(seed=1, scale=1e-4, N=20, n_states=3, n_counties=6)
    solve_chain(measure(tiny, epsilon, "chain", rng=0)[0], "truncated", on_infeasible="widen")
    out["jit warm-up s"] = time.perf_counter() - tick
    tick = time.perf_counter()
    data = census_like(seed=seed, scale=scale)
    out["generate s"] = time.perf_counter() - tick
    out.update(regions=data.hierarchy.n_regions, N=data.N, G=data.G, cells=int(data.counts.size))
    tick = time.perf_counter()
    noisy, _ = measure(data, epsilon, "counts", rng=seed)
    out["measure s"] = time.perf_counter() - tick
    tick = time.perf_counter()
    sol = solve_hierarchical(noisy, "truncated", on_infeasible="widen")
    out["pgsr_dp s"] = time.perf_counter() - tick
    out.update({k: v for k, v in sol.info.items() if k.startswith("seconds") or k in ("table_entries", "delta")})
    h = data.hierarchy
    out["consistent"] = bool(
        not h.consistency_residual(sol.counts).any() and (sol.counts >= 0).all() and sol.counts[0].sum() == data.G
    )
    out["L1 per level"] = [float(np.abs(sol.counts - data.counts)[h.level_slice(lvl)].sum()) for lvl in (1, 2, 3)]
    chain, _ = measure(data, epsilon, "chain", rng=seed)
    tick = time.perf_counter()
    chain_sol = solve_chain(chain, "truncated", on_infeasible="widen")
    out["pgsr_chain s"] = time.perf_counter() - tick
    out["pgsr_chain method"] = chain_sol.info["method"]
    out["peak RSS GB"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6
    return out


def _census_in_child(scale: float, epsilon: float = 1.0) -> dict:
    code = (
        "import json; from dpmodels.pgsr.bench import census_end_to_end; "
        f"print(json.dumps(census_end_to_end({scale!r}, {epsilon!r})))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"census benchmark failed:\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def run_bench(
    sizes, time_limit: float, census_scale: float | None, json_path: str | None = None, epsilons=(1.0,)
) -> dict:
    """Run (a) and (b) (at every epsilon of ``epsilons``), print the ratios and the bars, optionally save JSON."""
    report: dict = {}
    if sizes:
        print(f"(a) Figure 7 sweep, taxi-like shape, epsilon = 1, truncated domains, time limit {time_limit:g}s")
        sweep = figure7_sweep(sizes, time_limit)
        report["sweep"] = sweep.to_dict(orient="records")
        ok = sweep["pgsr_dp obj"] + 1e-6 >= sweep["clarabel obj"].astype(float)
        print(f"    relaxed optimum <= integer optimum on every N: {bool(ok.all())}")
    if census_scale is not None:
        report["census"] = []
        for epsilon in epsilons:
            print(
                f"(b) census-like shape end to end (scale {census_scale:g}, epsilon {epsilon:g}) through solve_data, "
                "in a child process"
            )
            census = _census_in_child(census_scale, epsilon)
            report["census"].append(census)
            for key, val in census.items():
                print(f"    {key:22s} {val}")
            if census_scale == 1.0:
                fast = census["pgsr_dp s"] <= BAR_SECONDS
                small = census["peak RSS GB"] <= BAR_GIGABYTES
                print(
                    f"    bar: pgsr_dp <= {BAR_SECONDS:g} s: {'met' if fast else 'NOT met'}; "
                    f"peak RSS <= {BAR_GIGABYTES:g} GB: {'met' if small else 'NOT met'}"
                )
    if json_path:
        with open(json_path, "w") as fh:
            json.dump(report, fh, indent=2, default=str)
        print(f"wrote {json_path}")
    return report
