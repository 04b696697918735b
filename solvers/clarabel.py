"""Clarabel backend for Pyomo's new solver API (``pyomo.contrib.solver``).

Why: HiGHS's QP method needs about a minute on a separable 3,000-variable QP that
Clarabel's interior-point method solves in hundredths of a second, so continuous
relaxations at scale need a conic backend.

What: any convex LP/QP Pyomo model (continuous variables, linear constraints, linear or
convex quadratic objective, min or max) is compiled *in bulk* to Clarabel's form::

    min 1/2 x'Px + q'x   s.t.  Ax + s = b,  s in K = Zero^m0 x Nonnegative^m1

Constraints go through Pyomo's ``LinearStandardFormCompiler`` (``mixed_form=True``), the
objective through Pyomo's ``QuadraticRepnVisitor``; variable bounds become rows built
with numpy.  Maximization is solved as minimization of the negated objective.

Sign convention of duals (the one Pyomo's ``highs`` interface reports): the dual of a
constraint is the derivative of the optimal objective, in the model's own sense, with
respect to the constraint's right-hand side.  For a minimization an active ``<=`` row has
a dual <= 0 and an active ``>=`` row a dual >= 0; for a maximization the signs flip.  A
ranged constraint reports the sum over its two sides.  Reduced costs follow the same
rule with respect to the variable's bounds (``highs``' column duals).
"""

from __future__ import annotations

import datetime
import logging
import time
from collections.abc import Mapping, Sequence

import numpy as np
from pyomo.common.collections import ComponentMap
from pyomo.common.config import ConfigValue, PositiveFloat
from pyomo.common.errors import (
    ApplicationError,
    InfeasibleConstraintException,
)
from pyomo.common.timing import HierarchicalTimer
from pyomo.contrib.solver.common.base import Availability, SolverBase
from pyomo.contrib.solver.common.config import SolverConfig
from pyomo.contrib.solver.common.results import Results, SolutionStatus, TerminationCondition
from pyomo.contrib.solver.common.solution_loader import SolutionLoader
from pyomo.contrib.solver.common.util import (
    NoDualsError,
    NoFeasibleSolutionError,
    NoOptimalSolutionError,
    NoReducedCostsError,
    NoSolutionError,
)
from pyomo.core.base.constraint import ConstraintData
from pyomo.core.base.var import VarData
from pyomo.core.staleflag import StaleFlagManager

from dpmodels.core.conic_form import ConicProblem, compile_model

try:
    import clarabel
except ImportError:  # pragma: no cover - exercised only without clarabel
    clarabel = None

logger = logging.getLogger(__name__)

_TC = TerminationCondition
#: Clarabel status name -> (termination condition, solution status).  Only ``Solved``
#: claims convergence; ``AlmostSolved`` met Clarabel's *reduced* tolerances, so its point
#: is returned (and loadable) but its feasibility/optimality is reported as unknown.
_STATUS_MAP = {
    "Solved": (_TC.convergenceCriteriaSatisfied, SolutionStatus.optimal),
    "AlmostSolved": (_TC.unknown, SolutionStatus.unknown),
    "PrimalInfeasible": (_TC.provenInfeasible, SolutionStatus.noSolution),
    "AlmostPrimalInfeasible": (_TC.locallyInfeasible, SolutionStatus.noSolution),
    "DualInfeasible": (_TC.unbounded, SolutionStatus.noSolution),
    "AlmostDualInfeasible": (_TC.unknown, SolutionStatus.noSolution),
    "MaxIterations": (_TC.iterationLimit, SolutionStatus.noSolution),
    "MaxTime": (_TC.maxTimeLimit, SolutionStatus.noSolution),
    "NumericalError": (_TC.error, SolutionStatus.noSolution),
    "InsufficientProgress": (_TC.minStepLength, SolutionStatus.noSolution),
    "CallbackTerminated": (_TC.interrupted, SolutionStatus.noSolution),
    "Unsolved": (_TC.unknown, SolutionStatus.noSolution),
}
_HAS_POINT = (SolutionStatus.optimal, SolutionStatus.feasible, SolutionStatus.unknown)


class ClarabelConfig(SolverConfig):
    """``SolverConfig`` plus the tolerance of the convexity check.

    ``tee``, ``time_limit``, ``threads``, ``load_solutions`` and
    ``raise_exception_on_nonoptimal_result`` keep their Pyomo meaning;
    ``solver_options`` are set on ``clarabel.DefaultSettings`` by attribute name.
    """

    def __init__(self, description=None, doc=None, implicit=False, implicit_domain=None, visibility=0):
        super().__init__(
            description=description,
            doc=doc,
            implicit=implicit,
            implicit_domain=implicit_domain,
            visibility=visibility,
        )
        self.convexity_tol: float = self.declare(
            "convexity_tol",
            ConfigValue(
                domain=PositiveFloat,
                default=1e-8,
                description="The objective counts as convex when its Hessian plus "
                "convexity_tol * max|P_ij| * I is positive definite.",
            ),
        )


