"""Exceptions raised at the boundary of dpmodels.

Every error names the offending field and the problem, so a user can fix the input
without reading the code.  All are ``ValueError`` subclasses so that callers that
already guard against bad values keep working.
"""

from __future__ import annotations

from pyomo.contrib.solver.common.util import IncompatibleModelError


class DPModelsError(ValueError):
    """Base class of every dpmodels error."""


class DataValidationError(DPModelsError):
    """Input data is malformed: wrong shape, negative counts, not a tree, ..."""

    def __init__(self, field: str, problem: str):
        self.field = field
        self.problem = problem
        super().__init__(f"{field}: {problem}")


class PrivacyParameterError(DataValidationError):
    """A privacy parameter (epsilon, sensitivity, scale) is invalid."""


class InfeasibleDomainError(DataValidationError):
    """Truncated variable domains admit no feasible solution."""


class ModelStructureError(DPModelsError, IncompatibleModelError):
    """A solver refuses a model it cannot solve exactly (also Pyomo's ``IncompatibleModelError``)."""


class SolverOptionError(DPModelsError):
    """A solver option is unknown, given twice, of the wrong value, or not honoured (a time
    limit given to an algorithm that cannot stop early)."""

    def __init__(self, solver: str, problem: str):
        self.solver = solver
        self.problem = problem
        super().__init__(f"{solver}: {problem}")


class SolverUnavailableError(DPModelsError):
    """The requested solver backend is not installed or not registered."""
