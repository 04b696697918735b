"""Facility-location comparisons (spec 6, a harness of ours: the paper has no experiments).

* :func:`compare_facility` - private cost (the general-metric pipeline, and any baseline) against
  the MIP optimum and the LP bound, over ε and n, on points in the plane.
* :func:`stretch_table` - the FRT embedding's measured stretch against the (18b) bound.
* :func:`lower_bound_table` - ``E cost / E opt`` on the star family against ``0.025/√ε`` (spec 4).

``dpmodels compare facility`` prints all three (its arguments: :mod:`dpmodels.facility.commands`).
Every column computed from the true client counts (costs, |S|, the optimum, the LP bound and
their ratios) is labelled ``true ... (diagnostic)``: the names are :data:`COST`, :data:`SET_COST`,
:data:`RATIO`, :data:`OPT`, :data:`LP`, :data:`N_OPEN` and :data:`BELOW_BOUND`.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence

import numpy as np
import pandas as pd
from tqdm import tqdm

from dpmodels.core.errors import DataValidationError
from dpmodels.core.noise import make_rng

from .checks import check_epsilon
from .data import UFLInstance
from .frt import measured_stretch
from .general_metric import dp_ufl_general
from .mechanism import BASELINES, run_tree
from .models import build_ufl_mip, solve_reference
from .results import true_label

__all__ = ["compare_facility", "stretch_table", "lower_bound_table", "plot_compare"]

#: Column labels of values computed from the true client counts N (diagnostics, never released).
COST, SET_COST, RATIO = true_label("cost"), true_label("set cost"), true_label("cost / opt")
OPT, LP, N_OPEN = true_label("opt"), true_label("LP bound"), true_label("|S|")
BELOW_BOUND = true_label("ratio below bound")


def _plane(n: int, seed, f: float, clusters: int) -> UFLInstance:
    import dpmodels.instances as instances

    return instances.generate("facility/plane", seed=seed, n=n, f=f, clusters=clusters)


def compare_facility(
    epsilons: Sequence[float] = (0.25, 0.5, 1.0, 2.0, 5.0),
    sizes: Sequence[int] = (20, 50),
    runs: int = 20,
    seed=0,
    algorithms: Sequence[str] = ("dp", "base"),
    f: float = 0.5,
    clusters: int = 0,
    solver: str = "highs",
    lam: float = 1.5,
    radius_mode: str = "tight",
    instance: UFLInstance | None = None,
    progress: bool = False,
) -> pd.DataFrame:
    """One row per (n, ε, algorithm): mean realized / set cost over ``runs`` (fresh tree and noise each
    run), its ratio to the MIP optimum, the LP bound, mean |R|, |S|, L' and ε used (inf and
    ``private = False`` for the non-private Algorithm 1 and trivial solution).  The costs, |S|,
    the optimum and the LP bound come from the true counts: labelled diagnostics.  ``progress``
    shows a bar over the (n, ε, algorithm) cases.

    Parameters
    ----------
    epsilons : sequence of float
        The privacy parameters.
    sizes : sequence of int
        Numbers of locations of the random plane instances.
    runs : int, default 20
        Runs per case.
    seed : int, default 0
        Seeds the instances, trees and marks (an experiment, not private).
    algorithms : sequence of str
        Keys of :data:`~dpmodels.facility.mechanism.BASELINES`.
    f : float, default 0.5
        The facility cost.
    clusters : int, default 0
        Clusters of the plane instances (0: uniform).
    solver : str, default "highs"
        The MIP solver of the optimum.
    lam : float, default 1.5
        λ of the trees.
    radius_mode : str, default "tight"
        The FRT radii.
    instance : UFLInstance, optional
        One instance instead of the random ones.
    progress : bool, default False
        Show a progress bar.
    """
    unknown = sorted(set(algorithms) - set(BASELINES))
    if unknown:
        raise DataValidationError("algorithms", f"unknown {unknown}; choose from {sorted(BASELINES)}")
    eps_list = [check_epsilon(e) for e in epsilons]
    rng = make_rng(seed)
    rows = []
    cases = [instance] if instance is not None else [_plane(n, rng, f, clusters) for n in sizes]
    bar = tqdm(total=len(cases) * len(eps_list) * len(algorithms), desc="(n, ε, algorithm)", disable=not progress)
    for inst in cases:
        tick = time.perf_counter()
        opt = solve_reference(build_ufl_mip(inst), solver)
        mip_seconds = time.perf_counter() - tick
        lp = solve_reference(build_ufl_mip(inst, relax=True), solver)
        for eps in eps_list:
            for algorithm in algorithms:
                tick = time.perf_counter()
                reps = [
                    dp_ufl_general(inst, eps, lam=lam, radius_mode=radius_mode, rng=rng, algorithm=algorithm)
                    for _ in range(runs)
                ]
                true = [r.diagnostics for r in reps]
                cost = float(np.mean([t.realized_cost for t in true]))
                rows.append(
                    {
                        "n": inst.n,
                        "epsilon": eps,
                        "algorithm": algorithm,
                        "private": all(r.run.private for r in reps),
                        COST: cost,
                        SET_COST: float(np.mean([t.set_cost for t in true])),
                        RATIO: cost / opt if opt > 0 else 1.0,
                        OPT: opt,
                        LP: lp,
                        "R": float(np.mean([r.R.size for r in reps])),
                        N_OPEN: float(np.mean([t.S.size for t in true])),
                        "L_prime": float(np.mean([r.run.lprime for r in reps])),
                        "eps_used": float(np.max([r.run.eps_used for r in reps])),  # inf if not private
                        "seconds/run": (time.perf_counter() - tick) / runs,
                        "mip_seconds": mip_seconds,
                    }
                )
                bar.update()
    bar.close()
    return pd.DataFrame(rows)


def stretch_table(
    sizes: Sequence[int] = (10, 30, 60), lam: float = 1.5, trees: int = 100, seed=0, modes=("tight", "geometric")
) -> pd.DataFrame:
    """Measured stretch ``E[d_T]/d`` of uniform points in the square (spec 2.2's table), one row per (mode, n).

    Parameters
    ----------
    sizes : sequence of int
        Numbers of points.
    lam : float, default 1.5
        λ of the trees.
    trees : int, default 100
        Embeddings per instance.
    seed : int, default 0
        Seeds the points and the trees.
    modes : sequence of str
        The radius modes compared.
    """
    from .data import euclidean

    rng = make_rng(seed)
    rows = []
    for n in sizes:
        d = euclidean(rng.random((n, 2)))
        for mode in modes:
            s = measured_stretch(d, lam=lam, radius_mode=mode, trees=trees, seed=rng)
            rows.append({"mode": mode, "n": n, **s})
    return pd.DataFrame(rows)


def lower_bound_table(
    ms: Sequence[int] = (4, 16, 64), n: int = 16, draws: int = 300, seed=7, algorithms=("dp",), epsilon=None
) -> pd.DataFrame:
    """``E_P cost / E_P opt`` on the star family (sites all_nodes) beside the bound ``0.025 √m``
    (both evaluated on the true counts: the :data:`RATIO` and :data:`BELOW_BOUND` columns).

    The algorithms run with ε = 1/m unless ``epsilon`` is given (e.g. the non-private Algorithm 1
    with ε = 1, which the bound must catch once ``0.025 √m > 1``).

    Parameters
    ----------
    ms : sequence of int
        Star sizes ``m``.
    n : int, default 16
        Clients of the star family.
    draws : int, default 300
        Random count vectors per case.
    seed : int, default 7
        Seeds the draws.
    algorithms : sequence of str
        Keys of :data:`~dpmodels.facility.mechanism.BASELINES`.
    epsilon : float, optional
        ε for every run (default ``1/m``).
    """
    import dpmodels.instances as instances

    rows = []
    for m in ms:
        for algorithm in algorithms:
            rng = make_rng(seed)
            costs, opts = [], []
            for _ in range(draws):
                inst = instances.generate("facility/star", seed=rng, m=m, n=n)
                eps = 1 / m if epsilon is None else epsilon
                costs.append(run_tree(inst, eps, algorithm, rng=rng, sites="all_nodes").cost)
                opts.append(inst.info["opt"])
            ratio = float(np.mean(costs) / np.mean(opts))
            bound = 0.025 * math.sqrt(m)
            rows.append(
                {"m": m, "epsilon": 1 / m if epsilon is None else epsilon, "algorithm": algorithm}
                | {RATIO: ratio, "bound": bound, BELOW_BOUND: ratio < bound}
            )
    return pd.DataFrame(rows)


def plot_compare(table: pd.DataFrame, path: str | None = None, title: str = ""):
    """Cost / opt against ε: one colour per algorithm (:mod:`dpmodels.core.figures`), one line
    style per n; the LP/MIP ratio is in the legend.

    Writes ``path`` (PNG, PDF or SVG by its suffix) when given; returns the figure.

    Parameters
    ----------
    table : pandas.DataFrame
        A :func:`compare_facility` table.
    path : str, optional
        Where to write the figure.
    title : str, optional
        The figure's title.
    """
    from dpmodels.core.figures import (
        epsilon_axis,
        figure_style,
        method_style,
        new_figure,
        reference_line,
        save_figure,
    )

    sizes = sorted(table["n"].unique())
    dashes = dict(zip(sizes, ("-", "--", ":", "-."), strict=False))
    with figure_style():
        fig, ax = new_figure(figsize=(6, 4), interactive=path is None)
        for (n, alg), grp in table.groupby(["n", "algorithm"]):
            lp_over_mip = grp[LP].iloc[0] / grp[OPT].iloc[0]
            style = method_style(alg) | {"label": f"n={n} {alg} (LP/MIP {lp_over_mip:.3f})"}
            ax.plot(grp.epsilon, grp[RATIO], linestyle=dashes.get(n, "-"), **style)
        reference_line(ax, 1.0, "MIP optimum")
        epsilon_axis(ax, table["epsilon"])
        ax.set_ylabel("true expected cost / MIP optimum (ratio, diagnostic)")
        ax.set_title(title or "DP facility location")
        ax.legend(fontsize=7)
        if path is not None:
            save_figure(fig, path)
    return fig
