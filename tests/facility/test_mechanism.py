"""Algorithms 1-2, the exact privacy oracle, limits, the star detector and the pipeline (spec 3, 4, 7)."""

import math

import numpy as np
import pyomo.environ as pyo
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpmodels
from dpmodels import instances
from dpmodels.core.errors import DataValidationError, PrivacyParameterError
from dpmodels.facility.data import HSTInstance, UFLInstance
from dpmodels.facility.general_metric import dp_ufl_general
from dpmodels.facility.hst import minset, node_distance, subtree_counts
from dpmodels.facility.hst_optimum import lb9
from dpmodels.facility.mechanism import (
    algorithm1,
    algorithm2,
    epsilon_used,
    noise_constant,
    noise_scales,
    robust_lprime,
    run_tree,
)
from dpmodels.facility.models import build_tree_model, build_ufl_mip, open_sites
from dpmodels.facility.privacy_audit import privacy_loss_exact
from dpmodels.instances.facility import chain_tree

seeds = st.integers(0, 10_000)
A_IDS = {"r": 0, "a": 1, "b": 2, "a1": 3, "a2": 4, "b1": 5, "b2": 6, "l1": 7, "l3": 9, "l8": 14}


def random_instance(seed, lam=1.5):
    rng = np.random.default_rng(seed)
    return instances.generate(
        "facility/random-hst",
        seed=seed,
        depth=int(rng.integers(2, 6)),
        lam=lam,
        f=float(rng.uniform(0.5, 30)),
        max_count=int(rng.integers(1, 8)),
    )


# ------------------------------------------------------------------ worked example A (spec 7.2)
@pytest.mark.parametrize(
    "f, eps, lprime, marked, R, S_all, cost_all, cost_leaves",
    [
        (3, 1, 3, [0, 1, 3, 7], [7], [7], 17.5, 17.5),
        (3.1, 1, 3, [0, 1, 3], [3], [3], 18.6, 17.6),
        (3, 0.5, 1, list(range(7)) + [7], [4, 5, 6, 7], [4, 6, 7], 11, 11),
        (3, 0.1, 0, list(range(15)), list(range(7, 15)), [7, 9, 14], 9, 9),
        (3, 2, 5, [0, 1, 3, 7, 15, 16], [7], [7], 17.5, 17.5),
    ],
)
def test_algorithm1_example_a_table(f, eps, lprime, marked, R, S_all, cost_all, cost_leaves):
    inst = instances.load("facility/example-a", f=f)
    run = algorithm1(inst, eps, sites="all_nodes")
    assert run.lprime == lprime
    assert np.flatnonzero(run.marked).tolist() == marked
    assert run.R.tolist() == R and run.S.tolist() == S_all
    assert run.cost == pytest.approx(cost_all)
    assert algorithm1(inst, eps, sites="leaves").cost == pytest.approx(cost_leaves)


def test_robust_lprime_at_exact_powers():
    assert robust_lprime(0.5, 3, 1.5) == 1  # εf = 1.5 = λ exactly (the regression row of example A)
    assert robust_lprime(1, 1.5**7, 1.5) == 7
    assert robust_lprime(1, 1.5**7 * 1.001, 1.5) == 8
    assert robust_lprime(0.1, 3, 1.5) == 0 and robust_lprime(1, 0.0, 1.5) == 0


def test_algorithm2_example_a_scales_epsilon_and_mean_cost():
    inst = instances.load("facility/example-a")
    assert noise_constant(1.5) == pytest.approx(0.1498299, abs=1e-7)
    np.testing.assert_allclose(noise_scales(3, 1.5, 3), [10.89898, 8.89898, 7.26599], atol=1e-5)
    assert epsilon_used(3, 1.5, 3) == pytest.approx(0.341752, abs=1e-6)
    run = algorithm2(inst, 1.0, rng=0, sites="all_nodes")
    assert run.eps_used == pytest.approx(0.341752, abs=1e-6)
    assert run.draws == int((run.tree.level < 3).sum()) == 14  # every node below L', empty ones too
    rng = np.random.default_rng(1)
    costs = np.array([algorithm2(inst, 1.0, rng=rng, sites="all_nodes").cost for _ in range(2000)])
    se = costs.std() / math.sqrt(costs.size)
    assert abs(costs.mean() - 14.73) < 4 * math.hypot(se, 0.11)


