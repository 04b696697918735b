"""Weights from measurement files and per-level budgets (issue 24), and the counts table's round trip.

Oracles: the measurement table's own ``variance`` column, read by label with pandas (the weights are
``min variance / variance``); the discrete Laplace variance of each level's scale, computed here from
the ledger's per-level epsilons; the unweighted and weighted exact optima (:func:`solve_exact` on a
:class:`NoisyGroupSizes` built by hand); ``dpmodels release`` against ``measure`` + ``postprocess``
under one seed; the data's own counts after ``to_frame`` and ``from_frame``.
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
from dpmodels.core.measurements import MeasurementSet, read_measurements
from dpmodels.core.noise import double_geometric_variance
from dpmodels.core.session import PrivacySession
from dpmodels.instances.pgsr import from_frame
from dpmodels.pgsr import GroupSizeData, NoisyGroupSizes
from dpmodels.pgsr.algorithms import solve_exact
from dpmodels.pgsr.data import chain_cumulative
from dpmodels.pgsr.measurements import measurement_set, noisy_from_measurements
from dpmodels.pgsr.mechanism import measure, run_mechanism
from dpmodels.pgsr.postprocessing import postprocess
from dpmodels.pgsr.release import release, release_facts


@pytest.fixture(scope="module")
def data():
    example = instances.load("pgsr/census-like", seed=0, scale=0.001, N=6, n_states=3, n_counties=12, outliers=0)
    return GroupSizeData(example.hierarchy, example.counts, N_declared=True)


def _mixed(data, factor: float = 100.0, seed: int = 3) -> MeasurementSet:
    """A counts set whose odd-numbered leaf rows state ``factor`` times the variance (a Laplace from elsewhere)."""
    noisy, _ = measure(data, 2, "counts", rng=seed)
    found = measurement_set(noisy, "a test")
    table = found.table.copy()
    leaves = {data.hierarchy.names[i] for i in data.hierarchy.leaves[1::2]}
    louder = table["node"].isin(leaves).to_numpy()
    table.loc[louder, "mechanism"] = "laplace"
    table.loc[louder, "variance"] = table.loc[louder, "variance"] * factor
    table.loc[louder, "scale"] = [str(np.sqrt(v / 2)) for v in table.loc[louder, "variance"]]
    return MeasurementSet(table.sample(frac=1, random_state=seed), "pgsr", found.public, "a test")


def test_each_value_weighs_by_its_rows_variance(data):
    measurements = _mixed(data)
    noisy = noisy_from_measurements(measurements)
    table = measurements.table
    expected = table["variance"].min() / table["variance"]
    rows = [data.hierarchy.index[node] for node in table["node"]]
    np.testing.assert_array_equal(noisy.weights[rows, table["cell"].astype(int) - 1], expected.to_numpy())
    assert "variance column" in noisy.info["weighting"]
    louder = table[table["mechanism"] == "laplace"]
    level = int(data.hierarchy.level[data.hierarchy.index[louder["node"].iloc[0]]])
    assert noisy.level_scales[level - 1] >= max(Fraction(s) for s in table["scale"].astype(str)) - Fraction(1, 10**5)


def test_one_variance_gives_no_weights_and_the_paper_release(data):
    noisy, _ = measure(data, 1, "counts", rng=2)
    back = noisy_from_measurements(measurement_set(noisy, "a test"))
    assert back.weights is None and "weighting" not in back.info
    assert np.array_equal(postprocess("M_H^dp", back).counts, postprocess("M_H^dp", noisy).counts)


def test_a_noisier_row_pulls_the_release_less(data):
    """The louder rows' values are farther from the exact weighted optimum than from the unweighted one,
    and the other rows nearer (the exchange argument of tests/pgsr/test_weights.py, on a file)."""
    measurements = _mixed(data)
    weighted = noisy_from_measurements(measurements)
    plain = weighted.with_weights(None)
    louder = weighted.weights < 1
    a = postprocess("M_H^dp", weighted, domains="full").counts
    b = postprocess("M_H^dp", plain, domains="full").counts
    assert a.tolist() != b.tolist()  # 100x the variance on half the leaves changes the release
    assert ((a - plain.values) ** 2)[louder].sum() >= ((b - plain.values) ** 2)[louder].sum()
    assert ((a - plain.values) ** 2)[~louder].sum() <= ((b - plain.values) ** 2)[~louder].sum()
    by_hand = solve_exact(NoisyGroupSizes(data.hierarchy, plain.values, data.G, weights=np.where(louder, 0.01, 1.0)))
    assert by_hand.objective == pytest.approx(weighted.squared_error(a), rel=1e-12)


def test_postprocess_command_states_the_weights(data, tmp_path):
    measurements = _mixed(data)
    measurements.table.to_csv(tmp_path / "m.csv", index=False)
    (tmp_path / "m.facts.json").write_text(json.dumps(measurements.facts()))
    out = tmp_path / "released.csv"
    assert cli.main(["postprocess", "pgsr", "--measurements", str(tmp_path / "m.csv"), "--out", str(out), "-q"]) == 0
    weights = json.loads((tmp_path / "released.manifest.json").read_text())["weights"]
    assert weights["weighted"] is True and "variance" in weights["rule"] and weights["distinct_weights"] == 2
    released = pd.read_csv(out, dtype={"region": str}).pivot(index="region", columns="size", values="count")
    counts = released.loc[list(data.hierarchy.names)].to_numpy()
    expected = postprocess("M_H^dp", noisy_from_measurements(read_measurements(tmp_path / "m.csv"))).counts
    assert np.array_equal(counts, expected)
    assert not data.hierarchy.consistency_residual(counts).any() and counts[0].sum() == data.G


def test_algorithm_2_refuses_a_file_whose_weights_vary_within_a_region(data, tmp_path):
    noisy, _ = measure(data, 2, "cumulative", rng=1)
    found = measurement_set(noisy, "a test")
    table = found.table.copy()
    table.loc[table.index[-1], ["mechanism", "variance"]] = ["laplace", 1e6]
    with pytest.raises(DataValidationError, match="needs one weight per region") as err:
        postprocess("M_c^dp", noisy_from_measurements(MeasurementSet(table, "pgsr", found.public, "a test")))
    assert err.value.field == "weights"


# ---------------------------------------------------------------- per-level budgets
def test_a_release_with_level_shares_weighs_each_level_by_its_variance(data):
    session = PrivacySession(data, epsilon=1, seed=7, not_private=True)
    result = release(session, "M_H^dp", 1, level_shares=[1, 2, 5])
    assert result.info["weights"]["weighted"] is True
    noisy, ledger = measure(data, 1, "counts", rng=7, level_shares=[1, 2, 5])
    assert [row["epsilon_exact"] for row in ledger.to_records()] == ["1/8", "1/4", "5/8"]
    variances = [double_geometric_variance(2 / Fraction(e)) for e in ("1/8", "1/4", "5/8")]  # counts: sensitivity 2
    per_cell = np.array(variances)[data.hierarchy.level - 1][:, None] * np.ones(data.N)
    by_hand = NoisyGroupSizes(data.hierarchy, noisy.values, data.G, "counts", noisy.level_scales)
    by_hand = by_hand.with_weights(min(variances) / per_cell)
    expected = solve_exact(by_hand, "truncated", None, "widen")
    assert np.array_equal(result.counts, expected.counts)  # the same draws, the same weighted optimum
    assert result.objective == pytest.approx(by_hand.squared_error(expected.counts), rel=1e-12)


def test_level_shares_are_checked_before_anything_is_charged(data):
    for bad, message in (
        ([1, 2], "one share per level"),
        ([1, 0, 1], "> 0"),
        ([1, "x", 1], "level_shares"),
        ("12", "one share"),
    ):
        session = PrivacySession(data, epsilon=1, seed=1, not_private=True)
        with pytest.raises(ValueError, match=message) as err:
            release(session, "M_H^dp", 1, level_shares=bad)
        assert err.value.field == "level_shares" and session.spent_epsilon == 0 and not session.charges


def test_release_facts_state_the_shares_and_the_gaussian_variances(data):
    facts = release_facts(data, "M_c^ch", level_shares=["1/2", 1, 1])
    assert facts.declared["level_shares"] == ["1/5", "2/5", "2/5"]
    gaussian = release_facts(data, "M_H^dp", noise="discrete-gaussian", rho=Fraction(1, 2), level_shares=[1, 1, 2])
    _, ledger = measure(
        data, None, "counts", rng=1, noise="discrete-gaussian", rho=Fraction(1, 2), level_shares=[1, 1, 2]
    )
    assert gaussian.declared["rho_per_level"] == ["1/8", "1/8", "1/4"]
    assert gaussian.declared["sigma2_per_level"] == [str(m.scale) for m in ledger.entries]
    assert "weights" in facts.post_processing


@pytest.mark.parametrize(
    "mechanism, kind, shares",
    [("M_H^dp", "counts", ["1", "3"]), ("M_c^ch", "chain", None), ("M_c^dp", "cumulative", ["1/4", "3/4"])],
)
def test_measure_then_postprocess_is_the_weighted_release(tmp_path, mechanism, kind, shares):
    """The chain's levels differ in variance even when split evenly (sensitivity |R_l| z_max): weighted both ways."""
    case = pgsr_case(tmp_path)
    data = ["--hierarchy", str(case.inputs["--hierarchy"]), "--records", str(case.inputs["--records"]), "--N", "4"]
    data += ["--level-shares", *shares] if shares else []
    seeded = ["--epsilon", "1", "--seed", "5", "--not-private", "-q"]
    released, measured, post = tmp_path / "release.csv", tmp_path / "m.csv", tmp_path / "post.csv"
    assert cli.main(["release", "pgsr", *data, "--mechanism", mechanism, "--out", str(released), *seeded]) == 0
    assert cli.main(["measure", "pgsr", *data, "--kind", kind, "--out", str(measured), *seeded]) == 0
    argv = ["postprocess", "pgsr", "--measurements", str(measured), "--mechanism", mechanism, "--out", str(post)]
    assert cli.main([*argv, "-q"]) == 0
    assert post.read_bytes() == released.read_bytes()
    posted = json.loads(post.with_name("post.manifest.json").read_text())["weights"]
    stated = json.loads(released.with_name("release.manifest.json").read_text())["details"]["weights"]
    assert posted["weighted"] is stated["weighted"] is True
    assert posted["distinct_weights"] == stated["distinct_weights"] > 1


