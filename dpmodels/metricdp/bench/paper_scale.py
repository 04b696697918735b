"""``dpmodels bench mdp``: full LP, structured IPM and Benders on the paper-scale grid, in one run.

On the 20 x 25 grid (N = 500, K = 100, eta = 2 km; ``--cell-km 1.5`` gives the sparser
4-neighbour grid whose partitions match the paper's Table 1) and each epsilon, this runs the full
LP (HiGHS dual simplex and interior point, audited), the structured interior point of
:mod:`~dpmodels.metricdp.ipm` and Benders for each block count M, each to a certified relative gap
1e-3, and prints for every method the seconds and iterations at which its certified bounds met
each stopping rule, the paper's absolute 0.01 and the relative 1e-3, side by side with the ratio
to the simplex's; then Benders' iterations and seconds beside the paper's Table 4 (143 +- 4 for
k-m-DV on its grid, gap 0.01) and Table 3 (161 s on 16 cores in MATLAB).
"""

from __future__ import annotations

import logging

import numpy as np
import pandas as pd

from ..data import MDPInstance
from .runs import RULES, benders_run, highs_run, ipm_run

__all__ = ["run_bench", "bench_rows", "PAPER_TABLE4", "PAPER_TABLE3_SECONDS"]

#: Benders iterations to a 0.01 gap on the paper's grid (Table 4, spec 8.7) and time (Table 3, spec 8.6).
PAPER_TABLE4 = {"k-m-DV": 143, "k-m-rec": 130, "k-m-adj": ">= 500", "BSC": 185}
PAPER_TABLE3_SECONDS = {"k-m-DV": 161.4, "k-m-rec": 159.8, "k-m-adj": "max iter.", "BSC": 238.2}

log = logging.getLogger(__name__)


def bench_rows(instance: MDPInstance, blocks, partitioner: str, time_limit: float, gap: float = 1e-3) -> list[dict]:
    """Full LP (HiGHS simplex and IPM, audited), the structured IPM and Benders (each M) on one
    instance, each certified and timed under both stopping rules (:mod:`~dpmodels.metricdp.bench.runs`)."""
    rows = [{"run": f"full LP {method}", **highs_run(instance, method, time_limit)} for method in ("simplex", "ipm")]
    rows.append({"run": "structured IPM (mdp_ipm)", **ipm_run(instance, time_limit, gap)})
    for m in blocks:
        row = {"run": f"Benders {partitioner} M={m}", **benders_run(instance, time_limit, partitioner, m, gap)}
        row["paper iterations to abs 0.01 (Table 4)"] = PAPER_TABLE4.get(partitioner)
        row["paper seconds (Table 3)"] = PAPER_TABLE3_SECONDS.get(partitioner)
        rows.append(row)
    return [{"eps": instance.epsilon, **row} for row in rows]


def _with_ratios(frame: pd.DataFrame) -> pd.DataFrame:
    """Per rule, seconds to meet it over HiGHS simplex's at the same epsilon."""
    out = []
    for _, grp in frame.groupby("eps", sort=False):
        simplex = grp[grp.run == "full LP simplex"]
        for rule in RULES:
            ref = simplex[f"s to {rule}"].iloc[0] if len(simplex) else np.nan
            grp = grp.assign(**{f"x simplex ({rule})": pd.to_numeric(grp[f"s to {rule}"]) / ref})
        out.append(grp)
    return pd.concat(out)


#: Printed columns (every column goes to ``--json``): both rules side by side.
SHOWN = ["eps", "run", "status", "seconds", "certified UB", "rel gap", "abs gap"]
SHOWN += [col for rule in RULES for col in (f"s to {rule}", f"iterations to {rule}", f"x simplex ({rule})")]
BENDERS_SHOWN = ["eps", "run", "boundary records", "iterations to abs 0.01", "paper iterations to abs 0.01 (Table 4)"]
BENDERS_SHOWN += ["s to abs 0.01", "paper seconds (Table 3)", "iterations to rel 1e-3", "s to rel 1e-3"]


def run_bench(
    epsilons=(10.0, 1.0),
    blocks=(25,),
    partitioner: str = "k-m-DV",
    time_limit: float = 300.0,
    rows: int = 20,
    cols: int = 25,
    cell_km: float = 1.0,
):
    """Every method at every epsilon: one row per run, the tables to print, the JSON document.

    ``cell_km = 1.5`` gives the sparser 4-neighbour grid whose partition sizes match the
    paper's Table 1 (at 1 km every cell has 12 neighbours within eta = 2 km).

    Returns
    -------
    dpmodels.core.runner.Result
        One row per (epsilon, run), both stopping rules side by side, and Benders beside the paper.
    """
    import dpmodels.instances as instances
    from dpmodels.core.runner import Result

    k = min(100, rows * cols)  # the paper's K = 100, or every cell of a smaller grid
    head = f"mDP bench: {rows} x {cols} grid, {cell_km:g} km cells, K = {k}, eta = 2 km, time limit {time_limit:g} s"
    head += " per run"
    log.info("%s", head)
    shown = [head]
    results = []
    for eps in epsilons:
        inst = instances.generate("mdp/grid", seed=0, rows=rows, cols=cols, cell_km=cell_km, K=k, epsilon=eps)
        g = inst.graph
        shown.append(
            f"eps = {eps:g}/km: N = {inst.N}, neighbouring pairs = {g.n_pairs}, mDP rows = {g.n_pairs * inst.K:,}"
        )
        log.info("%s", shown[-1])
        for row in bench_rows(inst, blocks, partitioner, time_limit):
            log.info(
                "  %-24s %-22s %8.1f s, certified gap %s", row["run"], row["status"], row["seconds"], row["rel gap"]
            )
            results.append(row)
    frame = _with_ratios(pd.DataFrame(results))
    with pd.option_context("display.width", 250, "display.max_columns", 40):
        shown.append("\n" + frame[SHOWN].to_string(index=False, float_format=lambda v: f"{v:.4g}"))
        shown.append("\nBenders beside the paper (Tables 3-4: its grid, the absolute gap 0.01, 16 cores in MATLAB):")
        benders_rows = frame[frame.run.str.startswith("Benders")]
        shown.append(benders_rows[BENDERS_SHOWN].to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    document = frame.replace({np.nan: None}).to_dict(orient="records")
    return Result(frame, shown, document=document)
