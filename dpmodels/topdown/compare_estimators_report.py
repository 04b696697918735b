"""What ``dpmodels compare topdown --estimators`` prints and draws, from the comparison's summary only.

* :func:`format_estimators` - one line per ``(estimator, epsilon, level)``: L1 errors, RMSE, the
  per-cell squared bias and variance, GLS's interval coverage;
* :func:`plot_estimators` - one panel per level with the mean L1 error against epsilon per
  estimator, and a panel with GLS's coverage per level beside the nominal level.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["format_estimators", "plot_estimators"]

_SHOWN = (
    "L1 error",
    "total L1 error",
    "RMSE/cell",
    "bias^2/cell",
    "variance/cell",
    "negative cells",
    "CI coverage",
    "CI coverage (totals)",
    "seconds",
)


def format_estimators(summary: pd.DataFrame) -> str:
    """Printable summary (means over runs), one line per ``(estimator, epsilon, level)``.

    Parameters
    ----------
    summary : pandas.DataFrame
        :attr:`~dpmodels.topdown.compare_estimators.EstimatorComparison.summary`.
    """
    shown = summary[["estimator", "epsilon", "level", *[c for c in _SHOWN if c in summary.columns]]].copy()
    shown["epsilon"] = shown["epsilon"].map(lambda v: f"{v:g}")
    for col in ("L1 error", "total L1 error"):
        shown[col] = shown[col].map(lambda v: f"{v:,.1f}")
    for col in ("RMSE/cell", "bias^2/cell", "variance/cell"):
        shown[col] = shown[col].map(lambda v: f"{v:.4g}" if pd.notna(v) else "-")
    for col in ("CI coverage", "CI coverage (totals)"):
        shown[col] = shown[col].map(lambda v: f"{v:.3f}" if pd.notna(v) else "-")
    shown["negative cells"] = shown["negative cells"].map(lambda v: f"{v:g}")
    shown["seconds"] = shown["seconds"].map(lambda v: f"{v:.3g}")
    return shown.to_string(index=False)


def plot_estimators(summary: pd.DataFrame, path=None, title: str = "", level: float = 0.95):
    """Mean L1 error per level against epsilon (one colour per estimator) and GLS's coverage per level.

    Parameters
    ----------
    summary : pandas.DataFrame
        The comparison's summary.
    path : str, optional
        Where to write the figure (PNG, PDF or SVG by its suffix).
    title : str, optional
        The figure's title.
    level : float, default 0.95
        The intervals' nominal coverage (a reference line).
    """
    from dpmodels.core.figures import figure_style, new_figure, save_figure, shared_legend

    levels = sorted(summary["level"].unique())
    n_panels = len(levels) + 1
    ncols = min(4, n_panels)
    nrows = -(-n_panels // ncols)
    with figure_style():
        fig, axes = new_figure(nrows, ncols, figsize=(3.3 * ncols, 2.9 * nrows + 0.5), interactive=path is None)
        axes = np.ravel(axes)
        for ax, lv in zip(axes, levels, strict=False):
            _plot_level(ax, summary[summary["level"] == lv], lv)
        _plot_coverage(axes[len(levels)], summary, level)
        for ax in axes[n_panels:]:
            ax.axis("off")
        shared_legend(fig, axes)
        if title:
            fig.suptitle(title)
        if path is not None:
            save_figure(fig, path)
    return fig


def _plot_level(ax, rows: pd.DataFrame, lv) -> None:
    from dpmodels.core.figures import epsilon_axis, log_axis, method_style

    for name in dict.fromkeys(rows["estimator"]):
        g = rows[rows["estimator"] == name]
        ax.plot(g["epsilon"], g["L1 error"], **method_style(name))
    log_axis(ax, rows["L1 error"])
    epsilon_axis(ax, rows["epsilon"])
    ax.set(ylabel="L1 error (persons)", title=f"level {lv}")


def _plot_coverage(ax, summary: pd.DataFrame, level: float) -> None:
    from dpmodels.core.figures import method_style, reference_line

    gls = summary[summary["estimator"] == "GLS"]
    if gls.empty:
        ax.axis("off")
        return
    cover = gls.groupby("level")["CI coverage"].mean()
    ax.bar(cover.index.to_numpy(), cover.to_numpy(), 0.6, color=method_style("GLS")["color"])
    reference_line(ax, level, f"nominal {level:g}")
    ax.set(xlabel="level", ylabel="share of cells covered", title="GLS interval coverage", ylim=(0.8, 1.0))


def estimators_result(data, args):
    """The ``compare topdown --estimators`` run: the comparison on ``data`` with the command's options.

    Parameters
    ----------
    data : TopDownData
        The synthetic census.
    args : argparse.Namespace
        ``epsilon``, ``runs``, ``seed``, ``executor``, ``progress``.

    Returns
    -------
    dpmodels.core.runner.Result
        The summary table (the CSV), the printed report and the figure.
    """
    from dpmodels.core.runner import Result

    from .compare_estimators import compare_estimators

    found = compare_estimators(
        data, args.epsilon, args.runs, seed=args.seed, executor=args.executor, progress=args.progress
    )
    head = (
        f"instance: {data.name}  {data.geography.describe()}  cells = {data.schema.size}  "
        f"population = {data.population:,}  invariant totals down to level {data.knowledge.total_level}\n"
        "GLS: best linear unbiased, real-valued (may be negative); TopDown: the driver's defaults; "
        "2019 algorithm: the paper's L2 weights and rounding objective; PGSR DP: Model 1 on the detailed answers"
    )
    legend = (
        f"\nmeans over {args.runs} runs per epsilon on the same noise; L1 error summed over the level's cells; "
        "bias^2/cell = mean error^2 - variance/runs (unbiased), variance/cell across runs; "
        "CI coverage: share of the level's cells (totals) inside GLS's normal 95% interval"
    )
    report = [head, legend, format_estimators(found.summary)]
    return Result(found.summary, report, figure=lambda path: plot_estimators(found.summary, path, title=data.name))
