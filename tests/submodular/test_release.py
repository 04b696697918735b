"""Results keep values evaluated on the true data out of what they release.

Two modular datasets whose weights differ by a constant ``c`` give every exponential mechanism
the same centred scores, so one seed makes the same private choices on both, while ``F(S)``
differs by ``c |S|``.  Their releases must be equal and their diagnostics must differ.  These
tests failed before the split: the results had no ``release`` and kept ``F_D(S)`` as a plain
field next to the output.
"""

import dataclasses

import numpy as np
import pytest

from dpmodels import instances
from dpmodels.submodular.algorithms import greedy
from dpmodels.submodular.compare import RATIO, RATIO_MEAN, VALUE, compare_submodular, privacy_utility
from dpmodels.submodular.matroids import UniformMatroid
from dpmodels.submodular.mechanism.continuous import private_continuous_greedy
from dpmodels.submodular.mechanism.greedy import mitrovic_private_greedy
from dpmodels.submodular.objectives import WeightedCoverage
from dpmodels.submodular.results import ContinuousRelease, GreedyRelease, TrueDataDiagnostics


def _modular_pair(shift=4.0):
    """``F(S) = sum_{e in S} w_e`` and the same with ``w + shift`` (equal Delta and public bound)."""
    w = np.array([1.0, 2.0, 3.0, 4.0, 2.0])
    make = lambda weights: WeightedCoverage(np.eye(5), weights, sensitivity=8.0)  # noqa: E731
    return make(w), make(w + shift), UniformMatroid(5, 2)


def test_release_fields_are_exactly_the_published_ones():
    assert [f.name for f in dataclasses.fields(GreedyRelease)] == ["S", "order", "epsilon"]
    assert [f.name for f in dataclasses.fields(ContinuousRelease)] == ["x", "directions", "S", "epsilon", "info"]
    assert [f.name for f in dataclasses.fields(TrueDataDiagnostics)] == ["value", "rounded_value"]


@pytest.mark.parametrize("seed", range(4))
def test_greedy_release_ignores_the_true_values(seed):
    F, G, M = _modular_pair()
    a, b = mitrovic_private_greedy(F, M, 1.0, seed=seed), mitrovic_private_greedy(G, M, 1.0, seed=seed)
    assert a.release == b.release
    assert a.release.epsilon == pytest.approx(2.0) and len(a.release.order) == 2
    assert b.diagnostics.value == pytest.approx(a.diagnostics.value + 4.0 * 2)
    assert a.value == a.diagnostics.value == F(a.S)  # the old name is a read-only alias
    with pytest.raises(AttributeError):
        a.value = 0.0


@pytest.mark.parametrize("seed", range(3))
def test_algorithm_1_release_ignores_the_true_values(seed):
    F, G, M = _modular_pair()
    a = private_continuous_greedy(F, M, 1.0, T=3, seed=seed)
    b = private_continuous_greedy(G, M, 1.0, T=3, seed=seed)
    assert a.release == b.release
    assert a.release.epsilon == pytest.approx(2 * 1.0 * 2 * 3)  # 2 eps r T
    assert dict(a.release.info) == {"cover": "bases", "cover_size": None, "maurey_m": 1}
    assert b.rounded_value == pytest.approx(a.rounded_value + 4.0 * 2)
    assert b.value == pytest.approx(a.value + 4.0 * 2)  # f(x_T) with sum x = r = 2
    assert (a.value, a.rounded_value) == (a.diagnostics.value, a.diagnostics.rounded_value)


def test_non_private_greedy_releases_at_infinite_epsilon():
    F, _, M = _modular_pair()
    res = greedy(F, M)
    assert res.release == GreedyRelease((False, False, True, True, False), (3, 2), float("inf"))


def test_compare_labels_true_data_columns_as_diagnostics():
    trap = instances.load("submodular/trap")
    table, opt = compare_submodular(trap, epsilons=(1.0,), seeds=1)
    assert {VALUE, RATIO} <= set(table.columns) and not {"value", "ratio"} & set(table.columns)
    assert all("diagnostic" in c for c in (VALUE, RATIO, RATIO_MEAN)) and all("true" in c for c in (VALUE, RATIO))
    assert table.loc[table.method == "greedy", RATIO].iloc[0] == pytest.approx(1.1 / opt)
    curve = privacy_utility(table)
    assert RATIO_MEAN in curve.columns and "ratio_mean" not in curve.columns
