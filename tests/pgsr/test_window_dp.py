"""The exact Model 1 solver of issue 14 (relaxation, windows, exchange certificate) against
brute force, SCIP, the table DP and HiGHS on the relaxation."""

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from pgsr_oracles import brute_force, consistent, small_instances

from dpmodels.core.errors import DataValidationError, ModelStructureError
from dpmodels.core.facade import solve
from dpmodels.core.relax import relax_integer_vars
from dpmodels.instances.pgsr import random_tree
from dpmodels.pgsr.algorithms.hierarchical import solve_hierarchical
from dpmodels.pgsr.algorithms.relaxation import relaxed_values
from dpmodels.pgsr.algorithms.window import _window_optimum, exchange_gain, solve_exact, window_domains
from dpmodels.pgsr.data import NoisyGroupSizes
from dpmodels.pgsr.domains import resolve_domains
from dpmodels.pgsr.mechanism import measure
from dpmodels.pgsr.models import build_hierarchical_qip

#: Seconds HiGHS may take on a relaxed Model 1 as an oracle: its QP solver (1.16) can run without end on a
#: few tiny instances (tests/pgsr/test_models.py pins one); such a draw is discarded, never a hang.
HIGHS_QP_LIMIT = 30


@st.composite
def measured_instances(draw):
    """Deeper trees and larger G than brute force reaches, measured with the mechanism's noise."""
    seed = draw(st.integers(0, 10**6))
    data = random_tree(seed=seed, depth=draw(st.integers(2, 4)), N=draw(st.integers(1, 4)), G=draw(st.integers(2, 40)))
    noisy, _ = measure(data, draw(st.sampled_from([0.2, 1.0, 3.0])), "counts", rng=seed)
    return data, noisy


@given(small_instances())
def test_equals_the_brute_force_optimum(instance):
    data, values = instance
    sol = solve_exact(NoisyGroupSizes(data.hierarchy, values, data.G))
    best, optima = brute_force(data.hierarchy, values, data.G, "hierarchical")
    assert sol.objective == pytest.approx(best, abs=1e-9)
    assert any((sol.counts == o).all() for o in optima)
    assert consistent(data.hierarchy, sol.counts, data.G)
    assert sol.info["certificate gain"] >= 0


@settings(max_examples=60, deadline=None)
@given(measured_instances())
def test_equals_the_table_dp_and_full_is_never_above_truncated(instance):
    data, noisy = instance
    full = solve_exact(noisy, "full")
    assert full.objective == pytest.approx(solve_hierarchical(noisy, "full").objective, abs=1e-9)
    truncated = resolve_domains(noisy, "truncated", None, "widen")
    sol = solve_exact(noisy, truncated)
    assert sol.objective == pytest.approx(solve_hierarchical(noisy, truncated).objective, abs=1e-9)
    assert full.objective <= sol.objective + 1e-9
    assert consistent(data.hierarchy, sol.counts, data.G) and consistent(data.hierarchy, full.counts, data.G)
    assert (sol.counts >= truncated.lo).all() and (sol.counts <= truncated.hi).all()


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 10**6))
def test_equals_scip_on_the_pyomo_model(seed):
    data = random_tree(seed=seed, depth=3, N=3, G=12)
    noisy, _ = measure(data, 0.5, "counts", rng=seed)
    model = build_hierarchical_qip(noisy, domains="full")
    res = solve(model, "scip")
    assert res.termination_condition.name == "convergenceCriteriaSatisfied"
    assert solve_exact(noisy).objective == pytest.approx(res.incumbent_objective, abs=1e-6)


@settings(max_examples=30, deadline=None)
@given(measured_instances(), st.booleans())
def test_relaxation_equals_highs_on_model_1r(instance, truncated):
    data, noisy = instance
    dom = resolve_domains(noisy, "truncated" if truncated else "full", None, "widen")
    x = relaxed_values(noisy, dom)
    res = solve(relax_integer_vars(build_hierarchical_qip(noisy, domains=dom)), "highs", time_limit=HIGHS_QP_LIMIT)
    assume(res.termination_condition.name == "convergenceCriteriaSatisfied")  # HiGHS's QP can run without end
    assert ((x - noisy.values) ** 2).sum() == pytest.approx(res.incumbent_objective, rel=1e-9, abs=1e-7)
    assert np.abs(data.hierarchy.consistency_residual(x)).max() < 1e-7
    assert x[0].sum() == pytest.approx(data.G)
    assert (x >= dom.lo - 1e-9).all() and (x <= dom.hi + 1e-9).all()


