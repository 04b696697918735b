"""The tree GLS of PGSR's noisy counts (dpmodels.pgsr.gls) against a dense GLS solved by numpy.

Oracle: ``tests/helpers/gls_oracle.py`` (weighted least squares on the leaves' cells, ``G`` as an
equality, ``numpy.linalg.lstsq``).  Also: a measurement file gives the same estimate, the level
variances are the noises' exact variances, and other kinds are refused.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from gls_oracle import dense_gls
from hypothesis import given, settings
from hypothesis import strategies as st

from dpmodels import instances
from dpmodels.core.errors import DataValidationError
from dpmodels.core.gaussian import discrete_gaussian_variance
from dpmodels.core.noise import double_geometric_variance
from dpmodels.pgsr.gls import gls_estimate, gls_problem, level_variances
from dpmodels.pgsr.measurements import measurement_set
from dpmodels.pgsr.mechanism import measure


@settings(max_examples=5, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(2, 4), st.integers(1, 4))
def test_counts_give_the_dense_gls_and_sum_to_g(seed, depth, n_sizes):
    data = instances.generate("pgsr/random-tree", seed=seed % 1000, depth=depth, N=n_sizes, G=9)
    noisy, _ = measure(data, 1.5, "counts", rng=np.random.default_rng(seed))
    problem = gls_problem(noisy)
    result = gls_estimate(noisy)
    est, var, total_var = dense_gls(problem)
    np.testing.assert_allclose(result.estimate, est, rtol=1e-8, atol=1e-8 * max(1.0, np.abs(est).max()))
    np.testing.assert_allclose(result.variance, var, rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(result.total_variance, total_var, rtol=1e-8, atol=1e-8)
    assert result.totals[0] == pytest.approx(data.G, abs=1e-9)


def test_level_variances_are_the_noises_and_a_file_gives_the_same_estimate():
    data = instances.generate("pgsr/random-tree", seed=4, depth=3, N=3, G=12)
    laplace, _ = measure(data, 2, "counts", rng=np.random.default_rng(0))
    assert level_variances(laplace) == tuple(double_geometric_variance(s) for s in laplace.level_scales)
    gaussian, _ = measure(data, None, "counts", rng=np.random.default_rng(0), noise="discrete-gaussian", rho=1)
    sigma2 = gaussian.info["sigma2_per_level"]
    assert level_variances(gaussian) == tuple(discrete_gaussian_variance(Fraction(s)) for s in sigma2)
    for noisy in (laplace, gaussian):
        from_file = gls_estimate(measurement_set(noisy, "test"))
        direct = gls_estimate(noisy)
        np.testing.assert_allclose(from_file.estimate, direct.estimate, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(from_file.variance, direct.variance, rtol=1e-12)


def test_other_kinds_and_bad_variances_are_refused():
    data = instances.generate("pgsr/random-tree", seed=1, depth=2, N=2, G=5)
    cumulative, _ = measure(data, 1, "cumulative", rng=np.random.default_rng(0))
    with pytest.raises(DataValidationError, match="counts"):
        gls_estimate(cumulative)
    counts, _ = measure(data, 1, "counts", rng=np.random.default_rng(0))
    with pytest.raises(DataValidationError, match="variances"):
        gls_estimate(counts, variances=[1.0, -1.0])


def test_a_file_s_variances_are_read_region_by_region():
    """A level whose regions state different variances (another tool's noise): each region's own
    variance enters the GLS (oracle: the dense GLS with those variances); two in one region are refused."""
    from dataclasses import replace

    data = instances.generate("pgsr/random-tree", seed=4, depth=3, N=3, G=12)
    noisy, _ = measure(data, 2, "counts", rng=np.random.default_rng(0))
    found = measurement_set(noisy, "test")
    names = list(data.hierarchy.names)
    own = {name: 1.0 + 3.0 * (i % 3) for i, name in enumerate(names)}  # differs within a level
    table = found.table.assign(variance=found.table["node"].map(own), mechanism="gaussian")  # another tool's
    result = gls_estimate(replace(found, table=table))
    region_variances = np.array([own[name] for name in names])
    est, var, _ = dense_gls(gls_problem(noisy, region_variances=region_variances))
    np.testing.assert_allclose(result.estimate, est, rtol=1e-8, atol=1e-8 * max(1.0, np.abs(est).max()))
    np.testing.assert_allclose(result.variance, var, rtol=1e-8, atol=1e-12)
    two = table.copy()
    two.loc[two.index[0], "variance"] = 99.0  # one cell of the first region
    with pytest.raises(DataValidationError, match="more than one variance"):
        gls_estimate(replace(found, table=two))
    from dpmodels.pgsr.measurements import noisy_from_measurements

    with pytest.raises(DataValidationError, match="MeasurementSet"):
        gls_estimate(noisy_from_measurements(replace(found, table=table)))
