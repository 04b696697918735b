"""``dpmodels bench topdown``: TopDown speed bars, measured side by side in one run.

(a) Rounding: the min-cost-flow rounder against HiGHS LP (simplex, TUM certificate) and
    HiGHS MIP on the same child rounding models with group-quarters flows, as the number
    of children and cells grows.
(b) L2: the closed-form tree solver against clarabel and highs on the same child L2 models
    with identity measurements, as the number of children and cells grows.
(c) A whole synthetic state (counties -> tracts -> block groups -> blocks, PL94-like schema)
    end to end: time per level, serially and with a 2-process executor, and a linear
    extrapolation to the 1940 census (132 million persons) that the Census Bureau's 2018
    End-to-End test post-processed in 5-6 hours on a 4-vCPU machine with Gurobi.
"""

from __future__ import annotations

import logging
import time

import numpy as np
import pandas as pd
import scipy.sparse as sp

from dpmodels.core.facade import solve
from dpmodels.core.noise import make_rng

from .bench_scale import extrapolation_line, largest_line, largest_state_runs
from .compiled import l1_system, solve_l1_highs
from .data import FlowData
from .models import build_l1, build_l2, histogram_values
from .node_data import ChildSpec, NodeProblem, WeightedQuery

__all__ = [
    "random_node_problem",
    "rounding_sweep",
    "l2_sweep",
    "state_end_to_end",
    "run_bench",
    "run_bench_command",
]

POPULATION_1940 = 132_164_569
E2E_HOURS = (5, 6)

log = logging.getLogger(__name__)


def random_node_problem(seed, children: int, cells: int, types: int = 8, flows: bool = True) -> NodeProblem:
    """A child solve of the given size built from random valid leaves (so it is feasible),
    with noisy detailed measurements (weight 1)."""
    rng = make_rng(seed)
    cell_type = np.arange(cells) % types
    truth = np.zeros((children, cells), dtype=np.int64)
    specs = []
    for t in range(children):
        combos, lowers, pops = [], [], []
        for _ in range(int(rng.integers(1, 4))):
            support = rng.random(types) < 0.3
            support[0] = True  # households everywhere
            low = np.where(support, rng.integers(0, 3, types), 0)
            leaf = np.zeros(cells, dtype=np.int64)
            for g in np.flatnonzero(support):
                own = np.flatnonzero(cell_type == g)
                np.add.at(leaf, rng.choice(own, low[g] + int(rng.poisson(2 * len(own) / types + 1))), 1)
            combos.append(support)
            lowers.append(low)
            pops.append(leaf.sum())
            truth[t] += leaf
        network = FlowData.from_units(np.array(combos), np.array(lowers), pops) if flows else None
        specs.append((network, truth[t] + rng.normal(0, 2, cells)))
    parent = truth.sum(axis=0)
    active = np.flatnonzero(parent > 0)
    ident = sp.identity(len(active), format="csr")
    kids = [
        ChildSpec(t, [WeightedQuery("detailed", ident, noisy[active], 1.0, True)], None, fl)
        for t, (fl, noisy) in enumerate(specs)
    ]
    return NodeProblem(active, kids, parent=parent[active], cell_type=cell_type)


class _Clock:
    """``with _Clock() as c: ...`` then ``c.seconds``."""

    def __enter__(self):
        self.start = time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.seconds = time.perf_counter() - self.start


