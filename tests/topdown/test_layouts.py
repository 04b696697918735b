"""The Census microdata layout (PPMF) of TopDown's person records, against the label layout.

Oracles: the CENRACE order written out by hand from the Census's own list (the DAS's cenrace
levels, 01 = white ... 63 = all six), the label layout of the same persons (the same data, the
same seeded release byte for byte), and the released histograms (the PPMF microdata re-read).
"""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpmodels.core.errors import DataValidationError
from dpmodels.instances.topdown import from_csv, records, synthetic_census
from dpmodels.topdown.data import GQ_TYPES, pl94_schema
from dpmodels.topdown.layouts import (
    CENHISP_CODES,
    GQTYPE_CODES,
    PPMF_COLUMNS,
    QAGE_RANGES,
    cenrace_codes,
    read_ppmf,
    values_markdown,
    write_ppmf,
)

ROOT = Path(__file__).resolve().parents[2]
#: The 63 CENRACE codes in order, each by its races' initials: W White, B Black, I AIAN, A Asian,
#: N NHPI, O Some Other Race (the Census list: alone, then 2..6 races, each in the order W B I A N O).
CENSUS_ORDER = (
    "W B I A N O "
    "WB WI WA WN WO BI BA BN BO IA IN IO AN AO NO "
    "WBI WBA WBN WBO WIA WIN WIO WAN WAO WNO BIA BIN BIO BAN BAO BNO IAN IAO INO ANO "
    "WBIA WBIN WBIO WBAN WBAO WBNO WIAN WIAO WINO WANO BIAN BIAO BINO BANO IANO "
    "WBIAN WBIAO WBINO WBANO WIANO BIANO "
    "WBIANO"
).split()
NAMES = {"W": "White", "B": "Black", "I": "AIAN", "A": "Asian", "N": "NHPI", "O": "Other"}


def races(label: str) -> set[str]:
    return set(label.split("+"))


# ---------------------------------------------------------------------- the codes
def test_every_cenrace_code_maps_to_its_label_and_back():
    codes = cenrace_codes()
    labels = pl94_schema(63).attribute("cenrace").values
    assert list(codes) == [f"{n:02d}" for n in range(1, 64)]
    assert sorted(codes.values()) == sorted(labels)  # every label once
    back = {label: code for code, label in codes.items()}
    for n, initials in enumerate(CENSUS_ORDER, start=1):
        code = f"{n:02d}"
        assert races(codes[code]) == {NAMES[i] for i in initials}, code  # by the names of the races
        assert back[codes[code]] == code
    # the same through the readers and writers: each label -> its code -> the label
    person = {"geocode": "010010000011000", "hhgq": "household", "votingage": "under 18", "hispanic": "hispanic"}
    frame = pd.DataFrame([{**person, "cenrace": label} for label in labels])
    written = write_ppmf(frame)
    assert list(written["CENRACE"]) == [back[label] for label in labels]
    assert read_ppmf(written).equals(frame)


@pytest.mark.parametrize(
    "code, named",
    [
        ("01", {"White"}),
        ("06", {"Other"}),
        ("07", {"White", "Black"}),
        ("11", {"White", "Other"}),
        ("16", {"AIAN", "Asian"}),
        ("21", {"NHPI", "Other"}),
        ("22", {"White", "Black", "AIAN"}),
        ("41", {"Asian", "NHPI", "Other"}),
        ("42", {"White", "Black", "AIAN", "Asian"}),
        ("62", {"Black", "AIAN", "Asian", "NHPI", "Other"}),
        ("63", {"White", "Black", "AIAN", "Asian", "NHPI", "Other"}),
    ],
)
def test_known_cenrace_codes_by_name(code, named):
    assert races(cenrace_codes()[code]) == named


def test_the_other_codes_are_the_schema_values_by_name():
    schema = pl94_schema(63)
    assert tuple(GQTYPE_CODES) == GQ_TYPES == schema.attribute("hhgq").values
    assert tuple(QAGE_RANGES) == schema.attribute("votingage").values
    assert tuple(CENHISP_CODES) == schema.attribute("hispanic").values
    assert GQTYPE_CODES["household"] == ("000",)
    firsts = {codes[0][0] for label, codes in GQTYPE_CODES.items() if label != "household"}
    assert firsts == set("1234567")  # the groups of GQTYPE_PL 1..7, by the first digit
    assert {c[0] for c in GQTYPE_CODES["other noninstitutional"]} == set("789")


def test_the_docs_table_is_the_code():
    page = (ROOT / "docs" / "families" / "topdown.md").read_text()
    assert "## Input layouts" in page and values_markdown() in page


# ---------------------------------------------------------------------- reading
@pytest.fixture(scope="module")
def census():
    return synthetic_census(seed=1, preset="tiny", races=7)


