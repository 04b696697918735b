"""What a facility run publishes, (T, R), is kept apart from what the true counts N decide.

Two count vectors run with the same noise draws mark the same nodes often enough; whenever they
do, their releases must be identical while the true-data diagnostics (opened set, costs) differ.
Report entries computed from N are labelled ``true ... (diagnostic)``.  These tests failed before
the split: runs had no ``release`` and kept S and the costs as plain fields next to R.
"""

import dataclasses

import numpy as np
import pytest

import dpmodels
import instances
from dpmodels.facility.hst import frt_embedding
from dpmodels.facility.mechanism import TreeRelease, algorithm2, dp_ufl_general, run_tree
from dpmodels.facility.models import build_tree_model, build_ufl_mip

OTHER_COUNTS = [3, 1, 1, 0, 0, 0, 1, 1]  # example A has (3, 0, 1, 0, 0, 0, 0, 1)


def test_the_release_holds_exactly_the_published_fields():
    names = [f.name for f in dataclasses.fields(TreeRelease)]
    assert names == ["algorithm", "private", "epsilon", "eps_used", "lprime", "scales", "tree", "R", "randomness"]
    run = algorithm2(instances.load("facility/example-a"), 1.0, rng=0)
    published = run.release.as_dict()
    assert set(published) == {*names}
    assert published["R"] == run.R.tolist() and published["tree"]["parent"] == run.tree.parent.tolist()
    with pytest.raises(AttributeError):
        run.cost = 0.0  # the old names are read-only aliases of the diagnostics
    assert run.cost == run.diagnostics.cost and run.S is run.diagnostics.S


@pytest.mark.parametrize("algorithm", ["dp", "dp_uniform_noise", "dp_all_marked", "gupta_style"])
def test_same_noise_and_marks_give_the_same_release_whatever_the_counts(algorithm):
    a_inst = instances.load("facility/example-a")
    b_inst = a_inst.with_counts(OTHER_COUNTS)
    same_marks = differing_costs = 0
    for seed in range(60):
        a = run_tree(a_inst, 1.0, algorithm, rng=seed, sites="all_nodes")
        b = run_tree(b_inst, 1.0, algorithm, rng=seed, sites="all_nodes")
        if np.array_equal(a.marked, b.marked):
            same_marks += 1
            assert a.release == b.release
            differing_costs += a.diagnostics.cost != b.diagnostics.cost
        assert (a.release == b.release) == np.array_equal(a.R, b.R)  # R is the only data-dependent entry
    assert same_marks >= 5 and differing_costs >= 5


def test_without_noisy_levels_the_release_ignores_the_counts():
    """ε f <= 1 gives L' = 0: every node is marked and R is every leaf, whatever N."""
    a_inst = instances.load("facility/example-a")
    a, b = algorithm2(a_inst, 0.1), algorithm2(a_inst.with_counts(OTHER_COUNTS), 0.1)
    assert a.release == b.release and a.release.lprime == 0 and a.release.scales == ()
    assert a.diagnostics.cost == pytest.approx(9.0) and b.diagnostics.cost != a.diagnostics.cost


def test_pipeline_release_and_labelled_summary():
    inst = instances.generate("facility/plane", seed=3, n=30, f=0.3)
    counts = inst.N.copy()
    counts[[0, 5]] += [1, 2]
    other = inst.with_counts(counts)
    emb = frt_embedding(inst.d, rng=0)  # the tree depends on d only: the same for both
    equal = differing_costs = 0
    for seed in range(20):
        a = dp_ufl_general(inst, 1.0, rng=seed, embedding=emb)
        b = dp_ufl_general(other, 1.0, rng=seed, embedding=emb)
        assert a.release == a.run.release
        if np.array_equal(a.run.marked, b.run.marked):
            equal += 1
            assert a.release == b.release
            differing_costs += a.diagnostics.realized_cost != b.diagnostics.realized_cost
    assert equal >= 3 and differing_costs >= 1
    s = a.summary()
    public = {"algorithm", "private", "epsilon", "R", "L_prime", "L", "noise_scales", "eps_used", "d_min"}
    public |= {"randomness"}
    assert set(s) - public == {
        f"true {k} (diagnostic)"
        for k in ("realized cost", "set cost", "tree cost", "facility cost", "connection cost", "|S|")
    }
    assert s["true realized cost (diagnostic)"] == a.realized_cost == a.diagnostics.realized_cost
    assert not any("release" in k for k in s)


def test_plugin_labels_the_true_cost():
    tree = instances.load("facility/example-a", f=3.1)
    res = dpmodels.solve(build_tree_model(tree), "facility_mechanism", epsilon=1.0, seed=0)
    assert "cost" not in res.extra_info and res.extra_info["true cost (diagnostic)"] == res.incumbent_objective
    plane = instances.generate("facility/plane", seed=1, n=15)
    res = dpmodels.solve(build_ufl_mip(plane), "facility_mechanism", epsilon=1.0, seed=0)
    assert "cost" not in res.extra_info and "realized_cost" not in res.extra_info
    assert res.extra_info["true cost (diagnostic)"] == pytest.approx(res.incumbent_objective)