def rounding_sweep(sizes, time_limit: float = 60.0, seed: int = 0) -> pd.DataFrame:
    """Flow rounder vs HiGHS LP and MIP on the same rounding models."""
    from .flow import solve_flow_rounding

    rows = []
    for children, cells in sizes:
        problem = random_node_problem(seed, children, cells)
        l2 = build_l2(problem, fingerprint=False)
        solve(l2, "clarabel")
        hstar = histogram_values(l2)
        with _Clock() as clock:
            lp = build_l1(problem, hstar, relax=True, fingerprint=False)
        build = clock.seconds
        mip = build_l1(problem, hstar, fingerprint=False)
        with _Clock() as clock:
            flow = solve_flow_rounding(problem, hstar)
        flow_s = clock.seconds
        with _Clock() as clock:
            lp_res = solve(lp, "highs", time_limit=time_limit, options={"solver": "simplex"})
        lp_s = clock.seconds
        with _Clock() as clock:
            mip_res = solve(mip, "highs", time_limit=time_limit)
        mip_s = clock.seconds
        with _Clock() as clock:  # the driver's path: the same LP as matrices, no Pyomo model
            system, _ = l1_system(problem, hstar)
            solve_l1_highs(system, integer=False)
        direct_s = clock.seconds
        row = {
            "children": children,
            "cells": problem.n,
            "variables": len(lp.y),
            "model build s": build,
            "flow s": flow_s,
            "highs LP s": lp_s,
            "highs MIP s": mip_s,
            "LP / flow": lp_s / flow_s,
            "compiled LP s": direct_s,
            "MIP / flow": mip_s / flow_s,
            "same objective": bool(
                abs(flow[1] - mip_res.incumbent_objective) < 1e-4 * max(1, problem.n)
                and abs(lp_res.incumbent_objective - mip_res.incumbent_objective) < 1e-6 * max(1, problem.n)
            ),
        }
        rows.append(row)
        log.info("%s", _rounding_line(row))
    return pd.DataFrame(rows)


def l2_sweep(sizes, time_limit: float = 60.0, seed: int = 0) -> pd.DataFrame:
    """Closed-form tree L2 vs clarabel and highs on the same L2 models (identity measurements)."""
    from .tree_l2 import solve_tree_l2, tree_objective

    rows = []
    for children, cells in sizes:
        problem = random_node_problem(seed, children, cells, flows=False)
        with _Clock() as clock:
            values = solve_tree_l2(problem)
        tree_s = clock.seconds
        best = tree_objective(problem, values, "inverse_variance")
        row = {"children": children, "cells": problem.n, "variables": problem.m * problem.n, "tree s": tree_s}
        for backend in ("clarabel", "highs"):
            model = build_l2(problem, fingerprint=False)
            with _Clock() as clock:
                res = solve(model, backend, time_limit=time_limit)
            sec = clock.seconds
            row[f"{backend} s"] = sec
            row[f"{backend} / tree"] = sec / tree_s
            row[f"{backend} gap"] = (
                (res.incumbent_objective - best) / max(1.0, abs(best)) if res.incumbent_objective else np.nan
            )
        rows.append(row)
        log.info("%s", _l2_line(row))
    return pd.DataFrame(rows)


def _persons_rate(seconds: float, persons: int) -> float:
    """Seconds per million persons."""
    return seconds * 1e6 / max(persons, 1)


def state_end_to_end(
    preset: str = "state", races: int = 63, epsilon: float = 4.0, executors=(None, 2), seed: int = 0,
    compare_previous: bool = True,
) -> dict:  # fmt: skip
    """A whole synthetic state: serial and pooled runs, time per level, and the extrapolation.

    With ``compare_previous`` the first run is the previous code (child-by-child assembly, residual
    L2 form, Clarabel's faer at 1e-8, the LP only where certified), serially
    (``NodeOptions(assembly="previous")``, :mod:`.previous`), timed in the same run as the batched one.
    Every batched run's release is compared with the first batched run's (the same release, whatever
    the executor); the previous code's, a QP solved to another tolerance, differs in a few roundings,
    and its run reports how many block cells differ and their L1 distance.
    """
    import dpmodels.instances as instances

    from .active_set import warm_up
    from .driver import topdown
    from .mechanism import measure
    from .solve import NodeOptions

    data = instances.generate("topdown/synthetic", preset=preset, races=races, seed=seed)
    with _Clock() as clock:
        meas = measure(data, epsilon, rng=seed)
    measure_s = clock.seconds
    out = {
        "geography": data.geography.describe(),
        "persons": data.population,
        "cells": data.schema.size,
        "measure s": measure_s,
        "runs": [],
    }
    out["name"] = data.name
    log.info("%s", _state_lines(out)[0])
    warm_up()  # numba's kernels compiled (or loaded) before anything is timed
    plan = [("previous", None)] if compare_previous else []
    plan += [("batched", executor) for executor in executors]
    reference, plan_results = None, []
    for assembly, executor in plan:
        with _Clock() as clock:
            options = NodeOptions(assembly=assembly)
            result = topdown(meas, data.knowledge, data.schema, data.geography, options, executor=executor)
        total = clock.seconds
        if assembly == "batched" and reference is None:
            reference = result
        same = reference is None or (result.node_counts != reference.node_counts).nnz == 0
        run = {
            "assembly": assembly,
            "executor": str(executor or "serial"),
            "seconds": total,
            "s per million persons": _persons_rate(total, data.population),
            "level seconds": result.level_seconds,
            "checks": result.checks,
            "same release as the serial batched run": same,
            "methods": result.log[result.log.stage == "L1"].method.value_counts().to_dict(),
        }
        out["runs"].append(run)
        plan_results.append(result)
        if assembly == "batched":
            log.info("%s", _run_line(run))
    if compare_previous:  # the previous run against the first batched release
        diff = sp.csr_matrix(plan_results[0].node_counts - reference.node_counts)
        diff.eliminate_zeros()
        out["runs"][0]["same release as the serial batched run"] = diff.nnz == 0
        out["runs"][0]["cells differing from the batched release"] = int(diff.nnz)
        out["runs"][0]["L1 distance to the batched release"] = float(np.abs(diff.data).sum())
        log.info("%s", _run_line(out["runs"][0]))
    batched = [r for r in out["runs"] if r["assembly"] == "batched"]
    serial, pooled = batched[0]["seconds"], batched[-1]["seconds"]
    out["speed-up"] = serial / pooled
    if compare_previous:
        out["batched / previous serial speed-up"] = out["runs"][0]["seconds"] / serial
    hours = [r["seconds"] * POPULATION_1940 / data.population / 3600 for r in out["runs"]]
    out["extrapolated hours for 1940"] = hours
    return out


