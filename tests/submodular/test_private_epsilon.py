"""Private runs refuse ``eps = inf`` (the exact argmax: no privacy), ``eps <= 0`` and NaN.

Before the fix every private entry point (the mechanisms, the ``submodular_private_cg`` and
``submodular_greedy`` plugins, ``compare submodular``) ran at ``eps = inf`` and ``eps = 0`` and
returned an output labelled private.  Those limits now need an explicit non-private path:
``diagnostic=True`` or a ``PrivacyAccountant(private=False)``.
"""

import math

import numpy as np
import pytest

import dpmodels
from dpmodels import instances
from dpmodels.core.errors import PrivacyParameterError
from dpmodels.submodular.accounting import PrivacyAccountant
from dpmodels.submodular.algorithms import greedy, k_greedy
from dpmodels.submodular.compare import compare_submodular
from dpmodels.submodular.mechanism.continuous import improved_private_continuous_greedy, private_continuous_greedy
from dpmodels.submodular.mechanism.greedy import mitrovic_private_greedy, private_k_greedy, private_k_greedy_sampled
from dpmodels.submodular.models import build_kcoverage_milp, build_multilinear_relaxation

BAD = [math.inf, 0.0, -1.0, math.nan]


@pytest.fixture(scope="module")
def trap():
    return instances.load("submodular/trap")


@pytest.fixture(scope="module")
def ex2():
    return instances.load("submodular/k-coverage-example")


def _runs(trap, ex2):
    set_fm, k_fm = (trap.function, trap.matroid), (ex2.function, ex2.matroid)
    return {
        "alg1": lambda eps, **kw: private_continuous_greedy(*set_fm, eps, seed=0, **kw),
        "mitrovic": lambda eps, **kw: mitrovic_private_greedy(*set_fm, eps, seed=0, **kw),
        "alg3": lambda eps, **kw: private_k_greedy(*k_fm, eps, seed=0, **kw),
        "alg4": lambda eps, **kw: private_k_greedy_sampled(*k_fm, eps, seed=0, **kw),
    }


@pytest.mark.parametrize("eps", BAD)
@pytest.mark.parametrize("name", ["alg1", "mitrovic", "alg3", "alg4"])
def test_private_mechanisms_refuse_non_private_epsilons(trap, ex2, name, eps):
    run = _runs(trap, ex2)[name]
    with pytest.raises(PrivacyParameterError, match="^epsilon"):
        run(eps)
    with pytest.raises(PrivacyParameterError, match="^epsilon"):
        run(eps, accountant=PrivacyAccountant(private=True))  # an explicit private ledger refuses too


@pytest.mark.parametrize("eps", BAD)
def test_algorithm_2_refuses_them_too(trap, eps):
    with pytest.raises(PrivacyParameterError, match="^epsilon"):
        improved_private_continuous_greedy(trap.function, trap.matroid, eps, sample_size=3)


@pytest.mark.parametrize("eps", [math.inf, 0.0])
def test_the_plugins_refuse_them(trap, ex2, eps):
    model = build_multilinear_relaxation(trap.function, trap.matroid)
    for algorithm in ("alg1", "alg2"):
        with pytest.raises(PrivacyParameterError, match="^epsilon"):
            dpmodels.solve(model, "submodular_private_cg", epsilon=eps, algorithm=algorithm, T=2)
    from dpmodels.submodular.models import build_coverage_milp

    cover = build_coverage_milp(trap.function, trap.matroid)
    with pytest.raises(PrivacyParameterError, match="^epsilon"):
        dpmodels.solve(cover, "submodular_greedy", algorithm="mitrovic", epsilon=eps)
    kcov = build_kcoverage_milp(ex2.function, ex2.matroid)
    for algorithm in ("alg3", "alg4"):
        with pytest.raises(PrivacyParameterError, match="^epsilon"):
            dpmodels.solve(kcov, "submodular_greedy", algorithm=algorithm, epsilon=eps)


def test_compare_refuses_an_infinite_epsilon(trap):
    with pytest.raises(PrivacyParameterError, match="^epsilon"):
        compare_submodular(trap, epsilons=(math.inf,), seeds=1)


def test_the_limits_stay_available_on_a_declared_non_private_path(trap, ex2):
    runs = _runs(trap, ex2)
    res = runs["mitrovic"](math.inf, diagnostic=True)
    assert np.array_equal(res.S, greedy(trap.function, trap.matroid).S)
    assert res.accountant.private is False and res.accountant.basic()[0] == math.inf
    assert res.accountant.diagnostics == ["epsilon = inf: a non-private limit, not a private run"]
    ledger = PrivacyAccountant(private=False)
    res = runs["alg3"](math.inf, accountant=ledger)
    assert res.accountant is ledger and np.array_equal(res.S, k_greedy(ex2.function, ex2.matroid).S)
    assert runs["alg1"](0.0, diagnostic=True, rounding="none").accountant.basic()[0] == 0.0
    private = runs["alg1"](0.5)
    assert private.accountant.private is True and private.accountant.diagnostics == []
