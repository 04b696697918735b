"""The model/plugin contract, checked on every registered formulation x every registered solver.

Parametrized over the registries (formulations with their example models; solvers that
declare capabilities), so a new formulation or plugin is covered without editing this file.
For each pair: a solver the capability registry says cannot take the model is refused with
an error (never a wrong answer); one that can returns a solution that satisfies the model's
constraints, whose objective is the model's objective at the loaded point; an exact solver
agrees with an independent exact backend; a non-exact one is never ``optimal`` in either
Pyomo API.
"""

from __future__ import annotations

import functools
import math

import pyomo.environ as pyo
import pytest
from pyomo.contrib.solver.common.factory import SolverFactory
from pyomo.contrib.solver.common.results import SolutionStatus, TerminationCondition
from pyomo.contrib.solver.common.util import NoDualsError

import dpmodels
from dpmodels import instances
from dpmodels.core.capabilities import BACKENDS, capabilities, why_not
from dpmodels.core.errors import DPModelsError, ModelStructureError, SolverOptionError
from dpmodels.core.formulations import formulations
from dpmodels.core.relax import relax_integer_vars
from dpmodels.solvers import load_plugins

#: Values the test supplies for options a plugin requires (a mechanism's budget).
REQUIRED = {"epsilon": 1.0}
FORMULATIONS = [f.name for f in formulations()]
PLUGINS = sorted(n for n, cls in load_plugins().items() if hasattr(cls, "capabilities") and n not in BACKENDS)
SOLVERS = [*sorted(BACKENDS), *PLUGINS]
TOL = 1e-6


def _installed(name: str) -> bool:
    return name in SolverFactory._cls and bool(SolverFactory(name).available())


#: A guard, not a measurement: a backend that cannot certify an optimum (SCIP cannot bound the free
#: variables of the tree GLS's QP and would search for ever) stops here with what it has, which the
#: contract then checks is not called optimal.
BACKEND_TIME_LIMIT = 10


def _required(name: str) -> dict:
    caps = capabilities(name)
    guard = {"time_limit": BACKEND_TIME_LIMIT} if caps.kind == "backend" and caps.time_limit else {}
    return guard | {k: v for k, v in REQUIRED.items() if k in caps.options}


@functools.cache
def _reference(formulation: str) -> float | None:
    """The optimum of the example by an exact backend (SCIP for integer QPs, else HiGHS)."""
    model = instances.example(formulation)
    for name in ("highs", "scip_direct"):
        if why_not(BACKENDS[name], model) is None and _installed(name):
            res = dpmodels.solve(model, name)
            if res.solution_status == SolutionStatus.optimal:
                return res.incumbent_objective
            return None
    return None


def test_every_formulation_has_an_example_and_a_payload_dataclass():
    assert len(FORMULATIONS) >= 20, FORMULATIONS
    for f in formulations():
        model = instances.example(f.name)
        marker = dpmodels.core.get_marker(model)
        assert marker.formulation == f.name
        assert isinstance(marker.data, f.payload)


@pytest.mark.parametrize("formulation", FORMULATIONS)
def test_no_builder_emits_a_constraint_without_variables(formulation):
    model = instances.example(formulation)
    for con in model.component_data_objects(pyo.Constraint, active=True):
        assert con.body.polynomial_degree() != 0, f"{formulation}: {con.name} has no variable"


@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize("formulation", FORMULATIONS)
def test_solver_on_formulation(formulation, solver):
    if not _installed(solver):
        pytest.skip(f"{solver} is not installed")
    model = instances.example(formulation)
    caps = capabilities(solver)
    reason = why_not(caps, model)
    if reason is not None:
        with pytest.raises(ModelStructureError):
            dpmodels.solve(model, solver, **_required(solver))
        return
    try:
        res = dpmodels.solve(model, solver, **_required(solver))
    except (ModelStructureError, DPModelsError) as err:  # refused for a reason beyond the class
        assert str(err), "a refusal names its reason"
        return
    if res.solution_status == SolutionStatus.noSolution:
        assert (
            res.termination_condition != TerminationCondition.convergenceCriteriaSatisfied
            or _reference(formulation) is None
        )
        return
    _check_loaded_point(model, res)
    if not caps.exact:
        assert res.solution_status != SolutionStatus.optimal, f"{solver} is not exact but said optimal"
    ref = _reference(formulation)
    if res.solution_status == SolutionStatus.optimal and ref is not None:
        assert res.incumbent_objective == pytest.approx(ref, rel=TOL, abs=TOL)