def _rounding_line(row: dict) -> str:
    return (
        f"  rounding m={row['children']:4d} n={row['cells']:5d} vars={row['variables']:7d}  "
        f"flow {row['flow s']:7.3f}s  "
        f"LP {row['highs LP s']:7.3f}s ({row['LP / flow']:5.1f}x)  MIP {row['highs MIP s']:7.3f}s "
        f"({row['MIP / flow']:5.1f}x)  compiled LP {row['compiled LP s']:6.3f}s  build {row['model build s']:6.2f}s  "
        f"same optimum: {row['same objective']}"
    )


def _l2_line(row: dict) -> str:
    return (
        f"  L2 m={row['children']:4d} n={row['cells']:5d} vars={row['variables']:7d}  tree {row['tree s']:7.4f}s  "
        f"clarabel {row['clarabel s']:7.3f}s ({row['clarabel / tree']:7.0f}x)  "
        f"highs {row['highs s']:7.3f}s ({row['highs / tree']:7.0f}x)"
    )


def _run_line(run: dict) -> str:
    return (
        f"  {run['assembly']:8s} executor={run['executor']:7s} total {run['seconds']:8.1f}s "
        f"({run['s per million persons']:6.1f} s per million persons)  per level: "
        + ", ".join(f"{k}: {v:.1f}s" for k, v in run["level seconds"].items())
        + f"  violations: {sum(run['checks'].values())}  same release: {run['same release as the serial batched run']}"
        + (
            f" ({run['cells differing from the batched release']} cells differ, L1 "
            f"{run['L1 distance to the batched release']:g})"
            if "cells differing from the batched release" in run
            else ""
        )
    )


def _state_lines(out: dict) -> list[str]:
    """The end-to-end run as printed: the state, each executor, the speed-up and the extrapolation."""
    lines = [f"  {out['name']}: {out['geography']}, {out['persons']:,} persons, {out['cells']} cells"]
    lines += [_run_line(run) for run in out["runs"]]
    if "speed-up" in out:
        hours = out["extrapolated hours for 1940"]
        if "batched / previous serial speed-up" in out:
            lines.append(f"  batched vs previous assembly, serial: {out['batched / previous serial speed-up']:.2f}x")
        lines.append(f"  2-process speed-up: {out['speed-up']:.2f}x")
        lines.append(
            f"  linear extrapolation to the 1940 census ({POPULATION_1940:,} persons): "
            + ", ".join(f"{r['assembly']} {r['executor']} {h:.1f} h" for r, h in zip(out["runs"], hours, strict=True))
            + f"  (2018 E2E: {E2E_HOURS[0]}-{E2E_HOURS[1]} h on 4 vCPUs with Gurobi)"
        )
    return lines


