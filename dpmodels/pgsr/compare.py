"""The PGSR experiment harness: repeated mechanism runs and the paper's Table 7.

``compare_mechanisms`` runs every mechanism on the same instance for every epsilon and
run; runs sharing ``(epsilon, run)`` share their noise per measurement kind, so
mechanisms are compared on paired draws.  Each ``(epsilon, run)`` pair is one task for
the ``executor`` (serial, process pool, Dask).  ``table7`` aggregates the runs the way the
paper reports them; ``plot_comparison`` draws error and runtime against epsilon.

The paper's own layout (spec 6.5) runs on two shapes at once: ``compare_shapes`` runs the
mechanisms on the census-like and taxi-like instances, ``paper_table7`` puts our mean errors
in the paper's units beside the paper's numbers (:data:`PAPER_TABLE7`), and ``plot_figures``
draws Figures 8 (time) and 9 (error) against epsilon, census left, taxi right.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from dpmodels.core.errors import DataValidationError
from dpmodels.core.executors import map_tasks
from dpmodels.core.metrics import release_metrics
from dpmodels.core.noise import as_epsilon

from .data import GroupSizeData
from .mechanism import MECHANISMS, measure
from .warmup import warm_up

__all__ = [
    "DEFAULT_MECHANISMS",
    "MAY_VIOLATE",
    "PAPER_TABLE7",
    "TABLE7_SHAPES",
    "compare_mechanisms",
    "table7",
    "format_table7",
    "plot_comparison",
    "compare_shapes",
    "paper_table7",
    "format_paper_table7",
    "consistency_failures",
    "plot_figures",
]

DEFAULT_MECHANISMS = ("M_H^r", "M_H^dp", "M_c^r", "M_c^dp", "M_c^ch", "TopDown")
#: Mechanisms whose release may break consistency by design (a relaxation rounded cell by cell);
#: every other mechanism's #CV must be 0.
MAY_VIOLATE = frozenset({"M_H^r", "M_c^r"})
#: Mechanisms that solve a Pyomo QP or QIP on a generic solver (their cost grows with the model).
GENERIC_SOLVER = frozenset({"M_H", "M_H^r", "M_c", "M_c^r"})


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


# ---------------------------------------------------------------------- the paper's Table 7, two shapes
#: Table 7 of the paper (spec 6.5): per (epsilon, mechanism) the L1 error of levels 1-3 and #CV,
#: Taxi's errors in units of 1e4 and Census's in units of 1e3.
PAPER_TABLE7 = (
    # epsilon, mechanism, Taxi (L1 Lev 1, Lev 2, Lev 3, #CV), Census (L1 Lev 1, Lev 2, Lev 3, #CV)
    (0.1, "M_H^r", (25.4, 158.7, 904.4, 18206), (40.3, 54.3, 802.1, 1966)),
    (0.1, "M_H^dp", (26.6, 121.9, 915.7, 0), (10.3, 38.4, 825.4, 0)),
    (0.1, "M_c^r", (47.9, 153.2, 551.6, 19460), (23.1, 64.5, 632.2, 1715)),
    (0.1, "M_c^dp", (19.9, 65.6, 644.3, 0), (0.9, 23.2, 550.6, 0)),
    (0.1, "M_c^ch", (5.5, 39.3, 537.8, 0), (0.2, 13.9, 603.0, 0)),
    (0.1, "TopDown", (26.6, 93.0, 809.1, 0), (3.7, 35.0, 820.5, 0)),
    (0.5, "M_H^r", (8.6, 81.2, 364.2, 18591), (39.4, 37.9, 216.3, 1990)),
    (0.5, "M_H^dp", (5.5, 31.0, 408.9, 0), (2.4, 9.4, 230.8, 0)),
    (0.5, "M_c^r", (46.7, 153.5, 450.7, 19531), (23.1, 61.0, 494.2, 1718)),
    (0.5, "M_c^dp", (4.0, 16.4, 352.9, 0), (0.2, 5.8, 159.1, 0)),
    (0.5, "M_c^ch", (1.2, 9.5, 150.6, 0), (0.0, 3.4, 165.3, 0)),
    (0.5, "TopDown", (5.3, 20.3, 242.1, 0), (0.9, 8.6, 228.4, 0)),
    (1.0, "M_H^r", (7.7, 77.2, 279.0, 18085), (40.7, 39.2, 130.0, 1989)),
    (1.0, "M_H^dp", (3.1, 19.8, 328.5, 0), (1.2, 5.1, 128.8, 0)),
    (1.0, "M_c^r", (47.1, 154.2, 447.1, 19706), (24.1, 63.0, 494.5, 1728)),
    (1.0, "M_c^dp", (2.0, 8.7, 307.8, 0), (0.1, 3.2, 91.0, 0)),
    (1.0, "M_c^ch", (0.5, 4.5, 78.6, 0), (0.0, 1.7, 86.9, 0)),
    (1.0, "TopDown", (2.6, 10.3, 138.4, 0), (0.5, 4.6, 127.2, 0)),
)
_LEVELS = ("L1 level 1", "L1 level 2", "L1 level 3")


@dataclass(frozen=True)
class Table7Shape:
    """One data set of Table 7: our synthetic stand-in, its defaults and the paper's unit."""

    name: str
    label: str
    instance: str
    defaults: dict = field(default_factory=dict)
    unit: float = 1.0
    paper: int = 0  # which of a PAPER_TABLE7 row's two tuples holds its numbers (Taxi 0, Census 1)


