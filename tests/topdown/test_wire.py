"""What a TopDown solve sends to a worker (issue 25, dpmodels/topdown/wire.py).

Oracles: the problem the driver's builder makes (:func:`node_problem`), field for field and solved
by the same solver path; pickle's own byte count.  Serial, process-pool and Dask releases are
compared in tests/test_cluster.py.
"""

from __future__ import annotations

import dataclasses
import functools
import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from dpmodels import instances
from dpmodels.cluster_bench import task_bytes
from dpmodels.topdown.driver import node_problem, topdown
from dpmodels.topdown.mechanism import measure
from dpmodels.topdown.wire import SHARED_FIELDS, shared_context, ship, unship


def solves(data, meas, result):
    """Every child solve of a release, rebuilt from the released histograms as the driver built it."""
    geo, counts = data.geography, result.node_counts.tocsr()
    for p in range(geo.n_regions):
        parent = counts[p].toarray().ravel()
        if len(geo.children(p)) >= 2 and parent.any():
            yield node_problem(data, meas, p, parent)


@pytest.fixture(scope="module")
def tiny():
    data = instances.generate("topdown/synthetic", preset="tiny", seed=1)
    meas = measure(data, 1.0, rng=2)
    return data, meas, topdown(meas, data.knowledge, data.schema, data.geography)


def same(a, b) -> bool:
    """Deep equality of arrays, sparse matrices, dataclasses and containers of them."""
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and a.shape == b.shape and np.array_equal(a, b)
    if sp.issparse(a):
        return sp.issparse(b) and a.shape == b.shape and (a != b).nnz == 0
    if dataclasses.is_dataclass(a):
        return type(a) is type(b) and all(same(getattr(a, f.name), getattr(b, f.name)) for f in dataclasses.fields(a))
    if isinstance(a, list | tuple):
        return type(a) is type(b) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return a == b


def assert_same_problem(back, problem):
    """Every field equal; the shared context the very objects of the run."""
    for f in dataclasses.fields(problem):
        if f.name in SHARED_FIELDS:
            assert getattr(back, f.name) is getattr(problem, f.name)
        else:
            assert same(getattr(back, f.name), getattr(problem, f.name)), f.name


@functools.cache
def census(seed: int):
    return instances.generate("topdown/synthetic", preset="tiny", seed=seed)


@settings(max_examples=3, deadline=None)
@given(seed=st.integers(0, 2), noise=st.integers(0, 2**32), epsilon=st.sampled_from([0.5, 2.0]))
def test_a_shipped_problem_comes_back_field_for_field(seed, noise, epsilon):
    data = census(seed)
    meas = measure(data, epsilon, rng=noise)
    result = topdown(meas, data.knowledge, data.schema, data.geography)
    for problem in solves(data, meas, result):
        shipped = ship(problem)
        assert all(getattr(shipped, name) in (None, ()) for name in SHARED_FIELDS)  # the context stays home
        back = unship(pickle.loads(pickle.dumps(shipped)), shared_context(problem))
        assert_same_problem(back, problem)
        for name in {q.name for q in problem.children[0].queries}:  # one restricted matrix per query
            matrices = {id(q.matrix) for c in shipped.children for q in c.queries if q.name == name}
            assert len(matrices) == 1
        assert len(pickle.dumps(shipped)) < len(pickle.dumps(problem))


def test_the_shipped_problem_solves_as_the_original(tiny):
    from dpmodels.topdown.solve import NodeOptions, solve_node

    data, meas, result = tiny
    for problem in solves(data, meas, result):
        context = shared_context(problem)
        direct = solve_node(problem, NodeOptions())
        shipped = solve_node(unship(pickle.loads(pickle.dumps(ship(problem))), context), NodeOptions())
        np.testing.assert_array_equal(direct.values, shipped.values)


def test_task_bytes_count_the_pickles(tiny):
    data, meas, result = tiny
    problems = list(solves(data, meas, result))
    found = task_bytes(data, meas, result)
    assert found["tasks"] == len(problems)
    assert found["max bytes now"] == max(len(pickle.dumps(ship(p))) for p in problems)
    assert found["max bytes now"] < found["max bytes before"]
