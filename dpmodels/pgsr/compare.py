"""The PGSR experiment harness: repeated mechanism runs and the paper's Table 7.

``compare_mechanisms`` runs every mechanism on the same instance for every epsilon and
run; runs sharing ``(epsilon, run)`` share their noise per measurement kind, so
mechanisms are compared on paired draws.  Each ``(epsilon, run)`` pair is one task for
the ``executor`` (serial, process pool, Dask).  ``table7`` aggregates the runs the way the
paper reports them; ``plot_comparison`` draws error and runtime against epsilon.  The
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
from .mechanism import MECHANISMS, measure
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

    ``options`` maps a mechanism name to keyword options of its post-processing (e.g.
    ``{"M_H^r": {"solver": "highs"}}``).
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
        }
        metrics = release_metrics(data.hierarchy, data.counts, release.counts, data.G)
        if not np.isfinite(release.counts).all():  # no solution (a time limit, a solver failure): no metrics
            metrics = dict.fromkeys(metrics, np.nan)
        rows.append(row | metrics)
    return rows


def table7(runs: pd.DataFrame) -> pd.DataFrame:
    """Mean per-level L1 error, #CV, objective and time per (epsilon, mechanism), as in Table 7."""
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
    """Printable Table 7: one line per (epsilon, mechanism)."""
    shown = table.copy()
    for col in shown.columns:
        if col.startswith("L1") or col in ("objective",):
            shown[col] = shown[col].map(lambda v: f"{v:,.1f}" if pd.notna(v) else "-")
    for col in ("#CV", "#faithfulness"):
        shown[col] = shown[col].map(lambda v: f"{v:g}" if pd.notna(v) else "-")
    shown["seconds"] = shown["seconds"].map(lambda v: f"{v:.3g}")
    shown["epsilon spent"] = shown["epsilon spent"].map(lambda v: f"{v:g}")
    return shown.to_string(index=False)


def plot_comparison(runs: pd.DataFrame, path: str, title: str = "") -> None:
    """PNG with total L1 error, per-level error and post-processing time against epsilon."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    table = table7(runs)
    level_cols = [c for c in runs.columns if c.startswith("L1 level")]
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.5))
    for name, group in table.groupby("mechanism", sort=False):
        axes[0].errorbar(
            group["epsilon"], group["L1 total"], yerr=group["L1 total sd"], marker="o", label=name, capsize=3
        )
        axes[2].plot(group["epsilon"], group["seconds"], marker="o", label=name)
    top = table[table["epsilon"] == table["epsilon"].max()]
    width = 0.8 / max(len(top), 1)
    for k, (_, row) in enumerate(top.iterrows()):
        axes[1].bar(
            np.arange(len(level_cols)) + k * width, row[level_cols].to_numpy(dtype=float), width, label=row["mechanism"]
        )
    axes[0].set(xscale="log", yscale="log", xlabel="epsilon", ylabel="L1 error (all regions)", title="error vs epsilon")
    axes[1].set(
        yscale="log",
        xticks=np.arange(len(level_cols)) + 0.4 - width / 2,
        xticklabels=[c.replace("L1 ", "") for c in level_cols],
        ylabel="mean L1 error",
        title=f"error per level at epsilon = {top['epsilon'].max():g}",
    )
    axes[2].set(xscale="log", yscale="log", xlabel="epsilon", ylabel="seconds", title="post-processing time")
    axes[0].legend(fontsize=8)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
