"""PGSR: privacy-preserving release of hierarchical group sizes (Fioretto et al., AIJ 2021).

The folder, by what each module holds (the same names mean the same thing in every family):

* ``data``: the validated inputs: :class:`GroupSizeData` (the sensitive truth),
  :class:`NoisyGroupSizes` (all a post-processing may see) and transforms
* ``models``: the Pyomo builders ``build_*`` (Models 1-4, A2, the chord MILP), registered;
  ``cumulative_models``: Models 2, A2 and 3; ``model_parts``: their shared blocks and the solution
  readers
* ``mechanism``: the privacy mechanism: :func:`measure` draws the noisy values and records the
  ledger; :func:`run_mechanism` measures and post-processes
* ``postprocessing``: what each named mechanism (:data:`MECHANISMS`) does with its noisy values
* ``release``: the end-to-end private release from declared facts (:func:`release`), or its
  measurement alone (:func:`measure_release`)
* ``measurements``: noisy values to and from the measurement-file format (any tool's noise)
* ``weights``: weighted post-processing: each value weighed by ``1 / variance`` (from stated variances)
* ``commands``: the family's ``dpmodels`` commands (``release_command``: ``release pgsr``;
  ``measure_command``: ``measure pgsr`` and ``postprocess pgsr``)
* ``transforms``: the cumulative and chain transforms of the size axis
* ``algorithms/``: the exact and relaxed solvers the structure plugins run (table DP, windows, chain
  DP, PAVA, Algorithm 2, the relaxation, the TopDown baseline)
* ``domains``: variable domains per cell, truncation and infeasibility proofs
* ``bounding``: the stated contribution-bounding rules (records -> group sizes)
* ``sensitivity``: the neighbour relation and the measurements' L1 and squared L2 sensitivities
* ``footprint``: the memory a release needs, from its declared sizes
* ``compare``: repeated mechanism runs and Table 7 (``table7``: the paper's two shapes)
* ``bench/``: ``dpmodels bench pgsr``: the Figure 7 sweep and the census-scale part
* ``warmup``: compiles every kernel before anything is timed

Every name below is imported on first use (:mod:`dpmodels.core.lazy`), so importing the family
(or its ``commands``) does not import numpy, pandas or Pyomo.
"""

from __future__ import annotations

from dpmodels.core.lazy import lazy_exports

#: Public name -> the module that defines it.
_EXPORTS = {
    # data
    "GroupSizeData": "dpmodels.pgsr.data",
    "NoisyGroupSizes": "dpmodels.pgsr.data",
    "cumulative": "dpmodels.pgsr.data",
    "decumulate": "dpmodels.pgsr.data",
    "chain_cumulative": "dpmodels.pgsr.data",
    "chain_decumulate": "dpmodels.pgsr.data",
    "Domains": "dpmodels.pgsr.domains",
    # builders
    "build_hierarchical_qip": "dpmodels.pgsr.models",
    "build_hierarchical_milp": "dpmodels.pgsr.models",
    "build_cumulative_qip": "dpmodels.pgsr.models",
    "build_isotonic_qp": "dpmodels.pgsr.models",
    "build_chain_qip": "dpmodels.pgsr.models",
    "build_node_subproblem": "dpmodels.pgsr.models",
    "released_counts": "dpmodels.pgsr.models",
    "variable_values": "dpmodels.pgsr.models",
    # mechanisms
    "measure": "dpmodels.pgsr.mechanism",
    "run_mechanism": "dpmodels.pgsr.mechanism",
    "MechanismRun": "dpmodels.pgsr.mechanism",
    # post-processing
    "MECHANISMS": "dpmodels.pgsr.postprocessing",
    "postprocess": "dpmodels.pgsr.postprocessing",
    "Release": "dpmodels.pgsr.postprocessing",
    # release
    "release": "dpmodels.pgsr.release",
    "release_facts": "dpmodels.pgsr.release",
    "release_frame": "dpmodels.pgsr.release",
    "measure_release": "dpmodels.pgsr.release",
    # measurement files
    "measurement_facts": "dpmodels.pgsr.measurements",
    "measurement_set": "dpmodels.pgsr.measurements",
    "noisy_from_measurements": "dpmodels.pgsr.measurements",
    # weights
    "inverse_variance_weights": "dpmodels.pgsr.weights",
    "measured_weights": "dpmodels.pgsr.weights",
    # algorithms
    "solve_exact": "dpmodels.pgsr.algorithms",
    "solve_hierarchical": "dpmodels.pgsr.algorithms",
    "relaxed_values": "dpmodels.pgsr.algorithms",
    "solve_isotonic": "dpmodels.pgsr.algorithms",
    "solve_cumulative_dp": "dpmodels.pgsr.algorithms",
    "solve_chain": "dpmodels.pgsr.algorithms",
    # experiments
    "compare_mechanisms": "dpmodels.pgsr.compare",
    "table7": "dpmodels.pgsr.compare",
    "format_table7": "dpmodels.pgsr.compare",
    "plot_comparison": "dpmodels.pgsr.compare",
    "compare_shapes": "dpmodels.pgsr.table7",
    "paper_table7": "dpmodels.pgsr.table7",
    "format_paper_table7": "dpmodels.pgsr.table7",
    "plot_figures": "dpmodels.pgsr.table7",
}

__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
