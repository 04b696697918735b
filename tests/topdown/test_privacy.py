"""TopDown privacy: the sensitivity of a geography level, checked by brute force, and the
public knowledge, which must hold no total computed from the data beyond the invariants.

A record that changes value may also change its geography, so the neighbours of a level's
stacked answers ``[A h_1; ...; A h_m]`` include moves of one record between two nodes.
Oracles: every single-record substitution (any cell of any node to any cell of any node,
same-node moves included) applied to explicit histograms and the L1 change of the stacked
answers recomputed from them; the exact privacy loss of the double-geometric law written
out here, ``sup_y log P(y | D) / P(y | D')``.
"""

import itertools
from fractions import Fraction
from types import SimpleNamespace

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from dpmodels.core.errors import DataValidationError
from dpmodels.core.hierarchy import Hierarchy
from dpmodels.instances.topdown import synthetic_census
from dpmodels.topdown import queries
from dpmodels.topdown.data import Attribute, PublicKnowledge, Schema, TopDownData
from dpmodels.topdown.driver import node_problem, topdown
from dpmodels.topdown.mechanism import Strategy, measure
from dpmodels.topdown.queries import QuerySet, identity, marginal, total


# ---------------------------------------------------------------------- oracles
def _schema(sizes) -> Schema:
    return Schema(tuple(Attribute(f"a{i}", tuple(f"v{i}_{j}" for j in range(s))) for i, s in enumerate(sizes)))


def _stacked(hist: np.ndarray, a: np.ndarray) -> np.ndarray:
    """The level's answers: ``A h_u`` for every node u, concatenated."""
    return (hist @ a.T).ravel()


def _brute_level(a: np.ndarray, nodes: int, neighbours: str = "substitution", outside: bool = False) -> list[float]:
    """L1 change of the stacked answers for every neighbouring pair of histograms of the level.

    Substitution: one record moves from (node u, cell i) to (node v, cell j).  With
    ``outside``, one extra place holds records that are in no node of the level (a leaf
    above it); its counts are not answered.  Add/remove: one record joins a node.
    """
    places, n = nodes + int(outside), a.shape[1]
    base = np.ones((places, n))  # every (place, cell) holds a record that can move
    f = _stacked(base[:nodes], a)
    out = []
    if neighbours == "add/remove":
        for u, i in itertools.product(range(nodes), range(n)):
            other = base.copy()
            other[u, i] += 1
            out.append(np.abs(_stacked(other[:nodes], a) - f).sum())
        return out
    for (u, i), (v, j) in itertools.permutations(itertools.product(range(places), range(n)), 2):
        other = base.copy()
        other[u, i] -= 1
        other[v, j] += 1
        out.append(np.abs(_stacked(other[:nodes], a) - f).sum())
    return out


def _identity_total(n: int) -> np.ndarray:
    return np.vstack([np.eye(n), np.ones((1, n))])


# ---------------------------------------------------------------------- (a) brute force, matrices
@st.composite
def _level_cases(draw):
    sizes = draw(st.lists(st.integers(2, 3), min_size=2, max_size=3))
    if np.prod(sizes) > 18:
        sizes = sizes[:2]
    schema = _schema(sizes)
    n = schema.size
    kind = draw(st.sampled_from(["identity", "marginals", "identity+total", "binary", "integer"]))
    if kind == "identity":
        a = np.eye(n)
    elif kind == "identity+total":
        a = _identity_total(n)
    elif kind == "marginals":
        subsets = draw(
            st.lists(st.lists(st.sampled_from(schema.names), min_size=1, unique=True), min_size=1, max_size=3)
        )
        a = sp.vstack([marginal(schema, b) for b in subsets]).toarray()
    else:
        rows = draw(st.integers(1, 4))
        entries = st.integers(0, 1) if kind == "binary" else st.integers(-2, 3)
        a = np.array(draw(st.lists(entries, min_size=rows * n, max_size=rows * n)), dtype=float).reshape(rows, n)
    return a, draw(st.integers(1, 3))


@settings(max_examples=60, deadline=None)
@given(_level_cases())
def test_level_sensitivity_is_the_brute_force_maximum(case):
    """Calibrated sensitivity >= every single-record change of the level's answers, and = the max."""
    a, nodes = case
    for neighbours in ("substitution", "add/remove"):
        changes = _brute_level(a, nodes, neighbours)
        got = queries.level_sensitivity(sp.csr_matrix(a), nodes, neighbours)
        assert got >= max(changes) - 1e-12
        assert got == pytest.approx(max(changes), abs=1e-12)  # tight


