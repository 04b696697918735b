"""The metric-DP family under the plugin contract: the registered formulation and its payload,
the tiny example, the plugins on the payload (``solve_data``) and their honest statuses."""

import pytest
from pyomo.contrib.solver.common.factory import SolverFactory

from dpmodels import instances
from dpmodels.core.capabilities import capabilities, declared_class
from dpmodels.core.formulations import formulations, model_class
from dpmodels.core.marker import get_marker
from dpmodels.metricdp.models import FullLPPayload


def test_full_lp_is_registered_with_its_payload_and_a_tiny_example():
    (form,) = formulations("mdp")
    assert (form.name, form.payload, form.integer, form.objective) == ("mdp.full_lp", FullLPPayload, False, "linear")
    model = instances.example("mdp.full_lp")
    marker = get_marker(model)
    assert isinstance(marker.data, FullLPPayload) and marker.data.instance.N == 12
    assert declared_class(model) == model_class(model) == "LP"
    value = SolverFactory("highs").solve(model).incumbent_objective
    for name in ("mdp_ipm", "mdp_benders"):
        caps = capabilities(name)
        assert not caps.exact and caps.time_limit and caps.duals == (name == "mdp_ipm")
        assert "certified relative gap" in caps.guarantee
        res = SolverFactory(name).solve(instances.example("mdp.full_lp"))
        assert res.solution_status.name == "feasible"  # gap-limited: never reported optimal
        assert res.objective_bound <= value + 1e-9 <= res.incumbent_objective + 2e-9
        assert res.incumbent_objective - res.objective_bound <= 1e-3 * res.incumbent_objective


@pytest.mark.parametrize("name", ["mdp_ipm", "mdp_benders"])
def test_plugins_solve_the_payload(name):
    from dpmodels.core.errors import SolverOptionError
    from dpmodels.solvers import REGISTERED

    payload = get_marker(instances.example("mdp.full_lp")).data
    res = REGISTERED[name].solve_data(payload, gap=1e-6)
    assert res.status in ("gap reached", "optimal") and res.relative_gap <= 1e-6
    with pytest.raises(SolverOptionError, match="progress"):  # the iteration log is tee now
        REGISTERED[name].solve_data(payload, progress=True)
