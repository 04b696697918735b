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
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from pyomo.common.collections import ComponentMap
from pyomo.common.config import ConfigValue, PositiveFloat
from pyomo.common.errors import (
    ApplicationError,
    InfeasibleConstraintException,
    InvalidConstraintError,
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
from pyomo.core.base.objective import Objective, ObjectiveData
from pyomo.core.base.var import VarData
from pyomo.core.staleflag import StaleFlagManager
from pyomo.repn.plugins.standard_form import LinearStandardFormCompiler
from pyomo.repn.quadratic import QuadraticRepnVisitor
from pyomo.repn.util import FileDeterminism, FileDeterminism_to_SortComponents, OrderedVarRecorder
from scipy.sparse.linalg import splu

from dpmodels.core.errors import ModelStructureError

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


# --------------------------------------------------------------------------- compile


@dataclass
class ClarabelProblem:
    """Clarabel's data for one model, plus the maps back to the Pyomo components.

    Rows are the compiled constraint rows followed by the bound rows, then permuted so
    that the Zero-cone rows come first (``order[k]`` is the pre-permutation row of row k).
    ``row_sign`` is +1 when the row's ``b`` is the model's right-hand side and -1 when it
    is its negation (``>=`` sides); it is indexed by pre-permutation row.
    """

    P: sp.csc_array
    q: np.ndarray
    A: sp.csc_array
    b: np.ndarray
    n_zero: int
    order: np.ndarray
    row_sign: np.ndarray
    row_cons: list
    bound_cols: np.ndarray
    columns: list
    objective: ObjectiveData | None
    sense: float
    offset: float

    @property
    def cones(self) -> list:
        """Clarabel cone list: Zero rows, then Nonnegative rows."""
        cones = []
        if self.n_zero:
            cones.append(clarabel.ZeroConeT(self.n_zero))
        if self.A.shape[0] > self.n_zero:
            cones.append(clarabel.NonnegativeConeT(self.A.shape[0] - self.n_zero))
        return cones


def active_objective(model) -> ObjectiveData | None:
    """The single active objective of ``model`` (None if it has none).

    Raises ModelStructureError naming them when more than one is active.
    """
    objs = list(model.component_data_objects(Objective, active=True, descend_into=True))
    if len(objs) > 1:
        names = ", ".join(o.name for o in objs[:5])
        raise ModelStructureError(
            f"model {model.name!r} has {len(objs)} active objectives ({names}); "
            "clarabel needs exactly one: deactivate the others"
        )
    return objs[0] if objs else None


def compile_constraints(model, objective: ObjectiveData | None):
    """Linear standard form (mixed form) of the active constraints of ``model``.

    Uses Pyomo's ``LinearStandardFormCompiler``, which refuses nonlinear objectives, so
    the objective is deactivated for the duration of the call and restored afterwards.
    Nonlinear constraints are reported as ModelStructureError naming the constraint.
    """
    was_active = objective is not None and objective.active
    if was_active:
        objective.deactivate()
    try:
        return LinearStandardFormCompiler().write(model, mixed_form=True, set_sense=None)
    except InvalidConstraintError as err:
        raise ModelStructureError(
            f"{err} clarabel accepts only linear constraints (quadratic or general "
            "nonlinear constraints are not supported)"
        ) from err
    finally:
        if was_active:
            objective.activate()


def walk_objective(objective: ObjectiveData | None):
    """The ``QuadraticRepn`` of the objective and the visitor's id -> var map.

    Fixed variables become constants (``OrderedVarRecorder`` only maps free variables).
    Raises ModelStructureError when the objective is not (at most) quadratic.
    """
    if objective is None:
        return None, {}
    sorter = FileDeterminism_to_SortComponents(FileDeterminism.ORDERED)
    visitor = QuadraticRepnVisitor({}, var_recorder=OrderedVarRecorder({}, {}, sorter))
    repn = visitor.walk_expression(objective.expr)
    if repn.nonlinear is not None:
        raise ModelStructureError(
            f"objective {objective.name!r} is neither linear nor quadratic "
            f"(nonlinear part: {repn.nonlinear}); clarabel solves LPs and convex QPs only"
        )
    return repn, visitor.var_map


def merge_columns(columns: list, repn, var_map: dict) -> tuple[list, dict]:
    """Constraint columns followed by the variables that appear only in the objective.

    The standard-form compiler drops columns that appear in no constraint; a variable
    used only by the objective (e.g. only in its quadratic part) must still be a column.
    """
    columns = list(columns)
    index = {id(v): k for k, v in enumerate(columns)}
    if repn is not None:
        used = list(repn.linear)
        used += [vid for pair in (repn.quadratic or {}) for vid in pair]
        for vid in dict.fromkeys(used):
            if vid not in index:
                index[vid] = len(columns)
                columns.append(var_map[vid])
    return columns, index


def check_continuous(columns: list) -> None:
    """Refuse integer or binary columns: Clarabel solves continuous problems only."""
    discrete = [v.name for v in columns if not v.is_continuous()]
    if discrete:
        shown = ", ".join(discrete[:5]) + (", ..." if len(discrete) > 5 else "")
        raise ModelStructureError(
            f"{len(discrete)} integer/binary variable(s) ({shown}); clarabel solves "
            "continuous problems only: relax the model first, e.g. with "
            "dpmodels.core.relax.relax_integer_vars(model) (Pyomo's core.relax_integer_vars "
            "transformation) or by building it with relax=True"
        )


def objective_arrays(repn, index: dict, n: int, sense: float):
    """Symmetric P, q and constant offset of ``sense * objective`` over ``n`` columns.

    The model objective is ``offset + sense * (1/2 x'Px + q'x)``.  A term ``c x_i x_j``
    contributes ``c`` to P_ij and P_ji (``2c`` to P_ii), so that 1/2 x'Px reproduces it.
    """
    if repn is None:
        return sp.csc_array((n, n)), np.zeros(n), 0.0
    q = np.zeros(n)
    lin_idx = np.fromiter((index[v] for v in repn.linear), np.int64, len(repn.linear))
    np.add.at(q, lin_idx, np.fromiter(repn.linear.values(), float, len(repn.linear)))
    quad = repn.quadratic or {}
    rows = np.fromiter((index[a] for a, _ in quad), np.int64, len(quad))
    cols = np.fromiter((index[b] for _, b in quad), np.int64, len(quad))
    coef = np.fromiter(quad.values(), float, len(quad))
    both = (np.concatenate([rows, cols]), np.concatenate([cols, rows]))
    P = sp.coo_array((np.concatenate([coef, coef]), both), shape=(n, n)).tocsc()
    P.sum_duplicates()
    return sense * P, sense * q, float(repn.constant)


def check_convex(P: sp.csc_array, columns: list, objective, tol: float) -> None:
    """Refuse a minimization Hessian ``P`` (symmetric) that is not positive semidefinite.

    What is checked, cheapest first: (1) every diagonal entry >= 0, (2) Gershgorin:
    a nonnegative diagonally dominant P is PSD (covers separable/diagonal objectives in
    O(nnz)); otherwise (3) a sparse LDL' of ``P + delta*I`` restricted to the columns
    in quadratic terms (SuperLU with diagonal pivots only, ``delta = tol * max|P_ij|``):
    by Sylvester's law of inertia ``P + delta*I`` is positive definite iff every pivot
    is positive, so this is exact up to ``delta``.
    """
    if P.nnz == 0:
        return
    scale = float(abs(P.data).max())
    delta = tol * scale
    diag = P.diagonal()
    bad = np.flatnonzero(diag < -delta)
    if bad.size:
        _raise_nonconvex(objective, columns[bad[0]], "a negative squared-term coefficient")
    offdiag = np.asarray(abs(P).sum(axis=1)).ravel() - np.abs(diag)
    if np.all(offdiag <= diag + delta):
        return
    used = np.flatnonzero(np.diff(P.indptr))
    sub = P[used][:, used] + sp.diags_array(np.full(used.size, delta), format="csc")
    pivots, perm_ok, perm_c = _ldl_pivots(sp.csc_array(sub))
    if not perm_ok or np.any(pivots <= 0):
        k = int(np.argmin(pivots[perm_c])) if perm_ok else 0
        _raise_nonconvex(objective, columns[used[k]], "an indefinite Hessian")


def _ldl_pivots(M: sp.csc_array):
    """Diagonal pivots of a symmetric LU of ``M`` (no row interchanges) and its ordering.

    Returns (pivots, symmetric, perm_c); ``symmetric`` is False when SuperLU had to
    interchange rows, which only happens at a zero pivot, i.e. M is not definite.
    """
    try:
        lu = splu(M, permc_spec="MMD_AT_PLUS_A", diag_pivot_thresh=0.0, options={"SymmetricMode": True})
    except RuntimeError:  # exactly singular: M = P + delta*I is not definite
        return np.zeros(M.shape[0]), False, None
    return lu.U.diagonal(), bool(np.array_equal(lu.perm_r, lu.perm_c)), lu.perm_c


def _raise_nonconvex(objective, var, what: str):
    """Raise the ModelStructureError for a non-convex objective."""
    sense = "minimized" if objective.sense > 0 else "maximized"
    raise ModelStructureError(
        f"objective {objective.name!r} is not convex when {sense}: its quadratic part has "
        f"{what} (involving variable {var.name!r}); clarabel solves convex QPs only"
    )


def bound_rows(columns: list):
    """Rows ``-x_j + s = -lb_j`` and ``x_j + s = ub_j`` for the finite variable bounds.

    A column with ``lb == ub`` gets a single equality row ``x_j = lb`` instead, since a
    pair of opposite inequalities has no interior.  Returns (B, b, sign, is_eq, cols),
    one entry per row.
    """
    lbub = np.array([[np.nan if x is None else x for x in v.bounds] for v in columns], dtype=float).reshape(-1, 2)
    lb, ub = lbub[:, 0], lbub[:, 1]
    eq = np.isfinite(lb) & (lb == ub)
    has_lb = np.isfinite(lb) & ~eq
    has_ub = np.isfinite(ub) & ~eq
    cols = np.concatenate([np.flatnonzero(eq), np.flatnonzero(has_lb), np.flatnonzero(has_ub)])
    sign = np.concatenate([np.ones(eq.sum()), -np.ones(has_lb.sum()), np.ones(has_ub.sum())])
    rhs = np.concatenate([lb[eq], lb[has_lb], ub[has_ub]]) * sign
    B = sp.csc_array((sign, (np.arange(cols.size), cols)), shape=(cols.size, len(columns)))
    is_eq = np.zeros(cols.size, dtype=bool)
    is_eq[: eq.sum()] = True
    return B, rhs, sign, is_eq, cols


def constraint_rows(info, n: int):
    """Clarabel rows of the compiled constraints, widened to ``n`` columns.

    In mixed form a row is ``a x (<=, ==, >=) rhs`` by its multiplier (+1, 0, -1); a
    ``>=`` row is negated so every inequality reads ``A x + s = b, s >= 0``.
    Returns (A, b, sign, is_eq, cons).
    """
    mult = np.fromiter((r.bound_type for r in info.rows), float, len(info.rows))
    sign = np.where(mult < 0, -1.0, 1.0)
    A = info.A
    A = sp.csc_array(
        (A.data, A.indices, np.r_[A.indptr, np.full(n - A.shape[1], A.indptr[-1])]),
        shape=(len(info.rows), n),
    )
    A = sp.csc_array(sp.diags_array(sign) @ A)
    rhs = sign * np.asarray(info.rhs, dtype=float).reshape(-1)
    return A, rhs, sign, mult == 0, [r.constraint for r in info.rows]


def compile_model(model, convexity_tol: float = 1e-8) -> ClarabelProblem:
    """Compile ``model`` to a ClarabelProblem, refusing what Clarabel cannot solve.

    Raises ModelStructureError (nonlinear constraint or objective, several objectives,
    integer variables, non-convex objective) and lets Pyomo's
    InfeasibleConstraintException through for constraints that are infeasible constants.
    """
    objective = active_objective(model)
    info = compile_constraints(model, objective)
    repn, var_map = walk_objective(objective)
    columns, index = merge_columns(info.columns, repn, var_map)
    check_continuous(columns)
    sense = 1.0 if objective is None or objective.sense > 0 else -1.0
    P, q, offset = objective_arrays(repn, index, len(columns), sense)
    check_convex(P, columns, objective, convexity_tol)
    Ac, bc, sc, eqc, cons = constraint_rows(info, len(columns))
    B, bb, sb, eqb, bcols = bound_rows(columns)
    is_eq = np.concatenate([eqc, eqb])
    order = np.argsort(~is_eq, kind="stable")
    A = sp.csc_array(sp.vstack([Ac, B], format="csr")[order])
    P = sp.csc_array(sp.triu(P, format="csc"))
    A.sort_indices()  # Clarabel expects canonical CSC
    P.sort_indices()
    return ClarabelProblem(
        P=P,
        q=q,
        A=A,
        b=np.concatenate([bc, bb])[order],
        n_zero=int(is_eq.sum()),
        order=order,
        row_sign=np.concatenate([sc, sb]),
        row_cons=cons,
        bound_cols=bcols,
        columns=columns,
        objective=objective,
        sense=sense,
        offset=offset,
    )


# --------------------------------------------------------------------------- results


class ClarabelSolutionLoader(SolutionLoader):
    """Primal values, constraint duals and reduced costs of one Clarabel solution.

    Duals and reduced costs use ``highs``' convention (see the module docstring).
    Active constraints that compiled to no row (constant bodies) have dual 0.
    """

    def __init__(self, model, problem: ClarabelProblem | None, x=None, z=None):
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

    def _run_clarabel(self, problem: ClarabelProblem, config):
        """Run Clarabel; returns its solution and the captured log (with ``tee``)."""
        settings = self._settings(config)
        solver = clarabel.DefaultSolver(problem.P, problem.q, problem.A, problem.b, problem.cones, settings)
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
