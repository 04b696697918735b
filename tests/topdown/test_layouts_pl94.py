"""The 2020 redistricting PPMF layout (``ppmf-pl94``: GQTYPE_PL, VOTING_AGE) and numeric-typed codes.

Oracles: the PL94 recode's codes written out by hand from the Census's published MDF specification
(GQTYPE_PL 0 household, 1 correctional ... 7 other noninstitutional; VOTING_AGE 1 under 18, 2 18 or
over), and the label layout of the same persons (the same data; the same seeded release byte for byte).
"""

import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpmodels.core.errors import DataValidationError
from dpmodels.instances.topdown import from_csv, records, synthetic_census
from dpmodels.topdown.data import pl94_schema
from dpmodels.topdown.layouts import GQTYPE_PL_CODES, PL94_COLUMNS, VOTING_AGE_CODES, read_ppmf_pl94, write_ppmf

SCHEMA = pl94_schema(63)
BY_HAND = {  # hhgq label -> GQTYPE_PL, from the MDF specification's PL94 recode
    "household": "0",
    "correctional": "1",
    "juvenile": "2",
    "nursing": "3",
    "other institutional": "4",
    "college housing": "5",
    "military": "6",
    "other noninstitutional": "7",
}
PERSON = st.tuples(
    st.sampled_from(["010010000011000", "010010000011001", "720010123452999", "568409989999999"]),
    *(st.sampled_from(a.values) for a in SCHEMA.attributes),
)


def test_the_codes_are_the_specification_s():
    assert GQTYPE_PL_CODES == BY_HAND
    assert VOTING_AGE_CODES == {"under 18": "1", "18 or over": "2"}


@settings(max_examples=40, deadline=None)
@given(st.lists(PERSON, min_size=1, max_size=30))
def test_persons_written_in_the_pl94_layout_read_back_as_the_same_cells(persons):
    frame = pd.DataFrame(persons, columns=["geocode", *SCHEMA.names])
    written = write_ppmf(frame, "ppmf-pl94")
    assert list(written.columns) == list(PL94_COLUMNS)
    assert ((written["RTYPE"] == "3") == (written["GQTYPE_PL"] == "0")).all()
    assert read_ppmf_pl94(written).equals(frame)


@pytest.fixture(scope="module")
def census():
    return synthetic_census(seed=1, preset="tiny", races=7)


@pytest.fixture(scope="module")
def folder(tmp_path_factory, census):
    root = tmp_path_factory.mktemp("pl94")
    labels = records(census)
    labels.to_csv(root / "persons.csv", index=False)
    codes = write_ppmf(labels, "ppmf-pl94")
    codes.to_csv(root / "persons-pl94.csv", index=False)
    codes.astype(np.int64).to_parquet(root / "persons-pl94-int.parquet", index=False)  # CENRACE 1, not 01
    geo = census.geography
    pd.DataFrame({"geocode": [geo.names[i] for i in geo.leaves]}).to_csv(root / "blocks.csv", index=False)
    return root


def _same_data(a, b) -> None:
    assert a.geography.names == b.geography.names
    assert (a.leaf_counts != b.leaf_counts).nnz == 0 and a.population == b.population


@pytest.mark.parametrize("name", ["persons-pl94.csv", "persons-pl94-int.parquet"])
def test_a_pl94_file_gives_the_data_of_the_label_file(folder, census, name):
    blocks = folder / "blocks.csv"
    pl94 = from_csv(folder / name, races=7, blocks=blocks, layout="ppmf-pl94")
    _same_data(pl94, from_csv(folder / "persons.csv", races=7, blocks=blocks))
    assert (pl94.leaf_counts != census.leaf_counts).nnz == 0


def test_numeric_typed_codes_in_memory_are_zero_padded_and_text_codes_are_not(folder):
    codes = pd.read_csv(folder / "persons-pl94.csv", dtype=str)
    as_numbers = codes.astype(np.int64)
    _same_data(from_csv(as_numbers, races=7, layout="ppmf-pl94"), from_csv(folder / "persons.csv", races=7))
    unpadded = codes.assign(CENRACE=codes["CENRACE"].str.lstrip("0"))  # text without its zero: malformed
    with pytest.raises(DataValidationError, match="column 'CENRACE' on data row 1 must be 2 digits"):
        read_ppmf_pl94(unpadded)
    negative = as_numbers.assign(TABBLKCOU=-as_numbers["TABBLKCOU"])
    with pytest.raises(DataValidationError, match="column 'TABBLKCOU' on data row 1 must be 3 digits"):
        read_ppmf_pl94(negative)


@pytest.mark.parametrize("column, code", [("GQTYPE_PL", "8"), ("VOTING_AGE", "3"), ("VOTING_AGE", "0")])
def test_codes_outside_the_domain_leave_the_person_out(folder, column, code):
    codes = pd.read_csv(folder / "persons-pl94.csv", dtype=str)
    codes.loc[0, column] = code
    data = from_csv(codes, races=7, layout="ppmf-pl94")
    assert data.population == len(codes) - 1


def test_a_group_quarters_person_in_no_group_is_left_out(folder):
    codes = pd.read_csv(folder / "persons-pl94.csv", dtype=str)
    row = int(np.flatnonzero(codes["RTYPE"].to_numpy() == "3")[0])
    codes.loc[row, "RTYPE"] = "5"  # RTYPE 5 with GQTYPE_PL 0
    assert from_csv(codes, races=7, layout="ppmf-pl94").population == len(codes) - 1


def _release(folder, persons: str, name: str, *extra) -> subprocess.Popen:
    command = [sys.executable, "-m", "dpmodels.cli", "release", "topdown", "--races", "7", "--persons"]
    command += [str(folder / persons), "--blocks", str(folder / "blocks.csv"), "--epsilon", "1", "--seed", "3"]
    command += ["--not-private", "--no-progress", "-q", "--out-microdata", str(folder / f"{name}.csv")]
    command += ["--out-histograms", str(folder / f"{name}.hist.csv"), *extra]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_the_command_releases_the_pl94_layout_as_the_label_layout(folder):
    runs = [
        _release(folder, "persons.csv", "labels"),
        _release(folder, "persons-pl94.csv", "pl94", "--layout", "ppmf-pl94"),
    ]
    for proc in runs:
        _, err = proc.communicate(timeout=180)
        assert proc.returncode == 0, err
    assert (folder / "labels.hist.csv").read_bytes() == (folder / "pl94.hist.csv").read_bytes()
    written = pd.read_csv(folder / "pl94.csv", dtype=str)
    assert list(written.columns) == list(PL94_COLUMNS)
    assert read_ppmf_pl94(written).equals(pd.read_csv(folder / "labels.csv", dtype=str))
