"""Differentially private uniform facility location (Esencayi, Gaboardi, Li, Wang, NeurIPS 2019).

The folder, by what each module holds (the same names mean the same thing in every family):

=====================  ===========================================================================
``data``               the validated inputs: :class:`UFLInstance` (locations, metric, facility
                       cost ``f``, client counts ``N``, the sensitive truth) and the λ-HST
                       :class:`HST` / :class:`HSTInstance`; ``checks``: the checks of their fields
``models``             the Pyomo builders ``build_*`` (the UFL MIP and its LP relaxation, the tree
                       model, the LB9 antichain LP), registered
``mechanism``          the privacy mechanism: :func:`algorithm2` (DP-UFL-tree) draws the marks of
                       every noisy node exactly, :func:`run_tree` runs any tree algorithm of
                       :data:`BASELINES`, with the noise calibration (L', scales, ε used)
``release``            the end-to-end private release from declared facts (:func:`release`:
                       points -> the published (T, R))
``commands``           the family's ``dpmodels`` commands
``marks``              the exact draw of Algorithm 2's marks (no Laplace value formed)
``results``            what a tree run publishes (:class:`TreeRelease`) and what the true counts
                       decide (:class:`TreeDiagnostics`)
``serving``            the closest-facility rule: serving clients from R (post-processing)
``privacy_audit``      the exact privacy loss of the marks (:func:`privacy_loss_exact`)
``general_metric``     the general-metric pipeline: FRT-λ tree, Algorithm 2, publish (T, R)
``frt``                the FRT-λ embedding of a metric into an HST, with its measured stretch
``hst``                the HST toolkit (distances, LCA, subtree counts, minset, padding, rep)
``hst_optimum``        LB9 (Claim 9's lower bound) and the exact leaf-only tree DP
``compare``, ``bench`` ``dpmodels compare facility`` and ``dpmodels bench facility``
=====================  ===========================================================================

Plugins (``dpmodels.solvers``): ``facility_tree_dp`` (the exact tree DP) and
``facility_mechanism`` (Algorithm 2).  Every name below is imported on first use
(:mod:`dpmodels.core.lazy`), so importing the family (or its ``commands``) does not import numpy,
pandas or Pyomo.
"""

from __future__ import annotations

from dpmodels.core.lazy import lazy_exports

#: Public name -> the module that defines it.
_EXPORTS = {
    # data
    "UFLInstance": "dpmodels.facility.data",
    "HST": "dpmodels.facility.data",
    "HSTInstance": "dpmodels.facility.data",
    "euclidean": "dpmodels.facility.data",
    # builders
    "build_ufl_mip": "dpmodels.facility.models",
    "build_tree_model": "dpmodels.facility.models",
    "build_lb9_lp": "dpmodels.facility.models",
    "solve_reference": "dpmodels.facility.models",
    "open_sites": "dpmodels.facility.models",
    # mechanisms
    "algorithm2": "dpmodels.facility.mechanism",
    "run_tree": "dpmodels.facility.mechanism",
    "algorithm1": "dpmodels.facility.mechanism",
    "BASELINES": "dpmodels.facility.mechanism",
    "robust_lprime": "dpmodels.facility.mechanism",
    "noise_scales": "dpmodels.facility.mechanism",
    "epsilon_used": "dpmodels.facility.mechanism",
    "dp_ufl_general": "dpmodels.facility.general_metric",
    "PipelineReport": "dpmodels.facility.general_metric",
    "TreeRun": "dpmodels.facility.results",
    "TreeRelease": "dpmodels.facility.results",
    "TreeDiagnostics": "dpmodels.facility.results",
    # post-processing and audit
    "serve": "dpmodels.facility.serving",
    "privacy_loss_exact": "dpmodels.facility.privacy_audit",
    # release
    "release": "dpmodels.facility.release",
    "release_facts": "dpmodels.facility.release",
    "FacilityRelease": "dpmodels.facility.release",
    # algorithms
    "frt_embedding": "dpmodels.facility.frt",
    "measured_stretch": "dpmodels.facility.frt",
    "lb9": "dpmodels.facility.hst_optimum",
    "tree_dp": "dpmodels.facility.hst_optimum",
    # experiments (column labels of values computed from the true counts: diagnostics)
    "compare_facility": "dpmodels.facility.compare",
    "stretch_table": "dpmodels.facility.compare",
    "lower_bound_table": "dpmodels.facility.compare",
    "plot_compare": "dpmodels.facility.compare",
    "COST": "dpmodels.facility.compare",
    "RATIO": "dpmodels.facility.compare",
    "OPT": "dpmodels.facility.compare",
    "LP": "dpmodels.facility.compare",
    "N_OPEN": "dpmodels.facility.compare",
}

__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
