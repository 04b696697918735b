"""``dpmodels bench mdp``: the methods on the perturbation LP, certified and timed (issue 15).

* ``paper_scale``: :func:`run_bench`: full LP, structured IPM and Benders on the paper-scale grid
  beside the paper's Tables 3-4
* ``sweep``: ``--sweep-n``: runtime against N (the paper's Fig. 6), one child process per run
* ``runs``: one measured run of a method, certified the same way for every method, and the seconds
  at which it met each stopping rule
"""

from .paper_scale import PAPER_TABLE3_SECONDS, PAPER_TABLE4, bench_rows, run_bench
from .runs import RULES, benders_run, highs_run, ipm_run, rule_times
from .sweep import SWEEP_METHODS, grid_shape, plot_sweep, run_sweep, sweep_run, sweep_table

__all__ = [
    "run_bench",
    "bench_rows",
    "PAPER_TABLE4",
    "PAPER_TABLE3_SECONDS",
    "SWEEP_METHODS",
    "grid_shape",
    "sweep_run",
    "run_sweep",
    "sweep_table",
    "plot_sweep",
    "RULES",
    "rule_times",
    "highs_run",
    "ipm_run",
    "benders_run",
]
