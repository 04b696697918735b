"""Base class of the structure plugins: Pyomo solvers that run a paper's algorithm.

A structure plugin solves a model built by a dpmodels builder.  It reads the model's
structure marker, checks that the model is unedited and of a formulation it supports,
runs its algorithm on the marker's numpy data (``solve_data``), loads the values into the
model's variables and returns a real Pyomo ``Results``.  Anything it cannot solve exactly
is refused with :class:`~dpmodels.core.errors.ModelStructureError`, never solved wrongly.
"""

from __future__ import annotations

import datetime
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
from pyomo.common.collections import ComponentMap
from pyomo.contrib.solver.common.base import Availability, SolverBase
from pyomo.contrib.solver.common.config import SolverConfig
from pyomo.contrib.solver.common.results import Results, SolutionStatus, TerminationCondition
from pyomo.contrib.solver.common.solution_loader import SolutionLoader
from pyomo.contrib.solver.common.util import NoFeasibleSolutionError, NoOptimalSolutionError
from pyomo.core.staleflag import StaleFlagManager

from dpmodels.core.errors import ModelStructureError
from dpmodels.core.marker import StructureMarker, checked_marker

__all__ = ["StructureSolution", "StructureSolver", "ArraySolutionLoader"]


@dataclass
class StructureSolution:
    """What an algorithm returns: variable values in marker layout order, objective, status."""

    values: dict[str, np.ndarray]
    objective: float | None
    termination: TerminationCondition
    bound: float | None = None
    exact: bool = True
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def has_solution(self) -> bool:
        return bool(self.values)


class ArraySolutionLoader(SolutionLoader):
    """Holds the values a plugin computed and loads them into the model's variables."""

    def __init__(self, model, values: ComponentMap):
        self._pyomo_model = model
        self._values = values

    def get_number_of_solutions(self) -> int:
        return 1 if len(self._values) else 0

    def get_vars(self, vars_to_load=None) -> Mapping:
        if vars_to_load is None:
            return ComponentMap(self._values.items())
        return ComponentMap((v, self._values[v]) for v in vars_to_load)

    def get_duals(self, cons_to_load=None):
        raise NotImplementedError("structure plugins do not compute duals")

    def get_reduced_costs(self, vars_to_load=None):
        raise NotImplementedError("structure plugins do not compute reduced costs")

    def load_import_suffixes(self) -> None:
        """Clear stale import suffixes (duals, reduced costs): these algorithms compute none."""
        self._collect_and_clear_import_suffixes()

    def load_vars(self, vars_to_load=None) -> None:
        for var, val in self.get_vars(vars_to_load).items():
            var.set_value(val, skip_validation=True)
        StaleFlagManager.mark_all_as_stale(delayed=True)


class StructureSolver(SolverBase):
    """Common ``solve`` of every structure plugin; subclasses implement ``_solve_marker``.

    Subclasses declare ``formulations`` (marker names they solve) and whether they need the
    integer model (``integer_only``: a relaxed model is refused because the algorithm
    returns the integer optimum).
    """

    CONFIG = SolverConfig()
    formulations: ClassVar[frozenset[str]] = frozenset()
    integer_only: ClassVar[bool] = True
    algorithm: ClassVar[str] = ""

    def available(self) -> Availability:
        return Availability.FullLicense

    def version(self) -> tuple:
        from importlib.metadata import version

        return tuple(int(p) for p in version("dpmodels").split(".")[:3])

    def solve(self, model, **kwds) -> Results:
        """Solve a dpmodels-built ``model`` with this plugin's algorithm."""
        start = datetime.datetime.now(datetime.UTC)
        tick = time.perf_counter()
        config = self.config(value=self._lift_options(kwds), preserve_implicit=True)
        marker = self._checked(model)
        solution = self._solve_marker(marker, config)
        values = self._component_values(model, marker, solution)
        results = self._results(model, solution, values, config)
        results.timing_info.start_timestamp = start
        results.timing_info.wall_time = time.perf_counter() - tick
        return results

    def _lift_options(self, kwds: dict) -> dict:
        """Move ``solver_options`` (what ``dpmodels.solve(..., options=...)`` passes) onto the
        plugin's own declared options; a name the plugin does not declare is an error, never
        silently ignored."""
        kwds = dict(kwds)
        options = dict(kwds.pop("solver_options", None) or {})
        own = set(self.CONFIG) - set(SolverConfig())
        unknown = sorted(set(options) - own)
        if unknown:
            accepted = sorted(own) or "none"
            raise ValueError(f"{self.name} does not take the options {unknown}; its options are {accepted}")
        clash = sorted(set(options) & set(kwds))
        if clash:
            raise ValueError(f"{self.name}: options {clash} given twice (as keywords and in solver_options)")
        return {**kwds, **options}

    # ---------------------------------------------------------------- subclass hooks
    def _solve_marker(self, marker: StructureMarker, config) -> StructureSolution:
        raise NotImplementedError

    # ---------------------------------------------------------------- helpers
    def _checked(self, model) -> StructureMarker:
        marker = checked_marker(model, self.name, self.formulations)
        if self.integer_only and marker.options.get("relax", False):
            raise ModelStructureError(
                f"{self.name} returns the integer optimum of {marker.formulation!r}, but this model "
                "is its continuous relaxation; solve the relaxation with a QP solver such as "
                "clarabel or highs, or build the model with relax=False"
            )
        return marker

    @staticmethod
    def _component_values(model, marker: StructureMarker, solution: StructureSolution) -> ComponentMap:
        values = ComponentMap()
        for name, array in solution.values.items():
            var = model.find_component(name)
            keys = marker.layout[name]
            flat = np.asarray(array, dtype=np.float64).ravel()
            if len(keys) != flat.size:
                raise ModelStructureError(f"{name}: {flat.size} values for {len(keys)} variables")
            for key, val in zip(keys, flat.tolist(), strict=True):
                values[var[key]] = val
        return values

    def _results(self, model, solution: StructureSolution, values: ComponentMap, config) -> Results:
        results = Results()
        results.solver_name = self.name
        results.solver_version = self.version()
        results.solver_config = config
        results.termination_condition = solution.termination
        results.solution_loader = ArraySolutionLoader(model, values)
        results.incumbent_objective = solution.objective if solution.has_solution else None
        results.objective_bound = solution.bound
        if not solution.has_solution:
            results.solution_status = SolutionStatus.noSolution
        elif solution.termination == TerminationCondition.convergenceCriteriaSatisfied and solution.exact:
            results.solution_status = SolutionStatus.optimal
        else:
            results.solution_status = SolutionStatus.feasible
        results.extra_info.algorithm = self.algorithm
        results.extra_info.exact = solution.exact
        for key, val in solution.info.items():
            setattr(results.extra_info, key, val)
        converged = solution.termination == TerminationCondition.convergenceCriteriaSatisfied
        if config.raise_exception_on_nonoptimal_result and not converged:
            raise NoOptimalSolutionError()
        if config.load_solutions:
            if not solution.has_solution:
                raise NoFeasibleSolutionError()
            results.solution_loader.load_vars()
        return results