def test_run_mechanism_weighs_only_when_asked(data):
    plain = run_mechanism("M_c^ch", data, 1, seed=4)
    weighted = run_mechanism("M_c^ch", data, 1, seed=4, weighted=True)
    assert plain.noisy.weights is None and np.array_equal(plain.noisy.values, weighted.noisy.values)
    variances = np.array([double_geometric_variance(s) for s in plain.noisy.level_scales])
    expected = (variances.min() / variances)[data.hierarchy.level - 1]
    np.testing.assert_array_equal(weighted.noisy.weights, np.repeat(expected[:, None], data.N, axis=1))
    at_weighted, at_plain = (chain_cumulative(data.hierarchy, run.release.counts) for run in (weighted, plain))
    assert weighted.noisy.squared_error(at_weighted) <= weighted.noisy.squared_error(at_plain) + 1e-9


# ---------------------------------------------------------------- the counts table, out and back in
def test_counts_to_frame_read_back_by_from_frame(data, tmp_path):
    frame = data.to_frame()
    for given in (frame, frame.sample(frac=1, random_state=2), frame.reset_index()):
        back = from_frame(data.hierarchy, counts=given, N=data.N)
        assert np.array_equal(back.counts, data.counts) and back.N_declared
    frame.to_csv(tmp_path / "c.csv")
    frame.rename(columns=str).to_parquet(tmp_path / "c.parquet")  # Parquet keeps text column names
    for path in (tmp_path / "c.csv", tmp_path / "c.parquet"):
        assert np.array_equal(from_frame(data.hierarchy, counts=path, N=data.N).counts, data.counts)


def test_a_counts_table_of_other_levels_is_refused_naming_the_column(data):
    frame = data.to_frame()
    frame.iloc[-1, 0] = 1
    with pytest.raises(DataValidationError, match=f"column 'level' of region '{frame.index[-1]}' is 1, declared 3"):
        from_frame(data.hierarchy, counts=frame, N=data.N)
