"""Tables and plots of a TopDown comparison: what ``dpmodels compare topdown`` prints and draws.

:func:`~dpmodels.topdown.compare.compare_topdown` returns one row per ``(config, epsilon, run,
level)``; this module reads that frame and nothing else (no solve, no data):

* :func:`summary_table` - the means over the runs per ``(config, epsilon, level)``;
* :func:`format_summary` - a printable summary of the main metrics;
* :func:`violation_counts` - per configuration, the violations of the public constraints summed
  over the runs (all must be 0, spec 5);
* :func:`plot_topdown` - a figure (PNG, PDF or SVG) of the error and the wall time per level
  against epsilon.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["summary_table", "format_summary", "violation_counts", "plot_topdown"]


_SHOWN = (
    "L1 error",
    "workload MAE",
    "total error/node",
    "solves",
    "lp-integral",
    "mip",
    "flow",
    "already integral",
    "failsafe",
    "one child",
    "zero parent",
    "edit fallbacks",
    "d* max",
    "seconds",
)


def summary_table(df: pd.DataFrame) -> pd.DataFrame:
    """Means over the runs per ``(config, epsilon, level)`` of every numeric metric, plus ``runs``.

    Parameters
    ----------
    df : pandas.DataFrame
        A :func:`~dpmodels.topdown.compare.compare_topdown` table.
    """
    if df.empty:
        return pd.DataFrame()
    keys = ["config", "epsilon", "level"]
    numeric = [c for c in df.columns if c not in keys + ["run"] and pd.api.types.is_numeric_dtype(df[c])]
    agg = df.groupby(keys, sort=False)
    out = agg[numeric].mean()
    out["runs"] = agg["run"].nunique()
    order = {c: i for i, c in enumerate(dict.fromkeys(df["config"]))}
    out = out.reset_index()
    return out.sort_values(
        ["config", "epsilon", "level"], key=lambda c: c.map(order) if c.name == "config" else c
    ).reset_index(drop=True)


def format_summary(table: pd.DataFrame) -> str:
    """Printable summary: one line per ``(config, epsilon, level)`` with the main metrics."""
    cols = ["config", "epsilon", "level"] + [c for c in _SHOWN if c in table.columns]
    shown = table[cols].copy()
    for col in ("L1 error", "total error/node"):
        shown[col] = shown[col].map(lambda v: f"{v:,.1f}")
    shown["workload MAE"] = shown["workload MAE"].map(lambda v: f"{v:.3f}" if pd.notna(v) else "-")
    for col in _SHOWN[3:-2]:
        shown[col] = shown[col].map(lambda v: f"{v:g}")
    shown["d* max"] = shown["d* max"].map(lambda v: f"{v:g}" if pd.notna(v) else "-")
    shown["seconds"] = shown["seconds"].map(lambda v: f"{v:.3g}")
    shown["epsilon"] = shown["epsilon"].map(lambda v: f"{v:g}")
    return shown.to_string(index=False)


def violation_counts(df: pd.DataFrame) -> pd.DataFrame:
    """Per configuration: the ``result.checks`` violations summed over runs (``-`` = not checked,
    e.g. edits for configurations that drop them), and the edit-violating leaves (information)."""
    check_cols = [c for c in df.columns if c.startswith("check: ")]
    per_run = df.drop_duplicates(["config", "epsilon", "run"])
    out = per_run.groupby("config", sort=False)[check_cols].sum(min_count=1)
    out.columns = [c.removeprefix("check: ") for c in out.columns]
    leaves = df[df["level"] == df["level"].max()]
    out["edit-violating leaves (info)"] = leaves.groupby("config", sort=False)["edit-violating nodes"].sum()
    out["runs"] = per_run.groupby("config", sort=False).size()
    return out.astype("Int64")


def plot_topdown(df: pd.DataFrame, path: str | None = None, title: str = ""):
    """One panel per level with the mean L1 error against epsilon per configuration, the mean
    wall time per level, and the workload MAE against epsilon (leaf level); one colour per
    configuration (:mod:`dpmodels.core.figures`) and one legend below.  Writes ``path`` (PNG,
    PDF or SVG by its suffix) when given; returns the figure.

    Parameters
    ----------
    df : pandas.DataFrame
        A :func:`~dpmodels.topdown.compare.compare_topdown` table.
    path : str, optional
        Where to write the figure.
    title : str, optional
        The figure's title.
    """
    from dpmodels.core.figures import figure_style, new_figure, save_figure, shared_legend

    table = summary_table(df)
    levels = sorted(table["level"].unique())
    n_panels = len(levels) + 2
    ncols = min(4, n_panels)
    nrows = -(-n_panels // ncols)
    configs = list(dict.fromkeys(table["config"]))
    with figure_style():
        fig, axes = new_figure(nrows, ncols, figsize=(3.3 * ncols, 2.9 * nrows + 0.5), interactive=path is None)
        axes = np.ravel(axes)
        for ax, level in zip(axes, levels, strict=False):
            _plot_level(ax, table[table["level"] == level], configs, level)
        _plot_times(axes[len(levels)], table, configs, levels)
        _plot_workload(axes[len(levels) + 1], table[table["level"] == levels[-1]], configs, levels[-1])
        for ax in axes[n_panels:]:
            ax.axis("off")
        shared_legend(fig, axes)
        if title:
            fig.suptitle(title)
        if path is not None:
            save_figure(fig, path)
    return fig


def _plot_level(ax, level_table: pd.DataFrame, configs, level) -> None:
    from dpmodels.core.figures import epsilon_axis, log_axis, method_style

    for name in configs:
        g = level_table[level_table["config"] == name]
        ax.plot(g["epsilon"], g["L1 error"], **method_style(name))
    log_axis(ax, level_table["L1 error"])
    epsilon_axis(ax, level_table["epsilon"])
    invariant = level_table["invariant totals"].all() if "invariant totals" in level_table else False
    ax.set(ylabel="L1 error (persons)", title=f"level {level}" + (" (invariant totals)" if invariant else ""))


def _plot_times(ax, table: pd.DataFrame, configs, levels) -> None:
    from dpmodels.core.figures import method_style

    width = 0.8 / max(len(configs), 1)
    for j, name in enumerate(configs):
        g = table[table["config"] == name].groupby("level")["seconds"].mean()
        offset = (j - (len(configs) - 1) / 2) * width
        ax.bar(np.asarray(g.index) + offset, g.to_numpy(), width, color=method_style(name)["color"])
    ax.grid(False, axis="x")
    ax.set(xlabel="level", ylabel="wall time (s, mean over ε and runs)", title="time per level", xticks=levels)


def _plot_workload(ax, leaf: pd.DataFrame, configs, level) -> None:
    from dpmodels.core.figures import epsilon_axis, log_axis, method_style

    for name in configs:
        g = leaf[leaf["config"] == name]
        ax.plot(g["epsilon"], g["workload MAE"], **method_style(name))
    log_axis(ax, leaf["workload MAE"])
    epsilon_axis(ax, leaf["epsilon"])
    ax.set(ylabel="mean absolute error (persons)", title=f"workload MAE, level {level}")
