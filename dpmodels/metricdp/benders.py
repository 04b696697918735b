"""Benders decomposition of the perturbation LP over a record partition (spec 5-6): the driver loop.

The master (:mod:`.benders_master`) holds the boundary records' perturbation vectors ``z_Y`` and
one ``w_l`` per block with internal records; each subproblem (:mod:`.benders_subproblems`)
derives its internal vectors given ``z_Y`` and returns an optimality cut ``w_l >= phi_l(z_Y)`` or
a feasibility cut ``phi_l(z_Y) <= 0``.  Each iteration solves the master, separates at an in-out
stabilised point, adds the cuts to the persistent HiGHS master, one per block per iteration
(multi-cut), and, when every block is feasible, assembles and repairs the full perturbation
matrix into an exactly mDP mechanism whose loss is the upper bound.  The subproblem solves of an
iteration go through the ``executor``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import pandas as pd

from dpmodels.core.errors import DataValidationError
from dpmodels.core.executors import map_tasks, resolve_executor

from .benders_master import LazyRows, _master_bound, _solve_master, build_master, master_init_cuts
from .benders_subproblems import BlockOutcome, Subproblem, TimeUp, build_subproblems, solve_block
from .data import MDPInstance, Partition
from .lp import INF
from .mechanism import expected_loss, exponential_mechanism, repair

__all__ = ["BendersResult", "benders"]


@dataclass
class BendersResult:
    """Incumbent perturbation matrix, bounds, status and the per-iteration history."""

    z: np.ndarray | None
    lower_bound: float
    upper_bound: float
    status: str
    iterations: int
    history: pd.DataFrame
    first_feasible: dict[int, int]
    info: dict

    @property
    def gap(self) -> float:
        return self.upper_bound - self.lower_bound

    @property
    def relative_gap(self) -> float:
        return self.gap / max(abs(self.upper_bound), 1e-12)


def benders(
    instance: MDPInstance,
    part: Partition,
    *,
    gap: float = 1e-3,
    gap_type: str = "relative",
    max_iter: int = 500,
    time_limit: float | None = None,
    init_cuts: str = "lazy",
    max_coeff: float = 1e12,
    max_init_rows: int = 200_000,
    opt_tol: float = 1e-9,
    stabilize: float = 0.5,
    executor=None,
    progress: bool = False,
) -> BendersResult:
    """Solve the perturbation LP by multi-cut Benders over ``part`` (spec 6.8).

    Stops when the best upper bound and the lower bound are within ``gap`` (``"absolute"``
    or ``"relative"``; the paper's setting is absolute 0.01), when an iteration at the master's
    own point adds no cut (optimal), at ``max_iter`` or at ``time_limit`` seconds.

    ``stabilize`` is the in-out weight (Ben-Ameur and Neto 2007; Fischetti, Ljubic and Sinnl
    2017) of the master's point in the separation point ``stabilize * y_master + (1 - stabilize)
    * y_core``; the core starts at the exponential mechanism's boundary rows (feasible for the
    full LP) and moves to every separation point at which all blocks are feasible.  Cuts are valid
    wherever they are separated, so the lower bound stays a bound; when no cut cuts the master's
    point off, the next iteration separates at the master's point itself (plain Kelley).
    ``stabilize = 1`` is the paper's unstabilised method.  Measured on the 8 x 10 notebook grid
    (balanced spectral partition, 6 blocks): 500 iterations ending at a 1.2% gap without it.
    """
    if gap_type not in ("absolute", "relative"):
        raise DataValidationError("gap_type", f"must be 'absolute' or 'relative', got {gap_type!r}")
    if not 0.0 < stabilize <= 1.0:
        raise DataValidationError("stabilize", f"must be in (0, 1], got {stabilize!r}")
    if (instance.cost < 0).any():
        raise DataValidationError("cost", "negative utility losses make the subproblem duals unbounded (spec C3)")
    start = time.perf_counter()
    deadline = None if time_limit is None else time.time() + time_limit
    y_order = part.all_boundary
    subs = build_subproblems(instance, part, y_order)
    for sub in subs:
        sub.deadline = deadline
    lazy = None
    if init_cuts == "lazy":
        ii, jj, cc = master_init_cuts(instance, part, y_order, "all", max_coeff, max_rows=None)
        lazy = LazyRows(ii, jj, cc, np.zeros((len(ii), instance.K), dtype=bool))
    master, _ = build_master(instance, part, y_order, subs, "none" if lazy else init_cuts, max_coeff, max_init_rows)
    build_s = time.perf_counter() - start
    w_caps = np.array([instance.weighted_cost[sub.internal].max(axis=1).sum() for sub in subs])
    core = _initial_core(instance, y_order, stabilize)
    kelley = core is None
    lb, ub, incumbent = -INF, INF, None
    history, first_feasible = [], {}
    status = "max_iter"
    with resolve_executor(executor) as pool:
        for it in range(1, max_iter + 1):
            try:
                mres, lazy_rows = _solve_master(master, lazy, it, deadline)
            except TimeUp:
                status = "time limit"
                break
            lb = max(lb, _master_bound(master, w_caps))
            z_master = np.clip(mres.x[: master.n_z], 0.0, 1.0)  # tolerance can leave -1e-9: times e^(eps d) it matters
            w = mres.x[master.n_z :]
            zy = z_master if kelley else stabilize * z_master + (1 - stabilize) * core
            tick = time.perf_counter()
            try:
                outcomes = _solve_blocks(subs, zy, pool)
            except TimeUp:
                status = "time limit"
                break
            sub_s = time.perf_counter() - tick
            feas_cuts = opt_cuts = cuts_off_master = 0
            ub_t = np.nan  # the loss of this iteration's mechanism, when every block is feasible
            all_feasible = True
            for sub, out in zip(subs, outcomes, strict=True):
                at_master = out.const + out.coeff @ z_master[sub.beta_pos]
                if not out.feasible:
                    all_feasible = False
                    master.add_cut(None, sub.beta_pos, out.const, out.coeff)
                    feas_cuts += 1
                    cuts_off_master += at_master > opt_tol
                    continue
                first_feasible.setdefault(sub.block, it)
                w_l = w[master.w_index[sub.block] - master.n_z]
                if w_l < out.value - opt_tol * max(1.0, abs(out.value)) or w_l < at_master - opt_tol * max(
                    1.0, abs(at_master)
                ):
                    master.add_cut(sub.block, sub.beta_pos, out.const, out.coeff)
                    opt_cuts += 1
                    cuts_off_master += w_l < at_master - opt_tol * max(1.0, abs(at_master))
            if all_feasible:  # the bound is the loss of the repaired, exactly mDP mechanism
                candidate, _ = repair(instance, _assemble(instance, y_order, zy, subs, outcomes))
                ub_t = expected_loss(instance, candidate)
                if ub_t < ub:
                    ub, incumbent = ub_t, candidate
            separated_at_master = kelley
            if all_feasible and stabilize < 1.0:
                core = zy
            kelley = core is None or cuts_off_master == 0
            gap_now = (ub - lb) / max(abs(ub), 1e-12) if gap_type == "relative" else ub - lb
            history.append(
                {
                    "iteration": it,
                    "LB": lb,
                    "UB_t": ub_t,
                    "best UB": ub,
                    "gap": gap_now,
                    "feasibility cuts": feas_cuts,
                    "optimality cuts": opt_cuts,
                    "infeasible subproblems": sum(not o.feasible for o in outcomes),
                    "Property-3.2 rows added": lazy_rows,
                    "master s": mres.seconds,
                    "subproblems s": sub_s,
                    "slowest subproblem s": max((o.seconds for o in outcomes), default=0.0),
                    "elapsed s": time.perf_counter() - start,
                }
            )
            if progress:
                print(f"  iteration {it:4d}  LB {lb:.8g}  UB {ub:.8g}  gap {gap_now:.3g}  cuts {feas_cuts}+{opt_cuts}")
            if feas_cuts + opt_cuts == 0 and separated_at_master:
                status = "optimal"
                break
            if gap_now <= gap:
                status = "gap reached"
                break
            if time_limit is not None and time.perf_counter() - start > time_limit:
                status = "time limit"
                break
    info = {
        "boundary records": len(y_order),
        "subproblems": len(subs),
        "build s": build_s,
        "seconds": time.perf_counter() - start,
        "master columns": master.n_z + len(master.w_index),
    }
    return BendersResult(incumbent, lb, ub, status, len(history), pd.DataFrame(history), first_feasible, info)


def _initial_core(instance: MDPInstance, y_order: np.ndarray, stabilize: float) -> np.ndarray | None:
    """The exponential mechanism's boundary rows (feasible for the full LP, hence for every block),
    or None (plain Kelley until a feasible separation point is found) without output distances."""
    if stabilize >= 1.0 or instance.d_ro is None:
        return None
    return exponential_mechanism(instance)[y_order].ravel()


def _solve_blocks(subs: list[Subproblem], zy: np.ndarray, pool) -> list[BlockOutcome]:
    if pool is None:  # in process: persistent, warm-started subproblem models
        return [solve_block(s, zy) for s in subs]
    return map_tasks(_solve_task, [(s, zy) for s in subs], executor=pool)


def _solve_task(task) -> BlockOutcome:
    sub, zy = task
    return solve_block(sub, zy)


def _assemble(instance: MDPInstance, y_order: np.ndarray, zy: np.ndarray, subs, outcomes) -> np.ndarray:
    """The full perturbation matrix in record order: master rows for Y, subproblem rows for each X_l."""
    K = instance.K
    z = np.zeros((instance.N, K))
    z[y_order] = zy.reshape(-1, K)
    for sub, out in zip(subs, outcomes, strict=True):
        z[sub.internal] = out.x.reshape(-1, K)
    return z