def clarabel_cones(problem: ConicProblem) -> list:
    """Clarabel's cone list of a compiled problem: Zero rows, then Nonnegative rows."""
    cones = []
    if problem.n_zero:
        cones.append(clarabel.ZeroConeT(problem.n_zero))
    if problem.A.shape[0] > problem.n_zero:
        cones.append(clarabel.NonnegativeConeT(problem.A.shape[0] - problem.n_zero))
    return cones


# --------------------------------------------------------------------------- results


class ClarabelSolutionLoader(SolutionLoader):
    """Primal values, constraint duals and reduced costs of one Clarabel solution.

    Duals and reduced costs use ``highs``' convention (see the module docstring).
    Active constraints that compiled to no row (constant bodies) have dual 0.
    """

    def __init__(self, model, problem: ConicProblem | None, x=None, z=None):
        self._pyomo_model = model
        self._problem = problem
        self._x = None if x is None else np.asarray(x, dtype=float)
        self._row_duals = None if z is None else self._model_sense_duals(np.asarray(z))

    def _model_sense_duals(self, z: np.ndarray) -> np.ndarray:
        """d(objective)/d(rhs) per pre-permutation row, from Clarabel's z (z >= 0)."""
        p = self._problem
        z_rows = np.empty_like(z)
        z_rows[p.order] = z
        return -p.sense * p.row_sign * z_rows

    def get_number_of_solutions(self) -> int:
        """1 when a primal point is available, else 0."""
        return 0 if self._x is None else 1

    def get_vars(self, vars_to_load: Sequence[VarData] | None = None) -> Mapping[VarData, float]:
        """Values of the compiled columns (or of ``vars_to_load``; fixed ones keep theirs)."""
        if self._x is None:
            raise NoSolutionError()
        p = self._problem
        if vars_to_load is None:
            return ComponentMap(zip(p.columns, self._x.tolist(), strict=True))
        index = {id(v): k for k, v in enumerate(p.columns)}
        return ComponentMap((v, self._var_value(v, index)) for v in vars_to_load)

    def _var_value(self, var: VarData, index: dict) -> float:
        """Solution value of one variable; fixed variables report their fixed value."""
        if id(var) in index:
            return float(self._x[index[id(var)]])
        if var.fixed:
            return var.value
        raise ValueError(f"variable {var.name!r} does not appear in the solved model")

    def get_duals(self, cons_to_load: Sequence[ConstraintData] | None = None):
        """Constraint duals: d(optimal objective)/d(right-hand side), model sense."""
        if self._row_duals is None:
            raise NoDualsError()
        duals = ComponentMap()
        for con, val in zip(self._problem.row_cons, self._row_duals.tolist(), strict=False):
            duals[con] = duals.get(con, 0.0) + val
        if cons_to_load is None:
            return dict(duals.items())
        return {c: self._dual_of(c, duals) for c in cons_to_load}

    @staticmethod
    def _dual_of(con: ConstraintData, duals: ComponentMap) -> float:
        """Dual of one requested constraint (0 for active ones without a row)."""
        if con in duals:
            return duals[con]
        if con.active:
            return 0.0
        raise ValueError(f"constraint {con.name!r} is not active in the solved model")

    def get_reduced_costs(self, vars_to_load: Sequence[VarData] | None = None):
        """Reduced costs: d(optimal objective)/d(bound), summed over a column's bound rows."""
        if self._row_duals is None:
            raise NoReducedCostsError()
        p = self._problem
        bound_duals = self._row_duals[len(p.row_cons) :]
        rc = np.bincount(p.bound_cols, weights=bound_duals, minlength=len(p.columns))
        if vars_to_load is None:
            return ComponentMap(zip(p.columns, rc.tolist(), strict=True))
        index = {id(v): k for k, v in enumerate(p.columns)}
        return ComponentMap((v, float(rc[index[id(v)]]) if id(v) in index else 0.0) for v in vars_to_load)


# --------------------------------------------------------------------------- solver


