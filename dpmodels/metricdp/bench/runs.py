"""One measured run of a method on the perturbation LP, certified and timed under both stopping rules:
the paper's absolute gap 0.01 and the certified relative gap 1e-3 (issue 15).  Both ``dpmodels
bench mdp`` (:mod:`~dpmodels.metricdp.bench.paper_scale`) and its ``--sweep-n``
(:mod:`~dpmodels.metricdp.bench.sweep`) measure through these functions, so every method is certified
the same way:

* HiGHS (``simplex``, ``ipm``, ``pdlp``) on the full LP: its "optimal" point meets the mDP rows only
  to a tolerance, so it is *audited*: repaired into an exactly eps-mDP mechanism (its loss is the
  certified upper bound) and bounded below by HiGHS's duals through a weak-duality bound that
  holds however inexact they are (:func:`~dpmodels.metricdp.lp.safe_lower_bound`, the row sums
  kept as simplices).  It meets a
  rule at its run time if its audited gap does;
* ``mdp_ipm`` and ``mdp_benders`` certify both bounds every iteration; the seconds and the
  iteration at which each rule was first met come from their histories.
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd

from ..data import MDPInstance

__all__ = ["RULES", "rule_times", "highs_run", "ipm_run", "benders_run"]

#: Stopping rules compared: the paper's absolute gap 0.01 and a certified relative gap.
RULES = {"abs 0.01": ("absolute", 0.01), "rel 1e-3": ("relative", 1e-3)}


def _bounds(ub, lb) -> dict:
    ok = ub is not None and lb is not None and np.isfinite(ub) and np.isfinite(lb)
    return {
        "certified UB": ub,
        "certified LB": lb,
        "abs gap": ub - lb if ok else None,
        "rel gap": (ub - lb) / max(abs(ub), 1e-12) if ok else None,
    }


def rule_times(history: pd.DataFrame, offset: float) -> dict:
    """Seconds (plus ``offset``) and iteration at which a run's certified bounds first met each
    rule (None: never, or no iteration finished)."""
    out = {}
    for rule, (kind, tol) in RULES.items():
        out[f"s to {rule}"] = out[f"iterations to {rule}"] = None
        if history.empty or not {"best UB", "LB", "elapsed s"} <= set(history.columns):
            continue
        gap = history["best UB"] - history["LB"]
        if kind == "relative":
            gap = gap / history["best UB"].abs().clip(lower=1e-12)
        hit = history.index[gap <= tol]
        if len(hit):
            out[f"s to {rule}"] = float(history.loc[hit[0], "elapsed s"]) + offset
            out[f"iterations to {rule}"] = int(history.index.get_loc(hit[0])) + 1
    return out


def highs_run(inst: MDPInstance, method: str, time_limit: float) -> dict:
    """HiGHS's ``method`` on the full LP, audited (see the module docstring)."""
    from ..lp import full_lp, safe_lower_bound
    from ..privacy_audit import expected_loss, is_exactly_mdp, repair

    tick = time.perf_counter()
    model = full_lp(inst, method=method, time_limit=time_limit)
    res = model.solve(retry=False)
    out = {"seconds": time.perf_counter() - tick, "status": res.status, "reported objective": res.objective}
    tick = time.perf_counter()
    ub = lb = None
    if res.x is not None:  # the audit: repair to an exactly mDP mechanism, bound from the duals
        z, _ = repair(inst, res.x.reshape(inst.N, inst.K))
        ub = expected_loss(inst, z) if is_exactly_mdp(inst, z) else None
        n = inst.N * inst.K
        lb = safe_lower_bound(model, np.zeros(n), np.ones(n), simplices=model.simplices)
    out.update(_bounds(ub, lb), **{"audit s": time.perf_counter() - tick})
    for rule, (kind, tol) in RULES.items():
        gap = out["abs gap"] if kind == "absolute" else out["rel gap"]
        out[f"s to {rule}"] = out["seconds"] if gap is not None and gap <= tol else None
    return out


def ipm_run(inst: MDPInstance, time_limit: float, gap: float = 1e-3) -> dict:
    """``mdp_ipm`` to the certified relative ``gap`` (kernels compiled untimed by
    :func:`~dpmodels.metricdp.ipm.warm_up`)."""
    from ..ipm import structured_ipm, warm_up

    warm_up()
    tick = time.perf_counter()
    res = structured_ipm(inst, gap=gap, time_limit=time_limit)
    out = {"seconds": time.perf_counter() - tick, "status": res.status, "iterations": res.iterations}
    out.update(_bounds(res.upper_bound, res.lower_bound), **rule_times(res.history, 0.0))
    out["Newton system"] = res.info["Newton system"]
    return out


def benders_run(inst: MDPInstance, time_limit: float, partitioner: str, blocks: int, gap: float = 1e-3) -> dict:
    """``mdp_benders`` over a ``partitioner`` partition into ``blocks`` blocks (the partition's time
    counted), to the certified relative ``gap``; its incumbent audited like every other point."""
    from ..benders import benders
    from ..partition import partition
    from ..privacy_audit import expected_loss, is_exactly_mdp, repair

    tick = time.perf_counter()
    part = partition(inst, partitioner, M=blocks)
    offset = time.perf_counter() - tick
    res = benders(inst, part, gap=gap, time_limit=max(time_limit - offset, 1.0))
    out = {"seconds": time.perf_counter() - tick, "status": res.status, "iterations": res.iterations}
    ub = None
    if res.z is not None:
        z = res.z if is_exactly_mdp(inst, res.z) else repair(inst, res.z)[0]
        ub = expected_loss(inst, z)
    out.update(_bounds(ub, res.lower_bound), **rule_times(res.history, offset), blocks=part.M)
    out["boundary records"] = part.stats(inst.graph)["boundary records"]
    return out