# ------------------------------------------------------------------ privacy (spec 3.6, 7.6)
def test_exact_privacy_loss_example_e():
    inst = instances.load("facility/example-e")
    assert robust_lprime(1.0, inst.f, 1.5) == 10
    loss = privacy_loss_exact(inst, [1], 1.0)
    assert loss == pytest.approx(0.868226, abs=1e-6)
    assert loss == pytest.approx(epsilon_used(inst.f, 1.5, 10), rel=1e-9) and loss <= 1.0
    half = instances.load("facility/example-e", epsilon=0.5)
    assert robust_lprime(0.5, half.f, 1.5) == 13
    assert privacy_loss_exact(half, [1], 0.5) == pytest.approx(0.464113, abs=1e-6)


@settings(max_examples=25)
@given(seeds, st.sampled_from([1.2, 1.5, 1.9]), st.sampled_from([0.1, 0.5, 1.0, 3.0]))
def test_exact_privacy_loss_within_budget_for_every_neighbour(seed, lam, eps):
    inst = random_instance(seed, lam)
    lp = robust_lprime(eps, inst.f, lam)
    used = epsilon_used(inst.f, lam, lp)
    assert used <= eps * (1 + 1e-12)
    worst = 0.0
    for v in range(inst.n):
        for step in (1, -1):
            other = inst.N.copy()
            other[v] += step
            if other[v] < 0:
                continue
            loss = privacy_loss_exact(inst, other, eps)
            worst = max(worst, loss)
            assert loss <= used * (1 + 1e-9) + 1e-12
            assert privacy_loss_exact(inst, other, eps, "dp_uniform_noise") <= eps * (1 + 1e-9)
    if lp > 0 and inst.f / lam ** (lp - 1) >= inst.N.max() + 1:
        assert worst > 0  # the oracle sees the counts


def test_uniform_noise_baseline_spends_exactly_epsilon():
    inst = instances.load("facility/example-a")
    run = run_tree(inst, 1.0, "dp_uniform_noise", rng=0)
    assert run.scales.tolist() == [3.0, 3.0, 3.0] and run.eps_used == pytest.approx(1.0)
    marked = run_tree(inst, 1.0, "dp_all_marked", rng=0)
    assert np.array_equal(marked.R, np.flatnonzero(marked.marked))
    assert np.array_equal(run_tree(inst, 1.0, "gupta_style", rng=0).scales, run.scales)


# ------------------------------------------------------------------ limits (spec 7.1 oracles 7, 11)
@settings(max_examples=15)
@given(seeds)
def test_large_epsilon_returns_the_non_private_R(seed):
    """Needs a client: at level L'-1 the noise scale is f/(c η) whatever ε, so an empty tree's padded
    chain would be marked at random; with N_u >= 1 the margin N_u λ^ℓ - f grows like ε."""
    inst = random_instance(seed)
    if not inst.N.any():
        inst = inst.with_counts(np.r_[1, inst.N[1:]])
    # The noise shrinks like 1/sqrt(eps) (scale f/(c eta^(L'+l)), L' ~ log_lam(eps f)), so "eps large"
    # must mean: every noise scale below 1/40 of the smallest count margin |N_u - f/lam^l| (a fixed 1e6
    # left margins of 0.014 against scales of 0.02 on seed 7 and flipped a mark with probability 0.24).
    counts = subtree_counts(inst.tree, inst.N).astype(float)
    margin = np.abs(counts - inst.f / inst.tree.lam ** inst.tree.level.astype(float)).min()
    # the unary roots padded above level L (up to L') hold all the clients: their margins count too
    # (seed 1463: f = 25.624 ~ 1.5^8, so the padded node at level 8 had a margin of 2e-4)
    padded = np.arange(inst.tree.L + 1, 400, dtype=float)
    margin = min(margin, np.abs(inst.N.sum() - inst.f / inst.tree.lam**padded).min())
    eps = next(
        e for e in 10.0 ** np.arange(6, 40) if noise_scales(inst.f, 1.5, robust_lprime(e, inst.f, 1.5))[0] < margin / 40
    )
    assert np.array_equal(algorithm2(inst, eps, rng=seed).R, algorithm1(inst, eps).R)