@pytest.fixture(scope="module")
def folder(tmp_path_factory, census):
    """persons.csv (labels), persons-ppmf.csv and .parquet (the same persons, codes) and blocks.csv."""
    root = tmp_path_factory.mktemp("layouts")
    labels = records(census)
    labels.to_csv(root / "persons.csv", index=False)
    write_ppmf(labels).to_csv(root / "persons-ppmf.csv", index=False)
    write_ppmf(labels).to_parquet(root / "persons-ppmf.parquet", index=False)
    geo = census.geography
    pd.DataFrame({"geocode": [geo.names[i] for i in geo.leaves]}).to_csv(root / "blocks.csv", index=False)
    return root


def _same_data(a, b) -> None:
    assert a.geography.names == b.geography.names
    assert (a.leaf_counts != b.leaf_counts).nnz == 0 and a.population == b.population
    assert np.array_equal(a.knowledge.invariant_totals, b.knowledge.invariant_totals)


@pytest.mark.parametrize("name", ["persons-ppmf.csv", "persons-ppmf.parquet"])
def test_a_ppmf_file_gives_the_data_of_the_label_file(folder, census, name):
    blocks = folder / "blocks.csv"
    labels = from_csv(folder / "persons.csv", races=7, blocks=blocks)
    ppmf = from_csv(folder / name, races=7, blocks=blocks, layout="ppmf")
    _same_data(ppmf, labels)
    assert (ppmf.leaf_counts != census.leaf_counts).nnz == 0


def test_codes_are_text_with_their_leading_zeros(folder):
    text = (folder / "persons-ppmf.csv").read_text().splitlines()
    assert text[0] == ",".join(PPMF_COLUMNS)
    assert text[1].startswith("01,001,000001,1,1")  # state 01, county 001, tract 000001, block group 1
    frame = pd.read_parquet(folder / "persons-ppmf.parquet")
    frame["QAGE"] = frame["QAGE"].astype(int)  # an age stored as a number reads as its digits
    _same_data(from_csv(frame, races=7, layout="ppmf"), from_csv(folder / "persons.csv", races=7))


OUT_OF_DOMAIN = {  # column -> a well-formed code that names no value of the schema (races=7)
    "CENRACE": ["64", "00", "07", "63"],  # 07 (White+Black) and 63 are beyond the 7 declared races
    "QAGE": ["116", "999"],
    "CENHISP": ["0", "3"],
    "RTYPE": ["4", "1"],
    "GQTYPE": ["999", "107", "000"],  # 000 with RTYPE 5: a group-quarters person in no group
    "TABBLK": ["1999"],  # a block that is not declared
}


def test_codes_outside_the_domain_leave_the_person_out(folder):
    persons = pd.read_csv(folder / "persons-ppmf.csv", dtype=str)
    strays = []
    for column, codes in OUT_OF_DOMAIN.items():
        for code in codes:
            stray = persons.iloc[[5]].assign(**{column: code})
            if column == "GQTYPE":
                stray = stray.assign(RTYPE="5")
            strays.append(stray)
    strays.append(persons.iloc[[0]].assign(RTYPE="3", GQTYPE="301"))  # a household person in a nursing facility
    mixed = pd.concat([strays[0], persons.iloc[:40], *strays[1:], persons.iloc[40:]], ignore_index=True)
    blocks = folder / "blocks.csv"
    _same_data(
        from_csv(mixed, races=7, blocks=blocks, layout="ppmf"), from_csv(persons, races=7, blocks=blocks, layout="ppmf")
    )
    values = read_ppmf(pd.concat(strays, ignore_index=True))
    assert values.loc[0, "cenrace"] == "CENRACE 64" and "QAGE 116" in set(values["votingage"])


@pytest.mark.parametrize(
    "column, code, says",
    [
        ("TABBLKST", "1", "must be 2 digits"),
        ("TABBLKCOU", "0a1", "must be 3 digits"),
        ("TABTRACTCE", "00001", "must be 6 digits"),
        ("TABBLK", "10000", "must be 4 digits"),
        ("RTYPE", "03", "must be 1 digit"),
        ("GQTYPE", "0", "must be 3 digits"),
        ("QAGE", "1000", "must be 1 to 3 digits"),
        ("QAGE", "-1", "must be 1 to 3 digits"),
        ("QAGE", "18.0", "must be 1 to 3 digits"),
        ("CENHISP", "x", "must be 1 digit"),
        ("CENRACE", "7", "must be 2 digits"),
        ("CENRACE", "064", "must be 2 digits"),
        ("CENRACE", "", "is empty"),
        ("TABBLKGRPCE", "2", "first digit of TABBLK"),
    ],
)
def test_malformed_codes_refuse_the_file_naming_column_and_row(folder, column, code, says):
    persons = pd.read_csv(folder / "persons-ppmf.csv", dtype=str)
    persons.loc[2, column] = code
    path = folder / f"bad-{column}.csv"
    persons.to_csv(path, index=False)
    with pytest.raises(DataValidationError) as err:
        from_csv(path, races=7, layout="ppmf")
    assert str(path) in str(err.value) and column in str(err.value) and "data row 3" in str(err.value)
    assert says in str(err.value)