@settings(max_examples=30, deadline=None)
@given(_level_cases())
def test_level_sensitivity_with_records_outside_the_level(case):
    """Leaves above the level hold records that can enter or leave its nodes."""
    a, nodes = case
    changes = _brute_level(a, nodes, outside=True)
    got = queries.level_sensitivity(sp.csr_matrix(a), nodes, holds_all=False)
    assert got == pytest.approx(max(changes), abs=1e-12)


def test_level_sensitivity_values_and_errors():
    n = 4
    a = sp.csr_matrix(_identity_total(n))
    assert queries.level_sensitivity(a, 1) == 2  # the total cancels inside one node
    assert queries.level_sensitivity(a, 2) == queries.level_sensitivity(a, 3) == 4
    assert queries.level_sensitivity(a, 2, "add/remove") == 2
    t = total(_schema([2, 2]))
    assert queries.level_sensitivity(t, 1) == 0  # the population is public at the root
    assert queries.level_sensitivity(t, 1, holds_all=False) == 1
    assert queries.level_sensitivity(t, 2) == 2  # a move between two nodes changes both totals
    for bad in (0, -1, 1.5, True, "2"):
        with pytest.raises(DataValidationError) as err:
            queries.level_sensitivity(a, bad)
        assert err.value.field == "nodes"
    with pytest.raises(DataValidationError) as err:
        queries.level_sensitivity(a, 2, "bounded")
    assert err.value.field == "neighbours"


# ---------------------------------------------------------------------- tiny data sets, through measure
def _tiny(parents: dict, leaf_counts: np.ndarray, schema: Schema) -> TopDownData:
    geo = Hierarchy.from_parent_table(parents)
    return TopDownData(schema, geo, sp.csr_matrix(leaf_counts), PublicKnowledge([int(leaf_counts.sum())], 1))


def _region_histograms(geo: Hierarchy, leaf_counts: np.ndarray) -> np.ndarray:
    """Every region's histogram by walking each leaf's ancestors."""
    out = np.zeros((geo.n_regions, leaf_counts.shape[1]))
    for k, leaf in enumerate(geo.leaves):
        node = leaf
        while node >= 0:
            out[node] += leaf_counts[k]
            node = geo.parent[node]
    return out


def _leaf_moves(geo: Hierarchy, n: int):
    """Every neighbour of an all-ones leaf table: one record moves between any two (leaf, cell)."""
    base = np.ones((len(geo.leaves), n))
    for (u, i), (v, j) in itertools.permutations(itertools.product(range(len(geo.leaves)), range(n)), 2):
        other = base.copy()
        other[u, i] -= 1
        other[v, j] += 1
        yield base, other


def _leaf_additions(counts: np.ndarray):
    """Every add/remove neighbour: one record joins one (leaf, cell)."""
    for k in range(counts.size):
        other = counts.copy()
        other.flat[k] += 1
        yield counts, other


def _level_change(geo, a, level, d1, d2) -> float:
    rows = np.flatnonzero(geo.level == level)
    h1, h2 = _region_histograms(geo, d1)[rows], _region_histograms(geo, d2)[rows]
    return float(np.abs(_stacked(h1, a) - _stacked(h2, a)).sum())


GEOGRAPHIES = {
    # levels of 1, 2 and 3 nodes
    "1-2-3": {"N": None, "A": "N", "B": "N", "a1": "A", "a2": "A", "b1": "B"},
    # a single node below the root that holds every record
    "chain": {"N": None, "A": "N", "a1": "A", "a2": "A"},
    # leaf b sits above level 3, whose one node a1 does not hold every record
    "ragged": {"N": None, "A": "N", "b": "N", "a1": "A"},
}


def _strategy(schema: Schema) -> Strategy:
    n = schema.size
    return Strategy(
        (
            QuerySet("identity+total", sp.csr_matrix(_identity_total(n))),
            QuerySet("a0", marginal(schema, ["a0"])),
            QuerySet("detailed", identity(schema)),
        ),
        ("1/2", "1/4", "1/4"),
    )


@pytest.mark.parametrize("name", sorted(GEOGRAPHIES))
@pytest.mark.parametrize("neighbours", ["substitution", "add/remove"])
def test_ledger_sensitivity_is_the_brute_force_maximum_on_tiny_data(name, neighbours):
    """The ledger's per-level sensitivity equals the largest change of that level's stacked
    answers over every single-record move between leaves (geography changes included)."""
    schema = _schema([2, 2])
    geo = Hierarchy.from_parent_table(GEOGRAPHIES[name])
    counts = np.ones((len(geo.leaves), schema.size), dtype=np.int64)
    strategy = _strategy(schema)
    m = measure(_tiny(GEOGRAPHIES[name], counts, schema), 1, strategy, neighbours=neighbours, rng=0)
    for level in range(1, geo.n_levels + 1):
        for q in strategy.queries:
            a = q.matrix.toarray()
            pairs = _leaf_moves(geo, schema.size) if neighbours == "substitution" else _leaf_additions(counts)
            worst = max(_level_change(geo, a, level, d1, d2) for d1, d2 in pairs)
            (entry,) = [e for e in m.ledger.entries if e.group == f"level {level} / {q.name}"]
            assert entry.sensitivity == Fraction(worst), (name, level, q.name)