def test_large_epsilon_on_example_a_with_generic_f():
    inst = instances.load("facility/example-a", f=3.1)
    runs = [algorithm2(inst, 1e6, rng=s, sites="all_nodes") for s in range(20)]
    assert all(r.R.tolist() == [A_IDS["a1"]] and r.cost == pytest.approx(18.6) for r in runs)


@settings(max_examples=10)
@given(seeds)
def test_lprime_zero_publishes_every_leaf(seed):
    inst = random_instance(seed)
    eps = 0.9 / inst.f  # εf <= 1
    for run in (algorithm1(inst, eps), algorithm2(inst, eps, rng=seed)):
        assert run.lprime == 0 and run.draws == 0
        assert np.array_equal(run.R, np.sort(inst.tree.leaf_node))
        assert np.array_equal(run.S, np.sort(inst.tree.leaf_node[inst.N > 0]))


# ------------------------------------------------------------------ Algorithm 1 (spec 7.1 oracle 6)
@settings(max_examples=40)
@given(seeds, st.sampled_from([1.2, 1.5, 1.7, 1.9]), st.sampled_from([0.3, 1.0, 2.0]))
def test_algorithm1_deterministic_bounds(seed, lam, eps):
    inst = random_instance(seed, lam)
    run = algorithm1(inst, eps, sites="all_nodes")
    tree = run.tree
    M = run.marked
    assert np.all(M[tree.parent[np.flatnonzero(M & (tree.parent >= 0))]])  # upward closed
    assert run.R.size >= 1
    assert np.all(run.facility[inst.N > 0] >= 0) and np.all(run.facility[inst.N == 0] == -1)  # clients served
    if not inst.N.any():
        return
    bound = lb9(tree, inst.f, inst.N)[0]
    factor = 1 + max(1, 1 / eps) if lam >= 1.5 else 1 + 2 * max(1, 1 / eps)  # spec 3.7 (A4, A5)
    assert run.facility_cost <= factor * bound + 1e-9
    assert run.connection_cost <= 2 * lam / (lam - 1) * bound + 1e-9
    if lam < 1.5:
        return  # Claim 10 may fail below 1.5 (example B)
    counts = subtree_counts(tree, inst.N)
    claim10 = np.flatnonzero(minset(tree, M & (counts >= 1)))
    # all_nodes mode opens the original root in place of a padded one (post-processing, spec 2.1 padding)
    claim10[claim10 >= inst.tree.n_nodes] = inst.tree.root
    assert set(run.S.tolist()) <= set(claim10.tolist())  # Claim 10 holds for λ >= 1.5


def test_claim_10_fails_below_1_5_on_example_b():
    inst = instances.load("facility/example-b")
    run = algorithm1(inst, 1.0, sites="all_nodes")
    u = inst.info["u"]
    assert run.lprime == 10 and set(run.R.tolist()) == {u, int(inst.tree.leaf_node[1])}
    assert u in run.S and subtree_counts(run.tree, inst.N)[u] == 0  # u ∈ S \ V°
    assert run.cost == pytest.approx(50.342, abs=1e-3)
    assert lb9(inst.tree, inst.f, inst.N)[0] == pytest.approx(11.160, abs=1e-3)
    assert run.facility_cost <= 2 * 11.160  # the numeric bound survives (A4)


# ------------------------------------------------------------------ lower bound (spec 4, 7.1 oracle 13)
def star_ratio(m, n, algorithm, draws, seed=7, eps=None):
    rng = np.random.default_rng(seed)
    eps = 1 / m if eps is None else eps
    costs, opts = [], []
    for _ in range(draws):
        inst = instances.generate("facility/star", seed=rng, m=m, n=n)
        costs.append(run_tree(inst, eps, algorithm, rng=rng, sites="all_nodes").cost)
        opts.append(inst.info["opt"])
    return np.mean(costs) / np.mean(opts)


@pytest.mark.parametrize("m", [4, 16, 64])
def test_star_family_respects_the_lower_bound(m):
    assert star_ratio(m, 16, "dp", 100) >= 0.025 * math.sqrt(m)


def test_star_detector_flags_a_non_private_algorithm():
    m, n = 4096, 64  # 0.025 √m = 1.6: only here can a cost ratio fall below the bound
    assert star_ratio(m, n, "dp", 20) >= 0.025 * math.sqrt(m)
    assert star_ratio(m, n, "base", 20, eps=1.0) < 0.025 * math.sqrt(m)  # non-private: caught


