"""PGSR data: the running example, transforms, sensitivities, domains and input validation."""

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dpmodels.core.errors import DataValidationError, InfeasibleDomainError
from dpmodels.core.hierarchy import Hierarchy
from dpmodels.core.noise import truncation_delta
from dpmodels.instances.pgsr import random_tree
from dpmodels.pgsr.data import (
    GroupSizeData,
    NoisyGroupSizes,
    chain_cumulative,
    chain_decumulate,
    chain_order,
    cumulative,
    decumulate,
)
from dpmodels.pgsr.domains import Domains, resolve_domains


def test_running_example_tables_2_to_4(running_example):
    """Table 4 recomputed from the records of Table 2; Figure 5 (cumulative); Figure 6 (chain)."""
    d = running_example
    assert d.hierarchy.names == ("US", "GA", "NY")
    np.testing.assert_array_equal(d.counts, [[3, 1, 2, 0, 0], [2, 0, 1, 0, 0], [1, 1, 1, 0, 0]])
    assert (d.G, d.N, d.L) == (6, 5, 2)
    np.testing.assert_array_equal(d.cumulative(), [[3, 4, 6, 6, 6], [2, 2, 3, 3, 3], [1, 2, 3, 3, 3]])
    regions, sizes = chain_order(d.hierarchy, d.N)
    assert [d.hierarchy.names[r] for r in regions[:3]] == ["GA", "NY", "US"]
    assert d.chain()[regions, sizes].tolist() == [2, 3, 3, 3, 4, 4, 5, 6, 6, 6, 6, 6, 6, 6, 6]


@given(st.integers(0, 10_000), st.integers(1, 4), st.integers(1, 6))
def test_transforms_invert(seed, depth, N):
    data = random_tree(seed=seed, depth=depth, N=N, G=7)
    np.testing.assert_array_equal(decumulate(cumulative(data.counts)), data.counts)
    chain = chain_cumulative(data.hierarchy, data.counts)
    np.testing.assert_array_equal(chain_decumulate(data.hierarchy, chain), data.counts)
    # the last chain node (root, size N) carries G, and every level's chain ends at G
    assert chain[0, -1] == data.G
    for lvl in range(1, data.L + 1):
        assert chain[data.hierarchy.level_slice(lvl)][:, -1].max() == data.G


# ---------------------------------------------------------------- sensitivities (spec 2.3)
def _records(rng, n_units, leaves):
    sizes = rng.integers(1, 5, n_units)
    rows = []
    for u, size in enumerate(sizes):
        region = leaves[rng.integers(len(leaves))]
        rows += [(f"p{u}-{k}", f"u{u}", region, 1) for k in range(size)]
    return pd.DataFrame(rows, columns=["user", "unit", "region", "quantity"])


@given(st.integers(0, 10_000))
def test_sensitivities_lemma4_lemma6_and_chain(seed):
    """Moving one individual into or out of an existing group changes n by at most 2 (L1),
    (+)n by at most 1 per region, and a level's chain vector by at most |R_l|; all three
    bounds are reached."""
    rng = np.random.default_rng(seed)
    h = random_tree(seed=seed, depth=3, branching=(2, 3)).hierarchy
    leaves = [h.names[i] for i in h.leaves]
    base = _records(rng, 12, leaves)
    N = 8
    d0 = GroupSizeData.from_records(base, h, N)
    worst = {"n": 0, "c": 0, "chain": np.zeros(h.n_levels)}
    for unit in base["unit"].unique()[:6]:
        add = pd.concat(
            [
                base,
                pd.DataFrame([("extra", unit, base.loc[base.unit == unit, "region"].iloc[0], 1)], columns=base.columns),
            ]
        )
        members = base.index[base.unit == unit]
        neighbours = [add] + ([base.drop(members[0])] if len(members) > 1 else [])
        for other in neighbours:
            d1 = GroupSizeData.from_records(other, h, N)
            worst["n"] = max(worst["n"], np.abs(d1.counts - d0.counts).sum(axis=1).max())
            worst["c"] = max(worst["c"], np.abs(d1.cumulative() - d0.cumulative()).sum(axis=1).max())
            chain_diff = np.abs(d1.chain() - d0.chain())
            per_level = [chain_diff[h.level_slice(lvl)].sum() for lvl in range(1, h.n_levels + 1)]
            worst["chain"] = np.maximum(worst["chain"], per_level)
    assert worst["n"] == 2
    assert worst["c"] == 1
    assert (worst["chain"] <= h.level_sizes()).all()


def test_chain_sensitivity_reaches_level_size():
    """The chain's L1 sensitivity is |R_l| exactly, not 1 (erratum A2)."""
    h = Hierarchy.from_parent_table({"R": None, "A": "R", "B": "R", "C": "R"})
    before = GroupSizeData.from_groups(h, ["A", "B", "C"], [1, 1, 1], n_sizes=3)
    after = GroupSizeData.from_groups(h, ["A", "B", "C"], [2, 1, 1], n_sizes=3)  # A's group grows 1 -> 2
    diff = np.abs(after.chain() - before.chain())[h.level_slice(2)].sum()
    assert diff == 3 == h.level_sizes()[1]


# ---------------------------------------------------------------- domains (spec 2.4, A6)
@pytest.mark.parametrize("epsilon, delta_h, delta_c", [("0.1", 21600, 5400), ("0.5", 864, 216), ("1.0", 216, 54)])
def test_truncation_table_for_three_levels(epsilon, delta_h, delta_c):
    from fractions import Fraction

    eps = Fraction(epsilon)
    assert truncation_delta(2 * 3 / eps) == delta_h
    assert truncation_delta(3 / eps) == delta_c
    assert truncation_delta(6 / 0.1) == 21600  # floating 59.999... must not change the answer