def _check_loaded_point(model, res) -> None:
    """The loaded point satisfies every active constraint and bound; the objective matches."""
    for con in model.component_data_objects(pyo.Constraint, active=True):
        body = pyo.value(con.body)
        if con.has_lb():
            assert body >= pyo.value(con.lower) - 1e-6 * max(1, abs(body)), con.name
        if con.has_ub():
            assert body <= pyo.value(con.upper) + 1e-6 * max(1, abs(body)), con.name
    for var in model.component_data_objects(pyo.Var):
        if var.value is None:
            continue
        if var.has_lb():
            assert var.value >= var.lb - 1e-6, var.name
        if var.has_ub():
            assert var.value <= var.ub + 1e-6, var.name
        if not var.is_continuous():
            assert abs(var.value - round(var.value)) <= 1e-6, var.name
    objective = next(model.component_data_objects(pyo.Objective, active=True))
    assert res.incumbent_objective == pytest.approx(pyo.value(objective), rel=1e-6, abs=1e-6)


# ---------------------------------------------------------------- each plugin, both APIs
def _example_for(plugin: str):
    """The first example model the plugin accepts (its continuous relaxation for a plugin that
    solves relaxations only)."""
    caps = capabilities(plugin)
    for name in sorted(caps.formulations):
        model = instances.example(name)
        if caps.relaxed_only:
            model = relax_integer_vars(model)
        if why_not(caps, model) is None:
            return model
    pytest.skip(f"no example model is accepted by {plugin}")


@pytest.mark.parametrize("plugin", PLUGINS)
def test_legacy_api_same_status_and_objective(plugin):
    model = _example_for(plugin)
    new = dpmodels.solve(model.clone(), plugin, **_required(plugin))
    legacy = pyo.SolverFactory(plugin).solve(model, options=_required(plugin))
    if new.solution_status == SolutionStatus.noSolution:
        return
    optimal_new = pyo.check_optimal_termination(new)
    optimal_legacy = pyo.check_optimal_termination(legacy)
    assert optimal_new == optimal_legacy
    if not capabilities(plugin).exact:
        assert not optimal_legacy
        assert legacy.solver.termination_condition != pyo.TerminationCondition.optimal
    if capabilities(plugin).exact and new.solution_status == SolutionStatus.optimal:
        objective = next(model.component_data_objects(pyo.Objective, active=True))
        assert pyo.value(objective) == pytest.approx(new.incumbent_objective, rel=1e-9, abs=1e-9)


@pytest.mark.parametrize("plugin", PLUGINS)
def test_unknown_options_are_refused_in_both_apis(plugin):
    model = _example_for(plugin)
    with pytest.raises(SolverOptionError, match="no_such_option"):
        dpmodels.solve(model, plugin, no_such_option=1, **_required(plugin))
    with pytest.raises(SolverOptionError, match="no_such_option"):
        pyo.SolverFactory(plugin).solve(model, options={"no_such_option": 1, **_required(plugin)})
    solver = pyo.SolverFactory(plugin)
    solver.options["no_such_option"] = 1
    with pytest.raises(SolverOptionError, match="no_such_option"):
        solver.solve(model)