# ------------------------------------------------------------------ general-metric pipeline
def test_pipeline_report_and_cost_bookkeeping():
    inst = instances.generate("facility/plane", seed=3, n=60, f=0.3)
    rep = dp_ufl_general(inst, 1.0, rng=0)
    assert rep.set_cost <= rep.realized_cost + 1e-9 <= rep.tree_cost + 2e-9
    assert rep.S.size <= rep.R.size
    assert np.all(inst.N[rep.facility >= 0] > 0) and set(rep.S) == set(rep.facility[inst.N > 0])
    s = rep.summary()
    assert s["eps_used"] <= 1.0 and s["L_prime"] == robust_lprime(1.0, inst.f / rep.embedding.scale, 1.5)
    true = {k: s[f"true {k} (diagnostic)"] for k in ("|S|", "facility cost", "connection cost")}
    assert len(s["noise_scales"]) == s["L_prime"] and true["|S|"] == rep.S.size and s["R"] == rep.R.size
    assert true["facility cost"] + true["connection cost"] == pytest.approx(rep.realized_cost)
    assert true["facility cost"] == pytest.approx(inst.f * rep.S.size)
    served = inst.N > 0
    direct = inst.d[np.ix_(served, rep.S)].min(axis=1)
    assert rep.set_cost == pytest.approx(inst.f * rep.S.size + (inst.N[served] * direct).sum())
    own = inst.d[np.flatnonzero(served), rep.facility[served]]
    assert rep.realized_cost == pytest.approx(inst.f * rep.S.size + (inst.N[served] * own).sum())


def test_pipeline_is_scale_invariant():
    inst = instances.generate("facility/plane", seed=4, n=40)
    big = UFLInstance(d=inst.d * 7.0, f=inst.f * 7.0, N=inst.N)
    a, b = dp_ufl_general(inst, 0.5, rng=9), dp_ufl_general(big, 0.5, rng=9)
    assert np.array_equal(a.R, b.R) and np.array_equal(a.S, b.S)
    assert b.realized_cost == pytest.approx(7 * a.realized_cost) and b.set_cost == pytest.approx(7 * a.set_cost)


def test_pipeline_rejects_bad_input():
    inst = instances.generate("facility/plane", seed=4, n=10)
    with pytest.raises(PrivacyParameterError, match="^epsilon"):
        dp_ufl_general(inst, 0.0)
    with pytest.raises(DataValidationError, match="^lam"):
        dp_ufl_general(inst, 1.0, lam=2.0)
    with pytest.raises(DataValidationError, match="^f: .*uniform"):
        dp_ufl_general(instances.generate("facility/two-point"), 1.0)
    with pytest.raises(DataValidationError, match="^tree.lam"):
        algorithm2(instances.generate("facility/random-hst", lam=2.5), 1.0)
    with pytest.raises(DataValidationError, match="^f: must be finite and >= 0"):
        dp_ufl_general(UFLInstance(d=inst.d, f=-1.0, N=inst.N), 1.0)


def test_mechanism_plugin_on_tree_and_general_models():
    inst = instances.load("facility/example-a", f=3.1)
    model = build_tree_model(inst, sites="all_nodes")
    res = dpmodels.solve(model, "facility_mechanism", epsilon=1e6, seed=0)
    assert res.solution_status.name == "feasible" and res.incumbent_objective == pytest.approx(18.6)
    assert pyo.value(model.obj) == pytest.approx(18.6) and open_sites(model) == [A_IDS["a1"]]
    assert res.extra_info.L_prime == robust_lprime(1e6, 3.1, 1.5) == 37 and res.extra_info.R == [A_IDS["a1"]]
    general = instances.generate("facility/plane", seed=1, n=25)
    gm = build_ufl_mip(general)
    res = dpmodels.solve(gm, "facility_mechanism", epsilon=1.0, seed=5)
    report = dp_ufl_general(general, 1.0, rng=5)
    assert res.incumbent_objective == pytest.approx(report.realized_cost) == pytest.approx(pyo.value(gm.obj))
    assert sorted(open_sites(gm)) == report.S.tolist()
    d = node_distance(inst.tree, inst.tree.leaf_node[0], inst.tree.leaf_node[7])
    assert float(d[0]) == pytest.approx(9.5)


