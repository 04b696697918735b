"""PGSR mechanisms: noise calibration, the privacy ledger, and end-to-end properties."""

import inspect
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from dpmodels.core.errors import DataValidationError, PrivacyParameterError
from dpmodels.core.metrics import release_metrics
from dpmodels.core.noise import double_geometric_pmf
from dpmodels.instances.pgsr import taxi_like
from dpmodels.pgsr import mechanism as mech
from dpmodels.pgsr import postprocessing as post
from dpmodels.pgsr.data import NoisyGroupSizes, chain_cumulative, cumulative


@pytest.fixture(scope="module")
def taxi_small():
    return taxi_like(seed=3, scale=0.1, N=6)


@pytest.mark.parametrize(
    "kind, calibration, expected",
    [
        ("counts", "sound", lambda L, eps, R: [2 * L / eps] * L),
        ("cumulative", "sound", lambda L, eps, R: [L / eps] * L),
        ("chain", "sound", lambda L, eps, R: [L * r / eps for r in R]),
        ("chain", "paper", lambda L, eps, R: [L / eps] * L),
    ],
)
def test_noise_scales_per_mechanism(taxi_small, kind, calibration, expected):
    """Spec 2.4: lambda = Delta L / eps with Delta = 2 (counts), 1 (cumulative), |R_l| (chain)."""
    eps = Fraction("0.5")
    noisy, ledger = mech.measure(taxi_small, eps, kind, rng=0, calibration=calibration)
    L = taxi_small.L
    R = taxi_small.hierarchy.level_sizes().tolist()
    assert list(noisy.level_scales) == expected(L, eps, R)
    spent = ledger.total_epsilon
    if calibration == "sound":
        assert spent == eps
    else:  # the paper's chain calibration costs eps * sum |R_l| / L (erratum A2)
        assert spent == eps * sum(R) / L > eps


@pytest.mark.parametrize("kind", ["counts", "cumulative", "chain"])
def test_measured_noise_has_the_calibrated_law(taxi_small, kind):
    """The residual noisy - truth of each level follows the double-geometric pmf (chi-square)."""
    noisy, _ = mech.measure(taxi_small, 1.0, kind, rng=11)
    truth = {
        "counts": taxi_small.counts,
        "cumulative": cumulative(taxi_small.counts),
        "chain": chain_cumulative(taxi_small.hierarchy, taxi_small.counts),
    }[kind]
    h = taxi_small.hierarchy
    level = h.n_levels  # the largest level has enough cells for a test
    residual = (noisy.values - truth)[h.level_slice(level)].ravel()
    scale = noisy.level_scales[level - 1]
    assert np.all(residual == np.round(residual))
    edges = np.quantile(np.abs(residual), [0, 0.5, 0.8, 0.95]).astype(int)
    bins = np.unique(np.concatenate([-edges[::-1] - 1, edges]))
    support = np.arange(-20000, 20001)
    pmf = double_geometric_pmf(support, scale)
    cells = np.digitize(support, bins)
    expected = np.bincount(cells, weights=pmf, minlength=len(bins) + 1) * residual.size
    observed = np.bincount(np.digitize(residual, bins), minlength=len(bins) + 1)
    keep = expected > 5
    chi2 = stats.chisquare(observed[keep], expected[keep] * observed[keep].sum() / expected[keep].sum())
    assert chi2.pvalue > 1e-4


def test_postprocessing_never_sees_the_truth():
    """Every post-processing takes the noisy data and options only (spec 7.2 separation)."""
    for spec in post.MECHANISMS.values():
        params = list(inspect.signature(spec.post).parameters)
        assert params[0] == "noisy"
        assert not {"data", "truth", "counts"} & set(params)


@pytest.mark.parametrize("name", ["M_H", "M_H^r", "M_H^dp", "M_c", "M_c^r", "M_c^dp", "M_c^ch"])
def test_every_mechanism_runs_end_to_end(taxi_small, name):
    options = {"time_limit": 60} if name in ("M_H", "M_c") else {}
    run = mech.run_mechanism(name, taxi_small, 1.0, seed=5, **options)
    metrics = release_metrics(taxi_small.hierarchy, taxi_small.counts, run.release.counts, taxi_small.G)
    assert run.epsilon_spent == 1
    assert run.release.seconds > 0
    if name.endswith("^r"):
        assert metrics["#non-integral"] == 0  # rounded, but may be inconsistent
    else:
        assert metrics["#CV"] == metrics["#faithfulness"] == metrics["#negative"] == metrics["#non-integral"] == 0


