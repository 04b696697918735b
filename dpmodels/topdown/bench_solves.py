"""Solver settings timed side by side on the node solves of one TopDown run (issue 25).

``dpmodels bench topdown --solver-settings`` runs TopDown once on a synthetic preset, rebuilds every
parent's :class:`~dpmodels.topdown.node_data.NodeProblem` from the release
(:func:`~dpmodels.topdown.driver.node_problem`: noisy answers and public facts only) and times, solve by
solve and setting after setting on the same matrices:

* the L2 QP (:func:`~dpmodels.topdown.compiled.l2_system`) under each of :data:`L2_SETTINGS`
  (the driver's exact active set, :mod:`~dpmodels.topdown.l2_matrix`, then Clarabel's KKT
  factorisation and iterative refinement at the driver's tolerance), each
  histogram compared with an untimed reference solve at :data:`REFERENCE_TOLERANCE` (its largest
  cell difference: median and maximum over the solves);
* the rounding (:func:`~dpmodels.topdown.compiled.l1_system`) of the first setting's histogram: the LP by
  simplex with presolve off, and the MIP where the LP's vertex is not integral, as the driver does
  (without the forced zeros, :mod:`~dpmodels.topdown.forced_zeros`, the MIP with
  :data:`~dpmodels.topdown.node_solvers.LEAN_MIP`); the same LP on every column, with HiGHS's presolve
  on, and the MIP with HiGHS's default heuristics, beside it (not in the floor).

It also reports the **solver floor**: the time of the solver calls alone (the fastest L2 setting plus
the rounding), per million persons, i.e. what a run would take if everything around the solvers cost
nothing.  It is the measured reason why Python-side work alone cannot bring a run under a budget below it.
"""

from __future__ import annotations

import time

import numpy as np

from .active_set import warm_up
from .compiled import l1_system, l2_system, solve_l1_highs, solve_l2_clarabel
from .forced_zeros import expanded, forced_zero_columns, without_forced_zeros
from .l2_matrix import l2_matrix
from .node_data import split_floor
from .node_options import NodeOptions
from .solve import integral_vertex

__all__ = ["L2_SETTINGS", "run_problems", "solver_settings", "settings_lines"]

#: L2 settings timed on every L2 solve: (name, keyword arguments of ``solve_l2_clarabel``).  The first
#: is the driver's (:func:`~dpmodels.topdown.l2_matrix.l2_matrix`: the active set, Clarabel where it
#: does not apply or finish); the second the driver's Clarabel call before it: QDLDL without refinement
#: on the system without its forced zeros (:mod:`~dpmodels.topdown.forced_zeros`, the presolve's time
#: included in both); the others keep every column.
L2_SETTINGS = (
    ("active set, zeros out (driver)", {"active_set": True, "drop": True}),
    ("qdldl, no refinement, zeros out", {"direct_solve_method": "qdldl", "refine": False, "drop": True}),
    ("qdldl, no refinement", {"direct_solve_method": "qdldl", "refine": False}),
    ("qdldl, refinement", {"direct_solve_method": "qdldl", "refine": True}),
    ("faer, refinement", {"direct_solve_method": "faer", "refine": True}),
)
#: The driver's first Clarabel tolerance (:data:`dpmodels.topdown.l2_matrix.CLARABEL_ATTEMPTS`).
L2_TOLERANCE = 1e-10
#: The tolerance of the untimed reference solve each setting's histogram is compared with.
REFERENCE_TOLERANCE = 1e-12


def run_problems(data, measurements, result) -> list[tuple[int, object]]:
    """``(level, problem)`` of every parent solve of ``result`` with two or more children and a
    nonzero histogram, rebuilt from the released parents, the root first; ``level`` as in the run's
    log (the level the solve released: 1 for the root solve).

    Parameters
    ----------
    data : TopDownData
        The run's data (only its public parts are read).
    measurements : Measurements
        The noisy answers the run post-processed.
    result : TopDownResult
        The run's release.
    """
    from .driver import node_problem

    geo = data.geography
    out = [(1, node_problem(data, measurements))]
    counts = result.node_counts.tocsr()
    for node in range(geo.n_regions):
        kids = geo.children(node)
        parent = counts[node].toarray().ravel()
        if len(kids) > 1 and parent.any():
            out.append((int(geo.level[node]) + 2, node_problem(data, measurements, node, parent)))
    return out


