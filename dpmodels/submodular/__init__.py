"""Private submodular and k-submodular maximization under matroid constraints (Rafiey & Yoshida 2020).

The folder, by what each module holds (the same names mean the same thing in every family):

=====================  ===========================================================================
``data``               the validated inputs: the oracle interfaces :class:`SetFunction` and
                       :class:`KSubmodularFunction` (the private data: an objective over records),
                       and the instances that pair one with a matroid
``models``             the Pyomo builders ``build_*`` (the matroid LP, the multilinear relaxation,
                       the coverage / facility / k-coverage MILPs, the lift LP), registered
``mechanism/``         the privacy mechanisms: Algorithms 1 and 2 (private continuous greedy),
                       Mitrovic's private greedy and Algorithms 3 and 4, each drawing with the
                       exact exponential mechanism and charging a :class:`PrivacyAccountant`
``release``            the end-to-end private release from declared facts (:func:`release`)
``commands``           the family's ``dpmodels`` commands
``objectives/``        the set and k-submodular functions, the checks of their declarations, the
                       multilinear extension
``matroids/``          the matroid interface; uniform, partition, explicit, graphic, laminar
``exact/``             the exact exponential mechanism over the bases of a matroid
``rounding``           swap and pipage rounding, the lift to bases: public post-processing
``algorithms``         the non-private algorithms: greedy, continuous greedy, k-greedy, brute force
``accounting``         the privacy accountant: exact per-step costs, basic and advanced composition
``privacy_audit``      the exact output laws of Algorithms 1-3 and the privacy loss between two
``results``            what a run publishes and what it evaluated on the true data
``bounds``             the paper's utility and privacy bounds, pre-asymptotic, for reports
``compare``, ``bench`` ``dpmodels compare submodular`` and ``dpmodels bench submodular``
=====================  ===========================================================================

Every name below is imported on first use (:mod:`dpmodels.core.lazy`), so importing the family
(or its ``commands``) does not import numpy, scipy, pandas or Pyomo.
"""

from __future__ import annotations

from dpmodels.core.lazy import lazy_exports

#: Public name -> the module that defines it.
_EXPORTS = {
    # data
    "SetFunction": "dpmodels.submodular.data",
    "KSubmodularFunction": "dpmodels.submodular.data",
    "SubmodularInstance": "dpmodels.submodular.data",
    "KSubmodularInstance": "dpmodels.submodular.data",
    "as_mask": "dpmodels.submodular.data",
    "WeightedCoverage": "dpmodels.submodular.objectives",
    "FacilityLocation": "dpmodels.submodular.objectives",
    "DecomposableSum": "dpmodels.submodular.objectives",
    "CallableFunction": "dpmodels.submodular.objectives",
    "KCoverage": "dpmodels.submodular.objectives",
    "SeparableSum": "dpmodels.submodular.objectives",
    "Matroid": "dpmodels.submodular.matroids",
    "UniformMatroid": "dpmodels.submodular.matroids",
    "PartitionMatroid": "dpmodels.submodular.matroids",
    "ExplicitMatroid": "dpmodels.submodular.matroids",
    "GraphicMatroid": "dpmodels.submodular.matroids",
    "LaminarMatroid": "dpmodels.submodular.matroids",
    # builders
    "build_matroid_lp": "dpmodels.submodular.models",
    "build_multilinear_relaxation": "dpmodels.submodular.models",
    "build_coverage_milp": "dpmodels.submodular.models",
    "build_facility_milp": "dpmodels.submodular.models",
    "build_kcoverage_milp": "dpmodels.submodular.models",
    "build_lift_lp": "dpmodels.submodular.models",
    # mechanisms
    "private_continuous_greedy": "dpmodels.submodular.mechanism",
    "improved_private_continuous_greedy": "dpmodels.submodular.mechanism",
    "mitrovic_private_greedy": "dpmodels.submodular.mechanism",
    "private_k_greedy": "dpmodels.submodular.mechanism",
    "private_k_greedy_sampled": "dpmodels.submodular.mechanism",
    "PrivateCGResult": "dpmodels.submodular.mechanism",
    "em_choice": "dpmodels.submodular.mechanism",
    "sample_base": "dpmodels.submodular.exact",
    "PrivacyAccountant": "dpmodels.submodular.accounting",
    # post-processing and audit
    "swap_rounding": "dpmodels.submodular.rounding",
    "pipage_rounding": "dpmodels.submodular.rounding",
    "lift_to_bases": "dpmodels.submodular.rounding",
    "alg1_distribution": "dpmodels.submodular.privacy_audit",
    "alg2_distribution": "dpmodels.submodular.privacy_audit",
    "alg3_distribution": "dpmodels.submodular.privacy_audit",
    "privacy_loss": "dpmodels.submodular.privacy_audit",
    # release
    "release": "dpmodels.submodular.release",
    "release_facts": "dpmodels.submodular.release",
    "input_epsilon": "dpmodels.submodular.release",
    "selection_frame": "dpmodels.submodular.release",
    # algorithms
    "greedy": "dpmodels.submodular.algorithms",
    "continuous_greedy": "dpmodels.submodular.algorithms",
    "k_greedy": "dpmodels.submodular.algorithms",
    "brute_force_opt": "dpmodels.submodular.algorithms",
    "GreedyResult": "dpmodels.submodular.algorithms",
    "ContinuousGreedyResult": "dpmodels.submodular.algorithms",
    "multilinear": "dpmodels.submodular.objectives",
    "gradient": "dpmodels.submodular.objectives",
    # experiments (column labels of values computed on the true data: diagnostics)
    "compare_submodular": "dpmodels.submodular.compare",
    "optimum": "dpmodels.submodular.compare",
    "privacy_utility": "dpmodels.submodular.compare",
    "plot_curve": "dpmodels.submodular.compare",
    "RATIO_MEAN": "dpmodels.submodular.compare",
    "RATIO_SD": "dpmodels.submodular.compare",
}

__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