def test_exact_mechanisms_agree_on_the_optimum(taxi_small):
    """M_H (SCIP), M_H^dp and M_dp^OP solve the same Model 1 on the same noisy data."""
    noisy, _ = mech.measure(taxi_small, 2.0, "counts", rng=7)
    scip = post.postprocess("M_H", noisy, domains="full")
    dp = post.postprocess("M_H^dp", noisy, domains="full")
    assert scip.objective == pytest.approx(dp.objective, rel=1e-9, abs=1e-6)
    small = NoisyGroupSizes(
        noisy.hierarchy, noisy.values[:, :2], int(taxi_small.counts[0, :2].sum()), level_scales=noisy.level_scales
    )
    op = post.postprocess("M_dp^OP", small, domains="truncated")
    assert op.objective == pytest.approx(post.postprocess("M_H^dp", small).objective)


def test_same_seed_same_release(taxi_small):
    a = mech.run_mechanism("M_H^dp", taxi_small, 0.5, seed=1)
    b = mech.run_mechanism("M_H^dp", taxi_small, 0.5, seed=1)
    c = mech.run_mechanism("M_H^dp", taxi_small, 0.5, seed=2)
    np.testing.assert_array_equal(a.release.counts, b.release.counts)
    assert not np.array_equal(a.noisy.values, c.noisy.values)


def test_bad_mechanism_inputs(taxi_small):
    with pytest.raises(PrivacyParameterError, match="epsilon"):
        mech.run_mechanism("M_H^dp", taxi_small, 0)
    with pytest.raises(PrivacyParameterError, match="epsilon"):
        mech.run_mechanism("M_H^dp", taxi_small, float("nan"))
    with pytest.raises(DataValidationError, match="unknown"):
        mech.run_mechanism("M_X", taxi_small, 1.0)
    with pytest.raises(DataValidationError, match="takes"):
        mech.run_mechanism("M_H^dp", taxi_small, 1.0, solver="highs")
    with pytest.raises(DataValidationError, match="calibration"):
        mech.run_mechanism("M_c^ch", taxi_small, 1.0, calibration="tight")
    noisy, _ = mech.measure(taxi_small, 1.0, "counts", rng=0)
    with pytest.raises(DataValidationError, match="needs 'chain'"):
        post.postprocess("M_c^ch", noisy)


def test_models_for_a_backend_skip_the_fingerprint_and_plugins_still_get_it(taxi_small, monkeypatch):
    """Hashing a model only serves structure plugins: a model built for clarabel is never
    fingerprinted (the hash raises here), one built for the pgsr_dp plugin still is (the plugin
    refuses a model without it, so M_H through pgsr_dp must match M_H^dp)."""
    import dpmodels.core.marker as marker

    noisy, _ = mech.measure(taxi_small, 1.0, "counts", rng=11)
    exact = post.postprocess("M_H^dp", noisy, domains="full")
    through_plugin = post.postprocess("M_H", noisy, solver="pgsr_dp", domains="full")
    assert through_plugin.objective == pytest.approx(exact.objective, rel=1e-9, abs=1e-6)

    def refuse(model):
        raise AssertionError(f"fingerprinted {model.name!r} for a backend")

    monkeypatch.setattr(marker, "model_fingerprint", refuse)
    relaxed = post.postprocess("M_H^r", noisy, solver="clarabel", domains="full")
    cumulative_noisy, _ = mech.measure(taxi_small, 1.0, "cumulative", rng=11)
    relaxed_c = post.postprocess("M_c^r", cumulative_noisy, solver="clarabel")
    assert relaxed.status == relaxed_c.status == "optimal"
    assert relaxed.objective <= exact.objective + 1e-6  # the relaxation's optimum is no worse