def _timed(fn, *args, **kwargs):
    tick = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - tick


def _solve(solver, system, drop: bool = False, **kwargs):
    """``solver`` on ``system``, or on it without its forced zeros (mapped back) with ``drop``."""
    if not drop:
        return solver(system, **kwargs)
    reduced, keep = without_forced_zeros(system)
    x, status, objective = solver(reduced, **kwargs)
    return expanded(x, keep, system.n), status, objective


def _l2_rows(problems) -> tuple[list[dict], list]:
    """Every L2 setting on every problem, interleaved solve by solve, each histogram compared with a
    reference solve at :data:`REFERENCE_TOLERANCE` (untimed); the first setting's histograms."""
    stats = {name: {"seconds": 0.0, "failed": 0, "diffs": []} for name, _ in L2_SETTINGS}
    first, removed, cells = [], 0, 0
    for _, problem in problems:
        system = l2_system(problem)
        removed += int(forced_zero_columns(system)[: system.n_hist].sum())  # untimed: what the presolve drops
        cells += system.n_hist
        x_ref, _, _ = solve_l2_clarabel(system, tol=REFERENCE_TOLERANCE, direct_solve_method="qdldl", refine=True)
        reference = None if x_ref is None else x_ref[: system.n_hist]
        hists = []
        for name, kwargs in L2_SETTINGS:
            if kwargs.get("active_set"):
                (x, _, _, _), seconds = _timed(l2_matrix, system, NodeOptions(), "topdown_active_set_l2")
            else:
                (x, _, _), seconds = _timed(_solve, solve_l2_clarabel, system, tol=L2_TOLERANCE, **kwargs)
            stats[name]["seconds"] += seconds
            hists.append(None if x is None else x[: system.n_hist].reshape(problem.m, problem.n))
            if x is None:
                stats[name]["failed"] += 1
            elif reference is not None:
                stats[name]["diffs"].append(float(np.abs(x[: system.n_hist] - reference).max()))
        first.append(hists[0])
    rows = []
    for name, s in stats.items():
        diffs = np.asarray(s["diffs"]) if s["diffs"] else np.full(1, np.nan)
        rows.append(
            {
                "stage": "L2",
                "setting": name,
                "solves": len(problems),
                "failed": s["failed"],
                "seconds": s["seconds"],
                "ms per solve": 1e3 * s["seconds"] / len(problems),
                "median |H - H ref|": float(np.median(diffs)),
                "max |H - H ref|": float(diffs.max()),
            }
        )
        if dict(L2_SETTINGS)[name].get("drop"):
            rows[-1]["histogram columns removed"] = removed / max(cells, 1)
    return rows, first


def _l1_rows(problems, histograms) -> list[dict]:
    """The rounding as the driver runs it (:func:`dpmodels.topdown.solve.round_l2`): nothing to solve
    where the floors already meet the parent, else the LP first and the MIP where its vertex is not
    integral."""
    lp_s, full_s, presolved_s, mip_s, default_s, integral, mips, solved, differ = 0.0, 0.0, 0.0, 0.0, 0.0, 0, 0, 0, 0
    for (_, problem), hstar in zip(problems, histograms, strict=True):
        if hstar is None:
            continue  # no L2 to round (counted as failed in the L2 rows)
        low, _ = split_floor(hstar)
        if problem.parent is not None and (low.sum(axis=0) == problem.parent).all():
            continue  # already integral: the driver solves nothing
        system, _ = l1_system(problem, hstar)
        _, seconds = _timed(solve_l1_highs, system, integer=False, presolve=True)
        presolved_s += seconds
        _, seconds = _timed(solve_l1_highs, system, integer=False)
        full_s += seconds
        (x, _, _), seconds = _timed(_solve, solve_l1_highs, system, drop=True, integer=False)
        lp_s, solved = lp_s + seconds, solved + 1
        if x is not None and integral_vertex(x[: system.n_hist]):
            integral += 1
            continue
        (_, _, lean_obj), seconds = _timed(_solve, solve_l1_highs, system, drop=True, integer=True)
        mip_s, mips = mip_s + seconds, mips + 1
        (_, _, default_obj), seconds = _timed(_solve, solve_l1_highs, system, drop=True, integer=True, lean=False)
        default_s += seconds
        differ += lean_obj is None or default_obj is None or abs(lean_obj - default_obj) > 1e-6
    return [
        {"stage": "L1", "setting": "LP (presolve off, zeros out)", "solves": solved, "seconds": lp_s,
         "ms per solve": 1e3 * lp_s / max(solved, 1), "LP integral": integral},
        {"stage": "L1", "setting": "LP (presolve off)", "solves": solved, "seconds": full_s,
         "ms per solve": 1e3 * full_s / max(solved, 1), "compared": True},
        {"stage": "L1", "setting": "LP (presolve on)", "solves": solved, "seconds": presolved_s,
         "ms per solve": 1e3 * presolved_s / max(solved, 1), "compared": True},
        {"stage": "L1", "setting": "MIP (gap 0, zeros out, lean)", "solves": mips, "seconds": mip_s,
         "ms per solve": 1e3 * mip_s / max(mips, 1)},
        {"stage": "L1", "setting": "MIP (HiGHS's heuristics)", "solves": mips, "seconds": default_s,
         "ms per solve": 1e3 * default_s / max(mips, 1), "compared": True, "optima that differ": differ},
    ]  # fmt: skip