@pytest.mark.parametrize("plugin", PLUGINS)
def test_declared_options_reach_the_plugin_in_both_apis(plugin):
    """Every declared option, given its default through Pyomo's legacy ``options`` and the new
    ``solver_options``, is accepted; a value outside its domain is refused."""
    model = _example_for(plugin)
    cls = SolverFactory._cls[plugin]
    defaults = {**cls.option_defaults(), **_required(plugin)}
    pyo.SolverFactory(plugin).solve(model.clone(), options=defaults)
    SolverFactory(plugin).solve(model.clone(), solver_options=defaults)
    for option in capabilities(plugin).options.values():
        try:
            option.parse("not a value")
        except (TypeError, ValueError):
            bad = {**_required(plugin), option.name: "not a value"}
            with pytest.raises(SolverOptionError, match=option.name):
                pyo.SolverFactory(plugin).solve(model.clone(), options=bad)
            with pytest.raises(SolverOptionError, match=option.name):
                SolverFactory(plugin).solve(model.clone(), solver_options=bad)
            with pytest.raises(SolverOptionError, match=option.name):
                cls.solve_data(dpmodels.core.get_marker(model).data, **bad)


@pytest.mark.parametrize("plugin", PLUGINS)
def test_time_limit_is_honoured_or_refused(plugin):
    model = _example_for(plugin)
    caps = capabilities(plugin)
    if caps.time_limit:
        res = dpmodels.solve(model, plugin, time_limit=60, **_required(plugin))
        assert res.timing_info.wall_time < 60
    else:
        with pytest.raises(SolverOptionError, match="time_limit"):
            dpmodels.solve(model, plugin, time_limit=60, **_required(plugin))


@pytest.mark.parametrize("plugin", PLUGINS)
def test_tee_shows_progress(plugin, capsys):
    model = _example_for(plugin)
    dpmodels.solve(model, plugin, tee=True, **_required(plugin))
    out = capsys.readouterr().out
    assert plugin in out and "objective" in out


@pytest.mark.parametrize("plugin", PLUGINS)
def test_suffixes_and_expressions_are_not_edits_and_duals_are_declared(plugin):
    model = _example_for(plugin)
    model.dual = pyo.Suffix(direction=pyo.Suffix.IMPORT)
    model.report = pyo.Expression(expr=next(model.component_data_objects(pyo.Objective, active=True)).expr)
    res = dpmodels.solve(model, plugin, **_required(plugin))
    if res.solution_status == SolutionStatus.noSolution:
        return
    if capabilities(plugin).duals:
        duals = res.solution_loader.get_duals()
        assert len(duals) > 0 and all(math.isfinite(v) for v in duals.values())
    else:
        with pytest.raises(NoDualsError):
            res.solution_loader.get_duals()


@pytest.mark.parametrize("plugin", PLUGINS)
def test_an_edited_model_is_refused(plugin):
    model = _example_for(plugin)
    var = next(model.component_data_objects(pyo.Var))
    model.extra = pyo.Constraint(expr=var >= (var.lb or 0) - 1)
    with pytest.raises(ModelStructureError, match="edited"):
        dpmodels.solve(model, plugin, **_required(plugin))


def test_legacy_options_reach_the_plugin_regression():
    """Issue 13's example: ``options={'max_iter': 1}`` was dropped by the legacy API (the IPM ran to its
    default); now the run stops after one iteration and says so in both the legacy and new statuses."""
    legacy = pyo.SolverFactory("mdp_ipm").solve(instances.example("mdp.full_lp"), options={"max_iter": 1})
    assert legacy.solver.termination_condition == pyo.TerminationCondition.maxIterations
    new = SolverFactory("mdp_ipm").solve(
        instances.example("mdp.full_lp"),
        solver_options={"max_iter": 1},
        load_solutions=False,
        raise_exception_on_nonoptimal_result=False,
    )
    assert new.termination_condition == TerminationCondition.iterationLimit
    assert len(new.extra_info.history) == 1
    mechanism = pyo.SolverFactory("facility_mechanism").solve(instances.example("facility.tree"), options=REQUIRED)
    assert mechanism.solver.termination_condition == pyo.TerminationCondition.feasible  # eps reached it
