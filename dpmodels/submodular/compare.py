"""The harness of ``dpmodels compare submodular``: greedy vs continuous greedy vs the private algorithms (spec 7.3 [S]).

The paper has no experiments; this is the project's harness.  For a submodular instance it runs the
matroid greedy, non-private continuous greedy (+ swap rounding), private Algorithm 1 (``bases``
cover) and Mitrovic's private greedy over a grid of epsilons and seeds, and reports ``F(S)/OPT``
(OPT from the exact MILP solved by HiGHS, or brute force), feasibility, oracle calls, time and the
accountant's total epsilon (basic composition).  For a k-submodular instance: k-greedy, Alg. 3, Alg. 4.

``F(S)`` and ``OPT`` are evaluated on the true data: their columns (:data:`VALUE`, :data:`RATIO`
and the curve's :data:`RATIO_MEAN`, :data:`RATIO_SD`) are labelled as diagnostics, which no
private release contains.
"""

from __future__ import annotations

import math
import time

import numpy as np
import pandas as pd
from tqdm import tqdm

from .algorithms import brute_force_opt, continuous_greedy, greedy, k_brute_force_opt, k_greedy
from .data import KSubmodularInstance
from .mechanism.continuous import private_continuous_greedy
from .mechanism.greedy import mitrovic_private_greedy, private_k_greedy, private_k_greedy_sampled
from .objectives import FacilityLocation, KCoverage, WeightedCoverage

__all__ = ["VALUE", "RATIO", "RATIO_MEAN", "RATIO_SD", "optimum", "compare_submodular", "privacy_utility", "plot_curve"]

#: Column labels of values evaluated on the true data (diagnostics, never a private output).
VALUE = "true F(S) (diagnostic)"
RATIO = "true F(S)/OPT (diagnostic)"
RATIO_MEAN = "true F(S)/OPT mean (diagnostic)"
RATIO_SD = "true F(S)/OPT sd (diagnostic)"


def optimum(instance) -> tuple[float, str]:
    """OPT by the exact MILP (coverage, facility location, k-coverage; HiGHS) or brute force.

    Parameters
    ----------
    instance : SubmodularInstance or KSubmodularInstance
        The instance.

    Returns
    -------
    tuple
        ``(OPT, how)``.
    """
    from dpmodels.core.facade import solve

    from .models import build_coverage_milp, build_facility_milp, build_kcoverage_milp

    F, M = instance.function, instance.matroid
    builders = {
        WeightedCoverage: build_coverage_milp,
        FacilityLocation: build_facility_milp,
        KCoverage: build_kcoverage_milp,
    }
    for cls, build in builders.items():
        if isinstance(F, cls):
            res = solve(build(F, M), "highs", raise_on_nonoptimal=True, options={"mip_rel_gap": 0.0})
            return float(res.incumbent_objective), "MILP (highs)"
    if isinstance(instance, KSubmodularInstance):
        return k_brute_force_opt(F, M)[0], "brute force"
    return brute_force_opt(F, M)[0], "brute force"


def _row(method, eps, seed, value, opt, feasible, calls, eps_total, seconds) -> dict:
    return {
        "method": method,
        "epsilon": eps,
        "seed": seed,
        VALUE: value,
        RATIO: value / opt if opt > 0 else math.nan,
        "feasible": bool(feasible),
        "calls": calls,
        "epsilon_total": eps_total,
        "seconds": seconds,
    }


def _timed(run):
    tick = time.perf_counter()
    out = run()
    return out, time.perf_counter() - tick


