"""Base class of the structure plugins: Pyomo solvers that run a paper's algorithm.

A structure plugin solves a model built by a dpmodels builder.  It reads the model's
structure marker, checks that the model is unedited and of a formulation it supports,
runs its algorithm on the marker's typed payload, loads the values into the model's
variables and returns a real Pyomo ``Results``.  Anything it cannot solve exactly is refused
with :class:`~dpmodels.core.errors.ModelStructureError`, never solved wrongly.

The contract a plugin declares once, on its class:

* ``formulations``: the registered formulations it solves (``integer_only``: it returns the
  integer optimum, so a relaxed model is refused; ``relaxed_only``: it returns the continuous
  relaxation's optimum, so a model with integer variables is refused);
* ``exact``: a converged run is a proven optimum (else the result is ``feasible``, never
  ``optimal``, in both Pyomo APIs);
* ``options``: a tuple of :class:`Option`; it becomes the plugin's Pyomo config, the keywords
  of ``solve_data`` and the command line's ``KEY=VALUE`` settings.  Options arrive through every
  way Pyomo passes them (``solve(m, gap=...)``, ``solver_options={...}``, the legacy
  ``SolverFactory(name).solve(m, options={...})``, ``solver.options[...] = ...``); an
  undeclared one is refused;
* ``honours_time_limit`` / ``iteration_log``: whether the algorithm stops at ``time_limit``
  (otherwise a time limit is refused) and prints per-iteration progress under ``tee`` (every
  plugin prints a start and an end line under ``tee``); ``duals``: whether it returns
  constraint multipliers (otherwise ``get_duals`` raises Pyomo's ``NoDualsError``).

A plugin implements ``run(payload, options, controls)`` (the algorithm on plain data, also
public as ``solve_data``; it raises ``InfeasibleDomainError`` with the reason when it proves
the model infeasible) and ``to_solution(marker, result, options)``.
"""

from __future__ import annotations

import datetime
import time
from dataclasses import dataclass
from typing import Any, ClassVar

from pyomo.common.config import ConfigDict, ConfigValue
from pyomo.contrib.solver.common.base import Availability, SolverBase
from pyomo.contrib.solver.common.config import SolverConfig
from pyomo.contrib.solver.common.results import Results, TerminationCondition

from dpmodels.core.capabilities import Capabilities, Option
from dpmodels.core.errors import InfeasibleDomainError, ModelStructureError, SolverOptionError
from dpmodels.core.marker import StructureMarker, checked_marker

from .results import ArraySolutionLoader, StructureSolution, build_results

__all__ = ["Option", "Controls", "StructureSolution", "StructureSolver", "ArraySolutionLoader"]

#: Config entries of Pyomo's SolverConfig (not plugin options).
_PYOMO_ENTRIES = frozenset(SolverConfig())


@dataclass(frozen=True)
class Controls:
    """The run controls every plugin receives: time limit (seconds or None) and tee."""

    time_limit: float | None = None
    tee: bool = False


