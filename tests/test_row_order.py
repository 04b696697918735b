"""A table is read by its labels, never by row position (issue 24).

For every family with a release command (the cases of ``tests/helpers/release_cases.py``), a
random permutation of the rows of every input file gives byte-for-byte the same outputs under the
same seeded generator.  PGSR's labelled matrices (counts, leaf counts, noisy values) give the same
arrays from a DataFrame whose rows and size columns are shuffled, and a table whose labels differ
from the declared ones is refused naming them.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from release_cases import CASES

from dpmodels import cli, instances
from dpmodels.core.errors import DataValidationError
from dpmodels.pgsr import GroupSizeData, NoisyGroupSizes

FAMILIES = [f.name for f in cli.FAMILIES if f.release]


def _permute_rows(path, seed: int, into) -> None:
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    order = np.random.default_rng(seed).permutation(len(frame))
    frame.iloc[order].to_csv(into, index=False)


def _release(case, argv) -> dict[str, bytes]:
    assert cli.main([*argv, "--epsilon", "1", "--seed", "7", "--not-private", "-q"]) == 0
    return {flag: path.read_bytes() for flag, path in case.outputs.items()}


@pytest.mark.parametrize("family", FAMILIES)
@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1))
def test_permuted_input_rows_give_the_same_release(family, seed, tmp_path_factory):
    folder = tmp_path_factory.mktemp(family)
    case = CASES[family](folder)
    expected = _release(case, case.argv)
    argv = list(case.argv)
    for path in case.inputs.values():
        shuffled = path.with_name("shuffled-" + path.name)
        _permute_rows(path, seed, shuffled)
        argv[argv.index(str(path))] = str(shuffled)
    for path in case.written:
        path.unlink()
    assert _release(case, argv) == expected


@pytest.fixture(scope="module")
def example():
    return instances.load("pgsr/census-like", seed=0, scale=0.002)


def _shuffled(frame: pd.DataFrame, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    sizes = [c for c in frame.columns if c != "level"]
    columns = ["level", *[sizes[i] for i in rng.permutation(len(sizes))]]
    return frame.iloc[rng.permutation(len(frame))][columns]


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1))
def test_labelled_matrices_are_matched_by_region_and_size(example, seed):
    frame = example.to_frame()
    assert (GroupSizeData(example.hierarchy, _shuffled(frame, seed)).counts == example.counts).all()
    leaves = frame.iloc[list(example.hierarchy.leaves)]
    rebuilt = GroupSizeData.from_leaf_counts(example.hierarchy, _shuffled(leaves, seed))
    assert (rebuilt.counts == example.counts).all()
    noisy = NoisyGroupSizes(example.hierarchy, example.counts + 0.5, example.G, level_scales=(Fraction(2),) * 3)
    again = NoisyGroupSizes(example.hierarchy, _shuffled(noisy.to_frame(), seed), example.G)
    assert (again.values == noisy.values).all()
    assert again.to_frame().equals(noisy.to_frame())


def test_a_region_column_works_like_the_index(example):
    frame = example.to_frame().reset_index().sample(frac=1, random_state=3)
    assert (GroupSizeData(example.hierarchy, frame).counts == example.counts).all()


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda f: f.iloc[1:], "missing 'US'"),
        (lambda f: pd.concat([f, f.iloc[[2]]]), "given twice"),
        (lambda f: f.rename(index={f.index[1]: "Atlantis"}), "not declared 'Atlantis'"),
        (lambda f: f.drop(columns=[2]), r"missing \[2\]"),
        (lambda f: f.rename(columns={1: "one"}), "not a group size"),
        (lambda f: f.assign(level=1), "column 'level'"),
    ],
)
def test_labels_that_differ_from_the_declared_ones_are_refused_by_name(example, change, message):
    with pytest.raises(DataValidationError, match=message):
        GroupSizeData(example.hierarchy, change(example.to_frame()))


def test_an_array_keeps_meaning_rows_in_the_declared_order(example):
    assert (GroupSizeData(example.hierarchy, example.counts).counts == example.counts).all()


def test_a_table_in_memory_reads_as_its_file(tmp_path):
    """``from_frame`` (a DataFrame, rows shuffled, labels in the index) gives what ``from_csv`` gives."""
    from dpmodels.instances import facility, pgsr, submodular_csv

    cases = {}
    for name in ("pgsr", "facility", "submodular"):
        (tmp_path / name).mkdir()
        cases[name] = CASES[name](tmp_path / name)
    frame = lambda path: pd.read_csv(path, dtype=str, keep_default_na=False).sample(frac=1, random_state=1)  # noqa: E731
    p = cases["pgsr"].inputs
    hierarchy = frame(p["--hierarchy"]).set_index("region")  # labels in the index count as a column
    from_file = pgsr.from_csv(p["--hierarchy"], records=p["--records"], N=4)
    in_memory = pgsr.from_frame(hierarchy, records=frame(p["--records"]), N=4)
    assert np.array_equal(in_memory.counts, from_file.counts) and in_memory.hierarchy.names == from_file.hierarchy.names
    points = cases["facility"].inputs["--points"]
    assert np.array_equal(facility.from_frame(frame(points)).N, facility.from_csv(points).N)
    s = cases["submodular"].inputs
    declared = {"rank": 2, "n_users": 12}
    ours = submodular_csv.from_frame(frame(s["--coverage"]), elements=frame(s["--elements"]), **declared)
    theirs = submodular_csv.from_csv(s["--coverage"], elements=s["--elements"], **declared)
    assert ours.labels == theirs.labels and ours.function(list(range(3))) == theirs.function(list(range(3)))


def test_whole_float_labels_read_as_their_integers():
    """A label column that pandas or Parquet holds as float (12.0, a missing value beside it) names the
    same regions as the CSV's 12: read as 12.0 it named none, and every record was left out."""
    from dpmodels.core.hierarchy import Hierarchy
    from dpmodels.core.tables import read_table
    from dpmodels.instances import pgsr

    frame = pd.DataFrame({"region": [12.0, np.nan, 13.0], "x": [0.5, 1.0, 2.0]})
    assert read_table(frame).to_dict("list") == {"region": ["12", "", "13"], "x": ["0.5", "1.0", "2.0"]}
    tree = Hierarchy.from_parent_table({"1": None, "12": "1", "13": "1"})
    records = pd.DataFrame({"user": ["a", "b", "c"], "unit": ["u", "u", "v"], "region": [12.0, 12.0, 13.0]})
    data = pgsr.from_frame(tree, records=records.assign(quantity=1), N=3)
    assert data.G == 2 and data.counts[0].tolist() == [1, 1, 0]
