"""``dpmodels bench facility``: measured speed, ratios taken in one run (never timed assertions in tests).

1. The general-metric pipeline on 10^5 points in the plane: the FRT-λ embedding from coordinates
   (KD-trees, no n x n matrix) and the mechanism (Algorithm 2 + closest-facility rule + costs).
2. The exact leaf-only optimum on random λ-HSTs of growing size: the UFL MIP on ``highs`` (model
   build and solve timed separately) against the ``facility_tree_dp`` plugin on the same model and
   on plain data, with the optima checked equal.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np
import pandas as pd

__all__ = ["bench_pipeline", "bench_tree_dp", "bench_tree_dp_scaling", "run_bench"]


def bench_pipeline(n: int = 100_000, epsilon: float = 1.0, f: float = 0.01, seed: int = 0) -> dict:
    """Embedding + mechanism on ``n`` uniform points in the unit square."""
    import dpmodels.instances as instances

    from .frt import frt_embedding
    from .general_metric import dp_ufl_general
    from .results import true_label

    inst = instances.generate("facility/plane", seed=seed, n=n, f=f, dense=False)
    tick = time.perf_counter()
    emb = frt_embedding(points=inst.points, rng=seed)
    embed_s = time.perf_counter() - tick
    tick = time.perf_counter()
    rep = dp_ufl_general(inst, epsilon, rng=seed + 1, embedding=emb)
    mech_s = time.perf_counter() - tick
    return {
        "n": n,
        "tree nodes": emb.tree.n_nodes,
        "L": emb.tree.L,
        "embedding s": embed_s,
        "mechanism s": mech_s,
        "|R|": int(rep.R.size),
        true_label("|S|"): int(rep.S.size),
        true_label("realized cost"): rep.realized_cost,
        true_label("set cost"): rep.set_cost,
        "eps used": rep.run.eps_used,
    }


def _hst_of_size(leaves: int, seed: int, f: float):
    """A random 1.5-HST with about ``leaves`` leaves (branching 1..4) and random counts."""
    import dpmodels.instances as instances

    depth = max(2, int(np.ceil(np.log(leaves) / np.log(2.5))))
    rng = np.random.default_rng(seed)
    for _ in range(200):
        inst = instances.generate("facility/random-hst", seed=rng, depth=depth, max_branch=4, f=f, max_count=5)
        if 0.7 * leaves <= inst.n <= 1.3 * leaves:
            return inst
    return inst


def bench_tree_dp(sizes: Sequence[int] = (32, 64, 128, 256, 512), f: float = 20.0, time_limit: float = 300.0) -> list:
    """MIP (highs) vs tree DP on the same tree models, one row per size."""
    from pyomo.contrib.solver.common.results import TerminationCondition

    from dpmodels.core.facade import solve

    from .hst_optimum import tree_dp
    from .models import build_tree_model

    rows = []
    for k, size in enumerate(sizes):
        inst = _hst_of_size(size, k, f)
        tick = time.perf_counter()
        model = build_tree_model(inst)
        build_s = time.perf_counter() - tick
        tick = time.perf_counter()
        res = solve(model.clone(), "highs", time_limit=time_limit, options={"mip_rel_gap": 0.0})
        mip_s = time.perf_counter() - tick
        tick = time.perf_counter()
        plug = solve(model, "facility_tree_dp")
        plugin_s = time.perf_counter() - tick
        tick = time.perf_counter()
        data = tree_dp(inst)
        data_s = time.perf_counter() - tick
        optimal = res.termination_condition == TerminationCondition.convergenceCriteriaSatisfied
        rows.append(
            {
                "leaves": inst.n,
                "clients": int((inst.N > 0).sum()),
                "variables": model.nvariables(),
                "build s": build_s,
                "highs s": mip_s,
                "highs status": res.termination_condition.name,
                "DP plugin s": plugin_s,
                "DP data s": data_s,
                "highs / DP data": mip_s / data_s,
                "optima equal": bool(
                    optimal and abs(res.incumbent_objective - data.objective) <= 1e-6 * data.objective
                ),
                "opt": data.objective,
                "plugin opt": plug.incumbent_objective,
            }
        )
    return rows


def bench_tree_dp_scaling(depths: Sequence[int] = (10, 13, 16), f: float = 20.0) -> list:
    """The tree DP alone on random HSTs far beyond MIP sizes (branching 1..3, about 2^depth leaves)."""
    import dpmodels.instances as instances

    from .hst_optimum import tree_dp

    rows = []
    for depth in depths:
        inst = instances.generate("facility/random-hst", seed=depth, depth=depth, max_branch=3, f=f, max_count=5)
        tick = time.perf_counter()
        res = tree_dp(inst)
        rows.append(
            {"leaves": inst.n, "tree nodes": inst.tree.n_nodes, "DP data s": time.perf_counter() - tick}
            | {"open": int(res.locations.size), "opt": res.objective}
        )
    return rows


def run_bench(points: int = 100_000, sizes: Sequence[int] = (32, 64, 128, 256, 512), time_limit: float = 300.0):
    """Both measurements: the pipeline on ``points`` points and the tree DP against the MIP.

    Returns
    -------
    dpmodels.core.runner.Result
        One row per tree-DP measurement (``part``: tree_dp or tree_dp_scaling), the tables to
        print, and ``{"pipeline", "tree_dp", "tree_dp_scaling"}``.
    """
    from dpmodels.core.runner import Result

    out: dict = {}
    shown: list[str] = []
    if points:
        shown.append(f"pipeline on {points:,} points (FRT-λ from coordinates + Algorithm 2, ε = 1):")
        out["pipeline"] = bench_pipeline(points)
        shown.append(pd.Series(out["pipeline"]).to_string())
    if sizes:
        shown.append("\nexact leaf-only optimum on random 1.5-HSTs: UFL MIP on highs vs the tree DP (same model):")
        out["tree_dp"] = bench_tree_dp(sizes, time_limit=time_limit)
        shown.append(pd.DataFrame(out["tree_dp"]).round(4).to_string(index=False))
        shown.append("\nthe tree DP alone beyond MIP sizes:")
        out["tree_dp_scaling"] = bench_tree_dp_scaling()
        shown.append(pd.DataFrame(out["tree_dp_scaling"]).round(4).to_string(index=False))
    frames = [pd.DataFrame(out[part]).assign(part=part) for part in ("tree_dp", "tree_dp_scaling") if part in out]
    if "pipeline" in out:
        frames.insert(0, pd.DataFrame([out["pipeline"]]).assign(part="pipeline"))
    table = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    return Result(table, shown, document=out)
