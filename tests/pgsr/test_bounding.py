"""PGSR bounding rules: records outside the declared bounds follow stated rules, never refusals.

The oracle recomputes every leaf's counts from the records in plain Python: clamp each quantity to
``[0, z_max]``, sum per unit, leave out units outside the leaves and units of size 0, and count
sizes above ``N`` in the size-``N`` bin.
"""

from collections import defaultdict

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpmodels.core.errors import DataValidationError
from dpmodels.core.hierarchy import Hierarchy
from dpmodels.instances.pgsr import from_csv, random_tree, running_example, taxi_like
from dpmodels.pgsr.bounding import RULES
from dpmodels.pgsr.data import GroupSizeData

TREE = {"R": None, "A": "R", "B": "R", "A1": "A", "A2": "A", "B1": "B"}
COLUMNS = ["user", "unit", "region", "quantity"]


def oracle_leaf_counts(h: Hierarchy, rows, z_max: int, N: int) -> np.ndarray:
    sizes, region_of = defaultdict(int), {}
    for _, unit, region, q in rows:
        sizes[unit] += min(max(q, 0), z_max)
        region_of[unit] = region
    leaves = [h.names[i] for i in h.leaves]
    out = np.zeros((len(leaves), N), dtype=np.int64)
    for unit, size in sizes.items():
        if region_of[unit] in leaves and size >= 1:
            out[leaves.index(region_of[unit]), min(size, N) - 1] += 1
    return out


@st.composite
def record_tables(draw):
    z_max = draw(st.integers(1, 5))
    regions = st.sampled_from(["A1", "A2", "B1", "A", "R", "nowhere"])
    quantity = st.integers(-3, 10) | st.integers(-(2**62), 2**62)
    units = draw(st.lists(st.tuples(regions, st.lists(quantity, min_size=1, max_size=4)), min_size=0, max_size=6))
    rows = [(f"{u}-{k}", f"u{u}", region, q) for u, (region, qs) in enumerate(units) for k, q in enumerate(qs)]
    return rows, z_max, draw(st.integers(1, 8))


@settings(max_examples=100)
@given(record_tables())
def test_records_follow_the_rules_and_never_fail(case):
    """Any well-formed table builds, whatever its quantities and regions, and gives the oracle's counts."""
    rows, z_max, N = case
    h = Hierarchy.from_parent_table(TREE)
    data = GroupSizeData.from_records(pd.DataFrame(rows, columns=COLUMNS), h, n_sizes=N, z_max=z_max)
    np.testing.assert_array_equal(data.counts[h.leaves], oracle_leaf_counts(h, rows, z_max, N))
    assert (data.N, data.N_declared, data.overflow, data.z_max) == (N, True, "top", z_max)


def test_huge_quantities_with_a_huge_z_max_do_not_overflow():
    """Quantities near 2^62 and z_max = 2^61: the clamped sums would overflow int64; capped at N + 1."""
    h = Hierarchy.from_parent_table(TREE)
    rows = [("a", "u", "A1", 2**62), ("b", "u", "A1", 2**62), ("c", "v", "B1", 1)]
    data = GroupSizeData.from_records(pd.DataFrame(rows, columns=COLUMNS), h, n_sizes=3, z_max=2**61)
    np.testing.assert_array_equal(data.counts[h.leaves], oracle_leaf_counts(h, rows, 2**61, 3))


def test_n_from_the_data_is_marked_undeclared():
    h = Hierarchy.from_parent_table(TREE)
    rows = pd.DataFrame([("a", "u", "A1", 1), ("b", "u", "A1", 1), ("c", "v", "B1", 1)], columns=COLUMNS)
    data = GroupSizeData.from_records(rows, h)
    assert (data.N, data.N_declared) == (2, False)
    assert not GroupSizeData(h, data.counts).N_declared  # a bare matrix cannot tell
    assert GroupSizeData.from_leaf_counts(h, [[1], [0], [2]], N=4).N_declared
    assert not GroupSizeData.from_leaf_counts(h, [[1], [0], [2]]).N_declared
    assert all(make().N_declared for make in (random_tree, running_example, lambda: taxi_like(scale=0.01, N=3)))


def test_leaf_counts_are_fitted_to_the_declared_n():
    """Narrower counts are padded; wider ones go to the size-N bin, or are refused with 'error'."""
    h = Hierarchy.from_parent_table(TREE)
    leaf = [[1, 2, 3], [0, 0, 4], [5, 0, 0]]
    padded = GroupSizeData.from_leaf_counts(h, leaf, N=5)
    np.testing.assert_array_equal(padded.counts[h.leaves], [[1, 2, 3, 0, 0], [0, 0, 4, 0, 0], [5, 0, 0, 0, 0]])
    folded = GroupSizeData.from_leaf_counts(h, leaf, N=2)
    np.testing.assert_array_equal(folded.counts[h.leaves], [[1, 5], [0, 4], [5, 0]])
    with pytest.raises(DataValidationError, match="larger than N=2") as err:
        GroupSizeData.from_leaf_counts(h, leaf, N=2, overflow="error")
    assert "overflow='top'" in err.value.problem and "--overflow top" in err.value.problem