def _leaf_moves_and_removals(geo: Hierarchy, n: int):
    """Every neighbour when a replacement record may be left out by a rule: a record moves between
    two (leaf, cell), or leaves the data (replaced by an out-of-domain record), or joins it."""
    yield from _leaf_moves(geo, n)
    base = np.ones((len(geo.leaves), n))
    for u, i in itertools.product(range(len(geo.leaves)), range(n)):
        other = base.copy()
        other[u, i] -= 1
        yield base, other
        yield other, base


@pytest.mark.parametrize("name", sorted(GEOGRAPHIES))
def test_ledger_sensitivity_covers_records_the_rules_leave_out(name):
    """With ``records_may_leave`` (a release whose rules leave out-of-domain persons out) every
    level's sensitivity is the brute-force maximum over moves *and* removals.  The ``close`` set
    (within-node substitution 1, one record 2) and the total show where this differs from pure
    substitution: at the single-node levels (the root, the chain's one state)."""
    schema = _schema([2, 2])
    geo = Hierarchy.from_parent_table(GEOGRAPHIES[name])
    counts = np.ones((len(geo.leaves), schema.size), dtype=np.int64)
    close = sp.csr_matrix(np.array([[1, 1, 1, 1], [0, 1, 1, 1]]))
    sets = (QuerySet("detailed", identity(schema)), QuerySet("close", close), QuerySet("total", total(schema)))
    strategy = Strategy(sets, ("1/2", "1/4", "1/4"))
    m = measure(_tiny(GEOGRAPHIES[name], counts, schema), 1, strategy, rng=0, records_may_leave=True)
    for level in range(1, geo.n_levels + 1):
        for q in strategy.queries:
            a = q.matrix.toarray()
            worst = max(_level_change(geo, a, level, d1, d2) for d1, d2 in _leaf_moves_and_removals(geo, schema.size))
            (entry,) = [e for e in m.ledger.entries if e.group == f"level {level} / {q.name}"]
            assert entry.sensitivity == Fraction(worst), (name, level, q.name)
    root = {e.query: e.sensitivity for e in m.ledger.entries if e.group.startswith("level 1 ")}
    assert root == {"detailed": 2, "close": 2, "total": 1}
    assert queries.level_sensitivity(close, 1) == 1  # pure substitution at the root: short once a record may leave


# ---------------------------------------------------------------------- (b) the [identity; total] regression
def test_identity_plus_total_is_calibrated_4_on_a_level_of_two_nodes():
    """Regression: [identity; total] was calibrated 2 (within one node) on every level; a record
    moving from node A to node B changes identity by 2 and the two totals by 2: L1 = 4."""
    schema = _schema([2, 2])
    parents = {"N": None, "A": "N", "B": "N"}
    counts = np.ones((2, schema.size), dtype=np.int64)
    strategy = Strategy((QuerySet("identity+total", sp.csr_matrix(_identity_total(schema.size))),), (1,))
    m = measure(_tiny(parents, counts, schema), 2, strategy, rng=0)
    root, states = (next(e for e in m.ledger.entries if e.group == f"level {lvl} / identity+total") for lvl in (1, 2))
    assert root.sensitivity == 2  # one node: the total cancels
    assert states.sensitivity == 4
    assert states.scale == 4 / states.epsilon


def test_total_under_substitution_is_refused_only_where_it_is_zero():
    """The population is public only at a single node holding every record (the root)."""
    schema = _schema([2, 2])
    data = _tiny(GEOGRAPHIES["1-2-3"], np.ones((3, schema.size), dtype=np.int64), schema)
    strategy = Strategy((QuerySet("detailed", identity(schema)), QuerySet("population", total(schema))), ("1/2", "1/2"))
    with pytest.raises(DataValidationError, match="sensitivity 0") as err:
        measure(data, 1, strategy, rng=0)
    assert "population" in err.value.field and "level 1" in err.value.problem


