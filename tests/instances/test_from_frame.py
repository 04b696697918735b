"""``from_frame`` of TopDown and metric DP: a table in memory reads as the same table written to a file.

Oracle: the family's CSV reader on the table written out (the route users had before).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpmodels.core.errors import DataValidationError
from dpmodels.instances import metricdp as mdp_instances
from dpmodels.instances import topdown as td_instances


@pytest.fixture(scope="module")
def census():
    return td_instances.synthetic_census(seed=3, preset="tiny", races=7)


def test_topdown_from_frame_equals_the_csv_reader(census, tmp_path):
    persons = td_instances.records(census)
    blocks = pd.DataFrame({"geocode": [census.geography.names[i] for i in census.geography.leaves]})
    persons.to_csv(tmp_path / "persons.csv", index=False)
    blocks.to_csv(tmp_path / "blocks.csv", index=False)
    from_file = td_instances.from_csv(tmp_path / "persons.csv", races=7, blocks=tmp_path / "blocks.csv")
    shuffled = persons.sample(frac=1, random_state=0).set_index("geocode")  # geocode as the index, rows shuffled
    in_memory = td_instances.from_frame(shuffled, blocks=blocks.iloc[::-1], races=7)
    assert list(in_memory.geography.names) == list(from_file.geography.names)
    assert (in_memory.leaf_counts != from_file.leaf_counts).nnz == 0
    assert in_memory.leaf_counts.sum() == census.leaf_counts.sum()


def test_topdown_from_frame_names_a_missing_column(census):
    persons = td_instances.records(census).drop(columns=["cenrace"])
    with pytest.raises(DataValidationError, match="cenrace"):
        td_instances.from_frame(persons, races=7)


def test_metricdp_from_frame_equals_the_csv_reader(tmp_path):
    rng = np.random.default_rng(0)
    table = pd.DataFrame({"location": [f"p{i}" for i in range(6)], "x": rng.random(6), "y": rng.random(6)})
    table.to_csv(tmp_path / "locations.csv", index=False)
    from_file = mdp_instances.locations_from_csv(tmp_path / "locations.csv", 2.0, 0.5)
    in_memory = mdp_instances.from_frame(table.iloc[::-1].set_index("location"), 2.0, 0.5)
    assert in_memory.info["labels"] == from_file.info["labels"] == sorted(table["location"])
    np.testing.assert_array_equal(in_memory.features, from_file.features)
    users, records = mdp_instances.records_from_csv(
        pd.DataFrame({"user": ["b", "a"], "record": ["p3", "nowhere"]}), in_memory.info["labels"]
    )
    assert users == ["a", "b"] and records.tolist() == [mdp_instances.OUTSIDE, 3]
