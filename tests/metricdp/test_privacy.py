"""Privacy of the returned mechanisms: the exact ratio audit, the repair and the release of outputs.

eps-mDP is a bound on probability *ratios*: ``z_ik <= exp(eps d_ij) z_jk``.  LP solvers meet
the rows only to an additive tolerance, so a raw solver matrix can put mass ~1e-8 on an output
a neighbour never produces (an infinite privacy loss) while every additive residual is tiny.
"""

import warnings

import numpy as np
import pytest
import randomgen
from hypothesis import given, settings
from hypothesis import strategies as st
from pyomo.contrib.solver.common.factory import SolverFactory
from scipy.stats import chisquare

import dpmodels
from dpmodels import instances
from dpmodels.core.errors import DataValidationError
from dpmodels.core.randomness import SECURE_SOURCE, SEEDED_SOURCE, describe
from dpmodels.core.selection import sample_proportional
from dpmodels.metricdp import mechanism as mech
from dpmodels.metricdp import privacy_audit as pa
from dpmodels.metricdp.data import MDPInstance, euclidean_distances
from dpmodels.metricdp.models import build_full_lp, perturbation_matrix

#: 5 x 6 grid of 1 km cells, K = 30, eps = 9/km, eta = 2 km (eps eta = 18): HiGHS (highspy
#: 1.16.0) leaves 790 neighbour entries with z_ik > 0 = z_jk, the largest 1.52e-8 (~ e^-18).
BUG = dict(seed=0, rows=5, cols=6, K=30, epsilon=9.0, eta=2.0)


def chacha(key: int) -> np.random.Generator:
    return np.random.Generator(randomgen.ChaCha(key=key, counter=0, rounds=20))


def ratio_and_support_ok(inst, z) -> bool:
    """The definition, checked on the floats with no tolerance."""
    g = inst.graph
    zi, zj = z[g.src], z[g.dst]
    return bool(not ((zi > 0) & (zj == 0)).any() and (zi <= g.coef[:, None] * zj).all())


@pytest.fixture(scope="module")
def highs_solved():
    inst = instances.generate("mdp/grid", **BUG)
    model = build_full_lp(inst)
    res = SolverFactory("highs").solve(model)
    assert res.termination_condition.name == "convergenceCriteriaSatisfied"
    return inst, model


# ---------------------------------------------------------------------- regression: HiGHS at eps eta = 18
def test_highs_matrix_is_returned_exactly_private(highs_solved):
    inst, model = highs_solved
    z = perturbation_matrix(model, inst)
    assert ratio_and_support_ok(inst, z), "the returned mechanism has neighbour ratios above exp(eps d)"
    assert pa.audit(inst, z)["exactly mDP"] is True
    assert pa.max_mdp_violation(inst, z) == 0.0
    assert pa.max_privacy_loss(inst, z) <= inst.epsilon
    zn = z / z.sum(axis=1, keepdims=True)  # as the sampler sees it
    assert ratio_and_support_ok(inst, zn) and pa.is_exactly_mdp(inst, zn)


def test_highs_raw_matrix_fails_the_ratio_audit_but_passes_the_additive_one(highs_solved):
    inst, model = highs_solved
    raw = perturbation_matrix(model, inst, raw=True)
    g = inst.graph
    infinite = (raw[g.src] > 0) & (raw[g.dst] == 0)
    assert infinite.sum() >= 100 and 1e-9 < raw[g.src][infinite].max() < 1e-7
    assert pa.max_additive_mdp_gap(inst, raw) < 1e-14  # what the old audit reported: "fine"
    report = pa.audit(inst, raw)
    assert report["exactly mDP"] is False and report["mDP ratio failures"] >= infinite.sum()
    assert report["max privacy loss / eps"] == np.inf and report["max mDP violation (relative)"] == np.inf
    z = perturbation_matrix(model, inst)
    assert pa.expected_loss(inst, z) == pytest.approx(pa.expected_loss(inst, raw), rel=1e-9)  # repair is cheap
    with pytest.raises(DataValidationError, match="z: is not exactly eps-mDP"):
        mech.sample_outputs(inst, raw, [0], rng=np.random.default_rng(0))
    assert mech.sample_outputs(inst, z, [0, 5], rng=np.random.default_rng(0)).shape == (2,)