def test_sampled_marks_follow_the_declared_noise_scales():
    """Marking frequencies of Algorithm 2 match the exact P[N_u + Lap(b_ℓ) >= f/λ^ℓ] at every noisy node."""
    inst = instances.load("facility/example-e").with_counts([2])
    lp = robust_lprime(1.0, inst.f, 1.5)
    runs = 3000
    rng = np.random.default_rng(0)
    freq = np.zeros(lp)
    for _ in range(runs):
        run = algorithm2(inst, 1.0, rng=rng)
        lvl = run.tree.level
        freq += run.marked[np.argsort(lvl)][:lp]
    freq /= runs
    b = noise_scales(inst.f, 1.5, lp)
    x = inst.f / 1.5 ** np.arange(lp) - 2
    exact = np.where(x >= 0, 0.5 * np.exp(-x / b), 1 - 0.5 * np.exp(x / b))
    sd = np.sqrt(exact * (1 - exact) / runs)
    assert np.all(np.abs(freq - exact) <= 4.5 * sd + 1e-3)
    assert np.ptp(exact) > 0.2  # the levels' marking probabilities differ: a wrong level scale shows


def test_relabelling_locations_permutes_the_outputs():
    """Spec 7.1 oracle 12: same β and the same π (relabelled) give the same tree and permuted outputs."""
    base = instances.generate("facility/plane", seed=6, n=30)
    pts = base.info["points"]
    sigma = np.random.default_rng(1).permutation(30)  # new location k is old location sigma[k]
    inv = np.argsort(sigma)
    moved = UFLInstance(d=base.d[np.ix_(sigma, sigma)], f=base.f, N=base.N[sigma])
    perm = np.random.default_rng(2).permutation(30)
    from dpmodels.facility.frt import frt_embedding

    e_old = frt_embedding(base.d, beta=0.8, perm=perm)
    e_new = frt_embedding(moved.d, beta=0.8, perm=inv[perm])
    np.testing.assert_array_equal(e_old.tree.parent, e_new.tree.parent)
    np.testing.assert_array_equal(e_new.tree.leaf_node, e_old.tree.leaf_node[sigma])
    a = dp_ufl_general(base, 1.0, rng=3, embedding=e_old)
    b = dp_ufl_general(moved, 1.0, rng=3, embedding=e_new)
    np.testing.assert_array_equal(a.R, b.R)
    assert sorted(sigma[b.S].tolist()) == a.S.tolist()
    assert b.realized_cost == pytest.approx(a.realized_cost)
    assert pts.shape == (30, 2)


# ------------------------------------------------------------------ review regressions (F1, F2, F3, F6)
PRIVATE = ("dp", "dp_uniform_noise", "dp_all_marked", "gupta_style")


@pytest.mark.parametrize("algorithm", ["base", "open_all_client_locations"])
def test_non_private_algorithms_report_an_infinite_privacy_loss(algorithm):
    """Algorithm 1 and the trivial solution are deterministic functions of N: no finite ε covers them."""
    a = instances.load("facility/example-a")
    run = run_tree(a, 1.0, algorithm)
    assert run.eps_used == math.inf and run.private is False
    general = instances.generate("facility/plane", seed=3, n=15, f=0.3)
    s = dp_ufl_general(general, 1.0, rng=0, algorithm=algorithm).summary()
    assert s["eps_used"] == math.inf and s["private"] is False
    res = dpmodels.solve(build_tree_model(a), "facility_mechanism", epsilon=1.0, seed=0, algorithm=algorithm)
    assert res.extra_info.eps_used == math.inf and res.extra_info.private is False
    res = dpmodels.solve(build_ufl_mip(general), "facility_mechanism", epsilon=1.0, seed=0, algorithm=algorithm)
    assert res.extra_info.eps_used == math.inf and res.extra_info.private is False


def test_base_output_separates_neighbours_and_private_algorithms_stay_within_budget():
    a = instances.load("facility/example-a")
    neighbour = a.with_counts([2, 0, 1, 0, 0, 0, 0, 1])  # one client fewer at l1
    # P[R = {l1} | N] = 1 but P[R = {l1} | N'] = 0: the likelihood ratio is unbounded
    assert run_tree(a, 1.0, "base").R.tolist() != run_tree(neighbour, 1.0, "base").R.tolist()
    for algorithm in PRIVATE:
        run = run_tree(a, 1.0, algorithm, rng=0)
        assert run.private is True and 0 < run.eps_used <= 1.0 + 1e-12


