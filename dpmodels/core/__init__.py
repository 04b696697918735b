"""The shared core: hierarchies, noise, budgets, structure markers, the façade, executors."""

from .accounting import PrivacyLedger, split_budget
from .errors import (
    DataValidationError,
    DPModelsError,
    InfeasibleDomainError,
    ModelStructureError,
    PrivacyParameterError,
    SolverUnavailableError,
)
from .facade import compare, get_solver, solve, solver_names
from .hierarchy import Hierarchy
from .marker import StructureMarker, attach_marker, get_marker, model_fingerprint
from .noise import double_geometric, laplace, noise_scale, truncation_delta
from .randomness import describe, make_rng, release_rng, secure_generator
from .relax import relax_integer_vars
from .samplers import discrete_gaussian, discrete_laplace
from .selection import exponential_mechanism, sample_proportional
from .session import BudgetExceededError, PrivacySession

__all__ = [
    "PrivacyLedger",
    "split_budget",
    "DataValidationError",
    "DPModelsError",
    "InfeasibleDomainError",
    "ModelStructureError",
    "PrivacyParameterError",
    "SolverUnavailableError",
    "compare",
    "get_solver",
    "solve",
    "solver_names",
    "Hierarchy",
    "StructureMarker",
    "attach_marker",
    "get_marker",
    "model_fingerprint",
    "double_geometric",
    "discrete_laplace",
    "discrete_gaussian",
    "exponential_mechanism",
    "sample_proportional",
    "secure_generator",
    "release_rng",
    "describe",
    "PrivacySession",
    "BudgetExceededError",
    "laplace",
    "make_rng",
    "noise_scale",
    "truncation_delta",
    "relax_integer_vars",
]