def run_bench(
    rounding_sizes,
    l2_sizes,
    state_preset: str | None,
    races: int,
    time_limit: float,
    compare_previous: bool = True,
    largest_state=(),
    solver_settings: bool = False,
):
    """Run (a), (b), (c), (d) and (e): what to print, one row per measurement, and the JSON document.

    (c) times the previous (child-by-child) assembly beside the batched one when ``compare_previous``;
    (d) runs the largest state's shape with each number of its counties in ``largest_state``;
    (e) with ``solver_settings``, times the solver settings on the node solves of ``state_preset``
    (:mod:`.bench_solves`).

    Returns
    -------
    dpmodels.core.runner.Result
        The rows (``part``: rounding, l2 or state), the report and ``{"rounding", "l2", "state"}``.
    """
    from dpmodels.core.runner import Result

    document: dict = {}
    shown: list[str] = []
    frames = []
    if rounding_sizes:
        shown.append("(a) L1 rounding with GQ flows: topdown_flow vs highs LP (simplex) and MIP, same models")
        log.info("%s", shown[-1])
        frame = rounding_sweep(rounding_sizes, time_limit)
        document["rounding"] = frame.to_dict(orient="records")
        shown += [_rounding_line(row) for row in document["rounding"]]
        frames.append(frame.assign(part="rounding"))
    if l2_sizes:
        shown.append("(b) L2 with identity measurements: topdown_tree_l2 vs clarabel and highs, same models")
        log.info("%s", shown[-1])
        frame = l2_sweep(l2_sizes, time_limit)
        document["l2"] = frame.to_dict(orient="records")
        shown += [_l2_line(row) for row in document["l2"]]
        frames.append(frame.assign(part="l2"))
    if state_preset:
        shown.append(f"(c) synthetic state end to end (preset {state_preset!r}, {races} races), serial vs 2 processes")
        log.info("%s", shown[-1])
        document["state"] = state_end_to_end(state_preset, races, compare_previous=compare_previous)
        shown += _state_lines(document["state"])
        runs = [{k: v for k, v in r.items() if not isinstance(v, dict)} for r in document["state"]["runs"]]
        frames.append(pd.DataFrame(runs).assign(part="state"))
    if largest_state:
        shown.append("(d) the largest state's shape (58 counties, ~39 M persons) with some of its counties, serial")
        log.info("%s", shown[-1])
        document["largest state"], extra = largest_state_runs(largest_state, races)
        document["largest state, whole state extrapolated"] = extra
        shown += [largest_line(row) for row in document["largest state"]] + [extrapolation_line(extra)]
        log.info("%s", shown[-1])
        rows = [{k: v for k, v in r.items() if not isinstance(v, dict)} for r in document["largest state"]]
        frames.append(pd.DataFrame(rows).assign(part="largest state"))
    if solver_settings:
        from .bench_solves import settings_lines
        from .bench_solves import solver_settings as time_settings

        shown.append(f"(e) solver settings side by side on every node solve of the {state_preset!r} run, serial")
        log.info("%s", shown[-1])
        document["solver settings"] = time_settings(state_preset, races)
        shown += settings_lines(document["solver settings"])
        frames.append(pd.DataFrame(document["solver settings"]["rows"]).assign(part="solver settings"))
    table = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    return Result(table, ["\n".join(shown)], document=document)


def run_bench_command(args):
    """``dpmodels bench topdown``: its arguments checked, then :func:`run_bench`.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed command line (``--sizes``, ``--preset``, ``--races``, ``--quick``, ``--no-previous``,
        ``--largest-state``, ``--solver-settings``, ``--time-limit``).
    """
    from dpmodels.core.errors import DataValidationError
    from dpmodels.instances.topdown import PRESETS

    if args.quick:
        args.sizes, args.preset, args.time_limit = [(4, 64), (16, 512)], "county", 30.0
    if args.preset != "none" and args.preset not in PRESETS:
        raise DataValidationError("--preset", f"must be 'none' or one of {sorted(PRESETS)}, got {args.preset!r}")
    preset = None if args.preset == "none" else args.preset
    bad = [c for c in args.largest_state if c > 58]
    if bad:
        raise DataValidationError("--largest-state", f"the largest state has 58 counties, got {bad}")
    if args.solver_settings and preset is None:
        raise DataValidationError("--solver-settings", "times the node solves of the --preset run: give a preset")
    return run_bench(
        args.sizes,
        args.sizes,
        preset,
        args.races,
        args.time_limit,
        args.compare_previous,
        tuple(args.largest_state),
        args.solver_settings,
    )
