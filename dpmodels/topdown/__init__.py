"""Census TopDown (Abowd et al., 2019): hierarchical DP histograms consistent with public knowledge.

The folder, by what each module holds (the same names mean the same thing in every family):

=====================  ===========================================================================
``data``               the validated inputs: :class:`TopDownData` (the person histograms, the
                       sensitive truth) with its :class:`Schema` and geography, and the public
                       declarations (``knowledge``: :class:`PublicKnowledge`, edits, GQ flows)
``layouts``            the layouts of person records: value labels, or the Census microdata codes
                       (PPMF: :func:`read_ppmf`, :func:`write_ppmf`)
``models``             the Pyomo builders ``build_*`` of a node solve (the L2 fit, the L1 rounding;
                       ``failsafe_models``: the failsafe's phases), registered; ``model_blocks``:
                       the blocks they share
``mechanism``          the privacy mechanism: :func:`measure` draws the noisy answers to every
                       query set of the :class:`Strategy` at every node, recording the ledger
``zcdp``               the mechanism under zCDP: the squared L2 sensitivities of the query sets
                       (:func:`level_l2_sensitivity`) for the exact discrete Gaussian
``release``            the end-to-end private release from declared facts (:func:`release`:
                       person records -> private microdata and per-level histograms)
``commands``           the family's ``dpmodels`` commands
``queries``            the linear queries (Kronecker products), their sensitivities
``driver``             Algorithm 1: the root solve, then level by level (:func:`topdown`)
``solve``              one node: L2, then L1, the fallback chain, verification (:func:`solve_node`);
                       ``node_data``: what a node solve sees; ``node_options``: its options
``compiled``           the node solves compiled straight to matrices, for scale
``flow``               the L1 rounding as a min-cost flow
``tree_l2``            the closed-form L2 solve where the structure allows
``tum``                the total-unimodularity certificate of a model's constraint matrix
``gls``                the GLS (best linear unbiased) estimate of every region beside TopDown
                       (:func:`gls_estimate`); ``gls_model``: its Pyomo QP (:func:`build_gls`)
``interleaved``        the 2020 production's interleaved passes (:func:`solve_passes`), coarse first;
                       ``inner_passes``: its L2 and rounder passes within a pass
``production``         the production's constraints: grouped child totals, occupancy caps, named
                       structural zeros (``child_rows``: the rows every solve path takes), the
                       failsafe's node list; ``budget_presets``: its budget allocation (``pl94-2020``)
``implied/``           implied constraints: extendability checks and their witnesses
``compare``            the evaluation harness (``compare_report``: its tables and plots;
                       ``compare_estimators``: GLS, TopDown, the 2019 algorithm and PGSR's DP)
``bench``              ``dpmodels bench topdown``
=====================  ===========================================================================

Every name below is imported on first use (:mod:`dpmodels.core.lazy`), so importing the family
(or its ``commands``) does not import numpy, scipy, pandas or Pyomo.
"""

from __future__ import annotations

from dpmodels.core.lazy import lazy_exports

