"""PGSR instances: registry, generator shapes, CSV loading and its errors."""

import numpy as np
import pandas as pd
import pytest

from dpmodels import instances
from dpmodels.core.errors import DataValidationError
from dpmodels.instances.pgsr import census_like, census_size_distribution, from_csv, taxi_like


def test_registry_lists_and_rejects():
    names = instances.available()
    assert {"pgsr/running-example", "pgsr/census-like", "pgsr/taxi-like", "pgsr/random-tree"} <= set(names)
    with pytest.raises(DataValidationError, match="unknown name"):
        instances.load("pgsr/nope")
    with pytest.raises(DataValidationError, match="has no options"):
        instances.generate("pgsr/taxi-like", colour="red")
    with pytest.raises(DataValidationError, match="fixed instance"):
        instances.generate("pgsr/running-example")


def test_census_like_full_shape():
    d = census_like(seed=0, scale=0.01)
    assert d.hierarchy.level_sizes().tolist() == [1, 52, 3144] and d.N == 1000
    assert d.G == pytest.approx(1_176_304, rel=1e-3)  # households x scale, plus 50 outliers
    sizes = np.arange(1, d.N + 1)
    assert 2.0 < (d.counts[0] * sizes).sum() / d.G < 3.2  # mean household size
    assert d.counts[0, 999] <= 50 and d.counts[0, 100:].sum() >= 1  # outliers reach large sizes
    p = census_size_distribution(1000)
    assert p.sum() == pytest.approx(1) and np.all(np.diff(p[6:]) <= 0)
    ratio = p[8:12] / p[7:11]
    assert np.allclose(ratio, ratio[0])  # the tail keeps a constant consecutive ratio


def test_taxi_like_shape_and_truncation():
    d = taxi_like(seed=0, N=50)
    assert d.hierarchy.level_sizes().tolist() == [1, 6, 263] and d.N == 50
    assert 0 < d.G < 13_282  # taxis with more than N pickups are removed
    small = taxi_like(seed=0, N=5)
    assert small.G < d.G
    with pytest.raises(DataValidationError, match="scale"):
        taxi_like(scale=0)


def test_generators_are_seeded():
    a, b = taxi_like(seed=4, N=10), taxi_like(seed=4, N=10)
    np.testing.assert_array_equal(a.counts, b.counts)
    assert not np.array_equal(a.counts, taxi_like(seed=5, N=10).counts)


def test_csv_round_trip_long_wide_and_records(tmp_path, running_example):
    h = running_example.hierarchy
    (tmp_path / "h.csv").write_text("region,parent\nUS,\nGA,US\nNY,US\n")
    (tmp_path / "long.csv").write_text("region,size,count\nGA,1,2\nGA,3,1\nNY,1,1\nNY,2,1\nNY,3,1\n")
    long = from_csv(tmp_path / "h.csv", counts=tmp_path / "long.csv", N=5)
    np.testing.assert_array_equal(long.counts, running_example.counts)
    wide = pd.DataFrame(running_example.counts[1:], columns=[1, 2, 3, 4, 5])
    wide.insert(0, "region", ["GA", "NY"])
    wide.to_csv(tmp_path / "wide.csv", index=False)
    np.testing.assert_array_equal(
        from_csv(tmp_path / "h.csv", counts=tmp_path / "wide.csv").counts, running_example.counts
    )
    rec = instances.data_path("pgsr/running_example_records.csv")
    np.testing.assert_array_equal(from_csv(tmp_path / "h.csv", records=rec, N=5).counts, running_example.counts)
    assert h.names == long.hierarchy.names


@pytest.mark.parametrize(
    "content, message",
    [
        ("region,size,count\nGA,1,-2\n", "negative count"),
        ("region,size,count\nGA,1,2\nGA,1,3\n", "appears twice"),
        ("region,size,count\nGA,-1,2\n", "sizes must be >= 0"),
        ("region,size,count\nGA,1.5,2\n", "integers"),
        ("region,size,count\nUS,1,9\nGA,1,2\nNY,1,1\n", "differ from the sum"),
        ("region,1,2\nGA,1,0\nGA,0,1\n", "region 'GA' appears twice"),
        ("region,size\nGA,1\n", "column 'size' is not a group size"),
    ],
)
def test_csv_errors_name_the_file_and_problem(tmp_path, content, message):
    (tmp_path / "h.csv").write_text("region,parent\nUS,\nGA,US\nNY,US\n")
    (tmp_path / "c.csv").write_text(content)
    with pytest.raises(DataValidationError, match=message) as err:
        from_csv(tmp_path / "h.csv", counts=tmp_path / "c.csv")
    assert "c.csv" in str(err.value)


def test_csv_missing_files_and_columns(tmp_path):
    with pytest.raises(DataValidationError, match="file not found"):
        from_csv(tmp_path / "none.csv", counts=tmp_path / "none.csv")
    (tmp_path / "h.csv").write_text("name,up\nUS,\n")
    with pytest.raises(DataValidationError, match="missing columns"):
        from_csv(tmp_path / "h.csv", counts=tmp_path / "h.csv")
    with pytest.raises(DataValidationError, match="exactly one"):
        from_csv(tmp_path / "h.csv")
