"""The shared core: hierarchies, noise, budgets, structure markers, the façade, executors.

Every name below is imported on first use (:mod:`dpmodels.core.lazy`), so importing a light
module of the core (``dpmodels.core.families``, ``dpmodels.core.commands``) does not pull in
pandas, scipy or Pyomo's modelling layer.
"""

from __future__ import annotations

from .lazy import lazy_exports

#: Public name -> the module of the core that defines it.
_EXPORTS = {
    "PrivacyLedger": "dpmodels.core.accounting",
    "split_budget": "dpmodels.core.accounting",
    "DataValidationError": "dpmodels.core.errors",
    "DPModelsError": "dpmodels.core.errors",
    "InfeasibleDomainError": "dpmodels.core.errors",
    "ModelStructureError": "dpmodels.core.errors",
    "PrivacyParameterError": "dpmodels.core.errors",
    "SolverUnavailableError": "dpmodels.core.errors",
    "compare": "dpmodels.core.facade",
    "get_solver": "dpmodels.core.facade",
    "solve": "dpmodels.core.facade",
    "solver_names": "dpmodels.core.facade",
    "Hierarchy": "dpmodels.core.hierarchy",
    "StructureMarker": "dpmodels.core.marker",
    "attach_marker": "dpmodels.core.marker",
    "get_marker": "dpmodels.core.marker",
    "model_fingerprint": "dpmodels.core.marker",
    "double_geometric": "dpmodels.core.noise",
    "laplace": "dpmodels.core.noise",
    "noise_scale": "dpmodels.core.noise",
    "truncation_delta": "dpmodels.core.noise",
    "describe": "dpmodels.core.randomness",
    "make_rng": "dpmodels.core.randomness",
    "release_rng": "dpmodels.core.randomness",
    "secure_generator": "dpmodels.core.randomness",
    "relax_integer_vars": "dpmodels.core.relax",
    "release_metrics": "dpmodels.core.metrics",
    "map_tasks": "dpmodels.core.executors",
    "discrete_gaussian": "dpmodels.core.gaussian",
    "discrete_gaussian_cdf": "dpmodels.core.gaussian",
    "discrete_gaussian_pmf": "dpmodels.core.gaussian",
    "discrete_gaussian_variance": "dpmodels.core.gaussian",
    "discrete_laplace": "dpmodels.core.samplers",
    "exponential_mechanism": "dpmodels.core.selection",
    "sample_proportional": "dpmodels.core.selection",
    "MeasurementSet": "dpmodels.core.measurements",
    "read_measurements": "dpmodels.core.measurements",
    "write_measurements": "dpmodels.core.measurements",
    "read_table": "dpmodels.core.tables",
    "write_table": "dpmodels.core.tables",
    "GLSQuery": "dpmodels.core.tree_gls",
    "GLSResult": "dpmodels.core.tree_gls",
    "TreeGLSProblem": "dpmodels.core.tree_gls",
    "solve_tree_gls": "dpmodels.core.tree_gls",
    "BudgetExceededError": "dpmodels.core.session",
    "PrivacySession": "dpmodels.core.session",
}

__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
