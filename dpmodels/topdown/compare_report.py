"""Tables and plots of a TopDown comparison: what ``dpmodels compare topdown`` prints and draws.

:func:`~dpmodels.topdown.compare.compare_topdown` returns one row per ``(config, epsilon, run,
level)``; this module reads that frame and nothing else (no solve, no data):

* :func:`summary_table` - the means over the runs per ``(config, epsilon, level)``;
* :func:`format_summary` - a printable summary of the main metrics;
* :func:`violation_counts` - per configuration, the violations of the public constraints summed
  over the runs (all must be 0, spec 5);
* :func:`plot_topdown` - a PNG of the error and the wall time per level against epsilon.
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
    """Means over the runs per ``(config, epsilon, level)`` of every numeric metric, plus ``runs``."""
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


_STYLES = (
    {"marker": "o", "linestyle": "-"},
    {"marker": "s", "linestyle": "--"},
    {"marker": "^", "linestyle": ":"},
    {"marker": "D", "linestyle": "-."},
)


def _epsilon_ticks(ax, epsilons) -> None:
    from matplotlib.ticker import FixedLocator, NullLocator

    ax.xaxis.set_major_locator(FixedLocator(epsilons))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xticklabels([f"{e:g}" for e in epsilons])


def plot_topdown(df: pd.DataFrame, path: str, title: str = "") -> None:
    """PNG: one panel per level with the mean L1 error against epsilon per configuration, the
    mean wall time per level, and the workload MAE against epsilon (leaf level)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    table = summary_table(df)
    levels = sorted(table["level"].unique())
    n_panels = len(levels) + 2
    ncols = min(4, n_panels)
    nrows = -(-n_panels // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(4.2 * ncols, 3.4 * nrows), squeeze=False)
    axes = axes.ravel()
    configs = list(dict.fromkeys(table["config"]))
    epsilons = sorted(table["epsilon"].unique())
    styles = {name: _STYLES[k % len(_STYLES)] for k, name in enumerate(configs)}
    for k, level in enumerate(levels):
        ax = axes[k]
        for name in configs:
            g = table[(table["config"] == name) & (table["level"] == level)]
            ax.plot(g["epsilon"], g["L1 error"].clip(lower=1e-1), label=name, **styles[name])
        ax.set(xscale="log", yscale="log", xlabel="epsilon", ylabel="L1 error (sum over nodes)")
        ax.set_title(f"level {level}" + (" (invariant totals)" if g["invariant totals"].all() else ""))
        _epsilon_ticks(ax, epsilons)
    ax = axes[len(levels)]
    width = 0.8 / max(len(configs), 1)
    for j, name in enumerate(configs):
        g = table[table["config"] == name].groupby("level")["seconds"].mean()
        ax.bar(np.asarray(g.index) + (j - (len(configs) - 1) / 2) * width, g.to_numpy(), width, label=name)
    ax.set(xlabel="level", ylabel="seconds (mean over epsilon, runs)", title="wall time per level", xticks=levels)
    ax = axes[len(levels) + 1]
    leaf = table[table["level"] == levels[-1]]
    for name in configs:
        g = leaf[leaf["config"] == name]
        ax.plot(g["epsilon"], g["workload MAE"], label=name, **styles[name])
    ax.set(xscale="log", yscale="log", xlabel="epsilon", ylabel="MAE", title=f"workload MAE, level {levels[-1]}")
    _epsilon_ticks(ax, epsilons)
    for ax in axes[n_panels:]:
        ax.axis("off")
    axes[0].legend(fontsize=7)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
