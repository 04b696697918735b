"""The paper's Table 7 and Figures 8-9: the mechanisms on the census and taxi shapes side by side.

The paper reports, per epsilon and mechanism, the L1 error of each level and the consistency
violations (#CV) on two data sets (spec 6.5), and plots runtime (Fig. 8) and error (Fig. 9)
against epsilon, Census left and Taxi right.  ``compare_shapes`` runs
:func:`~dpmodels.pgsr.compare.compare_mechanisms` on our stand-ins of both data sets
(:data:`TABLE7_SHAPES`) with the same budgets, ``paper_table7`` puts our mean errors in the
paper's units beside the paper's numbers (:data:`PAPER_TABLE7`), ``format_paper_table7`` prints
that layout, ``report`` adds what each mechanism cost (``seconds_table``), why a row has no
numbers and the #CV check, and ``plot_figures`` draws both figures.  ``dpmodels compare pgsr
--table7`` runs it all.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from dpmodels.core.noise import as_epsilon

from .compare import DEFAULT_MECHANISMS, compare_mechanisms, table7
from .data import GroupSizeData

__all__ = [
    "MAY_VIOLATE",
    "PAPER_TABLE7",
    "TABLE7_SHAPES",
    "Table7Shape",
    "compare_shapes",
    "paper_table7",
    "format_paper_table7",
    "seconds_table",
    "report",
    "consistency_failures",
    "plot_figures",
]

#: Mechanisms whose release may break consistency by design (a relaxation rounded cell by cell);
#: every other mechanism's #CV must be 0.
MAY_VIOLATE = frozenset({"M_H^r", "M_c^r"})
#: Mechanisms that solve a Pyomo QP or QIP on a generic solver (their cost grows with the model),
#: unless their ``solver`` option is one that works on the plain data.
GENERIC_SOLVER = frozenset({"M_H", "M_H^r", "M_c", "M_c^r"})
PLAIN_DATA_SOLVERS = frozenset({"pgsr_relax"})

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
    ``shape`` column.  A mechanism that solves a Pyomo model on a generic solver
    (:data:`GENERIC_SOLVER`, unless its ``solver`` option works on the plain data) on a data set
    with more than ``qp_max_cells`` cells (regions x sizes) is not run: it gets one row per
    epsilon whose status says so, and the table shows it instead of dropping it.

    Parameters
    ----------
    datasets : dict of str to GroupSizeData
        Shape name -> data (e.g. the census and taxi stand-ins of :data:`TABLE7_SHAPES`).
    epsilons, runs, mechanisms, options
        As in :func:`~dpmodels.pgsr.compare.compare_mechanisms`.
    qp_max_cells : int, optional
        The largest shape on which the generic-solver mechanisms run (None: no limit).
    **compare_options
        Further options of :func:`~dpmodels.pgsr.compare.compare_mechanisms`.
    """
    options = dict(options or {})
    frames = []
    for name, data in datasets.items():
        cells = data.hierarchy.n_regions * data.N
        skip = [m for m in mechanisms if _builds_model(m, options) and qp_max_cells and cells > qp_max_cells]
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


def _builds_model(mechanism: str, options: dict) -> bool:
    """Whether ``mechanism`` with these options solves a Pyomo model on a generic solver."""
    return mechanism in GENERIC_SOLVER and options.get(mechanism, {}).get("solver") not in PLAIN_DATA_SOLVERS


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
    paper's numbers beside them (NaN where the paper has none), seconds and status.

    Parameters
    ----------
    runs : pandas.DataFrame
        The rows of :func:`compare_shapes`.
    """
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
    ``ours (paper)``; a mechanism that did not run shows why instead.

    Parameters
    ----------
    table : pandas.DataFrame
        The result of :func:`paper_table7`.
    """
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


def seconds_table(table: pd.DataFrame) -> str:
    """Mean post-processing seconds per (epsilon, mechanism), one column per shape."""
    wide = table.pivot(index=["epsilon", "mechanism"], columns="shape", values="seconds")
    wide = wide.reindex(pd.MultiIndex.from_frame(table[["epsilon", "mechanism"]].drop_duplicates()))
    wide = wide[[s for s in TABLE7_SHAPES if s in wide.columns]].rename(columns=lambda s: TABLE7_SHAPES[s].label)
    wide.index.names = ["eps", "mechanism"]
    wide.columns.name = None
    return wide.map(lambda v: "not run" if pd.isna(v) else f"{v:.3g}").to_string()


