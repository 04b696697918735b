"""PGSR: privacy-preserving release of hierarchical group sizes (Fioretto et al., AIJ 2021).

``data`` holds the group-size hierarchy and its noisy releases, ``models`` the Pyomo
formulations (Models 1-4, A2, the chord MILP), ``mechanism`` the end-to-end mechanisms,
``compare`` the Table-7 and Figure-7 experiment harness.  The algorithms: ``dp`` (M_H^dp
with TableMerge), ``dp_op`` (M_dp^OP), ``cumulative_dp`` (PAVA and Algorithm 2), ``chain_dp``
(M_c^ch) and their compiled ``kernels``.  The structure plugins that run them on Pyomo
models (``pgsr_dp``, ``pgsr_dp_op``, ``pgsr_chain``, ``isotonic_pava``, ``pgsr_cdp``) are
short adapters in the ``solvers`` package.
"""

from .data import GroupSizeData, NoisyGroupSizes, chain_cumulative, chain_decumulate, cumulative, decumulate
from .domains import Domains
from .mechanism import MECHANISMS, measure, postprocess, run_mechanism
from .models import (
    build_chain_qip,
    build_cumulative_qip,
    build_hierarchical_milp,
    build_hierarchical_qip,
    build_isotonic_qp,
    build_node_subproblem,
    released_counts,
    variable_values,
)

__all__ = [
    "Domains",
    "GroupSizeData",
    "NoisyGroupSizes",
    "chain_cumulative",
    "chain_decumulate",
    "cumulative",
    "decumulate",
    "MECHANISMS",
    "measure",
    "postprocess",
    "run_mechanism",
    "build_chain_qip",
    "build_cumulative_qip",
    "build_hierarchical_milp",
    "build_hierarchical_qip",
    "build_isotonic_qp",
    "build_node_subproblem",
    "released_counts",
    "variable_values",
]