# ---------------------------------------------------------------------- (c) exact privacy loss of one level
def _exact_loss(f1: np.ndarray, f2: np.ndarray, scale: Fraction) -> float:
    """``sup_y log P(y | f1) / P(y | f2)`` for independent double-geometric noise of ``scale``.

    The law ``(1 - a)/(1 + a) a^|z|`` gives a per-coordinate log ratio
    ``(|y - f2| - |y - f1|) / scale``; coordinates are independent, so the supremum of the sum
    is the sum of the per-coordinate suprema, each taken over a window that contains the maximiser.
    """
    lo, hi = int(min(f1.min(), f2.min())) - 3, int(max(f1.max(), f2.max())) + 3
    y = np.arange(lo, hi + 1)[:, None]
    ratio = (np.abs(y - f2[None, :]) - np.abs(y - f1[None, :])) / float(scale)
    return float(ratio.max(axis=0).sum())


@pytest.mark.parametrize("name", ["1-2-3", "ragged"])
def test_exact_privacy_loss_of_each_level_is_within_its_ledger_epsilon(name):
    schema = _schema([2, 2])
    geo = Hierarchy.from_parent_table(GEOGRAPHIES[name])
    counts = np.ones((len(geo.leaves), schema.size), dtype=np.int64)
    strategy = _strategy(schema)
    m = measure(_tiny(GEOGRAPHIES[name], counts, schema), 3, strategy, rng=0)
    for level in range(1, geo.n_levels + 1):
        entries = {e.query: e for e in m.ledger.entries if e.group.startswith(f"level {level} ")}
        rows = np.flatnonzero(geo.level == level)
        worst_level = 0.0
        for d1, d2 in _leaf_moves(geo, schema.size):
            h1, h2 = _region_histograms(geo, d1)[rows], _region_histograms(geo, d2)[rows]
            loss = 0.0
            for q in strategy.queries:
                a, e = q.matrix.toarray(), entries[q.name]
                f1, f2 = _stacked(h1, a), _stacked(h2, a)
                one = _exact_loss(f1, f2, e.scale)
                assert one == pytest.approx(np.abs(f1 - f2).sum() / float(e.scale))
                assert one <= float(e.epsilon) + 1e-12, (level, q.name)
                loss += one
            worst_level = max(worst_level, loss)
        assert worst_level <= float(m.level_epsilons[level - 1]) + 1e-12
        assert worst_level == pytest.approx(float(m.level_epsilons[level - 1]))  # the budget is used, not wasted


# ---------------------------------------------------------------------- public knowledge (invariants only)
@pytest.mark.parametrize("total_level, level", [("nation", 1), ("state", 2), ("county", 3), ("block", 6)])
def test_public_knowledge_built_from_data_holds_only_invariant_totals(total_level, level):
    data = synthetic_census(seed=3, preset="tiny", races=2, total_level=total_level)
    kn, geo = data.knowledge, data.geography
    invariant = geo.level <= level
    truth = np.asarray(data.node_histograms_all().sum(axis=1)).ravel()
    assert kn.total_level == level and len(kn.invariant_totals) == invariant.sum()
    np.testing.assert_array_equal(kn.invariant_totals, truth[invariant])
    assert kn.root_total == data.population and kn.node_totals is kn.invariant_totals
    deeper = np.flatnonzero(~invariant)
    assert all(kn.invariant_total(geo, int(r)) is None for r in deeper)
    if len(deeper):  # a deeper region's total is nowhere in the public object
        with pytest.raises(IndexError):
            kn.invariant_totals[deeper[0]]


def test_public_knowledge_with_non_invariant_totals_is_refused():
    """Every consumer of public knowledge refuses totals of regions below ``total_level``."""
    schema = _schema([2, 2])
    data = _tiny(GEOGRAPHIES["1-2-3"], np.ones((3, schema.size), dtype=np.int64), schema)
    geo = data.geography
    leaked = PublicKnowledge(geo.aggregate(np.full(3, schema.size, dtype=np.int64)), 1)
    m = measure(data, 1, rng=0)
    unchecked = SimpleNamespace(geography=geo, schema=schema, knowledge=leaked)  # skips TopDownData's check
    consumers = [
        lambda: TopDownData(schema, geo, data.leaf_counts, leaked),
        lambda: topdown(m, leaked, schema, geo),
        lambda: node_problem(unchecked, m),
    ]
    for build in consumers:
        with pytest.raises(DataValidationError, match="not public") as err:
            build()
        assert err.value.field == "knowledge.invariant_totals"
    with pytest.raises(DataValidationError) as err:
        PublicKnowledge.from_region_totals(geo, np.ones(2), 1)
    assert err.value.field == "region_totals"
    kept = PublicKnowledge.from_region_totals(geo, leaked.invariant_totals, 2)
    np.testing.assert_array_equal(kept.invariant_totals, [12, 8, 4])