#: Census left, Taxi right, as in the paper's figures.  Taxi's N is the paper's printed 13,282.
TABLE7_SHAPES = {
    s.name: s
    for s in (
        Table7Shape("census", "Census-like", "pgsr/census-like", {"scale": 1.0, "N": 1000}, 1e3, 1),
        Table7Shape("taxi", "Taxi-like", "pgsr/taxi-like", {"scale": 1.0, "N": 13_282}, 1e4, 0),
    )
}


def compare_shapes(
    datasets: dict[str, GroupSizeData],
    epsilons: Sequence = (0.1, 0.5, 1.0),
    runs: int = 1,
    mechanisms: Sequence[str] = DEFAULT_MECHANISMS,
    qp_max_cells: int | None = None,
    options: dict[str, dict] | None = None,
    **compare_options,
) -> pd.DataFrame:
    """:func:`compare_mechanisms` on every data set (keyed by shape name), one frame with a
    ``shape`` column.  A generic-solver mechanism (:data:`GENERIC_SOLVER`) on a data set with
    more than ``qp_max_cells`` cells (regions x sizes) is not run: it gets one row per epsilon
    whose status says so, and the table shows it instead of dropping it."""
    options = dict(options or {})
    frames = []
    for name, data in datasets.items():
        cells = data.hierarchy.n_regions * data.N
        skip = [m for m in mechanisms if m in GENERIC_SOLVER and qp_max_cells and cells > qp_max_cells]
        ran = [m for m in mechanisms if m not in skip]
        frame = compare_mechanisms(
            data, epsilons, runs, ran, options={m: options[m] for m in ran if m in options}, **compare_options
        )
        reason = f"not run: {cells:,} cells > qp_max_cells {qp_max_cells:,}" if skip else ""
        frames.append(_with_placeholders(frame, skip, epsilons, reason, data.L).assign(shape=name))
    order = {"mechanism": {m: i for i, m in enumerate(mechanisms)}, "shape": {n: i for i, n in enumerate(datasets)}}
    runs_frame = pd.concat(frames, ignore_index=True)
    keys = ["shape", "epsilon", "mechanism", "run"]
    return runs_frame.sort_values(
        keys, key=lambda c: c.map(order[c.name]) if c.name in order else c, kind="stable"
    ).reset_index(drop=True)


def _with_placeholders(frame: pd.DataFrame, skipped, epsilons, reason: str, levels: int) -> pd.DataFrame:
    """``frame`` plus one metric-less row per (epsilon, skipped mechanism) saying why."""
    metrics = [f"L1 level {lvl}" for lvl in range(1, levels + 1)]
    metrics += ["L1 total", "#CV", "#faithfulness", "#negative", "#non-integral", "objective", "epsilon spent"]
    rows = [
        {"mechanism": m, "epsilon": float(as_epsilon(e)), "run": 0, "status": reason, "seconds": np.nan}
        | dict.fromkeys(metrics, np.nan)
        for e in epsilons
        for m in skipped
    ]
    return pd.concat([frame, pd.DataFrame(rows)], ignore_index=True) if rows else frame


def paper_table7(runs: pd.DataFrame) -> pd.DataFrame:
    """Rows (shape, epsilon, mechanism): our mean L1 per level and #CV in the paper's units, the
    paper's numbers beside them (NaN where the paper has none), seconds and status."""
    paper = _paper_frame()
    parts = []
    for name, group in runs.groupby("shape", sort=False):
        shape = TABLE7_SHAPES[name]
        ours = table7(group.drop(columns="shape"))
        for col in _LEVELS:
            ours[col] = ours[col] / shape.unit if col in ours else np.nan
        ours = ours.assign(shape=name).merge(
            paper[paper["shape"] == name], how="left", on=["shape", "epsilon", "mechanism"]
        )
        parts.append(ours)
    keep = ["shape", "epsilon", "mechanism", *_LEVELS, "#CV", "seconds", "runs", "status"]
    keep += [f"paper {c}" for c in (*_LEVELS, "#CV")]
    return pd.concat(parts, ignore_index=True)[keep]


