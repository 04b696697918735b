"""The PGSR experiment harness: repeated mechanism runs and the paper's Table 7.

``compare_mechanisms`` runs every mechanism on the same instance for every epsilon and
run; runs sharing ``(epsilon, run)`` share their noise per measurement kind, so
mechanisms are compared on paired draws.  With ``noise="discrete-gaussian"`` the budgets are
zCDP ``rhos`` instead (the exact discrete Gaussian of :func:`~dpmodels.pgsr.mechanism.measure`):
the rows then have a ``rho`` column where they had ``epsilon``, ``rho spent``, and each level's
``sigma^2`` as the zCDP accountant set it.  Each ``(epsilon, run)`` pair is one task for
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
from .mechanism import NOISES, measure
from .postprocessing import MECHANISMS
from .warmup import warm_up

__all__ = [
    "DEFAULT_MECHANISMS",
    "DEFAULT_EPSILONS",
    "compare_mechanisms",
    "budget_column",
    "table7",
    "format_table7",
    "plot_comparison",
]

DEFAULT_MECHANISMS = ("M_H^r", "M_H^dp", "M_c^r", "M_c^dp", "M_c^ch", "TopDown")
#: The budgets compared by default under the discrete Laplace (Table 7's).
DEFAULT_EPSILONS = (0.1, 0.5, 1.0)


def compare_mechanisms(
    data: GroupSizeData,
    epsilons: Sequence | None = None,
    runs: int = 30,
    mechanisms: Sequence[str] = DEFAULT_MECHANISMS,
    seed: int = 0,
    options: dict[str, dict] | None = None,
    calibration: str = "sound",
    executor=None,
    progress: bool = False,
    *,
    noise: str = "discrete-laplace",
    rhos: Sequence | None = None,
) -> pd.DataFrame:
    """One row per (mechanism, budget, run) with per-level L1 errors, violations and times.

    Parameters
    ----------
    data : GroupSizeData
        The true group sizes.
    epsilons : sequence, optional
        The budgets compared under the discrete Laplace (default :data:`DEFAULT_EPSILONS`; not with the
        discrete Gaussian).
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
    noise : str
        ``"discrete-laplace"`` (the paper's geometric noise, budgets ``epsilons``) or
        ``"discrete-gaussian"`` (zCDP, budgets ``rhos``; calibration ``"sound"`` only).
    rhos : sequence, optional
        The zCDP budgets compared under the discrete Gaussian.
    """
    budgets = _budgets(noise, epsilons, rhos)
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
    seeds = np.random.SeedSequence(seed).spawn(len(budgets) * int(runs))
    tasks = [
        (data, tuple(mechanisms), (noise, budget), run, seeds[i * int(runs) + run], options, calibration)
        for i, budget in enumerate(budgets)
        for run in range(int(runs))
    ]
    warm_up()  # numba's first compile is not a solve time
    rows = map_tasks(_run_task, tasks, executor=executor, progress=progress, desc="PGSR runs")
    return pd.DataFrame([row for group in rows for row in group])


def _budgets(noise: str, epsilons, rhos) -> list:
    """The compared budgets, exact, in the unit of ``noise``; a budget in the other unit is refused."""
    if noise == "discrete-gaussian":
        if epsilons is not None:
            raise DataValidationError("epsilons", "the discrete Gaussian is charged in rho (zCDP): pass rhos= only")
        if not rhos:
            raise DataValidationError("rhos", "the discrete Gaussian needs one or more zCDP budgets rho")
        return [as_epsilon(r, "rhos") for r in rhos]
    if noise != "discrete-laplace":
        raise DataValidationError("noise", f"must be one of {NOISES}, got {noise!r}")
    if rhos is not None:
        raise DataValidationError("rhos", "go with noise='discrete-gaussian'; the discrete Laplace takes epsilons")
    if epsilons is not None and len(epsilons) == 0:
        raise DataValidationError("epsilons", "need one or more budgets")
    return [as_epsilon(e) for e in (DEFAULT_EPSILONS if epsilons is None else epsilons)]


def _measure(data, noise_budget, kind: str, rng, calibration: str):
    """One measurement of ``kind`` under the task's noise and budget."""
    noise, budget = noise_budget
    if noise == "discrete-gaussian":
        return measure(data, None, kind, rng, calibration, noise=noise, rho=budget)
    return measure(data, budget, kind, rng, calibration)


def _budget_columns(noisy, ledger, noise_budget) -> tuple[dict, dict]:
    """The row's budget and what was spent: ``epsilon`` and ``epsilon spent``, or ``rho`` and ``rho spent``
    with each level's ``sigma^2`` (the variance the ledger's zCDP rows set for the level's rho)."""
    noise, budget = noise_budget
    if noise != "discrete-gaussian":
        return {"epsilon": float(budget)}, {"epsilon spent": float(ledger.total_epsilon)}
    sigma2 = {f"sigma^2 level {lvl}": float(v) for lvl, v in enumerate(noisy.info["sigma2_per_level"], start=1)}
    return {"rho": float(budget)}, {"rho spent": float(ledger.total_rho), **sigma2}


def _run_task(task) -> list[dict]:
    """All mechanisms on one (budget, run): one noisy draw per measurement kind."""
    data, mechanisms, noise_budget, run, seed_seq, options, calibration = task
    kinds = ("counts", "cumulative", "chain")
    rngs = dict(zip(kinds, (np.random.default_rng(s) for s in seed_seq.spawn(len(kinds))), strict=True))
    measured = {}
    rows = []
    for name in mechanisms:
        spec = MECHANISMS[name]
        if spec.kind not in measured:
            measured[spec.kind] = _measure(data, noise_budget, spec.kind, rngs[spec.kind], calibration)
        noisy, ledger = measured[spec.kind]
        release = spec.post(noisy, **options.get(name, {}))
        budget, spent = _budget_columns(noisy, ledger, noise_budget)
        row = {
            "mechanism": name,
            **budget,
            "run": run,
            "status": release.status,
            "solver": release.solver,
            "objective": release.objective,
            "seconds": release.seconds,
            **spent,
            "widenings": release.info.get("domain_widenings", 0),
            "termination": release.info.get("termination", ""),
            "G": data.G,
        }
        metrics = release_metrics(data.hierarchy, data.counts, release.counts, data.G)
        if not np.isfinite(release.counts).all():  # no solution (a time limit, a solver failure): no metrics
            metrics = dict.fromkeys(metrics, np.nan)
        rows.append(row | metrics)
    return rows


def budget_column(runs: pd.DataFrame) -> str:
    """The budget column of comparison rows: ``"rho"`` for a discrete Gaussian comparison, else ``"epsilon"``.

    Parameters
    ----------
    runs : pandas.DataFrame
        The rows of :func:`compare_mechanisms`, or their :func:`table7`.
    """
    return "rho" if "rho" in runs.columns else "epsilon"


def table7(runs: pd.DataFrame) -> pd.DataFrame:
    """Mean per-level L1 error, #CV, objective and time per (budget, mechanism), as in Table 7.

    The budget is ``epsilon``, or ``rho`` for rows drawn under the discrete Gaussian.

    Parameters
    ----------
    runs : pandas.DataFrame
        The rows of :func:`compare_mechanisms` (or :func:`~dpmodels.pgsr.table7.compare_shapes`).
    """
    budget = budget_column(runs)
    level_cols = [c for c in runs.columns if c.startswith("L1 level")]
    agg = runs.groupby([budget, "mechanism"], sort=False)
    out = agg[level_cols + ["L1 total", "#CV", "#faithfulness", "objective", "seconds"]].mean()
    out["L1 total sd"] = agg["L1 total"].std(ddof=1)
    out["runs"] = agg.size()
    out["status"] = agg["status"].agg(lambda s: ", ".join(f"{n} {k}" for k, n in s.value_counts().items()))
    out[f"{budget} spent"] = agg[f"{budget} spent"].max()
    order = {m: i for i, m in enumerate(dict.fromkeys(runs["mechanism"]))}
    return out.reset_index().sort_values(
        [budget, "mechanism"], key=lambda c: c.map(order) if c.name == "mechanism" else c
    )


def format_table7(table: pd.DataFrame) -> str:
    """Printable Table 7: one line per (budget, mechanism).

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
    spent = f"{budget_column(shown)} spent"
    shown[spent] = shown[spent].map(lambda v: f"{v:g}")
    return shown.to_string(index=False)


def plot_comparison(runs: pd.DataFrame, path: str | None = None, title: str = ""):
    """Total L1 error, error per level at the largest budget and post-processing time against
    the budget (epsilon, or rho under the discrete Gaussian), one colour per mechanism
    (:mod:`dpmodels.core.figures`), one legend below.

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


#: The budget's symbol and its axis label, by budget column.
_SYMBOLS = {"epsilon": "ε", "rho": "ρ"}
_AXIS_LABELS = {"epsilon": "privacy budget ε", "rho": "zCDP budget ρ"}


def _ceiling_label(G: float) -> str:
    return f"ceiling: 2G = {2 * G:,.0f} per level, 2GL in total"


def _level_columns(table: pd.DataFrame) -> list[str]:
    return [c for c in table.columns if c.startswith("L1 level")]


def _plot_total(ax, table: pd.DataFrame, G: float | None) -> None:
    from dpmodels.core.figures import epsilon_axis, log_axis, method_style, reference_line

    budget = budget_column(table)
    for name, group in table.groupby("mechanism", sort=False):
        ax.errorbar(group[budget], group["L1 total"], yerr=group["L1 total sd"], capsize=3, **method_style(name))
    ceiling = 2 * G * len(_level_columns(table)) if G else None
    if ceiling:
        reference_line(ax, ceiling, _ceiling_label(G))
    low_sd = (table["L1 total"] - table["L1 total sd"].fillna(0)).where(lambda v: v > 0)
    log_axis(ax, [*table["L1 total"], *low_sd], include=[ceiling] if ceiling else [])
    epsilon_axis(ax, table[budget], label=_AXIS_LABELS[budget])
    ax.set(ylabel="L1 error, all levels (groups)", title=f"error against {_SYMBOLS[budget]} (mean ± sd over runs)")


def _plot_levels(ax, table: pd.DataFrame, G: float | None) -> None:
    from dpmodels.core.figures import log_axis, method_style, reference_line

    levels = _level_columns(table)
    budget = budget_column(table)
    top = table[table[budget] == table[budget].max()]
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
    ax.set(ylabel="mean L1 error (groups)", title=f"error per level at {_SYMBOLS[budget]} = {top[budget].max():g}")


def _plot_seconds(ax, table: pd.DataFrame) -> None:
    from dpmodels.core.figures import epsilon_axis, log_axis, method_style

    budget = budget_column(table)
    for name, group in table.groupby("mechanism", sort=False):
        ax.plot(group[budget], group["seconds"], **method_style(name))
    log_axis(ax, table["seconds"])
    epsilon_axis(ax, table[budget], label=_AXIS_LABELS[budget])
    ax.set(ylabel="post-processing time (s)", title="time per run (mean)")