def solver_settings(preset: str = "state", races: int = 63, epsilon: float = 4.0, seed: int = 0) -> dict:
    """Run TopDown on ``preset`` once, then time the solver settings on its node solves.

    Parameters
    ----------
    preset : str
        The synthetic geography (:data:`dpmodels.instances.topdown.PRESETS`).
    races : int
        Race categories of the schema (63: the full PL94 schema).
    epsilon : float
        The budget of the measurement (a seeded experiment on synthetic data).
    seed : int
        Seed of the data and of the noise (an experiment, not a release).

    Returns
    -------
    dict
        ``rows`` (one per stage and setting), ``persons``, ``solves``, ``run s`` (the TopDown run) and
        ``solver floor s`` and ``solver floor s per million persons``.
    """
    import dpmodels.instances as instances

    from .driver import topdown
    from .mechanism import measure

    data = instances.generate("topdown/synthetic", preset=preset, races=races, seed=seed)
    meas = measure(data, epsilon, rng=seed)
    warm_up()  # numba's kernels compiled (or loaded) before anything is timed
    result, run_s = _timed(topdown, meas, data.knowledge, data.schema, data.geography)
    problems = run_problems(data, meas, result)
    l2, histograms = _l2_rows(problems)
    l1 = _l1_rows(problems, histograms)
    floor = min(r["seconds"] for r in l2) + sum(r["seconds"] for r in l1 if not r.get("compared"))
    return {
        "preset": preset,
        "persons": int(data.population),
        "solves": len(problems),
        "run s": run_s,
        "rows": l2 + l1,
        "solver floor s": floor,
        "solver floor s per million persons": floor / data.population * 1e6,
    }


def settings_lines(doc: dict) -> list[str]:
    """What ``dpmodels bench topdown --solver-settings`` prints."""
    lines = [
        f"    preset {doc['preset']!r}: {doc['persons']:,} persons, {doc['solves']} parent solves; "
        f"the run itself {doc['run s']:.1f} s"
    ]
    for row in doc["rows"]:
        extra = ""
        if row["stage"] == "L2":
            extra = (
                f", {row['failed']} failed; |H - H ref| median {row['median |H - H ref|']:.1e}, "
                f"max {row['max |H - H ref|']:.1e}"
            )
            if "histogram columns removed" in row:
                extra += f"; {row['histogram columns removed']:.0%} of the histogram columns removed"
        elif "LP integral" in row:
            extra = f", vertex integral for {row['LP integral']}"
        elif "optima that differ" in row:
            extra = f", {row['optima that differ']} optima differ from the lean MIP's"
        lines.append(
            f"    {row['stage']} {row['setting']:<32} {row['solves']:>5} solves {row['seconds']:7.2f} s "
            f"({row['ms per solve']:.1f} ms a solve{extra})"
        )
    lines.append(
        f"    solver floor (fastest L2 + rounding, nothing else): {doc['solver floor s']:.1f} s, "
        f"{doc['solver floor s per million persons']:.1f} s per million persons"
    )
    return lines