def compare_submodular(
    instance, epsilons=(0.1, 1.0, 10.0), seeds: int = 5, T: int | None = None, progress: bool = False
) -> tuple[pd.DataFrame, float]:
    """One row per (method, epsilon, seed); returns the table and OPT.  ``progress`` shows a
    bar over the seeds.

    Parameters
    ----------
    instance : SubmodularInstance or KSubmodularInstance
        The instance.
    epsilons : sequence of float
        The paper's input epsilons.
    seeds : int, default 5
        Runs per epsilon (seeded: an experiment, not private).
    T : int, optional
        Steps of the continuous algorithms.
    progress : bool, default False
        Show a progress bar.
    """
    opt, _ = optimum(instance)
    if isinstance(instance, KSubmodularInstance):
        return _compare_k(instance, epsilons, seeds, opt, progress), opt
    F, M = instance.function, instance.matroid
    rows = []
    g, sec = _timed(lambda: greedy(F, M))
    rows.append(_row("greedy", math.inf, 0, g.value, opt, M.is_independent(g.S), g.calls, math.inf, sec))
    for seed in _seeds(seeds, progress):
        cg, sec = _timed(lambda seed=seed: continuous_greedy(F, M, T=T, seed=seed))
        rows.append(
            _row(
                "continuous greedy",
                math.inf,
                seed,
                cg.rounded_value,
                opt,
                M.is_independent(cg.S),
                cg.calls,
                math.inf,
                sec,
            )
        )
        for eps in epsilons:
            a1, sec = _timed(lambda eps=eps, seed=seed: private_continuous_greedy(F, M, eps, T=T, seed=seed))
            rows.append(
                _row(
                    "private CG (Alg. 1)",
                    eps,
                    seed,
                    a1.rounded_value,
                    opt,
                    M.is_independent(a1.S),
                    a1.calls,
                    a1.accountant.basic()[0],
                    sec,
                )
            )
            mi, sec = _timed(lambda eps=eps, seed=seed: mitrovic_private_greedy(F, M, eps, seed=seed))
            rows.append(
                _row(
                    "Mitrovic private greedy",
                    eps,
                    seed,
                    mi.value,
                    opt,
                    M.is_independent(mi.S),
                    mi.calls,
                    mi.accountant.basic()[0],
                    sec,
                )
            )
    return pd.DataFrame(rows), opt


def _seeds(seeds: int, progress: bool):
    return tqdm(range(seeds), desc="seeds (every method and epsilon)", disable=not progress)


def _compare_k(instance: KSubmodularInstance, epsilons, seeds: int, opt: float, progress: bool = False) -> pd.DataFrame:
    F, M = instance.function, instance.matroid
    rows = []
    kg, sec = _timed(lambda: k_greedy(F, M))
    rows.append(_row("k-greedy", math.inf, 0, kg.value, opt, M.is_independent(kg.S != 0), kg.calls, math.inf, sec))
    for seed in _seeds(seeds, progress):
        for eps in epsilons:
            for name, run in (("Alg. 3", private_k_greedy), ("Alg. 4", private_k_greedy_sampled)):
                res, sec = _timed(lambda run=run, eps=eps, seed=seed: run(F, M, eps, seed=seed))
                rows.append(
                    _row(
                        name,
                        eps,
                        seed,
                        res.value,
                        opt,
                        M.is_independent(res.S != 0),
                        res.calls,
                        res.accountant.basic()[0],
                        sec,
                    )
                )
    return pd.DataFrame(rows)


def privacy_utility(table: pd.DataFrame) -> pd.DataFrame:
    """Mean and standard deviation of the true ``F(S)/OPT`` per method and epsilon (the
    privacy-utility curve; a diagnostic on the true data).

    Parameters
    ----------
    table : pandas.DataFrame
        A :func:`compare_submodular` table.
    """
    grouped = table.groupby(["method", "epsilon"], sort=False)
    out = grouped.agg(
        **{RATIO_MEAN: (RATIO, "mean"), RATIO_SD: (RATIO, "std")},
        epsilon_total=("epsilon_total", "first"),
        feasible=("feasible", "mean"),
        calls=("calls", "mean"),
        seconds=("seconds", "mean"),
    )
    return out.reset_index()


def plot_curve(curve: pd.DataFrame, path: str | None = None):
    """Ratio against the paper's input epsilon, one line per private method (mean ± sd); the
    non-private methods and the ``1 - 1/e`` guarantee are reference lines, each in its own line
    style (:func:`dpmodels.core.figures.reference_line`).

    Writes ``path`` (PNG, PDF or SVG by its suffix) when given; returns the figure.

    Parameters
    ----------
    curve : pandas.DataFrame
        A :func:`privacy_utility` table.
    path : str, optional
        Where to write the figure.
    """
    from dpmodels.core.figures import epsilon_axis, figure_style, method_style, new_figure, reference_line, save_figure

    with figure_style():
        fig, ax = new_figure(figsize=(6, 4), interactive=path is None)
        private = curve[np.isfinite(curve.epsilon)]
        for method, part in curve.groupby("method", sort=False):
            if np.isinf(part.epsilon).all():
                colour = method_style(method)["color"]
                reference_line(ax, part[RATIO_MEAN].iloc[0], f"{method} (non-private)", color=colour)
            else:
                ax.errorbar(part.epsilon, part[RATIO_MEAN], yerr=part[RATIO_SD], capsize=3, **method_style(method))
        reference_line(ax, 1 - 1 / np.e, "1 - 1/e (guarantee)")
        epsilon_axis(ax, private.epsilon, label="input ε per step (totals in the table)")
        ax.set_ylabel("true F(S) / OPT (ratio, diagnostic)")
        ax.legend(fontsize=7)
        if path is not None:
            save_figure(fig, path)
    return fig
