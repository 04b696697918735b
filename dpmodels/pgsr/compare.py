"""The PGSR experiment harness: repeated mechanism runs and the paper's Table 7.

``compare_mechanisms`` runs every mechanism on the same instance for every epsilon and
run; runs sharing ``(epsilon, run)`` share their noise per measurement kind, so
mechanisms are compared on paired draws.  Each ``(epsilon, run)`` pair is one task for
the ``executor`` (serial, process pool, Dask).  ``table7`` aggregates the runs the way the
paper reports them; ``plot_comparison`` draws error and runtime against epsilon (PNG, PDF or SVG).  The
paper's own two-shape layout (census and taxi side by side) is :mod:`dpmodels.pgsr.table7`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from dpmodels.core.errors import DataValidationError
from dpmodels.core.executors import map_tasks
from dpmodels.core.metrics import release_metrics
from dpmodels.core.noise import as_epsilon

from .data import GroupSizeData
from .mechanism import measure
from .postprocessing import MECHANISMS
from .warmup import warm_up

__all__ = ["DEFAULT_MECHANISMS", "compare_mechanisms", "table7", "format_table7", "plot_comparison"]

DEFAULT_MECHANISMS = ("M_H^r", "M_H^dp", "M_c^r", "M_c^dp", "M_c^ch", "TopDown")


def compare_mechanisms(
    data: GroupSizeData,
    epsilons: Sequence = (0.1, 0.5, 1.0),
    runs: int = 30,
    mechanisms: Sequence[str] = DEFAULT_MECHANISMS,
    seed: int = 0,
    options: dict[str, dict] | None = None,
    calibration: str = "sound",
    executor=None,
    progress: bool = False,
) -> pd.DataFrame:
    """One row per (mechanism, epsilon, run) with per-level L1 errors, violations and times.

    Parameters
    ----------
    data : GroupSizeData
        The true group sizes.
    epsilons : sequence
        The budgets compared.
    runs : int
        Runs per epsilon; runs sharing ``(epsilon, run)`` share their noise per measurement kind.
    mechanisms : sequence of str
        Names of :data:`~dpmodels.pgsr.postprocessing.MECHANISMS`.
    seed : int
        The noise's seed (a comparison is an experiment, not a release).
    options : dict, optional
        Mechanism name -> keyword options of its post-processing (e.g.
        ``{"M_H^r": {"solver": "highs"}}``).
    calibration : str
        ``"sound"`` or the paper's ``"paper"`` (the chain only).
    executor
        Where the ``(epsilon, run)`` tasks run (:mod:`dpmodels.core.executors`).
    progress : bool
        Show a progress bar.
    """
    options = dict(options or {})
    for name in mechanisms:
        if name not in MECHANISMS:
            raise DataValidationError("mechanisms", f"unknown {name!r}; choose from {list(MECHANISMS)}")
        MECHANISMS[name].check_options(options.get(name, {}))
    unknown = sorted(set(options) - set(mechanisms))
    if unknown:
        raise DataValidationError("options", f"given for mechanisms not run: {unknown}")
    if int(runs) < 1:
        raise DataValidationError("runs", f"must be >= 1, got {runs}")
    eps_list = [as_epsilon(e) for e in epsilons]
    seeds = np.random.SeedSequence(seed).spawn(len(eps_list) * int(runs))
    tasks = [
        (data, tuple(mechanisms), eps, run, seeds[i * int(runs) + run], options, calibration)
        for i, eps in enumerate(eps_list)
        for run in range(int(runs))
    ]
    warm_up()  # numba's first compile is not a solve time
    rows = map_tasks(_run_task, tasks, executor=executor, progress=progress, desc="PGSR runs")
    return pd.DataFrame([row for group in rows for row in group])


def _run_task(task) -> list[dict]:
    """All mechanisms on one (epsilon, run): one noisy draw per measurement kind."""
    data, mechanisms, eps, run, seed_seq, options, calibration = task
    kinds = ("counts", "cumulative", "chain")
    rngs = dict(zip(kinds, (np.random.default_rng(s) for s in seed_seq.spawn(len(kinds))), strict=True))
    measured = {}
    rows = []
    for name in mechanisms:
        spec = MECHANISMS[name]
        if spec.kind not in measured:
            measured[spec.kind] = measure(data, eps, spec.kind, rngs[spec.kind], calibration)
        noisy, ledger = measured[spec.kind]
        release = spec.post(noisy, **options.get(name, {}))
        row = {
            "mechanism": name,
            "epsilon": float(eps),
            "run": run,
            "status": release.status,
            "solver": release.solver,
            "objective": release.objective,
            "seconds": release.seconds,
            "epsilon spent": float(ledger.total_epsilon),
            "widenings": release.info.get("domain_widenings", 0),
            "termination": release.info.get("termination", ""),
            "G": data.G,
        }
        metrics = release_metrics(data.hierarchy, data.counts, release.counts, data.G)
        if not np.isfinite(release.counts).all():  # no solution (a time limit, a solver failure): no metrics
            metrics = dict.fromkeys(metrics, np.nan)
        rows.append(row | metrics)
    return rows


def table7(runs: pd.DataFrame) -> pd.DataFrame:
    """Mean per-level L1 error, #CV, objective and time per (epsilon, mechanism), as in Table 7.

    Parameters
    ----------
    runs : pandas.DataFrame
        The rows of :func:`compare_mechanisms` (or :func:`~dpmodels.pgsr.table7.compare_shapes`).
    """
    level_cols = [c for c in runs.columns if c.startswith("L1 level")]
    agg = runs.groupby(["epsilon", "mechanism"], sort=False)
    out = agg[level_cols + ["L1 total", "#CV", "#faithfulness", "objective", "seconds"]].mean()
    out["L1 total sd"] = agg["L1 total"].std(ddof=1)
    out["runs"] = agg.size()
    out["status"] = agg["status"].agg(lambda s: ", ".join(f"{n} {k}" for k, n in s.value_counts().items()))
    out["epsilon spent"] = agg["epsilon spent"].max()
    order = {m: i for i, m in enumerate(dict.fromkeys(runs["mechanism"]))}
    return out.reset_index().sort_values(
        ["epsilon", "mechanism"], key=lambda c: c.map(order) if c.name == "mechanism" else c
    )


def format_table7(table: pd.DataFrame) -> str:
    """Printable Table 7: one line per (epsilon, mechanism).

    Parameters
    ----------
    table : pandas.DataFrame
        The result of :func:`table7`.
    """
    shown = table.copy()
    for col in shown.columns:
        if col.startswith("L1") or col in ("objective",):
            shown[col] = shown[col].map(lambda v: f"{v:,.1f}" if pd.notna(v) else "-")
    for col in ("#CV", "#faithfulness"):
        shown[col] = shown[col].map(lambda v: f"{v:g}" if pd.notna(v) else "-")
    shown["seconds"] = shown["seconds"].map(lambda v: f"{v:.3g}")
    shown["epsilon spent"] = shown["epsilon spent"].map(lambda v: f"{v:g}")
    return shown.to_string(index=False)


def plot_comparison(runs: pd.DataFrame, path: str | None = None, title: str = ""):
    """Total L1 error, error per level at the largest epsilon and post-processing time against
    epsilon, one colour per mechanism (:mod:`dpmodels.core.figures`), one legend below.

    The error panels mark their ceiling when ``runs`` has a ``G`` column: a faithful release
    whose groups share nothing with the truth is ``2G`` off at each level, ``2G L`` in total.
    Writes ``path`` (PNG, PDF or SVG by its suffix) when given; returns the figure.

    Parameters
    ----------
    runs : pandas.DataFrame
        The rows of :func:`compare_mechanisms` (or :func:`~dpmodels.pgsr.table7.compare_shapes`).
    path : str, optional
        Where to save the figure.
    title : str
        The figure's title.
    """
    from dpmodels.core.figures import figure_style, new_figure, save_figure, shared_legend

    table = table7(runs)
    G = float(runs["G"].max()) if "G" in runs and runs["G"].notna().any() else None
    with figure_style():
        fig, axes = new_figure(1, 3, figsize=(12, 4.2), interactive=path is None)
        _plot_total(axes[0], table, G)
        _plot_levels(axes[1], table, G)
        _plot_seconds(axes[2], table)
        shared_legend(fig, axes)
        if title:
            fig.suptitle(title)
        if path is not None:
            save_figure(fig, path)
    return fig


def _ceiling_label(G: float) -> str:
    return f"ceiling: 2G = {2 * G:,.0f} per level, 2GL in total"


def _level_columns(table: pd.DataFrame) -> list[str]:
    return [c for c in table.columns if c.startswith("L1 level")]


def _plot_total(ax, table: pd.DataFrame, G: float | None) -> None:
    from dpmodels.core.figures import epsilon_axis, log_axis, method_style, reference_line

    for name, group in table.groupby("mechanism", sort=False):
        ax.errorbar(group["epsilon"], group["L1 total"], yerr=group["L1 total sd"], capsize=3, **method_style(name))
    ceiling = 2 * G * len(_level_columns(table)) if G else None
    if ceiling:
        reference_line(ax, ceiling, _ceiling_label(G))
    low_sd = (table["L1 total"] - table["L1 total sd"].fillna(0)).where(lambda v: v > 0)
    log_axis(ax, [*table["L1 total"], *low_sd], include=[ceiling] if ceiling else [])
    epsilon_axis(ax, table["epsilon"])
    ax.set(ylabel="L1 error, all levels (groups)", title="error against ε (mean ± sd over runs)")


def _plot_levels(ax, table: pd.DataFrame, G: float | None) -> None:
    from dpmodels.core.figures import log_axis, method_style, reference_line

    levels = _level_columns(table)
    top = table[table["epsilon"] == table["epsilon"].max()]
    width = 0.8 / max(len(top), 1)
    heights = []
    for k, (_, row) in enumerate(top.iterrows()):
        style = method_style(row["mechanism"])
        values = row[levels].to_numpy(dtype=float)
        heights.extend(values)
        ax.bar(np.arange(len(levels)) + (k - (len(top) - 1) / 2) * width, values, width, color=style["color"])
    if G:
        reference_line(ax, 2 * G, _ceiling_label(G))
    log_axis(ax, heights, include=[2 * G] if G else [], bars=True)
    ax.set_xticks(np.arange(len(levels)), [c.replace("L1 ", "") for c in levels])
    ax.grid(False, axis="x")
    ax.set(ylabel="mean L1 error (groups)", title=f"error per level at ε = {top['epsilon'].max():g}")


def _plot_seconds(ax, table: pd.DataFrame) -> None:
    from dpmodels.core.figures import epsilon_axis, log_axis, method_style

    for name, group in table.groupby("mechanism", sort=False):
        ax.plot(group["epsilon"], group["seconds"], **method_style(name))
    log_axis(ax, table["seconds"])
    epsilon_axis(ax, table["epsilon"])
    ax.set(ylabel="post-processing time (s)", title="time per run (mean)")