def test_opened_padded_ancestor_maps_to_the_original_root_in_all_nodes_mode():
    """Example A with f = 30, one client at l1, ε = 1: L' = 9 pads 6 unary roots; at seed 45 the
    published R is a padded node.  Its nearest original site is the old root (strictly closer to
    every leaf), so S = {root} and the plugin loads it into the model (it used to raise KeyError).
    The seed was 160 with the former floating-point Laplace draws."""
    inst = instances.load("facility/example-a", f=30.0).with_counts([1, 0, 0, 0, 0, 0, 0, 0])
    n_orig = inst.tree.n_nodes
    run = algorithm2(inst, 1.0, rng=45, sites="all_nodes")
    assert run.lprime == 9 and run.R.max() >= n_orig  # a padded node is published
    assert run.S.tolist() == [A_IDS["r"]]
    assert run.cost == pytest.approx(30 + 4.75)  # f + d_T(l1, r)
    model = build_tree_model(inst, sites="all_nodes")
    res = dpmodels.solve(model, "facility_mechanism", epsilon=1.0, seed=45)
    assert open_sites(model) == [A_IDS["r"]]
    assert res.incumbent_objective == pytest.approx(run.cost) == pytest.approx(pyo.value(model.obj))
    for seed in range(200):  # every opened site is an original node, and the cost never exceeds the padded one's
        run = algorithm2(inst, 1.0, rng=seed, sites="all_nodes")
        assert run.S.max() < n_orig
        padded_cost = 30 + float(node_distance(run.tree, run.tree.leaf_node[:1], run.assign[:1])[0])
        assert run.cost <= padded_cost + 1e-9


def test_empty_nodes_are_marked_with_the_exact_laplace_probability():
    """Spec 3.4: noise on every node below L', EMPTY ones too.  On example A (f = 3, ε = 1) the empty
    nodes l2, l4, l5, l6, l7 (level 0) and b1 (level 1) are marked w.p. ``½ exp(-(f/λ^ℓ)/b_ℓ)``,
    ``b_ℓ = f/(c η^{L'+ℓ})``, computed here from the spec's formulas (l2: 0.5 exp(-3/10.899) = 0.380)."""
    inst = instances.load("facility/example-a")
    empty = {8: 0, 10: 0, 11: 0, 12: 0, 13: 0, 5: 1}  # node id -> level, N_u = 0
    lam, f, lp = 1.5, 3.0, 3  # L' = ⌈log_1.5 3⌉ = 3
    eta = math.sqrt(lam)
    c = (eta - 1) / eta**2
    scale = {lvl: f / (c * eta ** (lp + lvl)) for lvl in (0, 1)}  # b_0 = 10.899, b_1 = 8.899
    exact = np.array([0.5 * math.exp(-(f / lam**lvl) / scale[lvl]) for lvl in empty.values()])
    assert exact[0] == pytest.approx(0.380, abs=1e-3)
    runs = 4000
    rng = np.random.default_rng(2)
    hits = np.zeros(len(empty))
    ids = list(empty)
    for _ in range(runs):
        hits += algorithm2(inst, 1.0, rng=rng).marked[ids]
    freq = hits / runs
    se = np.sqrt(exact * (1 - exact) / runs)
    assert np.all(np.abs(freq - exact) <= 4 * se)


def test_robust_lprime_validates_lambda_and_refuses_huge_trees():
    for lam in (1.0, 0.5, -2.0):  # λ <= 1 used to loop forever
        with pytest.raises(DataValidationError, match="^lambda"):
            robust_lprime(1.0, 3.0, lam)
    with pytest.raises(DataValidationError, match=r"^epsilon\*f: .*lambda"):
        robust_lprime(1.0, 1e6, 1.0001)  # L' = ⌈log_1.0001 1e6⌉ = 138163 levels
    near_one = HSTInstance(chain_tree(3, lam=1.0001), 1e6, [1])
    with pytest.raises(DataValidationError, match=r"^epsilon\*f"):
        run_tree(near_one, 1.0)
    assert robust_lprime(1.0, 1.01**9_999, 1.01) == 9_999  # large trees below the cap still work
    with pytest.raises(DataValidationError, match=r"^epsilon\*f: .*10000"):
        robust_lprime(1.0, 1.01**10_001, 1.01)
    assert robust_lprime(1.0, 3.0, 1.5) == 3
