"""PGSR privacy: sensitivities under record-level neighbours with unit quantities up to z_max.

The neighbour relation (see ``dpmodels.pgsr.sensitivity``): one record (a person with
quantity ``z`` in ``0..z_max``) is removed from, or added to, a unit that stays non-empty,
so ``G`` is unchanged.  Adding a record is the reverse of removing it and the L1 change is
symmetric, so enumerating every removal from every record set covers both directions.
"""

from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpmodels.core.errors import DataValidationError, PrivacyParameterError
from dpmodels.core.hierarchy import Hierarchy
from dpmodels.core.noise import double_geometric_pmf
from dpmodels.pgsr.data import GroupSizeData
from dpmodels.pgsr.mechanism import measure

KINDS = ("counts", "cumulative", "chain")
TWO_LEAVES = {"R": None, "A": "R", "B": "R"}
THREE_LEVELS = {"R": None, "A": "R", "B": "R", "A1": "A", "A2": "A", "B1": "B"}
COLUMNS = ["user", "unit", "region", "quantity"]


# ---------------------------------------------------------------- helpers
def _records(units) -> pd.DataFrame:
    """Records from ``[(leaf, [z of each member]), ...]``; user ``"u-k"`` is member k of unit u."""
    rows = [(f"{u}-{k}", f"u{u}", leaf, z) for u, (leaf, zs) in enumerate(units) for k, z in enumerate(zs)]
    return pd.DataFrame(rows, columns=COLUMNS)


def _truth(data: GroupSizeData, kind: str) -> np.ndarray:
    return {"counts": data.counts, "cumulative": data.cumulative(), "chain": data.chain()}[kind]


def _level_l1(h: Hierarchy, a: np.ndarray, b: np.ndarray) -> list[int]:
    """``||f_l(D) - f_l(D')||_1`` for every level ``l``."""
    diff = np.abs(np.asarray(a, dtype=np.int64) - np.asarray(b, dtype=np.int64))
    return [int(diff[h.level_slice(lvl)].sum()) for lvl in range(1, h.n_levels + 1)]


def _calibrated(data: GroupSizeData, kind: str) -> list[Fraction]:
    """The per-level sensitivities the mechanism charges, read from its ledger."""
    _, ledger = measure(data, 1, kind, rng=0)
    return [m.sensitivity for m in ledger.entries]


def exact_privacy_loss(h: Hierarchy, a: np.ndarray, b: np.ndarray, scales) -> Fraction:
    """``max_o log P[M(D) = o] / P[M(D') = o]`` for independent double-geometric noise.

    A cell with true values ``a`` and ``b`` and scale ``lambda`` has ratio
    ``alpha^(|o - a| - |o - b|)``, ``alpha = exp(-1/lambda)``, largest at ``o = a`` where its log
    is ``|a - b| / lambda``.  Cells are independent, so the log-ratios add and all maxima are
    reached together at ``o = f(D)``: the loss is ``sum_l ||f_l(D) - f_l(D')||_1 / lambda_l``.
    """
    return sum((Fraction(d) / scale for d, scale in zip(_level_l1(h, a, b), scales, strict=True)), Fraction(0))


def _log_ratio_at_truth(h: Hierarchy, a: np.ndarray, b: np.ndarray, scales) -> float:
    """The same loss evaluated from the pmf at the output ``o = f(D)`` (a floating cross-check)."""
    total = 0.0
    for lvl, scale in enumerate(scales, start=1):
        d = (np.asarray(a) - np.asarray(b))[h.level_slice(lvl)].ravel()
        total += float(np.sum(np.log(double_geometric_pmf(0 * d, scale)) - np.log(double_geometric_pmf(d, scale))))
    return total


# ---------------------------------------------------------------- (1) regression: z = 4
Z = 4


def _heavy_neighbours():
    """Two leaves; unit u0 in A holds a person with z = 4 and one with z = 1 (size 5).

    Removing the heavy person moves u0 from size 5 to size 1, the worst case for z_max = 4.
    """
    h = Hierarchy.from_parent_table(TWO_LEAVES)
    records = _records([("A", [Z, 1]), ("B", [1]), ("B", [2])])
    before = GroupSizeData.from_records(records, h, n_sizes=Z + 1, z_max=Z)
    after = GroupSizeData.from_records(records[records.user != "0-0"], h, n_sizes=Z + 1, z_max=Z)
    assert before.G == after.G  # a neighbour under the G-preserving relation
    return h, before, after


