"""Grouped child totals declared from the command line and the loaders (issue 25): ``--child-groups``
on ``release``/``measure topdown``, ``child_groups`` of ``from_csv`` and of the synthetic census.

The oracle of a group's total is the persons file itself, counted with pandas by geocode prefix; the
release must hold it exactly and the manifest must list it as released exactly.
"""

import json

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st
from release_cases import topdown as topdown_case

from dpmodels import cli
from dpmodels.core.errors import DataValidationError
from dpmodels.instances.topdown import from_csv, synthetic_census
from dpmodels.topdown.production import parse_child_groups

NAME = st.text(alphabet="0123456789", min_size=1, max_size=6)


@given(st.lists(st.lists(NAME, min_size=1, max_size=4), min_size=1, max_size=4))
def test_the_written_form_reads_back_as_the_groups(groups):
    text = ";".join(",".join(group) for group in groups)
    assert parse_child_groups(text) == tuple(tuple(group) for group in groups)
    assert parse_child_groups(groups) == tuple(tuple(group) for group in groups)


@pytest.mark.parametrize("text", ["01001,", ",01001", "01001,,01003"])
def test_an_empty_region_name_is_refused_naming_the_flag(text):
    with pytest.raises(DataValidationError, match="--child-groups"):
        parse_child_groups(text)


def _persons_under(persons: pd.DataFrame, regions) -> int:
    """The oracle: persons whose geocode starts with one of the regions."""
    return int(sum(persons.geocode.str.startswith(r).sum() for r in regions))


def test_from_csv_takes_each_group_total_from_the_persons_after_the_bounding_rules(tmp_path):
    case = topdown_case(tmp_path)
    persons = pd.read_csv(case.inputs["--persons"], dtype=str)
    blocks = pd.read_csv(case.inputs["--blocks"], dtype=str)
    kept = persons[persons.geocode.isin(blocks.geocode)]
    unlisted = persons.iloc[[0]].assign(geocode="01001" + "9" * 10)  # not a declared block: left out
    pd.concat([persons, unlisted]).to_csv(case.inputs["--persons"], index=False)
    data = from_csv(case.inputs["--persons"], races=7, blocks=case.inputs["--blocks"], child_groups="01001;02001,02002")
    groups = {g.regions: g.total for g in data.knowledge.child_groups}
    assert groups == {("01001",): _persons_under(kept, ["01001"]), ("02001", "02002"): _persons_under(kept, ["02"])}


def test_a_group_that_is_not_siblings_or_not_in_the_geography_is_refused():
    with pytest.raises(DataValidationError, match="children of one parent"):
        synthetic_census(preset="tiny", child_groups="01001,02001")
    with pytest.raises(DataValidationError, match="child_groups.*01009"):
        synthetic_census(preset="tiny", child_groups=[["01009"]])
    with pytest.raises(DataValidationError, match="invariant"):  # a county's total is noisy at total_level state
        synthetic_census(preset="tiny", child_groups="01001000001")


def test_the_release_holds_the_declared_group_and_the_manifest_lists_it(tmp_path, capsys):
    case = topdown_case(tmp_path)
    argv = [*case.argv, "--child-groups", "01001", "--epsilon", "1/2", "--seed", "4", "--not-private"]
    assert cli.main(argv) == 0, capsys.readouterr().err
    persons = pd.read_csv(case.inputs["--persons"], dtype=str)
    histograms = pd.read_csv(case.outputs["--out-histograms"], dtype={"region": str})
    assert histograms.loc[histograms.region == "01001", "count"].sum() == _persons_under(persons, ["01001"])
    manifest = json.loads(case.manifest.read_text())
    assert manifest["details"]["checks"]["group totals off"] == 0
    assert "total of 01001" in json.dumps(manifest["unprotected_quantities"])


def test_the_measurement_file_carries_the_declared_group(tmp_path, capsys):
    case = topdown_case(tmp_path)
    out = tmp_path / "meas.csv"
    argv = ["measure", "topdown", *case.argv[2:8], "--child-groups", "02001,02002", "--epsilon", "1"]
    argv += ["--out", str(out), "--seed", "2", "--not-private"]
    assert cli.main(argv) == 0, capsys.readouterr().err
    facts = json.loads(out.with_suffix(".facts.json").read_text())["public"]
    persons = pd.read_csv(case.inputs["--persons"], dtype=str)
    assert facts["child_groups"] == [{"regions": ["02001", "02002"], "total": _persons_under(persons, ["02"])}]


def test_compare_keeps_the_leading_zeros_of_a_group_in_set():
    from dpmodels.topdown.commands import _load

    class Args:
        preset, set = "tiny", ["child_groups=01001", "seed=1"]

    data = _load(Args)
    assert [g.regions for g in data.knowledge.child_groups] == [("01001",)]
