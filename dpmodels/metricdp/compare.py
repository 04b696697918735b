"""Metric-DP comparisons: full LP vs structured IPM vs Benders (four partitioners) vs the
exponential mechanism.

``compare_mdp`` runs each method on one instance and reports the expected loss, bounds,
status, time, iterations, partition statistics and the exact audit of the returned matrix
(the full LP's is repaired first: raw LP matrices are not private).  ``objective`` is always the
expected loss of the returned, exactly private mechanism and ``bound`` a certified lower bound
(HiGHS's own objective is the ``LP objective (HiGHS)`` column); ``seconds`` and the time limit
exclude numba's compile of the IPM kernels, done before the clock and reported as ``compile s``;
``partition_table`` reproduces the layout of the paper's Tables 1-2; ``privacy_utility``
sweeps epsilon for the LP optimum and the exponential mechanism (the paper's Fig. 7).
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np
import pandas as pd
from tqdm import tqdm

from dpmodels.core.errors import DataValidationError

from .benders import benders
from .data import MDPInstance
from .ipm import structured_ipm, warm_up
from .lp import full_lp, safe_lower_bound
from .mechanism import exponential_mechanism
from .partition import PARTITIONERS, partition
from .privacy_audit import audit, expected_loss, repair, require_exact_mdp

__all__ = ["METHODS", "compare_mdp", "partition_table", "privacy_utility", "plot_bounds"]

METHODS = (
    "full LP simplex",
    "full LP ipm",
    "structured IPM",
    *[f"Benders {p}" for p in PARTITIONERS],
    "exponential mechanism",
)


def compare_mdp(
    instance: MDPInstance,
    methods: Sequence[str] = ("full LP simplex", "Benders k-m-DV", "exponential mechanism"),
    blocks: int = 25,
    gap: float = 1e-3,
    time_limit: float | None = 300.0,
    seed=0,
    init_cuts: str = "lazy",
    executor=None,
    max_iter: int | None = None,
    progress: bool = False,
) -> tuple[pd.DataFrame, dict]:
    """One row per method; also returns the Benders histories keyed by method.

    Parameters
    ----------
    instance : MDPInstance
        The instance (records, outputs, metric, prior, ``eps`` per km, ``eta``).
    methods : sequence of str
        Names of :data:`METHODS`.
    blocks : int
        Benders' number of blocks.
    gap : float
        The certified relative gap of Benders and the structured IPM.
    time_limit : float, optional
        Seconds per method (numba's compile of the IPM kernels excluded).
    seed : int
        The partitioners' k-means seed.
    init_cuts : str
        Benders' initial master rows.
    executor
        Where Benders' subproblems run.
    max_iter : int, optional
        The iteration cap of Benders and the structured IPM (None: their own, 500 and 100).
    progress : bool
        Show a bar over the methods.
    """
    unknown = sorted(set(methods) - set(METHODS))
    if unknown:
        raise DataValidationError("methods", f"unknown {unknown}; choose from {list(METHODS)}")
    rows, histories = [], {}
    expmech = expected_loss(instance, exponential_mechanism(instance)) if instance.d_ro is not None else np.nan
    caps = {} if max_iter is None else {"max_iter": max_iter}
    bar = tqdm(methods, desc="mdp methods", disable=not progress)
    for method in bar:
        bar.set_postfix_str(method)
        row = {"method": method, "compile s": warm_up() if method == "structured IPM" else 0.0}
        tick = time.perf_counter()  # after the compile: the time limit is the method's
        if method.startswith("full LP"):
            z = _full_lp_row(instance, method.split()[-1], time_limit, row)
        elif method == "structured IPM":
            res = structured_ipm(instance, gap=gap, time_limit=time_limit, **caps)
            z = res.z
            histories[method] = res.history
            objective = res.upper_bound if z is not None else np.nan  # no mechanism yet: no loss to report
            row.update(status=res.status, objective=objective, bound=res.lower_bound, iterations=res.iterations)
        elif method.startswith("Benders"):
            part = partition(instance, method.split()[-1], blocks, seed)
            res = benders(
                instance,
                part,
                gap=gap,
                time_limit=time_limit,
                init_cuts=init_cuts,
                executor=executor,
                **caps,
            )
            z = res.z
            histories[method] = res.history
            stats = part.stats(instance.graph)
            row.update(
                status=res.status,
                objective=res.upper_bound if z is not None else None,
                bound=res.lower_bound,
                iterations=res.iterations,
                **stats,
            )
        else:
            z = exponential_mechanism(instance)
            row.update(status="closed form", objective=expected_loss(instance, z), bound=np.nan)
        row["seconds"] = time.perf_counter() - tick
        if z is not None:
            require_exact_mdp(instance, z, f"{method} mechanism")  # every reported mechanism is private
            row.update(audit(instance, z))
            row["loss vs exponential mechanism %"] = 100 * (expected_loss(instance, z) / expmech - 1)
        rows.append(row)
    return pd.DataFrame(rows), histories


def _full_lp_row(instance: MDPInstance, method: str, time_limit: float | None, row: dict) -> np.ndarray | None:
    """HiGHS on the full LP: its point repaired into a private mechanism (whose loss is the
    objective) and a weak-duality bound from its duals that holds however inexact they are."""
    model = full_lp(instance, method=method, time_limit=time_limit)
    res = model.solve(retry=False)
    row.update(status=res.status, objective=np.nan, bound=np.nan, **{"LP objective (HiGHS)": res.objective})
    if res.x is None:  # stopped without a point (time limit, failure): nothing proved
        return None
    z, row["uniform weight in repair"] = repair(instance, res.x.reshape(instance.N, instance.K))
    n = instance.N * instance.K
    row.update(
        objective=expected_loss(instance, z),
        bound=safe_lower_bound(model, np.zeros(n), np.ones(n), simplices=model.simplices),
    )
    return z


def partition_table(instance: MDPInstance, blocks: int = 25, seeds: Sequence[int] = (0, 1, 2)) -> pd.DataFrame:
    """Subproblem and MP-component sizes of the four partitioners (mean and 1.96 sd over seeds).

    Parameters
    ----------
    instance : MDPInstance
        The instance (records, outputs, metric, prior, ``eps`` per km, ``eta``).
    blocks : int
        The number of blocks.
    seeds : sequence of int
        The k-means seeds averaged over.
    """
    rows = []
    for method in PARTITIONERS:
        if method == "k-m-rec" and instance.features is None:
            continue
        stats = pd.DataFrame([partition(instance, method, blocks, s).stats(instance.graph) for s in seeds])
        row = {"partitioner": method}
        for col in (
            "subproblem size avg",
            "subproblem size max",
            "MP component size avg",
            "MP component size max",
            "boundary records",
        ):
            row[col] = f"{stats[col].mean():.1f} ± {1.96 * stats[col].std(ddof=0):.1f}"
        rows.append(row)
    return pd.DataFrame(rows)


def privacy_utility(instance: MDPInstance, epsilons: Sequence[float], progress: bool = False) -> pd.DataFrame:
    """Optimal (LP) and exponential-mechanism expected loss for each epsilon (the paper's Fig. 7).

    Parameters
    ----------
    instance : MDPInstance
        The instance (records, outputs, metric, prior, ``eps`` per km, ``eta``).
    epsilons : sequence of float
        The privacy levels (per km) to solve at.
    progress : bool
        Show a progress bar.
    """
    rows = []
    for eps in tqdm(epsilons, desc="privacy-utility LPs", disable=not progress):
        inst = instance.with_privacy(epsilon=eps)
        lp = full_lp(inst).solve().objective
        em = expected_loss(inst, exponential_mechanism(inst))
        rows.append(
            {
                "epsilon": eps,
                "LP optimum": lp,
                "exponential mechanism": em,
                "LP below exponential mechanism %": 100 * (1 - lp / em),
            }
        )
    return pd.DataFrame(rows)


def plot_bounds(histories: dict, path: str | None = None, optimum: float | None = None):
    """Lower and best upper bound per iteration of each iterative run (Benders, structured IPM):
    one colour per method (:mod:`dpmodels.core.figures`), solid lower and dashed upper bounds.

    Writes ``path`` (PNG, PDF or SVG by its suffix) when given; returns the figure."""
    from dpmodels.core.figures import figure_style, method_style, new_figure, reference_line, save_figure

    with figure_style():
        fig, ax = new_figure(figsize=(7, 4.5), interactive=path is None)
        for name, h in histories.items():
            style = method_style(name)
            ax.plot(h["iteration"], h["LB"], **(style | {"label": f"{name}: lower bound", "markevery": 0.1}))
            upper = h["best UB"].replace(np.inf, np.nan)
            ax.plot(h["iteration"], upper, "--", color=style["color"], label=f"{name}: best upper bound")
        if optimum is not None:
            reference_line(ax, optimum, "full-LP optimum")
        ax.set(xlabel="iteration", ylabel="expected utility loss (units of the loss matrix C)", title="bounds")
        ax.legend(fontsize=8)
        if path is not None:
            save_figure(fig, path)
    return fig
