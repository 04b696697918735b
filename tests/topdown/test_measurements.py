"""TopDown measurement files (issue 24): noisy answers to a file and back, any tool's noise welcome.

Oracles: the driver's own result on the measurements :func:`measure` drew (a round trip through
CSV or Parquet gives the same release); ``dpmodels release topdown`` with the same seed
(``measure`` + ``postprocess`` give the same bytes); the public constraints (a file whose noise
is a Gaussian drawn elsewhere still gives a release with 0 broken hard constraints).
"""

from __future__ import annotations

import json
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from release_cases import topdown as topdown_case

from dpmodels import cli
from dpmodels.core.errors import DataValidationError
from dpmodels.core.measurements import MeasurementSet, read_measurements, write_measurements
from dpmodels.instances.topdown import from_csv
from dpmodels.topdown.driver import check_release, topdown
from dpmodels.topdown.measurements import measurement_set, measurements_from_set, public_facts
from dpmodels.topdown.mechanism import measure
from dpmodels.topdown.release import HARD_CHECKS


@pytest.fixture(scope="module")
def case(tmp_path_factory):
    return topdown_case(tmp_path_factory.mktemp("topdown"))


@pytest.fixture(scope="module")
def data(case):
    return from_csv(case.inputs["--persons"], races=7, blocks=case.inputs["--blocks"])


@pytest.fixture(scope="module")
def measured(data):
    found = measure(data, 1, rng=3, records_may_leave=True)
    return found, measurement_set(found, public_facts(data.schema, data.geography, data.knowledge, found.strategy), "t")


def _leaves(result):
    return result.leaf_counts.toarray() if hasattr(result.leaf_counts, "toarray") else np.asarray(result.leaf_counts)


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_a_measurement_file_gives_the_same_release(data, measured, tmp_path, suffix):
    found, rows = measured
    write_measurements(rows, tmp_path / f"m{suffix}")
    back, public = measurements_from_set(read_measurements(tmp_path / f"m{suffix}", family="topdown"))
    assert back.level_epsilons == found.level_epsilons and sum(back.level_epsilons) == 1
    expected = topdown(found, data.knowledge, data.schema, data.geography)
    again = topdown(back, public.knowledge, public.schema, public.geography)
    assert np.array_equal(_leaves(again), _leaves(expected))


def test_rows_in_any_order_are_matched_by_label(measured):
    found, rows = measured
    shuffled = MeasurementSet(rows.table.sample(frac=1, random_state=5), "topdown", rows.public, rows.source)
    back, _ = measurements_from_set(shuffled)
    for ours, theirs in zip(found.by_node, back.by_node, strict=True):
        assert [(m.query, m.values.tolist(), m.variance) for m in ours] == [
            (m.query, m.values.tolist(), m.variance) for m in theirs
        ]


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda t: t.iloc[1:], "needs cells"),
        (
            lambda t: t.assign(
                variance=np.where(t.index == 4, 5.0, t["variance"]),
                mechanism=np.where(t.index == 4, "gaussian", t["mechanism"]),
            ),
            "2 variances",
        ),
        (lambda t: t.assign(query=np.where(t.index == 0, "age", t["query"])), "not declared"),
    ],
)
def test_a_malformed_set_is_refused_by_name(measured, change, message):
    _, rows = measured
    with pytest.raises(DataValidationError, match=message):
        measurements_from_set(MeasurementSet(change(rows.table.copy()), "topdown", rows.public, rows.source))


def test_gaussian_noise_drawn_elsewhere_gives_a_consistent_release(data, measured):
    """Another tool's noise: a float Gaussian of its own variance per query set (the driver weighs it)."""
    _, rows = measured
    rng = np.random.default_rng(0)
    hist = data.node_histograms_all()
    matrices = {q.name: q.matrix for q in measured[0].strategy.queries}
    exact = rows.table.copy()
    for (node, query), part in exact.groupby(["node", "query"]):
        answers = hist[data.geography.names.index(node)] @ matrices[query].T
        answers = answers.toarray().ravel() if sp.issparse(answers) else np.asarray(answers).ravel()
        exact.loc[part.index, "value"] = answers[part["cell"].astype(int).to_numpy()]
    sigma = np.where(exact["query"] == "detailed", 3.0, 1.5)
    table = exact.assign(
        value=exact["value"] + rng.normal(0, sigma),
        mechanism="gaussian",
        scale=(sigma**2).astype(str),
        variance=sigma**2,
        budget_unit="rho",
        budget="1/20",
    )
    back, public = measurements_from_set(MeasurementSet(table, "topdown", rows.public, "numpy, float Gaussian"))
    result = topdown(back, public.knowledge, public.schema, public.geography)
    checks = check_release(result, public.knowledge, edits=False)
    assert all(checks.get(name, 0) == 0 for name in HARD_CHECKS)