#: Public name -> the module that defines it.
_EXPORTS = {
    # data
    "TopDownData": "dpmodels.topdown.data",
    "Schema": "dpmodels.topdown.data",
    "Attribute": "dpmodels.topdown.data",
    "pl94_schema": "dpmodels.topdown.data",
    "microdata": "dpmodels.topdown.data",
    "parse_geocode": "dpmodels.topdown.data",
    "geography_from_geocodes": "dpmodels.topdown.data",
    "read_ppmf": "dpmodels.topdown.layouts",
    "write_ppmf": "dpmodels.topdown.layouts",
    "PublicKnowledge": "dpmodels.topdown.knowledge",
    "Edit": "dpmodels.topdown.knowledge",
    "FlowData": "dpmodels.topdown.knowledge",
    "GQKnowledge": "dpmodels.topdown.knowledge",
    "ChildGroup": "dpmodels.topdown.knowledge",
    # builders
    "build_l2": "dpmodels.topdown.models",
    "build_l1": "dpmodels.topdown.models",
    "histogram_values": "dpmodels.topdown.models",
    "build_failsafe_l2": "dpmodels.topdown.failsafe_models",
    "build_failsafe_l1": "dpmodels.topdown.failsafe_models",
    "NodeProblem": "dpmodels.topdown.node_data",
    # mechanisms
    "measure": "dpmodels.topdown.mechanism",
    "plan_measurement": "dpmodels.topdown.mechanism",
    "Strategy": "dpmodels.topdown.mechanism",
    "default_strategy": "dpmodels.topdown.mechanism",
    "Measurements": "dpmodels.topdown.mechanism",
    "level_l2_sensitivity": "dpmodels.topdown.zcdp",
    "QuerySet": "dpmodels.topdown.queries",
    "marginal": "dpmodels.topdown.queries",
    "identity": "dpmodels.topdown.queries",
    "total": "dpmodels.topdown.queries",
    # post-processing (Algorithm 1 and the node solves)
    "topdown": "dpmodels.topdown.driver",
    "run_topdown": "dpmodels.topdown.driver",
    "TopDownResult": "dpmodels.topdown.driver",
    "node_problem": "dpmodels.topdown.driver",
    "solve_node": "dpmodels.topdown.solve",
    "NodeOptions": "dpmodels.topdown.solve",
    "NodeSolution": "dpmodels.topdown.solve",
    "verify_children": "dpmodels.topdown.verify",
    "flows_hold": "dpmodels.topdown.implied",
    # the 2020 production's options
    "solve_passes": "dpmodels.topdown.interleaved",
    "check_passes": "dpmodels.topdown.interleaved",
    "check_options": "dpmodels.topdown.interleaved",
    "budget_preset": "dpmodels.topdown.budget_presets",
    "structural_zeros": "dpmodels.topdown.production",
    "occupancy_caps": "dpmodels.topdown.production",
    "failsafe_nodes": "dpmodels.topdown.production",
    # release
    "release": "dpmodels.topdown.release",
    "release_facts": "dpmodels.topdown.release",
    "histogram_frame": "dpmodels.topdown.release",
    "measure_release": "dpmodels.topdown.release",
    # measurement files
    "public_facts": "dpmodels.topdown.measurements",
    "measurement_set": "dpmodels.topdown.measurements",
    "measurements_from_set": "dpmodels.topdown.measurements",
    # algorithms
    "tum_certificate": "dpmodels.topdown.tum",
    "solve_flow_rounding": "dpmodels.topdown.flow",
    "solve_tree_l2": "dpmodels.topdown.tree_l2",
    "maxflow_extension": "dpmodels.topdown.implied",
    "hall_constraints": "dpmodels.topdown.implied",
    "lemma1_bounds": "dpmodels.topdown.implied",
    "allocate": "dpmodels.topdown.implied",
    "extend_to_leaves": "dpmodels.topdown.implied",
    "type_total_ranges": "dpmodels.topdown.implied",
    "fme_project": "dpmodels.topdown.implied",
    "extension_milp": "dpmodels.topdown.implied",
    "sat_reduction": "dpmodels.topdown.implied",
    # the GLS estimate beside TopDown
    "gls_estimate": "dpmodels.topdown.gls",
    "gls_problem": "dpmodels.topdown.gls",
    "gls_from_set": "dpmodels.topdown.gls",
    "build_gls": "dpmodels.topdown.gls_model",
    # experiments
    "compare_topdown": "dpmodels.topdown.compare",
    "level_metrics": "dpmodels.topdown.compare",
    "summary_table": "dpmodels.topdown.compare_report",
    "plot_topdown": "dpmodels.topdown.compare_report",
    "compare_estimators": "dpmodels.topdown.compare_estimators",
}

__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
