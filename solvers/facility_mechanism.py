"""``facility_mechanism``: the ε-DP super-set mechanism (Algorithm 2) as a solver of UFL models.

On a tree model (:func:`~dpmodels.facility.models.build_tree_model`) it runs DP-UFL-tree in the
model's site mode; on a general-metric :func:`~dpmodels.facility.models.build_ufl_mip` model it
runs the pipeline (FRT-λ tree, then Algorithm 2, facilities at representative leaves).  The
mechanism's open set and each client's facility are loaded into ``y`` and ``x``: a feasible
solution, never claimed optimal (``exact = False``: the results say ``feasible`` in both Pyomo
APIs).  The option ``algorithm`` also selects Algorithm 1 (``base``) and the labelled
reconstructions of spec 3.8; ``epsilon`` is required (a missing or invalid budget raises
``PrivacyParameterError``).  The report (R, L', noise scales, ε used, randomness source) is in
``results.extra_info``; the non-private ``base`` and ``open_all_client_locations`` report
``eps_used = inf`` and ``private = False``.  Models with ``forced_open`` sites are refused.

The model's marker holds the private counts N; the published output is R (and T), the rest is
each client's local post-processing.  The loaded solution, the objective and the report entries
labelled ``true ... (diagnostic)`` are evaluated on the true counts N: they are not covered by the
privacy guarantee and must not be released.
"""

from __future__ import annotations

import numpy as np
from pyomo.common.config import In, PositiveFloat

from dpmodels.core.errors import ModelStructureError, PrivacyParameterError
from dpmodels.facility.checks import check_epsilon
from dpmodels.facility.data import HSTInstance, UFLInstance
from dpmodels.facility.general_metric import dp_ufl_general
from dpmodels.facility.mechanism import BASELINES, run_tree
from dpmodels.facility.results import true_label

from .base import Option, StructureSolver, converged

__all__ = ["FacilityMechanismSolver"]


def _refuse(payload) -> None:
    if payload.forced_open:
        raise ModelStructureError("facility_mechanism does not honour forced_open sites; use highs or scip")
    if not isinstance(payload.instance, HSTInstance | UFLInstance):
        raise ModelStructureError(f"facility_mechanism cannot run on a {type(payload.instance).__name__}")


class FacilityMechanismSolver(StructureSolver):
    """Algorithm 2 (DP-UFL-tree) on tree models, the FRT pipeline on general-metric UFL models."""

    formulations = frozenset({"facility.tree", "facility.ufl"})
    integer_only = True
    exact = False
    guarantee = "ε-DP mechanism: a feasible open set (super-set output R), no optimality claim, no bound"
    options = (
        Option("epsilon", None, "privacy budget ε > 0 (required)"),
        Option("seed", None, "seed or numpy Generator of the noise (None: fresh randomness)"),
        Option("algorithm", "dp", f"one of {sorted(BASELINES)}", In(sorted(BASELINES))),
        Option("lam", 1.5, "λ of the FRT tree (general metrics)", PositiveFloat),
        Option("radius_mode", "tight", "FRT radii (general metrics)"),
    )
    algorithm = "DP-UFL-tree (Algorithm 2), super-set output with the closest-facility rule (spec 3.4)"

    def check(self, marker, options) -> None:
        _refuse(marker.data)

    @classmethod
    def run(cls, payload, options, controls):
        """The mechanism's run: a :class:`~dpmodels.facility.results.TreeRun` on an HST instance,
        a :class:`~dpmodels.facility.general_metric.PipelineReport` on a general metric."""
        if options.epsilon is None:
            raise PrivacyParameterError("epsilon", "facility_mechanism needs a privacy budget: solve(..., epsilon=...)")
        eps = check_epsilon(options.epsilon)
        _refuse(payload)
        if isinstance(payload.instance, HSTInstance):
            return run_tree(payload.instance, eps, options.algorithm, rng=options.seed, sites=payload.sites)
        return dp_ufl_general(
            payload.instance,
            eps,
            lam=options.lam,
            radius_mode=options.radius_mode,
            rng=options.seed,
            algorithm=options.algorithm,
        )

    def to_solution(self, marker, result, options):
        data = marker.data
        J = data.J
        if isinstance(data.instance, HSTInstance):
            loc = data.instance.tree.location_of
            facility = (loc[result.facility[J]] if data.sites == "leaves" else result.facility[J]) if J.size else []
            report = {"R": result.R.tolist(), "L_prime": result.lprime, "noise_scales": result.scales.tolist()}
            report.update(eps_used=result.eps_used, private=result.private, draws=result.draws, n_R=int(result.R.size))
            report["randomness"] = result.randomness
            report[true_label("cost")] = result.cost
        else:
            facility = result.facility[J]
            report = result.summary()
            report.update(R=result.R.tolist(), n_R=int(result.R.size))
            report[true_label("cost")] = result.realized_cost
        y = np.zeros(data.I.size)
        x = np.zeros((data.I.size, J.size))
        position = {int(i): k for k, i in enumerate(data.I.tolist())}
        for col, site in enumerate(np.asarray(facility, dtype=np.int64).tolist()):
            x[position[site], col] = 1.0
            y[position[site]] = 1.0
        cost = float((np.asarray(data.f) * y).sum() + (data.N[None, :] * data.c * x).sum())
        report["epsilon"] = check_epsilon(options.epsilon)
        return converged(cost, {"y": y, "x": x}, exact=False, info=report)


#: The solvers this module registers (read without importing it: see :mod:`dpmodels.solvers.registry`).
PLUGINS = {
    "facility_mechanism": ("FacilityMechanismSolver", "eps-DP facility location, Algorithm 2 (dpmodels)"),
}
