"""Measurement files (issue 24): PGSR's noisy values to a file and back, any tool's noise welcome.

Oracles: the values and scales :func:`measure` drew (a round trip changes nothing, CSV or Parquet);
``dpmodels release pgsr`` with the same seed (``measure`` + ``postprocess`` give the same bytes);
the hierarchy's own consistency (an OpenDP-made file post-processed from the command line gives
counts whose children sum to their parent and whose root sums to G).
"""

from __future__ import annotations

import json
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from release_cases import pgsr as pgsr_case

from dpmodels import cli, instances
from dpmodels.core.errors import DataValidationError
from dpmodels.core.measurements import MeasurementSet, read_measurements, write_measurements
from dpmodels.pgsr import GroupSizeData
from dpmodels.pgsr.measurements import measurement_facts, measurement_set, noisy_from_measurements
from dpmodels.pgsr.mechanism import measure


@pytest.fixture(scope="module")
def data():
    example = instances.load("pgsr/census-like", seed=0, scale=0.001, N=20, n_states=4, n_counties=30, outliers=3)
    return GroupSizeData(example.hierarchy, example.counts, N_declared=True)


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
@pytest.mark.parametrize("kind", ["counts", "cumulative", "chain"])
def test_a_measurement_survives_its_file(data, tmp_path, kind, suffix):
    noisy, ledger = measure(data, Fraction(1, 2), kind, rng=11)
    write_measurements(measurement_set(noisy, "a test"), tmp_path / f"m{suffix}")
    back = noisy_from_measurements(read_measurements(tmp_path / f"m{suffix}", family="pgsr"))
    assert np.array_equal(back.values, noisy.values) and back.level_scales == noisy.level_scales
    assert back.kind == kind and back.G == noisy.G and back.hierarchy.names == noisy.hierarchy.names
    assert Fraction(back.info["budget"]["epsilon"]) == ledger.total_epsilon == Fraction(1, 2)


def test_rows_in_any_order_give_the_same_values(data):
    noisy, _ = measure(data, 1, "counts", rng=2)
    found = measurement_set(noisy, "a test")
    shuffled = found.table.sample(frac=1, random_state=4)
    again = noisy_from_measurements(MeasurementSet(shuffled, "pgsr", found.public, found.source))
    assert np.array_equal(again.values, noisy.values)


def _set(data, change) -> MeasurementSet:
    noisy, _ = measure(data, 1, "counts", rng=2)
    found = measurement_set(noisy, "a test")
    return MeasurementSet(change(found.table.copy()), "pgsr", found.public, found.source)


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda t: t.iloc[1:], "no value for node"),
        (lambda t: t.assign(variance=np.where(t.index == 5, 99.0, t["variance"])), "not the discrete-laplace variance"),
        (lambda t: t.assign(scale="wide"), "column 'scale'"),
        (lambda t: t.assign(mechanism="coin flip"), "mechanism"),
        (lambda t: t.assign(variance=-1.0), "must be > 0"),
        (lambda t: t.assign(cell=np.where(t.index == 3, "0", t["cell"])), "not a size"),
        (lambda t: pd.concat([t, t.iloc[[0]]]), "measured twice"),
        (lambda t: t.assign(query="cumulative"), "not the declared kind"),
        (lambda t: t.assign(budget="lots"), "budget"),
    ],
)
def test_a_malformed_measurement_set_is_refused_by_name(data, change, message):
    with pytest.raises(DataValidationError, match=message):
        noisy_from_measurements(_set(data, change))


def test_a_set_for_another_family_or_format_is_refused(data, tmp_path):
    noisy, _ = measure(data, 1, "counts", rng=2)
    table, facts = write_measurements(measurement_set(noisy, "a test"), tmp_path / "m.csv")
    with pytest.raises(DataValidationError, match="not 'topdown'"):
        read_measurements(table, family="topdown")
    facts.write_text(json.dumps(json.loads(facts.read_text()) | {"format": "other/9"}))
    with pytest.raises(DataValidationError, match="format"):
        read_measurements(table)


@pytest.mark.parametrize("kind, mechanism", [("counts", "M_H^dp"), ("cumulative", "M_c^dp")])
def test_measure_then_postprocess_is_the_release(tmp_path, kind, mechanism):
    case = pgsr_case(tmp_path)
    data = ["--hierarchy", str(case.inputs["--hierarchy"]), "--records", str(case.inputs["--records"]), "--N", "4"]
    seeded = ["--epsilon", "1", "--seed", "5", "--not-private", "-q"]
    released, measured, post = tmp_path / "release.csv", tmp_path / "m.parquet", tmp_path / "post.csv"
    assert cli.main(["release", "pgsr", *data, "--mechanism", mechanism, "--out", str(released), *seeded]) == 0
    assert cli.main(["measure", "pgsr", *data, "--kind", kind, "--out", str(measured), *seeded]) == 0
    argv = ["postprocess", "pgsr", "--measurements", str(measured), "--mechanism", mechanism, "--out", str(post)]
    assert cli.main([*argv, "-q"]) == 0
    assert post.read_bytes() == released.read_bytes()
    manifest = json.loads(post.with_name("post.manifest.json").read_text())
    assert "dpmodels measure pgsr" in manifest["noise_source"] and manifest["budget_stated_by_the_measurement_file"]