def test_measure_then_postprocess_is_the_release(case, tmp_path):
    inputs = ["--persons", str(case.inputs["--persons"]), "--blocks", str(case.inputs["--blocks"]), "--races", "7"]
    seeded = ["--epsilon", "1", "--seed", "3", "--not-private", "-q"]
    micro, hist = tmp_path / "r.csv", tmp_path / "r-hist.csv"
    assert (
        cli.main(["release", "topdown", *inputs, "--out-microdata", str(micro), "--out-histograms", str(hist), *seeded])
        == 0
    )
    assert cli.main(["measure", "topdown", *inputs, "--out", str(tmp_path / "m.parquet"), *seeded]) == 0
    post_micro, post_hist = tmp_path / "p.csv", tmp_path / "p-hist.parquet"
    argv = ["postprocess", "topdown", "--measurements", str(tmp_path / "m.parquet")]
    argv += ["--out-microdata", str(post_micro), "--out-histograms", str(post_hist), "-q", "--no-progress"]
    assert cli.main(argv) == 0
    assert post_micro.read_bytes() == micro.read_bytes()
    pd.testing.assert_frame_equal(
        pd.read_parquet(post_hist).astype(str), pd.read_csv(hist, dtype=str), check_dtype=False
    )
    manifest = json.loads((tmp_path / "p.manifest.json").read_text())
    assert "dpmodels measure topdown" in manifest["noise_source"] and manifest["budget_stated_by_the_measurement_file"]
    release = json.loads(micro.with_name("r.manifest.json").read_text())["details"]  # the failsafe's nodes, both
    assert manifest["failsafe nodes"] == release["failsafe nodes"]
    assert len(manifest["failsafe nodes"]) == manifest["checks"]["failsafe parents"]


def test_a_zcdp_measurement_file_gives_the_same_release(data, tmp_path):
    found = measure(data, None, noise="discrete-gaussian", rng=3, records_may_leave=True, rho=Fraction(1, 2))
    public = public_facts(data.schema, data.geography, data.knowledge, found.strategy)
    rows = measurement_set(found, public, "t")
    assert set(rows.table["mechanism"]) == {"discrete-gaussian"} and set(rows.table["budget_unit"]) == {"rho"}
    write_measurements(rows, tmp_path / "g.csv")
    back, inputs = measurements_from_set(read_measurements(tmp_path / "g.csv", family="topdown"))
    assert Fraction(back.info["budget"]["rho"]) == found.ledger.total_rho == Fraction(1, 2)
    expected = topdown(found, data.knowledge, data.schema, data.geography)
    again = topdown(back, inputs.knowledge, inputs.schema, inputs.geography)
    assert np.array_equal(_leaves(again), _leaves(expected))


def test_measure_under_zcdp_then_postprocess_is_the_release(case, tmp_path):
    inputs = ["--persons", str(case.inputs["--persons"]), "--blocks", str(case.inputs["--blocks"]), "--races", "7"]
    zcdp = ["--noise", "discrete-gaussian", "--rho", "1/2", "--seed", "3", "--not-private", "-q"]
    micro, hist = tmp_path / "r.csv", tmp_path / "r-hist.csv"
    argv = ["release", "topdown", *inputs, "--out-microdata", str(micro), "--out-histograms", str(hist)]
    assert cli.main([*argv, *zcdp, "--no-progress"]) == 0
    assert cli.main(["measure", "topdown", *inputs, "--out", str(tmp_path / "m.csv"), *zcdp]) == 0
    post = ["postprocess", "topdown", "--measurements", str(tmp_path / "m.csv"), "-q", "--no-progress"]
    post += ["--out-microdata", str(tmp_path / "p.csv"), "--out-histograms", str(tmp_path / "p-hist.csv")]
    assert cli.main(post) == 0
    assert (tmp_path / "p.csv").read_bytes() == micro.read_bytes()
    assert (tmp_path / "p-hist.csv").read_bytes() == hist.read_bytes()
    manifest = json.loads((tmp_path / "p.manifest.json").read_text())
    assert manifest["budget_stated_by_the_measurement_file"] == {"rho": "1/2"}
