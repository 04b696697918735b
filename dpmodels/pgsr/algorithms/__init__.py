"""PGSR post-processing algorithms: the exact and relaxed solvers that need no general solver.

Each works on a :class:`~dpmodels.pgsr.data.NoisyGroupSizes` (noisy values and public facts
only) and returns integral, consistent counts (or, for the relaxation, the relaxed values).
The structure plugins in ``solvers/`` (``pgsr_dp``, ``pgsr_dp_op``, ``pgsr_chain``,
``isotonic_pava``, ``pgsr_cdp``, ``pgsr_relax``) are short adapters that run them on Pyomo models.

* ``hierarchical``: M_H^dp: Model 1 by the table DP with TableMerge (:func:`solve_hierarchical`)
* ``window``: exact Model 1 on any domain from windows around the relaxation (:func:`solve_exact`,
  the default of M_H^dp)
* ``relaxation``: Model 1-R by demand functions (:func:`relaxed_values`)
* ``op``: M_dp^OP: the same DP with one Model 4 solve per table entry
* ``cumulative``: Model A2 by PAVA (:func:`solve_isotonic`) and Algorithm 2 (M_c^dp)
* ``chain``: M_c^ch: the corrected Model 3 by the chain DP or PAVA (:func:`solve_chain`)
* ``topdown_baseline``: the paper's TopDown baseline: simplex projections and roundings, top down
* ``kernels``: the compiled (numba) loops of the table DPs, PAVA and the exchange search
* ``relax_kernels``: the compiled demand functions of the relaxation
"""

from .chain import TABLE_BUDGET, ChainSolution, chain_tables, solve_chain
from .cumulative import CumulativeSolution, solve_cumulative_dp, solve_isotonic
from .hierarchical import CostTables, HierarchicalSolution, hierarchical_tables, solve_hierarchical, table_merge
from .op import solve_hierarchical_op
from .relaxation import demand_capacity, relaxed_values
from .topdown_baseline import TopDownBaseline, largest_remainder, project_simplex, solve_topdown_baseline
from .window import exchange_gain, solve_exact, window_domains

__all__ = [
    "CostTables",
    "HierarchicalSolution",
    "solve_hierarchical",
    "hierarchical_tables",
    "table_merge",
    "solve_exact",
    "exchange_gain",
    "window_domains",
    "relaxed_values",
    "demand_capacity",
    "solve_hierarchical_op",
    "CumulativeSolution",
    "solve_isotonic",
    "solve_cumulative_dp",
    "ChainSolution",
    "solve_chain",
    "chain_tables",
    "TABLE_BUDGET",
    "TopDownBaseline",
    "project_simplex",
    "largest_remainder",
    "solve_topdown_baseline",
]