def test_truncated_domains_and_widening(running_example):
    noisy = NoisyGroupSizes(running_example.hierarchy, np.full((3, 5), -3.0), 6)
    dom = Domains.truncated(noisy, 1)
    assert (dom.hi < dom.lo).any()  # noisy -3 +- 1 has no non-negative value
    with pytest.raises(InfeasibleDomainError, match="region 'GA', size 1"):
        resolve_domains(noisy, dom)
    widened = resolve_domains(noisy, dom, on_infeasible="widen")
    assert widened.widenings >= 1 and widened.delta[0] > 1
    assert resolve_domains(noisy, "full").is_full
    from_zero = resolve_domains(noisy, Domains.truncated(noisy, 0), on_infeasible="widen")  # 0 * 2 must still grow
    assert from_zero.delta[0] >= 1


def test_truncated_domain_needs_a_scale(running_example):
    noisy = NoisyGroupSizes(running_example.hierarchy, np.zeros((3, 5)), 6)
    with pytest.raises(DataValidationError, match="delta"):
        Domains.truncated(noisy)


# ---------------------------------------------------------------- validation
def test_bad_group_size_inputs(running_example):
    """Malformed inputs are refused; data outside the declared bounds follows the stated rules."""
    h = running_example.hierarchy
    with pytest.raises(DataValidationError, match="negative count"):
        GroupSizeData.from_leaf_counts(h, [[1, -1], [0, 0]])
    with pytest.raises(DataValidationError, match="rows"):
        GroupSizeData.from_leaf_counts(h, [[1, 1]])
    with pytest.raises(DataValidationError, match="sum of its children"):
        GroupSizeData(h, np.array([[1, 0], [1, 0], [1, 0]]))
    with pytest.raises(DataValidationError, match="larger than N"):  # the experiments' option
        GroupSizeData.from_groups(h, ["GA", "NY"], [1, 9], n_sizes=5, overflow="error")
    top = GroupSizeData.from_groups(h, ["GA", "NY"], [1, 9], n_sizes=5)  # the default: "N or more"
    assert top.counts[0, 4] == 1 and top.overflow == "top"
    with pytest.raises(DataValidationError, match="negative"):
        GroupSizeData.from_groups(h, ["GA"], [-1], n_sizes=5)
    with pytest.raises(DataValidationError, match="integers"):
        GroupSizeData.from_groups(h, ["GA"], [1.5], n_sizes=5)
    with pytest.raises(DataValidationError, match="overflow"):
        GroupSizeData.from_groups(h, ["GA"], [1], n_sizes=5, overflow="clip")
    with pytest.raises(DataValidationError, match="N"):
        GroupSizeData.from_groups(h, ["GA"], [1], n_sizes=0)


def test_bad_records():
    """Key and type violations of the records table are refused; a negative quantity is clamped."""
    h = Hierarchy.from_parent_table({"R": None, "A": "R", "B": "R"})
    split = pd.DataFrame({"user": ["1", "2"], "unit": ["u", "u"], "region": ["A", "B"], "quantity": [1, 1]})
    with pytest.raises(DataValidationError, match="several regions"):
        GroupSizeData.from_records(split, h)
    for bad in (1.5, "x"):
        frame = pd.DataFrame({"user": ["1"], "unit": ["u"], "region": ["A"], "quantity": [bad]})
        with pytest.raises(DataValidationError, match="quantity"):
            GroupSizeData.from_records(frame, h)
    dup = pd.DataFrame({"user": ["1", "1"], "unit": ["u", "v"], "region": ["A", "A"], "quantity": [1, 1]})
    with pytest.raises(DataValidationError, match="appears twice"):
        GroupSizeData.from_records(dup, h)
    blank = pd.DataFrame({"user": ["1"], "unit": [None], "region": ["A"], "quantity": [1]})
    with pytest.raises(DataValidationError, match="'unit' is empty"):
        GroupSizeData.from_records(blank, h)
    missing = pd.DataFrame({"user": ["1"], "unit": ["u"], "region": ["A"]})
    with pytest.raises(DataValidationError, match="missing columns"):
        GroupSizeData.from_records(missing, h)
    neg = pd.DataFrame({"user": ["1", "2"], "unit": ["u", "u"], "region": ["A", "A"], "quantity": [-1, 1]})
    assert GroupSizeData.from_records(neg, h, n_sizes=2).counts[1].tolist() == [1, 0]  # -1 counts as 0


def test_pgsr_needs_uniform_depth():
    h = Hierarchy.from_parent_table({"R": None, "A": "R", "B": "R", "A1": "A"})
    with pytest.raises(DataValidationError, match="shallower"):
        GroupSizeData.from_leaf_counts(h, [[1], [1]])


def test_noisy_validation(running_example):
    h = running_example.hierarchy
    with pytest.raises(DataValidationError, match="shape"):
        NoisyGroupSizes(h, np.zeros((2, 5)), 6)
    with pytest.raises(DataValidationError, match="NaN"):
        NoisyGroupSizes(h, np.full((3, 5), np.nan), 6)
    with pytest.raises(DataValidationError, match="G"):
        NoisyGroupSizes(h, np.zeros((3, 5)), -1)
    with pytest.raises(DataValidationError, match="kind"):
        NoisyGroupSizes(h, np.zeros((3, 5)), 6, kind="histogram")