@pytest.mark.parametrize(
    "kind, calibration", [("counts", "sound"), ("cumulative", "sound"), ("chain", "sound"), ("chain", "paper")]
)
def test_heavy_person_costs_no_more_than_the_ledger_says(kind, calibration):
    """Regression: with z = 4 the cumulative and chain vectors move by 4 (times |R_l|) per
    level; a ledger that charged sensitivity 1 (or |R_l|) under-reported the loss 4-fold."""
    h, before, after = _heavy_neighbours()
    eps = Fraction(1, 2)
    noisy, ledger = measure(before, eps, kind, rng=0, calibration=calibration)
    noisy_after, _ = measure(after, eps, kind, rng=0, calibration=calibration)
    assert noisy.level_scales == noisy_after.level_scales  # the scales are public, not data-dependent
    a, b = _truth(before, kind), _truth(after, kind)
    loss = exact_privacy_loss(h, a, b, noisy.level_scales)
    assert _log_ratio_at_truth(h, a, b, noisy.level_scales) == pytest.approx(float(loss), rel=1e-9)
    assert loss <= ledger.total_epsilon
    assert loss == ledger.total_epsilon  # this neighbour is the worst case: the ledger is tight
    if calibration == "sound":
        assert ledger.total_epsilon == eps


# ---------------------------------------------------------------- (2) brute force over neighbours
@st.composite
def record_sets(draw):
    """A small hierarchy, z_max in 1..4, 1-4 non-empty units of 1-4 members, and N."""
    h = Hierarchy.from_parent_table(draw(st.sampled_from([TWO_LEAVES, THREE_LEVELS])))
    z_max = draw(st.integers(1, 4))
    leaves = [h.names[i] for i in h.leaves]
    member = st.lists(st.integers(0, z_max), min_size=1, max_size=4).filter(lambda zs: sum(zs) > 0)
    units = draw(st.lists(st.tuples(st.sampled_from(leaves), member), min_size=1, max_size=4))
    n_sizes = draw(st.integers(1, max(sum(zs) for _, zs in units) + 1))  # small N exercises the top bin
    return h, units, z_max, n_sizes


def _removals(h, units, z_max, n_sizes):
    """Every single-record removal: ``(size before, z, data before, data after or None)``.

    ``None`` marks a removal that empties its unit, which the mechanism does not model.
    """
    records = _records(units)
    before = GroupSizeData.from_records(records, h, n_sizes, overflow="top", z_max=z_max)
    for u, (_, zs) in enumerate(units):
        for k, z in enumerate(zs):
            rest = records[records.user != f"{u}-{k}"]
            if sum(zs) - z == 0:
                yield sum(zs), z, before, _emptied(rest, before, sum(zs), len(zs))
            else:
                yield sum(zs), z, before, GroupSizeData.from_records(rest, h, n_sizes, overflow="top", z_max=z_max)


def _emptied(rest, before, size, members):
    """An emptying removal leaves a size-0 unit (refused) or changes G (the unit vanishes).

    In the second case the vectors move by the amounts the sensitivity module documents
    (counts 1, cumulative ``N - clip(s) + 1``, chain at most ``|R_l| N``), beyond the
    calibration: such pairs are outside the G-preserving relation, as documented.
    """
    h, N, z_max = before.hierarchy, before.N, before.z_max
    if members > 1:  # the other members all have z = 0: a size-0 group is outside the model
        with pytest.raises(DataValidationError, match=">= 1"):
            GroupSizeData.from_records(rest, h, N, overflow="top", z_max=z_max)
    elif len(rest):
        after = GroupSizeData.from_records(rest, h, N, overflow="top", z_max=z_max)
        assert after.G == before.G - 1
        assert _level_l1(h, before.counts, after.counts) == [1] * h.n_levels
        assert _level_l1(h, before.cumulative(), after.cumulative()) == [N - min(size, N) + 1] * h.n_levels
        chain = _level_l1(h, before.chain(), after.chain())
        assert all(c <= r * N for c, r in zip(chain, h.level_sizes().tolist(), strict=True))
    return None


@settings(max_examples=60)
@given(record_sets())
def test_brute_force_sensitivity_never_exceeds_the_calibration(case):
    """Every G-preserving removal moves each level's vector by exactly the derived amount
    (counts 2, cumulative z', chain |R_l| z' with z' the clipped size change <= z <= z_max),
    never more than the ledger's sensitivity, and reaches it whenever a witness exists."""
    h, units, z_max, n_sizes = case
    worst = {kind: [0] * h.n_levels for kind in KINDS}
    reachable = False
    for size, z, before, after in _removals(h, units, z_max, n_sizes):
        if after is None:
            continue
        moved = min(size, n_sizes) - min(size - z, n_sizes)
        expected = {"counts": 2 * (moved > 0), "cumulative": moved}
        for kind in KINDS:
            l1 = _level_l1(h, _truth(before, kind), _truth(after, kind))
            rows = h.level_sizes().tolist()
            assert l1 == [expected.get(kind, moved * r) for r in rows]
            worst[kind] = np.maximum(worst[kind], l1).tolist()
        reachable |= moved == z_max
    data = GroupSizeData.from_records(_records(units), h, n_sizes, overflow="top", z_max=z_max)
    for kind in KINDS:
        calibrated = _calibrated(data, kind)
        assert all(w <= c for w, c in zip(worst[kind], calibrated, strict=True)), kind
        if reachable:
            assert worst[kind] == calibrated, kind