def test_opendp_noise_is_post_processed_from_the_command_line(tmp_path, data):
    """Noise drawn by OpenDP's exact discrete Laplace, in a file this project never wrote a value of."""
    import opendp.prelude as dp

    dp.enable_features("contrib")
    h, n_levels = data.hierarchy, data.hierarchy.n_levels
    scale = 2 * n_levels  # counts: L1 sensitivity 2 per level, epsilon 1/L per level
    laplace = dp.m.make_laplace(dp.vector_domain(dp.atom_domain(T=int)), dp.l1_distance(T=int), scale=float(scale))
    noisy = np.array(laplace(data.counts.ravel().tolist())).reshape(data.counts.shape)
    table = pd.DataFrame(
        {
            "node": np.repeat(h.names, data.N),
            "query": "counts",
            "cell": np.tile(np.arange(1, data.N + 1), h.n_regions),
            "value": noisy.ravel(),
            "mechanism": "discrete-laplace",
            "scale": str(scale),
            "variance": 2 * np.exp(-1 / scale) / (1 - np.exp(-1 / scale)) ** 2,
            "budget_unit": "epsilon",
            "budget": f"1/{n_levels}",
        }
    ).sample(frac=1, random_state=0)  # any row order
    table.to_csv(tmp_path / "opendp.csv", index=False)
    facts = {"format": "dpmodels-measurements/1", "family": "pgsr", "source": "OpenDP make_laplace"}
    facts["public"] = measurement_facts(h, data.N, data.G)
    (tmp_path / "opendp.facts.json").write_text(json.dumps(facts))
    out = tmp_path / "released.csv"
    assert cli.main(["postprocess", "pgsr", "--measurements", str(tmp_path / "opendp.csv"), "--out", str(out)]) == 0
    released = pd.read_csv(out, dtype={"region": str})
    counts = released.pivot(index="region", columns="size", values="count").loc[list(h.names)].to_numpy()
    assert int(np.abs(h.consistency_residual(counts)).sum()) == 0 and counts[0].sum() == data.G
    assert (counts >= 0).all()
    assert json.loads((tmp_path / "released.manifest.json").read_text())["noise_source"] == "OpenDP make_laplace"


def test_a_release_ending_in_parquet_is_written_as_parquet(tmp_path):
    case = pgsr_case(tmp_path)
    seeded = ["--epsilon", "1", "--seed", "5", "--not-private", "-q"]
    argv = [a for a in case.argv if a != str(case.outputs["--out"])][:-1]  # without --out FILE
    assert cli.main([*argv, "--out", str(tmp_path / "r.csv"), *seeded]) == 0
    assert cli.main([*argv, "--out", str(tmp_path / "rp.parquet"), *seeded]) == 0
    as_csv = pd.read_csv(tmp_path / "r.csv", dtype={"region": str})
    as_parquet = pd.read_parquet(tmp_path / "rp.parquet").astype({"region": str})
    pd.testing.assert_frame_equal(as_parquet, as_csv, check_dtype=False)


def test_a_discrete_gaussian_measurement_survives_its_file(data, tmp_path):
    """zCDP rows: mechanism discrete-gaussian, scale sigma^2, budget in rho; the domains' scales come back."""
    noisy, ledger = measure(data, None, "counts", rng=4, noise="discrete-gaussian", rho=Fraction(1, 2))
    rows = measurement_set(noisy, "a test")
    assert set(rows.table["mechanism"]) == {"discrete-gaussian"} and set(rows.table["budget_unit"]) == {"rho"}
    write_measurements(rows, tmp_path / "g.parquet")
    back = noisy_from_measurements(read_measurements(tmp_path / "g.parquet", family="pgsr"))
    assert np.array_equal(back.values, noisy.values) and back.level_scales == noisy.level_scales
    assert Fraction(back.info["budget"]["rho"]) == ledger.total_rho == Fraction(1, 2)


def test_measure_under_zcdp_then_postprocess_is_the_release(tmp_path):
    case = pgsr_case(tmp_path)
    data = ["--hierarchy", str(case.inputs["--hierarchy"]), "--records", str(case.inputs["--records"]), "--N", "4"]
    zcdp = ["--noise", "discrete-gaussian", "--rho", "1/2", "--seed", "5", "--not-private", "-q"]
    released, measured, post = tmp_path / "release.csv", tmp_path / "m.csv", tmp_path / "post.csv"
    assert cli.main(["release", "pgsr", *data, "--out", str(released), *zcdp]) == 0
    assert cli.main(["measure", "pgsr", *data, "--out", str(measured), *zcdp]) == 0
    assert cli.main(["postprocess", "pgsr", "--measurements", str(measured), "--out", str(post), "-q"]) == 0
    assert post.read_bytes() == released.read_bytes()
    ledger = json.loads((tmp_path / "m.ledger.json").read_text())
    assert "rho" in json.dumps(ledger)