class ClarabelSolver(SolverBase):
    """Pyomo (new API) interface to Clarabel for convex LPs and QPs.

    Registered as ``"clarabel"`` in ``pyomo.contrib.solver.common.factory.SolverFactory``
    (and thereby in the legacy ``pyomo.environ.SolverFactory``).
    """

    CONFIG = ClarabelConfig()

    def available(self) -> Availability:
        """FullLicense when ``import clarabel`` works, NotFound otherwise."""
        return Availability.FullLicense if clarabel is not None else Availability.NotFound

    def version(self) -> tuple | None:
        """Clarabel's version as a tuple of ints (None when not installed)."""
        if clarabel is None:
            return None
        return tuple(int(p) if p.isdigit() else p for p in clarabel.__version__.split("."))

    def solve(self, model, **kwds) -> Results:
        """Compile ``model``, solve it with Clarabel and return Pyomo ``Results``."""
        start = datetime.datetime.now(datetime.UTC)
        tick = time.perf_counter()
        config = self.config(value=kwds, preserve_implicit=True)
        if not self.available():
            raise ApplicationError(f"Solver {self.name!r} is not available: pip install clarabel")
        StaleFlagManager.mark_all_as_stale()
        timer = config.timer if config.timer is not None else HierarchicalTimer()
        timer.start("compile")
        try:
            problem = compile_model(model, config.convexity_tol)
        except InfeasibleConstraintException as err:
            problem = err  # a constraint is an infeasible constant: provenInfeasible
        finally:
            timer.stop("compile")
        compile_time = time.perf_counter() - tick
        timer.start("solve")
        results = self._solve_problem(model, problem, config)
        timer.stop("solve")
        results.timing_info.start_timestamp = start
        results.timing_info.compile_time = compile_time
        results.timing_info.solve_time = time.perf_counter() - tick - compile_time
        results.timing_info.timer = timer
        self._check_and_load(results, config)
        results.timing_info.wall_time = time.perf_counter() - tick
        return results

    def _solve_problem(self, model, problem, config) -> Results:
        """Results of one compiled problem (or of a trivially infeasible model)."""
        if isinstance(problem, InfeasibleConstraintException):
            results = self._new_results(config, _TC.provenInfeasible, SolutionStatus.noSolution)
            results.solution_loader = ClarabelSolutionLoader(model, None)
            results.extra_info.message = str(problem)
            return results
        solution, log = self._run_clarabel(problem, config)
        return self._results(model, problem, solution, log, config)

    def _settings(self, config):
        """``clarabel.DefaultSettings`` from the Pyomo config and ``solver_options``."""
        settings = clarabel.DefaultSettings()
        settings.verbose = bool(config.tee)
        if config.time_limit is not None:
            settings.time_limit = float(config.time_limit)
        if config.threads:
            settings.max_threads = int(config.threads)
        options = dict(config.solver_options.items())
        unknown = sorted(k for k in options if not hasattr(settings, k))
        if unknown:
            raise ValueError(
                f"unknown clarabel solver_options {unknown}; valid names are the attributes "
                "of clarabel.DefaultSettings, e.g. max_iter, tol_gap_rel, tol_feas, "
                "direct_solve_method, presolve_enable"
            )
        for name, val in options.items():
            try:
                setattr(settings, name, val)
            except (TypeError, ValueError) as err:
                raise ValueError(f"clarabel solver option {name}={val!r}: {err}") from err
        return settings

    def _run_clarabel(self, problem: ConicProblem, config):
        """Run Clarabel; returns its solution and the captured log (with ``tee``)."""
        settings = self._settings(config)
        solver = clarabel.DefaultSolver(problem.P, problem.q, problem.A, problem.b, clarabel_cones(problem), settings)
        if not settings.verbose:
            return solver.solve(), None
        solver.print_to_buffer()
        solution = solver.solve()
        log = solver.get_print_buffer()
        for stream in config.tee:
            stream.write(log)
            stream.flush()
        return solution, log

    def _new_results(self, config, tc, status) -> Results:
        """Results with the solver identity and the given statuses filled in."""
        results = Results()
        results.solver_name = self.name
        results.solver_version = self.version()
        results.solver_config = config
        results.termination_condition = tc
        results.solution_status = status
        return results

    def _results(self, model, problem, solution, log, config) -> Results:
        """Map a Clarabel solution to Pyomo ``Results`` in the model's sense."""
        tc, status = _STATUS_MAP.get(str(solution.status), (_TC.unknown, SolutionStatus.noSolution))
        results = self._new_results(config, tc, status)
        has_point = status in _HAS_POINT
        results.solution_loader = ClarabelSolutionLoader(
            model, problem, solution.x if has_point else None, solution.z if has_point else None
        )
        if problem.objective is not None and has_point:
            results.incumbent_objective = problem.offset + problem.sense * solution.obj_val
        if problem.objective is not None and tc == _TC.convergenceCriteriaSatisfied:
            results.objective_bound = problem.offset + problem.sense * solution.obj_val_dual
        results.solver_log = log
        results.timing_info.clarabel_solve_time = float(solution.solve_time)
        results.extra_info.clarabel_status = str(solution.status)
        results.extra_info.iterations = int(solution.iterations)
        results.extra_info.r_prim = float(solution.r_prim)
        results.extra_info.r_dual = float(solution.r_dual)
        return results

    @staticmethod
    def _check_and_load(results: Results, config) -> None:
        """Pyomo semantics: raise on non-optimal results if asked, then load the point."""
        if (
            results.termination_condition != _TC.convergenceCriteriaSatisfied
            and config.raise_exception_on_nonoptimal_result
        ):
            raise NoOptimalSolutionError()
        if config.load_solutions:
            if results.solution_loader.get_number_of_solutions() == 0:
                raise NoFeasibleSolutionError()
            results.solution_loader.load_vars()


#: The solvers this module registers (read without importing it: see :mod:`dpmodels.solvers.registry`).
PLUGINS = {
    "clarabel": ("ClarabelSolver", "Clarabel interior-point QP/LP solver (dpmodels)"),
}