@pytest.mark.parametrize("tree", [TWO_LEAVES, THREE_LEVELS])
@pytest.mark.parametrize("z_max", [1, 2, 3, 5])
def test_calibrated_sensitivity_is_reached(tree, z_max):
    """A unit of size z_max + 1 losing its z_max person reaches every calibrated sensitivity."""
    h = Hierarchy.from_parent_table(tree)
    leaf = h.names[h.leaves[-1]]
    units = [(leaf, [z_max, 1]), (h.names[h.leaves[0]], [1])]
    removals = [r for r in _removals(h, units, z_max, z_max + 1) if r[1] == z_max]
    (_, _, before, after), *_ = removals
    for kind in KINDS:
        assert _level_l1(h, _truth(before, kind), _truth(after, kind)) == _calibrated(before, kind)


def test_scales_grow_with_z_max():
    """lambda_l = Delta_l L / eps with Delta_l = 2, z_max, |R_l| z_max (spec 2.4, generalised)."""
    h = Hierarchy.from_parent_table(THREE_LEVELS)
    data = GroupSizeData.from_groups(h, ["A1", "B1"], [1, 3], n_sizes=4, z_max=3)
    L, eps = h.n_levels, Fraction(1)
    expected = {"counts": [2] * L, "cumulative": [3] * L, "chain": [3 * r for r in h.level_sizes().tolist()]}
    for kind in KINDS:
        noisy, ledger = measure(data, eps, kind, rng=0)
        assert list(noisy.level_scales) == [d * L / eps for d in expected[kind]]
        assert ledger.total_epsilon == eps
        assert noisy.info["z_max"] == 3
    _, paper = measure(data, eps, "chain", rng=0, calibration="paper")
    assert paper.total_epsilon == eps * 3 * sum(h.level_sizes().tolist()) / L  # honest about the overspend


# ---------------------------------------------------------------- (3) validation
def test_from_records_refuses_quantities_above_z_max():
    h = Hierarchy.from_parent_table(TWO_LEAVES)
    records = _records([("A", [1, 4]), ("B", [1])])
    with pytest.raises(DataValidationError) as err:
        GroupSizeData.from_records(records, h, n_sizes=5)
    assert err.value.field == "quantity"
    assert "4" in err.value.problem and "'0-1'" in err.value.problem and "z_max" in err.value.problem
    with pytest.raises(DataValidationError, match="quantity"):
        GroupSizeData.from_records(records, h, n_sizes=5, z_max=3)
    assert GroupSizeData.from_records(records, h, n_sizes=5, z_max=4).z_max == 4


@pytest.mark.parametrize("bad", [0, -1, True, 1.5, "2", None])
def test_z_max_is_validated(bad):
    h = Hierarchy.from_parent_table(TWO_LEAVES)
    with pytest.raises(DataValidationError) as err:
        GroupSizeData.from_groups(h, ["A"], [1], n_sizes=2, z_max=bad)
    assert err.value.field == "z_max"
    with pytest.raises(DataValidationError, match="z_max"):
        GroupSizeData.from_records(_records([("A", [1])]), h, z_max=bad)


def test_other_constructors_default_to_the_papers_z_max(running_example):
    h = Hierarchy.from_parent_table(TWO_LEAVES)
    assert running_example.z_max == 1
    assert GroupSizeData.from_leaf_counts(h, [[1], [1]]).z_max == 1
    assert GroupSizeData.from_groups(h, ["A"], [2]).z_max == 1
    assert GroupSizeData.from_leaf_counts(h, [[1], [1]], z_max=np.int64(2)).z_max == 2


def test_from_csv_passes_z_max_through(tmp_path):
    from dpmodels.instances.pgsr import from_csv

    (tmp_path / "tree.csv").write_text("region,parent\nR,\nA,R\nB,R\n")
    _records([("A", [3, 1]), ("B", [1])]).to_csv(tmp_path / "records.csv", index=False)
    with pytest.raises(DataValidationError, match="z_max"):
        from_csv(tmp_path / "tree.csv", records=tmp_path / "records.csv")
    data = from_csv(tmp_path / "tree.csv", records=tmp_path / "records.csv", z_max=3)
    assert (data.z_max, data.G, data.N) == (3, 2, 4)
    noisy, _ = measure(data, 1, "cumulative", rng=0)
    assert noisy.info["z_max"] == 3 and noisy.with_values(noisy.values).info["z_max"] == 3


@pytest.mark.parametrize("kind", ["counts", "cumulative", "chain"])
def test_tiny_epsilon_is_refused_instead_of_releasing_the_truth(running_example, kind):
    """Regression: numpy's geometric saturated at INT64_MAX for eps = 1e-25, so the difference of
    two draws was exactly 0 and ``measure`` returned the true values while the ledger said 1e-25."""
    with pytest.raises(PrivacyParameterError, match="cannot represent") as err:
        measure(running_example, 1e-25, kind, rng=0)
    assert err.value.field == "epsilon"
    noisy, _ = measure(running_example, 1e-9, kind, rng=0)  # a representable (huge) scale still draws
    data = running_example
    truth = {"counts": data.counts, "cumulative": data.cumulative(), "chain": data.chain()}
    assert not np.array_equal(noisy.values, truth[kind])