@pytest.mark.parametrize(
    "solver, options",
    [("highs", {}), ("clarabel", {}), ("mdp_ipm", {"gap": 1e-6}), ("mdp_benders", {"blocks": 4, "gap": 1e-6})],
)
def test_every_backend_yields_an_exactly_private_matrix(solver, options):
    inst = instances.generate("mdp/grid", seed=0, rows=4, cols=5, K=10, epsilon=3.0, eta=1.5)
    model = build_full_lp(inst)
    dpmodels.solve(model, solver, **options)
    z = perturbation_matrix(model, inst)
    assert pa.is_exactly_mdp(inst, z) and ratio_and_support_ok(inst, z)


def test_exponential_mechanism_is_repaired_where_exp_underflows():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # eps eta = 600: the scaling warning
        inst = instances.generate("mdp/grid", **dict(BUG, epsilon=300.0))
    logits = -inst.epsilon * inst.d_ro / 2
    softmax = np.exp(logits - logits.max(axis=1, keepdims=True))
    softmax /= softmax.sum(axis=1, keepdims=True)
    assert not pa.is_exactly_mdp(inst, softmax)  # exp(-960) = 0 beside a positive neighbour
    em = mech.exponential_mechanism(inst)
    assert pa.is_exactly_mdp(inst, em) and ratio_and_support_ok(inst, em)


def test_plugins_refuse_an_incumbent_that_is_not_private():
    from dpmodels.solvers._adapters import mdp_solution

    inst = instances.generate("mdp/grid", seed=0, rows=3, cols=4, K=6, epsilon=2.0, eta=1.5)
    z = np.zeros((inst.N, inst.K))
    z[:, 0] = 1.0
    z[0] = [0.5, 0.5, 0, 0, 0, 0]  # output 1 only from record 0: infinite loss

    class Result:
        status, history, iterations, upper_bound, lower_bound = "optimal", None, 1, 0.0, 0.0

    res = Result()
    res.z = z
    with pytest.raises(DataValidationError, match="incumbent z: is not exactly eps-mDP"):
        mdp_solution(inst, res, {})


def test_perturbation_matrix_refuses_an_unsolved_model():
    inst = instances.generate("mdp/grid", seed=0, rows=2, cols=3, K=3, epsilon=1.0, eta=1.5)
    with pytest.raises(DataValidationError, match="model: z\\[0, 0\\] has no value"):
        perturbation_matrix(build_full_lp(inst), inst)


# ---------------------------------------------------------------------- the audit itself
def two_points(eps=1.0, d=1.0):
    dist = np.array([[0.0, d], [d, 0.0]])
    return MDPInstance(dist, np.ones((2, 2)), np.array([0.5, 0.5]), eps, max(d, 1.0))


def test_audit_is_a_ratio_check_without_tolerance():
    inst = two_points(eps=np.log(3))
    tight = np.array([[0.75, 0.25], [0.25, 0.75]])  # ratio 3 = exp(eps) in exact arithmetic
    assert pa.max_privacy_loss(inst, tight) == pytest.approx(np.log(3))
    assert not pa.is_exactly_mdp(inst, tight)  # exactly on the bound: not provable in floats
    assert 0 < pa.max_mdp_violation(inst, tight) < 1e-12
    tiny = np.array([[1 - 1e-300, 1e-300], [1.0, 0.0]])  # 1e-300 beside 0: infinite loss
    assert pa.max_additive_mdp_gap(inst, tiny) < 1e-299
    assert pa.max_privacy_loss(inst, tiny) == np.inf and pa.max_mdp_violation(inst, tiny) == np.inf
    assert pa.is_exactly_mdp(inst, np.array([[0.7, 0.3], [0.3, 0.7]]))
    assert pa.max_mdp_violation(inst, np.array([[0.7, 0.3], [0.3, 0.7]])) == 0.0


def test_audit_accounts_for_row_normalisation():
    """Raw ratios within 2 = exp(eps), but the sampler normalises row 1 to [0.224, 0.776]: 0.5 / 0.224 > 2."""
    inst = two_points(eps=np.log(2))
    z = np.array([[0.5, 0.5], [0.26, 0.9]])
    assert ratio_and_support_ok(inst, z)
    assert not pa.is_exactly_mdp(inst, z)
    assert pa.max_privacy_loss(inst, z) == pytest.approx(np.log(0.5 / (0.26 / 1.16)))
    assert pa.is_exactly_mdp(inst, pa.repair(inst, z)[0])


