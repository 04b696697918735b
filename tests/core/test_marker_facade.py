"""Structure marker fingerprints, the relaxation helper, and the solve/compare façade."""

from dataclasses import dataclass

import numpy as np
import pyomo.environ as pyo
import pytest
from pyomo.contrib.solver.common.results import TerminationCondition

import dpmodels
from dpmodels.core.errors import SolverUnavailableError
from dpmodels.core.formulations import register_formulation
from dpmodels.core.marker import attach_marker, get_marker, model_fingerprint
from dpmodels.core.metrics import (
    consistency_violations,
    faithfulness_violations,
    non_integral_cells,
    per_level_l1,
    release_metrics,
)
from dpmodels.core.relax import relax_integer_vars
from dpmodels.pgsr import models as M
from dpmodels.pgsr.data import NoisyGroupSizes


def small_model():
    m = pyo.ConcreteModel()
    m.I = pyo.RangeSet(3)
    m.x = pyo.Var(m.I, domain=pyo.NonNegativeIntegers, bounds=(0, 4))
    m.p = pyo.Param(initialize=2.0, mutable=True)
    m.c = pyo.Constraint(expr=sum(m.x.values()) >= m.p)
    m.o = pyo.Objective(expr=sum((m.x[i] - 0.4 * i) ** 2 for i in m.I))
    return m


@pytest.mark.parametrize(
    "edit",
    [
        lambda m: m.x[1].setlb(1),
        lambda m: m.x[2].fix(0),
        lambda m: m.c.deactivate(),
        lambda m: m.p.set_value(3.0),
        lambda m: setattr(m, "d", pyo.Constraint(expr=m.x[1] <= 2)),
        lambda m: m.x[3].setub(5),
        lambda m: m.o.set_value(m.o.expr + 1),
        lambda m: m.x[1].setub(None),
        lambda m: setattr(m.x[1], "domain", pyo.Integers),
        lambda m: m.c.set_value(sum(m.x.values()) >= 1.5 * m.p),
    ],
)
def test_fingerprint_detects_edits(edit):
    m = small_model()
    before = model_fingerprint(m)
    assert model_fingerprint(m.clone()) == before
    m.x[1].set_value(3)  # values are not structure
    assert model_fingerprint(m) == before
    edit(m)
    assert model_fingerprint(m) != before


@dataclass(frozen=True)
class DemoPayload:
    data: np.ndarray


@pytest.fixture
def demo_formulation(monkeypatch):
    """A throw-away formulation, registered for one test only (the registry stays the package's)."""
    from dpmodels.core import formulations

    monkeypatch.setattr(formulations, "_REGISTRY", dict(formulations._REGISTRY))
    register_formulation("demo.small", payload=DemoPayload, integer=True, objective="linear")(lambda: None)


def test_marker_survives_clone_and_relaxation(demo_formulation):
    m = small_model()
    attach_marker(m, "demo.small", DemoPayload(np.arange(3)), {"relax": False}, {"x": [1, 2, 3]})
    c = m.clone()
    assert get_marker(c).formulation == "demo.small" and get_marker(c).fingerprint == get_marker(m).fingerprint
    r = relax_integer_vars(m)
    assert get_marker(r).options["relax"] is True
    assert get_marker(r).fingerprint == model_fingerprint(r) != get_marker(m).fingerprint
    assert all(v.is_continuous() for v in r.x.values()) and all(v.is_integer() for v in m.x.values())


def test_a_payload_of_the_wrong_type_or_an_unknown_formulation_is_refused(demo_formulation):
    with pytest.raises(TypeError, match="carries a DemoPayload, got dict"):
        attach_marker(small_model(), "demo.small", {"data": np.arange(3)})
    with pytest.raises(KeyError, match="no formulation 'demo.unknown'"):
        attach_marker(small_model(), "demo.unknown", DemoPayload(np.arange(3)))


def test_solve_facade_aliases_and_errors(running_example, f1_noisy):
    noisy = NoisyGroupSizes(running_example.hierarchy, f1_noisy, 6)
    m = M.build_hierarchical_qip(noisy)
    res = dpmodels.solve(m, "scip")
    assert res.termination_condition == TerminationCondition.convergenceCriteriaSatisfied
    assert pyo.value(m.objective) == pytest.approx(1)
    with pytest.raises(SolverUnavailableError, match="not registered"):
        dpmodels.solve(m, "cplex_magic")
    assert {"highs", "scip", "clarabel", "pgsr_dp", "pgsr_chain"} <= set(dpmodels.solver_names())


def test_compare_grid(running_example, f1_noisy):
    noisy = NoisyGroupSizes(running_example.hierarchy, f1_noisy, 6)
    models = {
        "Model 1": M.build_hierarchical_qip(noisy),
        "Model 1-R": lambda: M.build_hierarchical_qip(noisy, relax=True),
    }
    table = dpmodels.compare(
        models,
        ["highs", "scip", "clarabel", "pgsr_dp"],
        evaluate=lambda m: {"root total": float(M.released_counts(m)[0].sum())},
    )
    assert len(table) == 8
    row = table.set_index(["formulation", "solver"])
    assert row.loc[("Model 1", "pgsr_dp"), "objective"] == 1
    assert row.loc[("Model 1", "scip"), "objective"] == pytest.approx(1)
    assert row.loc[("Model 1-R", "clarabel"), "objective"] == pytest.approx(11 / 19, abs=1e-6)
    assert row.loc[("Model 1-R", "pgsr_dp"), "termination"] == "refused"
    assert "relaxation" in row.loc[("Model 1-R", "pgsr_dp"), "message"]
    assert row.loc[("Model 1", "clarabel"), "termination"] in ("refused", "error")
    assert row.loc[("Model 1", "pgsr_dp"), "root total"] == 6


def test_metrics_on_known_release(running_example):
    h = running_example.hierarchy
    truth = running_example.counts
    released = truth.copy()
    released[1, 0] += 1  # GA size 1 off by one: breaks US consistency and level-2 total
    assert per_level_l1(h, truth, released).tolist() == [0, 1]
    assert consistency_violations(h, released) == 1
    assert faithfulness_violations(h, released, 6) == 1
    assert non_integral_cells(released + 0.5) == released.size
    assert release_metrics(h, truth, truth, 6)["L1 total"] == 0
