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
from pgsr_loss import exact_privacy_loss, level_l1

from dpmodels.core.errors import DataValidationError, PrivacyParameterError
from dpmodels.core.hierarchy import Hierarchy
from dpmodels.core.noise import check_noise_range, double_geometric_pmf
from dpmodels.core.samplers import discrete_laplace
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


def _calibrated(data: GroupSizeData, kind: str) -> list[Fraction]:
    """The per-level sensitivities the mechanism charges, read from its ledger."""
    _, ledger = measure(data, 1, kind, rng=0)
    return [m.sensitivity for m in ledger.entries]


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
    """A small hierarchy, z_max in 1..4, 1-4 units of 1-4 members, and N.

    Raw quantities run from -1 to z_max + 2 (clamped to [0, z_max] by the bounding rule), and a
    unit may sit in a region that is not a leaf (the root, or an unknown name): left out.
    """
    h = Hierarchy.from_parent_table(draw(st.sampled_from([TWO_LEAVES, THREE_LEVELS])))
    z_max = draw(st.integers(1, 4))
    regions = [h.names[i] for i in h.leaves] + ["R", "elsewhere"]
    member = st.lists(st.integers(-1, z_max + 2), min_size=1, max_size=4)
    units = draw(st.lists(st.tuples(st.sampled_from(regions), member), min_size=1, max_size=4))
    n_sizes = draw(st.integers(1, max(_size(zs, z_max) for _, zs in units) + 1))  # small N exercises the top bin
    return h, units, z_max, n_sizes


def _clamp(z: int, z_max: int) -> int:
    return min(max(z, 0), z_max)


def _size(zs, z_max: int) -> int:
    """A unit's size: the sum of its members' clamped quantities (the oracle of the bounding rule)."""
    return sum(_clamp(z, z_max) for z in zs)


def _removals(h, units, z_max, n_sizes):
    """Every single-record removal: ``(region, unit size before, clamped z, data before, data after)``."""
    records = _records(units)
    before = GroupSizeData.from_records(records, h, n_sizes, z_max=z_max)
    for u, (region, zs) in enumerate(units):
        for k, z in enumerate(zs):
            after = GroupSizeData.from_records(records[records.user != f"{u}-{k}"], h, n_sizes, z_max=z_max)
            yield region, _size(zs, z_max), _clamp(z, z_max), before, after


def _emptied(before, after, size):
    """A removal that empties a unit makes its size 0: the unit is left out and G drops by one.

    The vectors then move by the amounts the sensitivity module documents (counts 1, cumulative
    ``N - clip(s) + 1``, chain at most ``|R_l| N``), beyond the calibration: such pairs are
    outside the G-preserving relation, as documented.
    """
    h, N = before.hierarchy, before.N
    assert after.G == before.G - 1
    assert level_l1(h, before.counts, after.counts) == [1] * h.n_levels
    assert level_l1(h, before.cumulative(), after.cumulative()) == [N - min(size, N) + 1] * h.n_levels
    chain = level_l1(h, before.chain(), after.chain())
    assert all(c <= r * N for c, r in zip(chain, h.level_sizes().tolist(), strict=True))


@settings(max_examples=80)
@given(record_sets())
def test_brute_force_sensitivity_never_exceeds_the_calibration(case):
    """Every G-preserving removal moves each level's vector by exactly the derived amount
    (counts 2, cumulative z', chain |R_l| z' with z' the clipped size change <= z <= z_max),
    never more than the ledger's sensitivity, and reaches it whenever a witness exists.

    The bounding rules are covered: a raw quantity above z_max (or below 0) moves its unit by the
    clamped amount only, and a record of a unit outside the hierarchy's leaves, or of a unit of
    size 0, moves nothing."""
    h, units, z_max, n_sizes = case
    leaves = {h.names[i] for i in h.leaves}
    worst = {kind: [0] * h.n_levels for kind in KINDS}
    reachable = False
    for region, size, z, before, after in _removals(h, units, z_max, n_sizes):
        if region in leaves and size >= 1 and size - z == 0:
            _emptied(before, after, size)
            continue
        counted = region in leaves and size >= 1
        moved = min(size, n_sizes) - min(size - z, n_sizes) if counted else 0
        expected = {"counts": 2 * (moved > 0), "cumulative": moved}
        assert after.G == before.G
        for kind in KINDS:
            l1 = level_l1(h, _truth(before, kind), _truth(after, kind))
            rows = h.level_sizes().tolist()
            assert l1 == [expected.get(kind, moved * r) for r in rows]
            worst[kind] = np.maximum(worst[kind], l1).tolist()
        reachable |= moved == z_max
    data = GroupSizeData.from_records(_records(units), h, n_sizes, z_max=z_max)
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
    removals = [r for r in _removals(h, units, z_max, z_max + 1) if r[2] == z_max]
    (_, _, _, before, after), *_ = removals
    for kind in KINDS:
        assert level_l1(h, _truth(before, kind), _truth(after, kind)) == _calibrated(before, kind)


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