# ---------------------------------------------------------------------- repair (property)
@settings(max_examples=60, deadline=None)
@given(
    st.integers(0, 10**6),
    st.integers(2, 9),
    st.integers(1, 6),
    st.sampled_from([0.05, 0.5, 2.0, 9.0, 30.0]),
    st.sampled_from([1.0, 1.5, 3.0]),
)
def test_repair_of_any_nonnegative_matrix_passes_the_exact_audit(seed, n, k, eps, eta):
    rng = np.random.default_rng(seed)
    pts = rng.integers(0, 3, size=(n, 2)).astype(float)  # duplicates give neighbours at distance 0
    d = euclidean_distances(pts)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        inst = MDPInstance(d, rng.random((n, k)), np.full(n, 1 / n), eps, eta)
    z = rng.random((n, k)) * 2.0 ** -rng.integers(0, 1075, size=(n, k)).astype(float)  # down to subnormals
    z[rng.random((n, k)) < 0.3] = 0.0
    z[rng.random(n) < 0.1] = 0.0  # empty rows
    fixed, t = pa.repair(inst, z)
    assert 0.0 <= t <= 1.0
    assert pa.is_exactly_mdp(inst, fixed) and pa.max_mdp_violation(inst, fixed) == 0.0
    assert pa.row_sum_error(fixed) <= 1e-12
    normalised = fixed / fixed.sum(axis=1, keepdims=True)  # the ratio survives float normalisation
    assert pa.is_exactly_mdp(inst, normalised) and ratio_and_support_ok(inst, normalised)
    again, t2 = pa.repair(inst, fixed)
    assert t2 == 0.0 and np.array_equal(again, fixed)


# ---------------------------------------------------------------------- releasing outputs
def test_sample_outputs_draws_with_the_core_sampler_from_the_same_stream():
    """Each record's outputs are the core exact sampler's draws (its law and exactness are tested
    in tests/core/test_samplers.py): same ChaCha20 stream, same indices."""
    inst = instances.generate("mdp/grid", seed=0, rows=3, cols=4, K=6, epsilon=1.0, eta=1.5)
    z = mech.exponential_mechanism(inst)
    out = mech.sample_outputs(inst, z, np.full(500, 7), rng=chacha(9))
    assert np.array_equal(out, sample_proportional(z[7], chacha(9), size=500))


def test_sample_outputs_defaults_to_the_secure_generator(monkeypatch):
    inst = instances.generate("mdp/grid", seed=0, rows=3, cols=4, K=6, epsilon=1.0, eta=1.5)
    z = mech.exponential_mechanism(inst)
    used = []

    def spy(weights, rng, size=None):
        used.append(describe(rng))
        return sample_proportional(weights, rng, size)

    monkeypatch.setattr(mech, "sample_proportional", spy)
    assert mech.sample_outputs(inst, z, [0, 3, 3]).shape == (3,)
    assert used == [SECURE_SOURCE, SECURE_SOURCE]
    mech.sample_outputs(inst, z, [1], rng=0)
    assert used[-1] == SEEDED_SOURCE  # a seed is an experiment: labelled not private
    with pytest.raises(DataValidationError, match="rng"):
        mech.sample_outputs(inst, z, [0], rng=np.random.RandomState(0))


def test_sample_outputs_follows_the_rows():
    inst = instances.generate("mdp/grid", seed=0, rows=3, cols=4, K=6, epsilon=1.0, eta=1.5)
    z = mech.exponential_mechanism(inst)
    records = np.repeat([0, 7], 60_000)
    out = mech.sample_outputs(inst, z, records, rng=np.random.default_rng(5))
    for r in (0, 7):
        counts = np.bincount(out[records == r], minlength=inst.K)
        assert chisquare(counts, z[r] / z[r].sum() * counts.sum()).pvalue > 1e-3
    with pytest.raises(DataValidationError, match="records"):
        mech.sample_outputs(inst, z, [inst.N], rng=np.random.default_rng(0))
