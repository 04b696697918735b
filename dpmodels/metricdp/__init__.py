"""Metric differential privacy: optimal perturbation mechanisms by LP, partitioning and Benders (spec 2-9).

The folder, by what each module holds (the same names mean the same thing in every family):

* ``data``: the validated inputs: :class:`MDPInstance` (the public domain: locations, metric, prior,
  ``eps`` per km, ``eta``), its mDP graph and partitions
* ``models``: the Pyomo builders ``build_*`` (the full LP, the Benders master and subproblems),
  registered
* ``mechanism``: the privacy mechanisms: the optimal and the exponential perturbation matrices, and
  :func:`perturb` / :func:`sample_outputs`, the draw of each record's output with its ledger
* ``privacy_audit``: the exact ratio audit and the repair that makes any matrix exactly eps-mDP
* ``release``: the end-to-end local release from the declared domain (:func:`release`); ``outside``:
  the fallback location of records outside the domain
* ``commands``: the family's ``dpmodels`` commands (``release_command``: ``release mdp``)
* ``lp``: the same LPs in matrix form for HiGHS, and certified bounds from any duals
* ``benders/``: Benders decomposition over a record partition (:func:`benders`)
* ``ipm/``: the structured interior point (:func:`structured_ipm`)
* ``partition``: the four partitioners of the paper (k-means on different embeddings)
* ``compare``: the methods side by side, the partition table, privacy vs utility
* ``bench/``: ``dpmodels bench mdp``: the paper-scale grid, runtime against N (Fig. 6), one
  certified run of a method

Every name below is imported on first use (:mod:`dpmodels.core.lazy`), so importing the family
(or its ``commands``) does not import numpy, scipy or Pyomo.
"""

from __future__ import annotations

from dpmodels.core.lazy import lazy_exports

#: Public name -> the module that defines it.
_EXPORTS = {
    # data
    "MDPInstance": "dpmodels.metricdp.data",
    "MDPGraph": "dpmodels.metricdp.data",
    "Partition": "dpmodels.metricdp.data",
    "euclidean_distances": "dpmodels.metricdp.data",
    # builders
    "build_full_lp": "dpmodels.metricdp.models",
    "build_master": "dpmodels.metricdp.models",
    "build_subproblem": "dpmodels.metricdp.models",
    "build_subproblem_dual": "dpmodels.metricdp.models",
    "build_ray_lp": "dpmodels.metricdp.models",
    "perturbation_matrix": "dpmodels.metricdp.models",
    # mechanisms
    "Mechanism": "dpmodels.metricdp.mechanism",
    "optimal_mechanism": "dpmodels.metricdp.mechanism",
    "exponential_mechanism": "dpmodels.metricdp.mechanism",
    "perturb": "dpmodels.metricdp.mechanism",
    "sample_outputs": "dpmodels.metricdp.mechanism",
    # audit and repair (post-processing of a matrix)
    "audit": "dpmodels.metricdp.privacy_audit",
    "repair": "dpmodels.metricdp.privacy_audit",
    "expected_loss": "dpmodels.metricdp.privacy_audit",
    "is_exactly_mdp": "dpmodels.metricdp.privacy_audit",
    "require_exact_mdp": "dpmodels.metricdp.privacy_audit",
    "max_privacy_loss": "dpmodels.metricdp.privacy_audit",
    # release
    "release": "dpmodels.metricdp.release",
    "release_facts": "dpmodels.metricdp.release",
    "MDPRelease": "dpmodels.metricdp.release",
    "fallback_location": "dpmodels.metricdp.outside",
    # algorithms
    "benders": "dpmodels.metricdp.benders",
    "BendersResult": "dpmodels.metricdp.benders",
    "structured_ipm": "dpmodels.metricdp.ipm",
    "IPMResult": "dpmodels.metricdp.ipm",
    "partition": "dpmodels.metricdp.partition",
    "PARTITIONERS": "dpmodels.metricdp.partition",
    "full_lp": "dpmodels.metricdp.lp",
    # experiments
    "compare_mdp": "dpmodels.metricdp.compare",
    "partition_table": "dpmodels.metricdp.compare",
    "privacy_utility": "dpmodels.metricdp.compare",
    "sweep_run": "dpmodels.metricdp.bench.sweep",
    "sweep_table": "dpmodels.metricdp.bench.sweep",
}

__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
