"""Benders decomposition of the perturbation LP over a record partition (spec 5-6).

* ``driver``: :func:`benders`: the loop (master, stabilised separation, cuts, recovery) and
  :class:`BendersResult`
* ``master``: the master over the boundary records on a persistent HiGHS model, its initial rows and
  its certified bound
* ``subproblems``: one LP per block given the boundary values, and the cut each solve returns
* ``recovery``: exactly eps-mDP mechanisms near the master's point (the certified upper bounds)
* ``resident``: on Dask, every block kept on one worker for the whole run (warm-started LPs)

The ``mdp_benders`` plugin (``solvers/mdp_benders.py``) runs :func:`benders` on the Pyomo model of
:func:`~dpmodels.metricdp.models.build_full_lp`; the records' partition is
:func:`~dpmodels.metricdp.partition.partition`.
"""

from .driver import BendersResult, benders
from .master import LazyRows, Master, build_master, master_bound, master_init_cuts, solve_master
from .recovery import Candidate, Recovery, certified_candidate
from .resident import ResidentBlocks, held_blocks, resident_blocks
from .subproblems import BlockOutcome, Subproblem, TimeUp, build_subproblems, solve_block

__all__ = [
    "benders",
    "BendersResult",
    "Master",
    "LazyRows",
    "build_master",
    "master_init_cuts",
    "master_bound",
    "solve_master",
    "Subproblem",
    "BlockOutcome",
    "TimeUp",
    "build_subproblems",
    "solve_block",
    "Recovery",
    "Candidate",
    "certified_candidate",
    "ResidentBlocks",
    "resident_blocks",
    "held_blocks",
]