def test_an_unknown_layout_is_refused():
    with pytest.raises(DataValidationError, match="layout"):
        from_csv(pd.DataFrame({"geocode": ["010010000011000"]}), layout="mdf")


SCHEMA = pl94_schema(63)
PERSON = st.tuples(
    st.sampled_from(["010010000011000", "010010000011001", "720010123452999", "568409989999999"]),
    *(st.sampled_from(a.values) for a in SCHEMA.attributes),
)


@settings(max_examples=60, deadline=None)
@given(st.lists(PERSON, min_size=1, max_size=30))
def test_persons_written_as_ppmf_read_back_as_the_same_cells(persons):
    frame = pd.DataFrame(persons, columns=["geocode", *SCHEMA.names])
    written = write_ppmf(frame)
    assert list(written.columns) == list(PPMF_COLUMNS)
    assert read_ppmf(written).equals(frame)
    _same_data(from_csv(written, layout="ppmf"), from_csv(frame))


# ---------------------------------------------------------------------- the command
def start(folder: Path, persons: str, name: str, *extra) -> subprocess.Popen:
    """``dpmodels release topdown`` on ``persons``: seed 3, not private, the outputs ``name``.csv/.hist.csv."""
    command = [sys.executable, "-m", "dpmodels.cli", "release", "topdown", "--races", "7", "--persons"]
    command += [str(folder / persons), "--blocks", str(folder / "blocks.csv"), "--epsilon", "1", "--seed", "3"]
    command += ["--not-private", "--no-progress", "--out-microdata", str(folder / f"{name}.csv")]
    command += ["--out-histograms", str(folder / f"{name}.hist.csv"), *extra]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.fixture(scope="module")
def released(folder):
    """The label file and the PPMF file released with the same seed, started together (two cores)."""
    runs = {
        "labels": start(folder, "persons.csv", "labels"),
        "ppmf": start(folder, "persons-ppmf.csv", "ppmf", "--layout", "ppmf"),
    }
    for proc in runs.values():
        _, err = proc.communicate(timeout=180)
        assert proc.returncode == 0, err
    return folder


def test_the_same_persons_in_either_layout_give_the_same_release(released):
    assert (released / "labels.hist.csv").read_bytes() == (released / "ppmf.hist.csv").read_bytes()
    labels = pd.read_csv(released / "labels.csv", dtype=str)
    ppmf = pd.read_csv(released / "ppmf.csv", dtype=str)
    assert list(ppmf.columns) == list(PPMF_COLUMNS)
    assert read_ppmf(ppmf).equals(labels)  # the PPMF microdata are the label microdata, in codes


def test_the_ppmf_microdata_re_read_give_the_released_histograms(released):
    people = read_ppmf(released / "ppmf.csv")
    hist = pd.read_csv(released / "ppmf.hist.csv", dtype={"region": str})
    blocks = hist[hist.level == hist.level.max()].set_index(["region", *SCHEMA.names])["count"].sort_index()
    again = people.groupby(["geocode", *SCHEMA.names]).size().sort_index()
    assert np.array_equal(again.to_numpy(), blocks.to_numpy()) and list(again.index) == list(blocks.index)
    assert set(people["votingage"]) <= set(QAGE_RANGES)
    codes = pd.read_csv(released / "ppmf.csv", dtype=str)
    assert set(codes["QAGE"]) <= {"17", "18"} and set(codes["GQTYPE"]) <= {
        "000",
        "101",
        "201",
        "301",
        "401",
        "501",
        "601",
        "701",
    }


def test_the_manifest_declares_the_layout(released):
    ppmf = json.loads((released / "ppmf.manifest.json").read_text())
    labels = json.loads((released / "labels.manifest.json").read_text())
    assert ppmf["unprotected_quantities"]["declared_public_facts"]["layout"] == "ppmf"
    assert labels["unprotected_quantities"]["declared_public_facts"]["layout"] == "labels"
    assert any("QAGE 17" in note for note in ppmf["notes"]) and not any("QAGE" in n for n in labels["notes"])


def test_help_lists_every_value_of_both_layouts(capsys):
    from dpmodels.cli import main

    assert main(["release", "topdown", "--help"]) == 0
    text = capsys.readouterr().out
    for a in SCHEMA.attributes:
        assert all(f" {value} " in text for value in a.values), a.name
    assert all(f"CENRACE {code}" in text for code in cenrace_codes())
    assert "GQTYPE 701-706, 801-802, 900-904" in text and "QAGE 0-17" in text and "CENHISP 2" in text
    assert main(["release", "topdown", "--layout", "mdf", "--persons", "p.csv"]) == 2
