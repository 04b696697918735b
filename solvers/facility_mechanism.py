"""``facility_mechanism``: the ε-DP super-set mechanism (Algorithm 2) as a solver of UFL models.

On a tree model (:func:`~dpmodels.facility.models.build_tree_model`) it runs DP-UFL-tree in the
model's site mode; on a general-metric :func:`~dpmodels.facility.models.build_ufl_mip` model it
runs the pipeline (FRT-λ tree, then Algorithm 2, facilities at representative leaves).  The
mechanism's open set and each client's facility are loaded into ``y`` and ``x``: a feasible
solution, never claimed optimal.  ``algorithm`` also selects Algorithm 1 (``base``) and the
labelled reconstructions of spec 3.8.  The report (R, L', noise scales, ε used, randomness source) is in
``results.extra_info``; the non-private ``base`` and ``open_all_client_locations`` report
``eps_used = inf`` and ``private = False``.

The model's marker holds the private counts N; the published output is R (and T), the rest is
each client's local post-processing.  The loaded solution, the objective and the report entries
labelled ``true ... (diagnostic)`` are evaluated on the true counts N: they are not covered by the
privacy guarantee and must not be released.
"""

from __future__ import annotations

import numpy as np
from pyomo.common.config import ConfigValue
from pyomo.contrib.solver.common.config import SolverConfig
from pyomo.contrib.solver.common.results import TerminationCondition

from dpmodels.core.errors import ModelStructureError, PrivacyParameterError
from dpmodels.facility.data import HSTInstance, UFLInstance, check_epsilon
from dpmodels.facility.mechanism import BASELINES, dp_ufl_general, run_tree, true_label

from .base import StructureSolution, StructureSolver

__all__ = ["MechanismConfig", "FacilityMechanismSolver"]


class MechanismConfig(SolverConfig):
    """SolverConfig plus the mechanism's privacy budget, seed and variant."""

    def __init__(self, description=None, doc=None, implicit=False, implicit_domain=None, visibility=0):
        super().__init__(
            description=description, doc=doc, implicit=implicit, implicit_domain=implicit_domain, visibility=visibility
        )
        self.epsilon = self.declare("epsilon", ConfigValue(default=None, description="privacy budget ε > 0 (required)"))
        self.seed = self.declare("seed", ConfigValue(default=None, description="seed or numpy Generator of the noise"))
        self.algorithm = self.declare("algorithm", ConfigValue(default="dp", description=f"one of {sorted(BASELINES)}"))
        self.lam = self.declare("lam", ConfigValue(default=1.5, description="λ of the FRT tree (general metrics)"))
        self.radius_mode = self.declare("radius_mode", ConfigValue(default="tight", description="FRT radii"))


class FacilityMechanismSolver(StructureSolver):
    """Algorithm 2 (DP-UFL-tree) on tree models, the FRT pipeline on general-metric UFL models."""

    CONFIG = MechanismConfig()
    formulations = frozenset({"facility.tree", "facility.ufl"})
    integer_only = True
    algorithm = "DP-UFL-tree (Algorithm 2), super-set output with the closest-facility rule (spec 3.4)"

    @staticmethod
    def solve_data(instance, epsilon, seed=None, algorithm="dp", sites="leaves", lam=1.5, radius_mode="tight"):
        if isinstance(instance, HSTInstance):
            return run_tree(instance, epsilon, algorithm, rng=seed, sites=sites)
        return dp_ufl_general(instance, epsilon, lam=lam, radius_mode=radius_mode, rng=seed, algorithm=algorithm)

    def _solve_marker(self, marker, config) -> StructureSolution:
        if config.epsilon is None:
            raise PrivacyParameterError("epsilon", "facility_mechanism needs a privacy budget: solve(..., epsilon=...)")
        eps = check_epsilon(config.epsilon)
        inst = marker.data["instance"]
        if marker.options.get("forced_open"):
            raise ModelStructureError("facility_mechanism does not honour forced_open sites; use highs or scip")
        I, J = marker.data["I"], marker.data["J"]
        if isinstance(inst, HSTInstance):
            run = self.solve_data(inst, eps, config.seed, config.algorithm, marker.options["sites"])
            loc = inst.tree.location_of
            to_site = (lambda u: loc[u]) if marker.options["sites"] == "leaves" else (lambda u: u)
            facility = to_site(run.facility[J]) if J.size else np.empty(0, np.int64)
            report = {"R": run.R.tolist(), "L_prime": run.lprime, "noise_scales": run.scales.tolist()}
            report.update(eps_used=run.eps_used, private=run.private, draws=run.draws, n_R=int(run.R.size))
            report["randomness"] = run.randomness
            report[true_label("cost")] = run.cost
        elif isinstance(inst, UFLInstance):
            rep = self.solve_data(
                inst, eps, config.seed, config.algorithm, lam=config.lam, radius_mode=config.radius_mode
            )
            facility = rep.facility[J]
            report = rep.summary()
            report.update(R=rep.R.tolist(), n_R=int(rep.R.size))
            report[true_label("cost")] = rep.realized_cost
        else:
            raise ModelStructureError(f"facility_mechanism cannot run on a {type(inst).__name__}")
        y = np.zeros(I.size)
        x = np.zeros((I.size, J.size))
        position = {int(i): k for k, i in enumerate(I.tolist())}
        for col, site in enumerate(np.asarray(facility).tolist()):
            x[position[site], col] = 1.0
            y[position[site]] = 1.0
        cost = float(
            (np.asarray(marker.data["f"]) * y).sum() + (marker.data["N"][None, :] * marker.data["c"] * x).sum()
        )
        report["epsilon"] = eps
        return StructureSolution(
            {"y": y, "x": x}, cost, TerminationCondition.convergenceCriteriaSatisfied, exact=False, info=report
        )