def test_refusals_never_count_the_records_a_rule_touched():
    """The experiments' overflow='error' refusal names N and the remedy, not how many groups."""
    h = Hierarchy.from_parent_table(TREE)
    with pytest.raises(DataValidationError) as err:
        GroupSizeData.from_groups(h, ["A1"] * 7, [9] * 7, n_sizes=5, overflow="error")
    assert "N=5" in err.value.problem and "7" not in err.value.problem


def test_the_rules_are_stated():
    assert len(RULES) == 4 and any("clamped to [0, z_max]" in r for r in RULES)
    assert any("size-N bin" in r for r in RULES) and sum("left out" in r for r in RULES) == 2


# ---------------------------------------------------------------- files
@pytest.fixture
def tree_file(tmp_path):
    (tmp_path / "h.csv").write_text("region,parent\nUS,\nGA,US\nNY,US\n")
    return tmp_path / "h.csv"


def _counts(tmp_path, text: str):
    (tmp_path / "c.csv").write_text(text)
    return tmp_path / "c.csv"


@pytest.mark.parametrize(
    "content, N, expected",
    [
        ("region,size,count\nGA,1,2\nTX,1,5\n", 2, [[2, 0], [0, 0]]),  # TX is not in the hierarchy: left out
        ("region,size,count\nGA,0,3\nGA,2,1\n", 2, [[0, 1], [0, 0]]),  # size 0 is not a group: left out
        ("region,size,count\nGA,1,1\nNY,4,2\nNY,9,1\n", 3, [[1, 0, 0], [0, 0, 3]]),  # above N: the size-N bin
        ("region,1,2,3\nGA,1,0,2\n", 2, [[1, 2], [0, 0]]),  # wide: folded, and the absent NY counts zero
        ("region,1\nGA,1\nNY,2\nXX,9\n", 3, [[1, 0, 0], [2, 0, 0]]),  # wide: padded, XX left out
        ("region,size,count\nUS,1,1\nUS,3,2\nGA,1,1\nNY,3,2\n", 2, [[1, 0], [0, 2]]),  # US agrees once binned
    ],
)
def test_counts_files_follow_the_rules(tmp_path, tree_file, content, N, expected):
    data = from_csv(tree_file, counts=_counts(tmp_path, content), N=N)
    np.testing.assert_array_equal(data.counts[1:], expected)
    assert data.N_declared and data.N == N


def test_counts_files_still_refuse_malformed_tables(tmp_path, tree_file):
    for content, message in [
        ("region,size,count\nGA,-1,2\n", "sizes must be >= 0"),
        ("region,size,count\nUS,1,9\nGA,1,2\n", "differ from the sum"),
        ("region,size,count\nGA,1,x\n", "integers"),
        ("region,1,2\nGA,1,\n", "integers"),
    ]:
        with pytest.raises(DataValidationError, match=message) as err:
            from_csv(tree_file, counts=_counts(tmp_path, content), N=2)
        assert "c.csv" in str(err.value)


def test_records_files_follow_the_rules_and_name_the_file_on_malformed_rows(tmp_path, tree_file):
    (tmp_path / "r.csv").write_text("user,unit,region,quantity\na,u,GA,7\nb,u,GA,1\nc,v,TX,1\nd,w,NY,0\n")
    data = from_csv(tree_file, records=tmp_path / "r.csv", N=3, z_max=2)
    np.testing.assert_array_equal(data.counts[1:], [[0, 0, 1], [0, 0, 0]])  # u: 2 + 1; TX and w left out
    (tmp_path / "r.csv").write_text("user,unit,region,quantity\na,u,GA,1.5\n")
    with pytest.raises(DataValidationError, match="quantity: must be integers") as err:
        from_csv(tree_file, records=tmp_path / "r.csv", N=3)
    assert "r.csv" in str(err.value)
    (tmp_path / "r.csv").write_text("user,unit,region,quantity\na,,GA,1\n")
    with pytest.raises(DataValidationError, match="'unit' is empty"):
        from_csv(tree_file, records=tmp_path / "r.csv", N=3)


def test_region_codes_keep_their_text(tmp_path):
    """Codes such as 01 or 13 are names, not numbers: the hierarchy read as numbers turned 036 into 36
    (and the root's empty parent made 13 into 13.0), so every record of 036 would be left out."""
    (tmp_path / "h.csv").write_text("region,parent\n0,\n13,0\n036,0\n")
    (tmp_path / "r.csv").write_text("user,unit,region,quantity\na,u,036,1\nb,v,13,1\nc,v,13,1\n")
    data = from_csv(tmp_path / "h.csv", records=tmp_path / "r.csv", N=2)
    assert data.hierarchy.names == ("0", "036", "13")  # children in label order, whatever the rows' order
    np.testing.assert_array_equal(data.counts, [[1, 1], [1, 0], [0, 1]])