def report(runs: pd.DataFrame, calibration: str = "sound", qp_max_cells: int | None = None) -> str:
    """What ``--table7`` prints after its runs: Table 7, the seconds, why a row has no numbers,
    what our data are, and whether every mechanism that must be consistent was."""
    table = paper_table7(runs)
    count = int(runs["run"].max()) + 1
    lines = [
        f"\nTable 7: L1 error per level (summed over the level's regions) and #CV, mean over {count} run(s) per "
        "epsilon; each cell is ours (the paper's)",
        format_paper_table7(table),
        "\npost-processing seconds (noise and JIT warm-up excluded), mean per run:",
        seconds_table(table),
        "",
    ]
    skipped = table[table["status"].str.contains("not run", na=False)]
    if len(skipped):
        lines.append(
            f"not run: {', '.join(dict.fromkeys(skipped['mechanism']))} on shapes above --qp-max-cells "
            f"{qp_max_cells:,} (a Pyomo model on a generic QP/QIP solver: at the census shape each M_H^r or M_c^r "
            "run takes minutes and many GB); --qp-max-cells 0 runs them"
        )
    unsolved = runs[runs["L1 total"].isna() & ~runs["status"].str.contains("not run", na=False)]
    lines += [
        f"no solution: {r['mechanism']} at eps {r['epsilon']:g} on {r['shape']} (run {r['run']}): "
        f"{r['solver']} ended {r['termination'] or r['status']}"
        for _, r in unsolved.iterrows()
    ]
    used = runs.dropna(subset=["solver"]).drop_duplicates("mechanism")
    pairs = zip(used["mechanism"], used["solver"], strict=True)
    lines.append("post-processed by: " + ", ".join(f"{m} {s}" for m, s in pairs))
    lines.append(
        "our data are synthetic stand-ins of the paper's shapes (census_like, taxi_like), so magnitudes differ: "
        "on Taxi-like an L1 per level is at most 2G"
    )
    if "M_c^ch" in set(table["mechanism"]):
        lines.append(
            "M_c^ch: sound chain noise L|R_l|/eps (|R_l| times the paper's L/eps, which is not eps-DP; "
            "--calibration paper reproduces the paper's)"
            if calibration == "sound"
            else "M_c^ch: the paper's chain noise L/eps, which costs eps sum_l |R_l| / L, not eps (erratum A2)"
        )
    failures = consistency_failures(runs)
    if len(failures):
        shown = failures[["shape", "epsilon", "mechanism", "#CV"]].to_string(index=False)
        lines.append(f"\nFAILED: #CV > 0 for mechanisms that must be consistent:\n{shown}")
    else:
        exempt = ", ".join(sorted(MAY_VIOLATE))
        lines.append(f"\n#CV = 0 for every run of every mechanism but {exempt} (which may break consistency by design)")
    return "\n".join(lines)


def consistency_failures(runs: pd.DataFrame) -> pd.DataFrame:
    """Runs of mechanisms that must be consistent (all but :data:`MAY_VIOLATE`) with #CV > 0."""
    must = ~runs["mechanism"].isin(MAY_VIOLATE) & runs["#CV"].notna()
    return runs[must & (runs["#CV"] > 0)]


def plot_figures(runs: pd.DataFrame, path: str | None = None):
    """The paper's Figures 8 and 9: post-processing seconds (top row, Fig. 8) and total L1 error
    (bottom row, Fig. 9) against epsilon per mechanism, one column per shape (census left); one
    colour per mechanism (:mod:`dpmodels.core.figures`), one legend below, and the ceiling
    ``2G L`` of the error marked when ``runs`` has a ``G`` column.

    Writes ``path`` (PNG, PDF or SVG by its suffix) when given; returns the figure (e.g. to show
    in a notebook).

    Parameters
    ----------
    runs : pandas.DataFrame
        The rows of :func:`compare_shapes`.
    path : str, optional
        Where to save the figure.
    """
    from dpmodels.core.figures import figure_style, new_figure, save_figure, shared_legend

    shapes = [s for s in TABLE7_SHAPES if s in set(runs["shape"])]
    with figure_style():
        fig, axes = new_figure(
            2, len(shapes), figsize=(5.5 * len(shapes), 7.5), squeeze=False, interactive=path is None
        )
        for col, name in enumerate(shapes):
            _plot_shape(axes[:, col], runs[runs["shape"] == name].drop(columns="shape"), TABLE7_SHAPES[name].label)
        shared_legend(fig, axes)
        if path is not None:
            save_figure(fig, path)
    return fig


def _plot_shape(axes, mine: pd.DataFrame, label: str) -> None:
    """Fig. 8 (``axes[0]``) and Fig. 9 (``axes[1]``) of one shape."""
    from dpmodels.core.figures import epsilon_axis, log_axis, method_style, reference_line

    table = table7(mine.dropna(subset=["L1 total"]))
    for mech, group in table.groupby("mechanism", sort=False):
        axes[0].plot(group["epsilon"], group["seconds"], **method_style(mech))
        axes[1].plot(group["epsilon"], group["L1 total"], **method_style(mech))
    missing = sorted(set(mine["mechanism"]) - set(table["mechanism"]))
    if missing:  # said on the figure, as in the table: a mechanism is never silently left out
        axes[0].text(0.01, 0.01, f"no result: {', '.join(missing)}", transform=axes[0].transAxes)
    ceiling = None
    if "G" in mine and mine["G"].notna().any():
        ceiling = 2 * float(mine["G"].max()) * len(_LEVELS)
        reference_line(axes[1], ceiling, "ceiling 2GL (no group in common with the truth)")
    log_axis(axes[0], table["seconds"])
    log_axis(axes[1], table["L1 total"], include=[ceiling] if ceiling else [])
    for ax in axes:
        epsilon_axis(ax, mine["epsilon"])
    axes[0].set(ylabel="post-processing time (s)", title=f"Fig. 8, {label}: runtime (noise and JIT warm-up excluded)")
    axes[1].set(ylabel="L1 error, all levels (groups)", title=f"Fig. 9, {label}: L1 error")
