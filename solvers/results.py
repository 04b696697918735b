"""What a structure plugin returns, as Pyomo sees it: solution, loader, results, legacy statuses.

* :class:`StructureSolution`: an algorithm's answer in the marker's layout (values per
  variable component, objective, bound, termination, exact or not, duals if computed).
* :class:`ArraySolutionLoader`: loads the values (and duals, where the plugin has them) into the
  model; ``get_duals`` without duals raises Pyomo's ``NoDualsError``.
* :func:`build_results`: a new-API ``Results``.  A converged run is ``optimal`` only when the
  algorithm is exact (the plugin declares ``exact`` and the run says so); a heuristic,
  a mechanism or a gap-limited stop is ``feasible``.
* :class:`LegacyStructureWrapper`: the class Pyomo's legacy ``SolverFactory`` builds.  Pyomo
  maps every converged run to the legacy ``optimal``; this wrapper maps a ``feasible``
  converged run to the legacy ``feasible`` termination, so ``check_optimal_termination`` is
  False for it in both APIs.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from pyomo.common.collections import ComponentMap
from pyomo.contrib.solver.common.base import LegacySolverWrapper
from pyomo.contrib.solver.common.results import Results, SolutionStatus, TerminationCondition
from pyomo.contrib.solver.common.solution_loader import SolutionLoader
from pyomo.contrib.solver.common.util import (
    NoDualsError,
    NoFeasibleSolutionError,
    NoOptimalSolutionError,
    NoReducedCostsError,
)
from pyomo.core.staleflag import StaleFlagManager
from pyomo.opt import TerminationCondition as LegacyTermination

from dpmodels.core.errors import ModelStructureError

__all__ = ["StructureSolution", "ArraySolutionLoader", "build_results", "LegacyStructureWrapper"]

logger = logging.getLogger("dpmodels.solvers")


@dataclass
class StructureSolution:
    """An algorithm's answer: variable values in marker layout order, objective, status.

    ``duals``: constraint component name -> {index: multiplier} in Pyomo's sign convention,
    only for plugins that declare ``duals``.
    """

    values: dict[str, np.ndarray]
    objective: float | None
    termination: TerminationCondition
    bound: float | None = None
    exact: bool = True
    info: dict[str, Any] = field(default_factory=dict)
    duals: dict[str, Mapping] | None = None

    @property
    def has_solution(self) -> bool:
        return bool(self.values)


class ArraySolutionLoader(SolutionLoader):
    """Holds the values (and duals) a plugin computed and loads them into the model."""

    def __init__(self, model, values: ComponentMap, duals: ComponentMap | None, solver: str):
        self._pyomo_model = model
        self._values = values
        self._duals = duals
        self._solver = solver

    def get_number_of_solutions(self) -> int:
        return 1 if len(self._values) else 0

    def get_vars(self, vars_to_load=None) -> Mapping:
        if vars_to_load is None:
            return ComponentMap(self._values.items())
        return ComponentMap((v, self._values[v]) for v in vars_to_load)

    def get_duals(self, cons_to_load=None):
        if self._duals is None:
            raise NoDualsError(f"{self._solver} computes no constraint multipliers")
        if cons_to_load is None:
            return ComponentMap(self._duals.items())
        return ComponentMap((c, self._duals[c]) for c in cons_to_load)

    def get_reduced_costs(self, vars_to_load=None):
        raise NoReducedCostsError(f"{self._solver} computes no reduced costs")

    def load_import_suffixes(self) -> None:
        """Clear stale import suffixes; fill ``dual`` when the plugin computed multipliers."""
        suffixes = self._collect_and_clear_import_suffixes()
        if "dual" in suffixes and self._duals is not None:
            suffixes["dual"].update(self.get_duals())
        missing = sorted(set(suffixes) - ({"dual"} if self._duals is not None else set()))
        if missing:
            logger.warning("%s: no values for the import suffixes %s (left empty)", self._solver, missing)

    def load_vars(self, vars_to_load=None) -> None:
        for var, val in self.get_vars(vars_to_load).items():
            var.set_value(val, skip_validation=True)
        StaleFlagManager.mark_all_as_stale(delayed=True)


def build_results(solver, model, marker, solution: StructureSolution, config) -> Results:
    """The new-API ``Results`` of ``solution``; loads it when ``config.load_solutions``."""
    results = Results()
    results.solver_name = solver.name
    results.solver_version = solver.version()
    results.solver_config = config
    results.termination_condition = solution.termination
    duals = _component_duals(model, solution.duals) if solution.duals is not None else None
    results.solution_loader = ArraySolutionLoader(model, _component_values(model, marker, solution), duals, solver.name)
    results.incumbent_objective = solution.objective if solution.has_solution else None
    results.objective_bound = solution.bound
    results.solution_status = _solution_status(solver, solution)
    results.extra_info.algorithm = solver.algorithm
    results.extra_info.exact = solution.exact and solver.exact
    for key, val in solution.info.items():
        setattr(results.extra_info, key, val)
    converged = solution.termination == TerminationCondition.convergenceCriteriaSatisfied
    if config.raise_exception_on_nonoptimal_result and not converged:
        raise NoOptimalSolutionError()
    if config.load_solutions:
        if not solution.has_solution:
            raise NoFeasibleSolutionError()
        results.solution_loader.load_vars()
        results.solution_loader.load_import_suffixes()
    return results


def _solution_status(solver, solution: StructureSolution) -> SolutionStatus:
    if not solution.has_solution:
        return SolutionStatus.noSolution
    proven = solution.exact and solver.exact
    if solution.termination == TerminationCondition.convergenceCriteriaSatisfied and proven:
        return SolutionStatus.optimal
    return SolutionStatus.feasible


def _component_values(model, marker, solution: StructureSolution) -> ComponentMap:
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


def _component_duals(model, duals: dict[str, Mapping]) -> ComponentMap:
    out = ComponentMap()
    for name, by_index in duals.items():
        con = model.find_component(name)
        for key, val in by_index.items():
            out[con[key]] = float(val)
    return out


class LegacyStructureWrapper(LegacySolverWrapper):
    """Pyomo's legacy wrapper with honest statuses: a converged but not proven-optimal run is
    the legacy ``feasible`` termination (Pyomo's default maps it to ``optimal``)."""

    def _map_results(self, model, results):
        legacy_results, legacy_soln = super()._map_results(model, results)
        converged = results.termination_condition == TerminationCondition.convergenceCriteriaSatisfied
        if converged and results.solution_status != SolutionStatus.optimal:
            legacy_results.solver.termination_condition = LegacyTermination.feasible
            legacy_results.solver.termination_message = "feasible solution, not proven optimal"
        return legacy_results, legacy_soln