class StructureSolver(SolverBase):
    """Common ``solve`` of every structure plugin (see the module docstring for the contract)."""

    CONFIG = SolverConfig()
    formulations: ClassVar[frozenset[str]] = frozenset()
    integer_only: ClassVar[bool] = True
    relaxed_only: ClassVar[bool] = False
    exact: ClassVar[bool] = True
    guarantee: ClassVar[str] = "proven optimum"
    options: ClassVar[tuple[Option, ...]] = ()
    _declared: ClassVar[tuple[Option, ...]] = ()
    honours_time_limit: ClassVar[bool] = False
    iteration_log: ClassVar[bool] = False
    duals: ClassVar[bool] = False
    algorithm: ClassVar[str] = ""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        # Pyomo's legacy wrapper sets an instance attribute ``options`` (its solver_options), so
        # the declaration is read from the class copy ``_declared`` everywhere below.
        cls._declared = tuple(cls.options)
        names = [opt.name for opt in cls._declared]
        clash = sorted(set(names) & _PYOMO_ENTRIES) or sorted({n for n in names if names.count(n) > 1})
        if clash:
            raise TypeError(f"{cls.__name__}: options {clash} clash with Pyomo's config or repeat")
        cls.CONFIG = cls._declare(SolverConfig())

    # ------------------------------------------------------------------ declarations
    @classmethod
    def capabilities(cls) -> Capabilities:
        """What this plugin declares (read by :func:`dpmodels.core.capabilities.solvers_for`)."""
        return Capabilities(
            name=getattr(cls, "name", cls.__name__),
            kind="structure plugin",
            exact=cls.exact,
            guarantee=cls.guarantee,
            formulations=frozenset(cls.formulations),
            integer_only=cls.integer_only,
            relaxed_only=cls.relaxed_only,
            time_limit=cls.honours_time_limit,
            tee=True,
            duals=cls.duals,
            options={opt.name: opt for opt in cls._declared},
        )

    @classmethod
    def _declare(cls, config: ConfigDict) -> ConfigDict:
        """``config`` with every declared option added (the one place options become config entries)."""
        for opt in cls._declared:
            config.declare(opt.name, ConfigValue(default=opt.default, domain=opt.domain, description=opt.doc))
        return config

    @classmethod
    def _refuse_unknown(cls, names) -> None:
        unknown = sorted(set(names) - {opt.name for opt in cls._declared})
        if unknown:
            raise SolverOptionError(cls._label(), f"unknown options {unknown}; its options are {cls._known()}")

    @classmethod
    def option_defaults(cls) -> dict[str, Any]:
        return {opt.name: opt.default for opt in cls._declared}

    def available(self) -> Availability:
        return Availability.FullLicense

    def version(self) -> tuple:
        from importlib.metadata import version

        return tuple(int(p) for p in version("dpmodels").split(".")[:3])

    # ------------------------------------------------------------------ plain data
    @classmethod
    def solve_data(cls, payload, *, time_limit: float | None = None, tee: bool = False, **options):
        """Run the algorithm on a formulation's payload (no Pyomo model), with the declared
        options (undeclared ones are refused; defaults fill the rest).  Returns the
        algorithm's own result object."""
        resolved = cls._resolve(options)
        return cls.run(payload, resolved, cls._controls(time_limit, tee))

    @classmethod
    def _resolve(cls, options: dict) -> ConfigDict:
        cls._refuse_unknown(options)
        config = cls._declare(ConfigDict())
        try:
            config.set_value(options)
        except ValueError as err:
            raise SolverOptionError(cls._label(), str(err)) from None
        return config

    @classmethod
    def _controls(cls, time_limit, tee) -> Controls:
        if time_limit is not None and not cls.honours_time_limit:
            raise SolverOptionError(
                cls._label(),
                f"its algorithm ({cls.algorithm}) cannot stop early, so it refuses time_limit={time_limit!r}; "
                "solve without a time limit, or use a solver that honours one",
            )
        return Controls(time_limit, bool(tee))

    @classmethod
    def _label(cls) -> str:
        return getattr(cls, "name", cls.__name__)

    @classmethod
    def _known(cls) -> list[str] | str:
        return sorted(opt.name for opt in cls._declared) or "none"

    # ------------------------------------------------------------------ Pyomo model
    def solve(self, model, **kwds) -> Results:
        """Solve a dpmodels-built ``model`` with this plugin's algorithm."""
        start = datetime.datetime.now(datetime.UTC)
        tick = time.perf_counter()
        try:
            config = self.config(value=self._lift_options(kwds), preserve_implicit=True)
        except ValueError as err:
            if isinstance(err, SolverOptionError):
                raise
            raise SolverOptionError(self.name, str(err)) from None
        options = self._declared_values(config)
        controls = self._controls(config.time_limit, config.tee)
        marker = self._checked(model)
        self.check(marker, options)
        self._say(controls, f"{self.name}: {self.algorithm} on {marker.formulation!r}")
        try:
            result = self.run(marker.data, options, controls)
        except InfeasibleDomainError as err:  # a proof on the domains: no feasible point exists
            solution = StructureSolution({}, None, TerminationCondition.provenInfeasible, info={"reason": str(err)})
        else:
            solution = self.to_solution(marker, result, options)
        results = build_results(self, model, marker, solution, config)
        results.timing_info.start_timestamp = start
        results.timing_info.wall_time = time.perf_counter() - tick
        self._say(
            controls,
            f"{self.name}: {results.termination_condition.name}, solution {results.solution_status.name}, "
            f"objective {results.incumbent_objective}, bound {results.objective_bound}, "
            f"{results.timing_info.wall_time:.3f} s",
        )
        return results

    def _lift_options(self, kwds: dict) -> dict:
        """Move declared options given in ``solver_options`` (how ``dpmodels.solve`` and Pyomo's
        legacy API pass them) to the top level; refuse unknown ones and ones given twice."""
        kwds = dict(kwds)
        options = {**dict(self.config.solver_options), **dict(kwds.pop("solver_options", None) or {})}
        self._refuse_unknown(options)
        clash = sorted(set(options) & set(kwds))
        if clash:
            raise SolverOptionError(self._label(), f"options {clash} given twice (as keywords and in solver_options)")
        return {**kwds, **options}

    def _declared_values(self, config) -> ConfigDict:
        return self._resolve({opt.name: config[opt.name] for opt in self._declared})

    @staticmethod
    def _say(controls: Controls, line: str) -> None:
        if controls.tee:
            print(line, flush=True)

    @staticmethod
    def keywords(options, *, drop=()) -> dict:
        """The declared options as keyword arguments of the algorithm, which takes them by the same
        names (``drop``: the ones the adapter passes otherwise, e.g. positionally)."""
        return {name: value for name, value in options.value().items() if name not in drop}

    # ------------------------------------------------------------------ subclass hooks
    def check(self, marker: StructureMarker, options) -> None:
        """Refuse a model the algorithm cannot solve exactly (beyond formulation and relaxation)."""

    @classmethod
    def run(cls, payload, options, controls: Controls):
        raise NotImplementedError

    def to_solution(self, marker: StructureMarker, result, options) -> StructureSolution:
        raise NotImplementedError

    # ------------------------------------------------------------------ helpers
    def _checked(self, model) -> StructureMarker:
        marker = checked_marker(model, self.name, self.formulations)
        if self.integer_only and marker.options.get("relax", False):
            raise ModelStructureError(
                f"{self.name} returns the integer optimum of {marker.formulation!r}, but this model "
                "is its continuous relaxation; solve the relaxation with a QP solver such as "
                "clarabel or highs, or build the model with relax=False"
            )
        if self.relaxed_only and not marker.options.get("relax", False):
            raise ModelStructureError(
                f"{self.name} returns the optimum of the continuous relaxation of {marker.formulation!r}, "
                "but this model has integer variables; build it with relax=True (or "
                "dpmodels.relax_integer_vars), or solve it with an integer solver"
            )
        return marker


def converged(objective, values, *, bound=None, exact=True, info=None) -> StructureSolution:
    """A finished run's solution (``exact=False``: a feasible point, not a proven optimum)."""
    return StructureSolution(
        values,
        objective,
        TerminationCondition.convergenceCriteriaSatisfied,
        bound=bound,
        exact=exact,
        info=dict(info or {}),
    )