def _random_exchange(h, counts, rng):
    """Move one unit between two random leaf cells (every ancestor follows), if it stays >= 0."""
    leaves = h.leaves
    (i, si), (j, sj) = [(int(rng.choice(leaves)), int(rng.integers(counts.shape[1]))) for _ in range(2)]
    moved = counts.copy()
    for node, size, step in ((i, si, -1), (j, sj, 1)):
        r = node
        while r >= 0:
            moved[r, size] += step
            r = int(h.parent[r]) if r > 0 else -1
    return moved if (moved >= 0).all() else counts


@settings(max_examples=60, deadline=None)
@given(measured_instances(), st.integers(0, 10**6))
def test_the_certificate_holds_exactly_on_optima(instance, seed):
    """The certificate can fail: on a feasible point it is >= 0 exactly when the point is optimal."""
    data, noisy = instance
    dom = resolve_domains(noisy, "full")
    best = solve_hierarchical(noisy, dom).objective
    rng = np.random.default_rng(seed)
    counts = solve_exact(noisy).counts
    for _ in range(3):
        counts = _random_exchange(data.hierarchy, counts, rng)
    gain, _ = exchange_gain(noisy, dom, counts)
    objective = float(((counts - noisy.values) ** 2).sum())
    assert (gain >= 0) == (objective == pytest.approx(best, abs=1e-9))


def test_a_window_too_narrow_is_widened_until_certified():
    """Centred on a poor point with w = 0 the first window misses the optimum; the certificate
    rejects it and the solver widens until it certifies the exact optimum."""
    data = random_tree(seed=3, depth=3, N=3, G=30)
    noisy, _ = measure(data, 0.3, "counts", rng=3)
    dom = resolve_domains(noisy, "full")
    h = data.hierarchy
    even = h.aggregate(np.full((len(h.leaves), data.N), data.G / (len(h.leaves) * data.N)))  # consistent, poor
    counts, _, _ = _window_optimum(noisy, window_domains(even, dom, 0))
    assert exchange_gain(noisy, dom, counts)[0] < 0
    sol = solve_exact(noisy, "full", window=0, centre=even)
    assert len(sol.info["windows"]) > 1 and sol.info["certificate gain"] >= 0
    assert sol.objective == pytest.approx(solve_hierarchical(noisy, dom).objective)
    with pytest.raises(DataValidationError, match="centre"):
        solve_exact(noisy, centre=even[:1])
    for bad in (-1, 1.5, True):
        with pytest.raises(DataValidationError, match="window"):
            solve_exact(noisy, window=bad)


def test_real_valued_noise_is_solved_within_the_recorded_tolerance():
    data = random_tree(seed=5, depth=3, N=3, G=25)
    values = data.counts + np.random.default_rng(5).normal(0, 2, data.counts.shape)
    noisy = NoisyGroupSizes(data.hierarchy, values, data.G)
    sol = solve_exact(noisy)
    assert sol.info["certificate tolerance"] > 0
    assert sol.objective == pytest.approx(solve_hierarchical(noisy, "full").objective, abs=1e-9)


@settings(max_examples=10, deadline=None)
@given(measured_instances())
def test_the_pgsr_relax_plugin_solves_model_1r_like_highs_and_refuses_model_1(instance):
    _, noisy = instance
    relaxed = build_hierarchical_qip(noisy, relax=True, domains="full")
    ours, highs = solve(relaxed, "pgsr_relax"), solve(relaxed.clone(), "highs", time_limit=HIGHS_QP_LIMIT)
    assume(highs.termination_condition.name == "convergenceCriteriaSatisfied")  # see HIGHS_QP_LIMIT
    assert ours.incumbent_objective == pytest.approx(highs.incumbent_objective, rel=1e-9, abs=1e-7)
    with pytest.raises(ModelStructureError, match="integer variables"):
        solve(build_hierarchical_qip(noisy, domains="full"), "pgsr_relax")


def test_m_h_r_on_plain_data_equals_m_h_r_through_highs():
    """M_H^r with pgsr_relax skips the Pyomo model; its rounded release is HiGHS's."""
    from dpmodels.pgsr.postprocessing import postprocess

    data = random_tree(seed=11, depth=3, N=4, G=60)
    noisy, _ = measure(data, 0.5, "counts", rng=11)
    ours = postprocess("M_H^r", noisy, solver="pgsr_relax")
    highs = postprocess("M_H^r", noisy, solver="highs")
    assert ours.objective == pytest.approx(highs.objective, rel=1e-9)
    assert np.abs(ours.counts - highs.counts).max() <= 1  # equal unless a value sits at a half
    with pytest.raises(DataValidationError, match="time_limit"):
        postprocess("M_H^r", noisy, solver="pgsr_relax", time_limit=5)
