"""``dpmodels bench pgsr``: the PGSR speed and memory bars, measured side by side in one run.

* ``suite``: :func:`run_bench`: (a) the paper's Figure 7 sweep (``pgsr_dp`` on Model 1 against
  ``clarabel`` and ``highs`` on Model 1-R) and (b) the census-scale part
* ``census``: (b): the full census-like shape, the paper's table DPs beside the solvers whose cost
  does not grow with the domain, one child process per run
"""

from .census import CENSUS_VARIANTS, census_run, census_table, check_agreement
from .suite import census_report, figure7_sweep, run_bench

__all__ = [
    "run_bench",
    "figure7_sweep",
    "census_report",
    "CENSUS_VARIANTS",
    "census_run",
    "census_table",
    "check_agreement",
]