# ---------------------------------------------------------------- (3) bounding and validation
def test_quantities_above_z_max_are_clamped_not_refused():
    """Regression: a quantity above z_max made the whole release fail (a refusal that depends on
    one person).  It is clamped to z_max: the data equals that of the clamped records."""
    h = Hierarchy.from_parent_table(TWO_LEAVES)
    records = _records([("A", [1, 4]), ("B", [1])])
    clamped = _records([("A", [1, 1]), ("B", [1])])
    for z_max, expected in ((1, clamped), (3, _records([("A", [1, 3]), ("B", [1])])), (4, records)):
        data = GroupSizeData.from_records(records, h, n_sizes=5, z_max=z_max)
        oracle = GroupSizeData.from_records(expected, h, n_sizes=5, z_max=4)
        np.testing.assert_array_equal(data.counts, oracle.counts)
        assert data.z_max == z_max


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
    clamped = from_csv(tmp_path / "tree.csv", records=tmp_path / "records.csv", N=4)  # z_max = 1: 3 counts 1
    assert (clamped.z_max, clamped.G, clamped.counts[0].tolist()) == (1, 2, [1, 1, 0, 0])
    data = from_csv(tmp_path / "tree.csv", records=tmp_path / "records.csv", N=4, z_max=3)
    assert (data.z_max, data.G, data.N, data.N_declared) == (3, 2, 4, True)
    noisy, _ = measure(data, 1, "cumulative", rng=0)
    assert noisy.info["z_max"] == 3 and noisy.with_values(noisy.values).info["z_max"] == 3


# ---------------------------------------------------------------- (4) exact noise, planned before drawing
@pytest.mark.parametrize("kind", KINDS)
def test_tiny_epsilon_is_refused_instead_of_releasing_the_truth(running_example, kind):
    """Regressions: numpy's geometric saturated at INT64_MAX for eps = 1e-25, so ``measure`` returned
    the true values; at eps = 2e-16 noise beyond 2^53 added to float64 values double-rounded, and the
    outputs' residues mod 4 told neighbouring counts apart.  Both are refused naming epsilon, before
    anything is drawn."""
    for eps in (1e-25, 2e-16):
        rng = np.random.default_rng(0)
        state = rng.bit_generator.state
        with pytest.raises(PrivacyParameterError) as err:
            measure(running_example, eps, kind, rng=rng)
        assert err.value.field == "epsilon" and "refused" in err.value.problem
        assert rng.bit_generator.state == state
    noisy, _ = measure(running_example, 1e-9, kind, rng=0)  # a huge scale inside the exact range still draws
    assert not np.array_equal(noisy.values, _truth(running_example, kind))


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("epsilon", [Fraction(1, 10**9), Fraction(3, 2**40)])
def test_noisy_values_are_the_truth_plus_the_exact_integer_draws(running_example, kind, epsilon):
    """The noisy values equal, exactly, the int64 truth plus the exact sampler's draws from an
    identically seeded generator, level by level (the oracle adds in Python integers); at these
    scales (|noise| up to about 2^50) a float64 sum of a float truth and the noise would be inexact
    whenever the two differ by more than 2^53 in magnitude, never here."""
    data = running_example
    noisy, ledger = measure(data, epsilon, kind, rng=np.random.default_rng(7))
    oracle_rng = np.random.default_rng(7)
    truth = _truth(data, kind)
    for level, entry in enumerate(ledger.entries, start=1):
        rows = data.hierarchy.level_slice(level)
        draws = discrete_laplace(entry.scale, truth[rows].shape, oracle_rng)
        pairs = zip(truth[rows].tolist(), draws.tolist(), strict=True)
        expected = [[t + z for t, z in zip(tr, zr, strict=True)] for tr, zr in pairs]
        assert noisy.values[rows].tolist() == [[float(v) for v in row] for row in expected]
        assert all(float(v) == v for row in expected for v in row)  # exact as floats: below 2^53
    residues = np.mod(noisy.values - truth, 2)
    assert set(np.unique(residues).tolist()) <= {0.0, 1.0}  # integer noise, no rounding left over


def test_every_level_is_planned_before_the_first_draw():
    """Regression: the chain measurement drew level 1's noise and then refused level 2's scale, so a
    refusal came after noise was drawn.  At eps = 3 / 2^44 level 1's chain scale 2 L / eps ~ 1.2e13 is
    inside the exact range (256 x scale <= 2^52) and level 2's 4 L / eps is not: nothing is drawn."""
    h = Hierarchy.from_parent_table(TWO_LEAVES)  # |R_1| = 1, |R_2| = 2, L = 2
    data = GroupSizeData.from_groups(h, ["A", "B"], [1, 2], n_sizes=3)
    eps = Fraction(3, 2**44)
    check_noise_range(2 * 1 / eps)  # level 1: sensitivity |R_1| = 1 over eps / L
    with pytest.raises(PrivacyParameterError):
        check_noise_range(2 * 2 / eps)  # level 2: sensitivity |R_2| = 2
    rng = np.random.default_rng(3)
    state = rng.bit_generator.state
    with pytest.raises(PrivacyParameterError) as err:
        measure(data, eps, "chain", rng=rng)
    assert err.value.field == "epsilon" and "chain level 2" in err.value.problem
    assert rng.bit_generator.state == state
    assert np.random.default_rng(3).integers(2**63) == rng.integers(2**63)  # the stream is untouched
