"""Submodular instances: the worked examples, generators and file loaders (sparse, linear memory)."""

import tracemalloc

import numpy as np
import pytest

from dpmodels import instances
from dpmodels.core.errors import DataValidationError
from dpmodels.instances.submodular import coverage_from_file, facility_from_file
from dpmodels.submodular.data import SubmodularInstance
from dpmodels.submodular.matroids import GraphicMatroid, PartitionMatroid, UniformMatroid
from dpmodels.submodular.objectives import submodularity_violations


def test_registered_names():
    names = instances.available()
    for name in (
        "submodular/trap",
        "submodular/k-coverage-example",
        "submodular/coverage",
        "submodular/facility",
        "submodular/k-coverage",
    ):
        assert name in names


def test_worked_examples():
    trap = instances.load("submodular/trap")
    assert isinstance(trap.matroid, PartitionMatroid) and trap.matroid.r == 2
    assert trap.function([1, 2]) == 2.0 and trap.neighbour([0]) == pytest.approx(2.1)
    ex2 = instances.load("submodular/k-coverage-example")
    assert ex2.function(np.array([0, 2, 2])) == 5.0 and ex2.neighbour(np.array([0, 2, 0])) == 3.0


@pytest.mark.parametrize("kind", ["uniform", "partition", "graphic"])
def test_generators_are_seeded_and_valid(kind):
    a = instances.generate("submodular/coverage", seed=3, n=7, users=30, rank=4, matroid=kind)
    b = instances.generate("submodular/coverage", seed=3, n=7, users=30, rank=4, matroid=kind)
    assert (a.function.incidence != b.function.incidence).nnz == 0
    assert a.matroid.r == 4 and submodularity_violations(a.function) == []
    assert isinstance(
        a.matroid, {"uniform": UniformMatroid, "partition": PartitionMatroid, "graphic": GraphicMatroid}[kind]
    )
    f = instances.generate("submodular/facility", seed=1, n=7, customers=20, matroid=kind, rank=4)
    assert submodularity_violations(f.function) == []
    with pytest.raises(DataValidationError, match="shape"):
        instances.generate("submodular/coverage", sizes=3)


def test_coverage_from_a_sets_file(tmp_path):
    sets = tmp_path / "sets.txt"
    sets.write_text("# element: users\na: alice bob\nb: carol\nc: alice\n")
    weights = tmp_path / "w.txt"
    weights.write_text("alice 1\nbob 0.1\ncarol 1\n")
    inst = coverage_from_file(sets, rank=2, matroid="uniform", weights=weights, sensitivity=1.0)
    assert inst.function.n == 3 and inst.function([0, 2]) == pytest.approx(1.1) and inst.function([1, 2]) == 2.0
    assert inst.function.sensitivity == 1.0
    with pytest.raises(TypeError):  # the bound is declared, never read off the file (review F1)
        coverage_from_file(sets, rank=2, weights=weights)
    with pytest.raises(DataValidationError, match="weights"):
        coverage_from_file(sets, rank=2, weights=weights, sensitivity=0.5)
    weights.write_text("dave 1\n")
    with pytest.raises(DataValidationError, match="dave"):
        coverage_from_file(sets, rank=2, weights=weights, sensitivity=1.0)


def test_facility_from_a_similarity_file(tmp_path):
    path = tmp_path / "sim.csv"
    path.write_text("site,customer,benefit\ns1,c1,0.5\ns2,c1,0.9\ns2,c2,0.3\n")
    inst = facility_from_file(path, rank=1, sensitivity=1.0)
    assert inst.function.sensitivity == 1.0
    assert (
        inst.function.n == 2
        and inst.function([1]) == pytest.approx(1.2)
        and inst.function([0, 1]) == pytest.approx(1.2)
    )
    with pytest.raises(TypeError):  # the bound is declared, never read off the file (review F1)
        facility_from_file(path, rank=1)
    path.write_text("site,customer,benefit\ns1,c1,0.5\ns2,c1,0.9\ns2,c2,40\n")  # one customer changed
    with pytest.raises(DataValidationError, match="benefit"):
        facility_from_file(path, rank=1, sensitivity=1.0)
    assert facility_from_file(path, rank=1, sensitivity=40.0).function.sensitivity == 40.0
    path.write_text("s1,c1,0.5\ns1,c2,oops\n")
    with pytest.raises(DataValidationError, match="bad line"):
        facility_from_file(path, rank=1, sensitivity=1.0)


def test_large_sparse_file_uses_linear_memory(tmp_path):
    """1e5 elements x 5e4 users: the loader's peak memory stays near the file size, far below n^2."""
    rng = np.random.default_rng(0)
    n, users = 100_000, 50_000
    path = tmp_path / "big.txt"
    with open(path, "w") as fh:
        for _ in range(n):
            fh.write(" ".join(f"u{u}" for u in rng.integers(users, size=2)) + "\n")
    tracemalloc.start()
    inst = coverage_from_file(path, rank=10, sensitivity=1.0)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert inst.function.n == n and inst.function.incidence.nnz <= 2 * n
    assert peak < 200 * 2 * n  # bytes: O(nnz), whereas a dense n x users float matrix needs 4e10 bytes


def test_matroid_must_match_the_ground_set():
    trap = instances.load("submodular/trap")
    with pytest.raises(DataValidationError, match="matroid"):
        SubmodularInstance(trap.function, UniformMatroid(5, 2))


def test_load_of_a_generator_checks_its_options_like_generate():
    from dpmodels import instances
    from dpmodels.core.errors import DataValidationError

    assert instances.load("submodular/coverage", seed=3, n=8).function.n == 8
    with pytest.raises(DataValidationError, match="no options \\['bogus'\\]"):
        instances.load("submodular/coverage", bogus=1)
