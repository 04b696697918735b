"""The capability registry and its query: which solvers can solve a model, exactly or not."""

import pyomo.environ as pyo
import pytest

import dpmodels
from dpmodels import instances
from dpmodels.core.capabilities import solvers_for
from dpmodels.core.errors import ModelStructureError
from dpmodels.core.formulations import get_formulation, model_class


def test_highs_on_an_integer_qp_is_refused_naming_the_solvers_that_can():
    model = instances.example("pgsr.hierarchical_qip")
    with pytest.raises(ModelStructureError, match="highs does not solve MIQP models") as err:
        dpmodels.solve(model, "highs")
    assert "pgsr_dp" in str(err.value) and "scip_direct" in str(err.value)


def test_the_query_lists_exact_solvers_first_and_filters_on_exactness():
    model = instances.example("pgsr.cumulative_qip")
    found = solvers_for(model)
    names = [m.solver for m in found]
    assert "scip_direct" in names and "pgsr_cdp" in names and "highs" not in names
    assert [m.exact for m in found] == sorted((m.exact for m in found), reverse=True)
    assert [m.solver for m in solvers_for(model, exact=False)] == ["pgsr_cdp"]


def test_a_relaxed_model_changes_class_and_solvers():
    model = dpmodels.core.relax_integer_vars(instances.example("pgsr.hierarchical_qip"))
    assert model_class(model) == "QP"
    names = [m.solver for m in solvers_for(model)]
    assert "clarabel" in names and "highs" in names and "pgsr_dp" not in names


def test_model_class_reads_an_unmarked_model():
    m = pyo.ConcreteModel()
    m.x = pyo.Var(domain=pyo.Integers, bounds=(0, 3))
    m.y = pyo.Var(bounds=(0, 1))
    m.c = pyo.Constraint(expr=m.x + m.y <= 2)
    m.o = pyo.Objective(expr=m.x**2 + m.y)
    assert model_class(m) == "MIQP"
    assert [s.solver for s in solvers_for(m)] == ["scip_direct"]


ORDER = {"LP": 0, "QP": 1, "NLP": 2}


def test_every_registered_formulation_declares_a_class_that_covers_its_example():
    """Integrality exactly; the objective's degree at most the declared one (a tiny multilinear
    example can happen to be quadratic)."""
    for f in dpmodels.formulations():
        model = instances.example(f.name)
        relaxed = bool(dpmodels.core.get_marker(model).options.get("relax", False))
        declared, seen = f.problem_class(relaxed), model_class(model)
        assert declared.startswith("MI") == seen.startswith("MI"), f.name
        assert ORDER[seen.removeprefix("MI")] <= ORDER[declared.removeprefix("MI")], f.name
        assert get_formulation(f.name) is f


def test_compare_without_solvers_runs_every_solver_that_can():
    table = dpmodels.compare({"qip": instances.example("pgsr.hierarchical_qip")})
    assert set(table.solver) == {m.solver for m in solvers_for(instances.example("pgsr.hierarchical_qip"))}
    assert (table.solution == "optimal").all()
    assert table.objective.nunique() == 1