def _paper_frame() -> pd.DataFrame:
    rows = []
    for eps, mech, *per_shape in PAPER_TABLE7:
        for shape in TABLE7_SHAPES.values():
            values = per_shape[shape.paper]
            rows.append(
                {"shape": shape.name, "epsilon": eps, "mechanism": mech}
                | {f"paper {c}": v for c, v in zip((*_LEVELS, "#CV"), values, strict=True)}
            )
    return pd.DataFrame(rows)


def format_paper_table7(table: pd.DataFrame) -> str:
    """Table 7's layout: rows (epsilon, mechanism), per shape L1 Lev 1-3 and #CV as
    ``ours (paper)``; a mechanism that did not run shows why instead."""
    blocks = []
    for name in dict.fromkeys(table["shape"]):
        shape = TABLE7_SHAPES[name]
        part = table[table["shape"] == name].set_index(["epsilon", "mechanism"])
        head = f"{shape.label}, L1 in units of {shape.unit:.0e}".replace("e+0", "e")
        cells = {}
        for col, label in zip((*_LEVELS, "#CV"), ("Lev 1", "Lev 2", "Lev 3", "#CV"), strict=True):
            digits = "{:,.0f}" if col == "#CV" else "{:,.1f}"
            cells[(head, label)] = [
                _cell(row[col], row[f"paper {col}"], row["status"], digits) for _, row in part.iterrows()
            ]
        blocks.append(pd.DataFrame(cells, index=part.index))
    shown = pd.concat(blocks, axis=1).fillna("-")
    shown.index.names = ["eps", "mechanism"]
    return shown.to_string()


def _cell(ours, paper, status, digits: str) -> str:
    if pd.isna(ours):
        return "not run" if "not run" in str(status) else "no solution"
    text = digits.format(ours)
    return f"{text} ({digits.format(paper)})" if pd.notna(paper) else text


def consistency_failures(runs: pd.DataFrame) -> pd.DataFrame:
    """Runs of mechanisms that must be consistent (all but :data:`MAY_VIOLATE`) with #CV > 0."""
    must = ~runs["mechanism"].isin(MAY_VIOLATE) & runs["#CV"].notna()
    return runs[must & (runs["#CV"] > 0)]


def plot_figures(runs: pd.DataFrame, path: str | None = None):
    """The paper's Figures 8 and 9: post-processing seconds (top row, Fig. 8) and total L1 error
    (bottom row, Fig. 9) against epsilon per mechanism, one column per shape (census left).

    Writes a PNG to ``path``; without one, returns the figure (e.g. to show in a notebook)."""
    import matplotlib

    if path is not None:
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shapes = [s for s in TABLE7_SHAPES if s in set(runs["shape"])]
    colour = {m: f"C{i % 10}" for i, m in enumerate(dict.fromkeys(runs["mechanism"]))}  # one per mechanism
    fig, axes = plt.subplots(2, len(shapes), figsize=(6.5 * len(shapes), 8.5), squeeze=False)
    for col, name in enumerate(shapes):
        mine = runs[runs["shape"] == name].drop(columns="shape")
        table = table7(mine.dropna(subset=["L1 total"]))
        for mech, group in table.groupby("mechanism", sort=False):
            axes[0, col].plot(group["epsilon"], group["seconds"], marker="o", label=mech, color=colour[mech])
            axes[1, col].plot(group["epsilon"], group["L1 total"], marker="o", label=mech, color=colour[mech])
        missing = sorted(set(mine["mechanism"]) - set(table["mechanism"]))
        if missing:  # said on the figure, as in the table: a mechanism is never silently left out
            axes[0, col].text(0.01, 0.01, f"no result: {', '.join(missing)}", transform=axes[0, col].transAxes)
        label = TABLE7_SHAPES[name].label
        axes[0, col].set(xscale="log", yscale="log", xlabel="epsilon", ylabel="post-processing seconds")
        axes[0, col].set_title(f"Fig. 8, {label}: runtime (noise and JIT warm-up excluded)", fontsize=10)
        axes[1, col].set(xscale="log", yscale="log", xlabel="epsilon", ylabel="L1 error, all levels")
        axes[1, col].set_title(f"Fig. 9, {label}: L1 error", fontsize=10)
        for ax in axes[:, col]:
            ax.legend(fontsize=8)
    fig.tight_layout()
    if path is None:
        return fig
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return None
