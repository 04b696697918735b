"""TopDown data model (spec 1, 6.3 items 19-20): schemas, Kronecker queries, sensitivities,
geocodes, public knowledge, the synthetic generator and microdata round trips.

Every check is against an independent oracle computed here with numpy / itertools (array
reshapes and sums, brute force over column pairs, geocode string prefixes, labels of the
cells), never against stored outputs of the code under test.
"""

import itertools

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from dpmodels.core.errors import DataValidationError
from dpmodels.core.hierarchy import Hierarchy
from dpmodels.instances.topdown import (
    ADULT_ONLY_GQ,
    PRESETS,
    adult_only_zeros,
    children_per_adult_edit,
    from_csv,
    records,
    synthetic_census,
)
from dpmodels.topdown.data import (
    GEOCODE_LEVELS,
    Attribute,
    Edit,
    GQKnowledge,
    PublicKnowledge,
    Schema,
    TopDownData,
    geography_from_geocodes,
    parse_geocode,
    pl94_schema,
)
from dpmodels.topdown.queries import (
    grouping_matrix,
    identity,
    kron_query,
    marginal,
    sensitivity,
    total,
)

PREFIX = {"state": 2, "county": 5, "tract": 11, "block group": 12, "block": 15}
LEVEL_NAMES = ("state", "county", "tract", "block group", "block")


# ---------------------------------------------------------------------- helpers / strategies
@st.composite
def schemas(draw, max_attrs=4, min_values=1, max_values=5):
    sizes = draw(st.lists(st.integers(min_values, max_values), min_size=1, max_size=max_attrs))
    return Schema(tuple(Attribute(f"a{i}", tuple(f"v{i}_{j}" for j in range(s))) for i, s in enumerate(sizes)))


def _histogram(schema, seed, high=5):
    return np.random.default_rng(seed).integers(0, high, schema.size)


def _field(excinfo) -> str:
    return excinfo.value.field


# ---------------------------------------------------------------------- schema (spec 1.1, 1.6)
def test_pl94_schema_sizes_and_race_labels():
    s = pl94_schema(63)
    assert s.names == ("hhgq", "votingage", "hispanic", "cenrace")
    assert s.shape == (8, 2, 2, 63)
    assert s.size == 8 * 2 * 2 * 63 == 2016
    races = s.attribute("cenrace").values
    omb = {"AIAN", "Asian", "Black", "NHPI", "White", "Other"}
    # the 63 nonempty subsets of the 6 OMB categories, each exactly once
    subsets = {frozenset(r.split("+")) for r in races}
    assert len(subsets) == 63 and all(sub and sub <= omb for sub in subsets)
    assert s.attribute("hhgq").values[0] == "household" and s.attribute("hhgq").size == 8
    for k in (1, 7, 20):
        small = pl94_schema(k)
        assert small.shape == (8, 2, 2, k) and small.attribute("cenrace").values == races[:k]
    for bad in (0, 64, -1):
        with pytest.raises(DataValidationError) as err:
            pl94_schema(bad)
        assert _field(err) == "races"


@given(schemas(), st.data())
def test_cell_is_c_order_ravel(schema, data):
    pos = [data.draw(st.integers(0, n - 1)) for n in schema.shape]
    expected = int(np.ravel_multi_index(pos, schema.shape))
    assert schema.cell(**dict(zip(schema.names, pos, strict=True))) == expected
    labels = {a.name: a.values[p] for a, p in zip(schema.attributes, pos, strict=True)}
    assert schema.cell(**labels) == expected
    # the same cell in a numpy array reshaped in C order
    h = np.arange(schema.size)
    assert h.reshape(schema.shape)[tuple(pos)] == expected


@given(schemas())
def test_cell_values_and_cells_frame_match_numpy_indices(schema):
    grids = np.indices(schema.shape)
    frame = schema.cells_frame()
    assert list(frame.columns) == list(schema.names)
    assert len(frame) == schema.size
    for i, attr in enumerate(schema.attributes):
        positions = grids[i].ravel()
        np.testing.assert_array_equal(schema.cell_values(attr.name), positions)
        assert frame[attr.name].tolist() == [attr.values[p] for p in positions]
    # every row of the frame maps back to its own flat index
    for x in range(schema.size):
        assert schema.cell(**frame.iloc[x].to_dict()) == x


def test_schema_bad_inputs_name_the_field():
    with pytest.raises(DataValidationError) as err:
        Attribute("age", ())
    assert "age" in _field(err)
    with pytest.raises(DataValidationError) as err:
        Attribute("sex", ("m", "f", "m"))
    assert "sex" in _field(err) and "repeated" in err.value.problem
    a, b = Attribute("x", ("0", "1")), Attribute("y", ("0",))
    with pytest.raises(DataValidationError) as err:
        Schema((a, b, Attribute("x", ("q",))))
    assert _field(err) == "schema" and "distinct" in err.value.problem
    with pytest.raises(DataValidationError) as err:
        Schema(())
    assert _field(err) == "schema"
    s = Schema((a, b))
    for call in (lambda: s.index("z"), lambda: s.attribute("z"), lambda: s.cell_values("z")):
        with pytest.raises(DataValidationError) as err:
            call()
        assert _field(err) == "attribute" and "'z'" in err.value.problem
    with pytest.raises(DataValidationError) as err:
        s.cell(x=1)
    assert _field(err) == "cell" and "y" in err.value.problem


def test_schema_extension_keeps_the_base_marginal():
    base = Schema((Attribute("x", ("0", "1", "2")), Attribute("y", ("a", "b"))))
    ext = base.extend(Attribute("z", ("p", "q", "r", "s")))
    assert ext.names == ("x", "y", "z") and ext.size == base.size * 4
    h = _histogram(ext, 3)
    np.testing.assert_array_equal(marginal(ext, ["x", "y"]) @ h, h.reshape(ext.shape).sum(axis=2).ravel())


# ---------------------------------------------------------------------- Kronecker builder (6.3 item 19)
@given(schemas(), st.data(), st.integers(0, 2**31))
def test_marginal_equals_numpy_sum_over_complement(schema, data, seed):
    d = len(schema.names)
    keep = data.draw(st.lists(st.sampled_from(range(d)), unique=True))
    h = _histogram(schema, seed)
    got = marginal(schema, [schema.names[i] for i in keep]) @ h  # any argument order
    complement = tuple(i for i in range(d) if i not in keep)
    expected = h.reshape(schema.shape).sum(axis=complement).ravel()
    np.testing.assert_array_equal(got, expected)
    assert marginal(schema, [schema.names[i] for i in keep]).shape == (expected.size, schema.size)


@given(schemas(), st.integers(0, 2**31))
def test_identity_and_total(schema, seed):
    h = _histogram(schema, seed)
    np.testing.assert_array_equal(identity(schema) @ h, h)
    np.testing.assert_array_equal(total(schema) @ h, [h.sum()])
    assert identity(schema).shape == (schema.size, schema.size)
    assert total(schema).shape == (1, schema.size)


@given(schemas(), st.data(), st.integers(0, 2**31))
def test_grouping_and_subset_recodes_match_numpy(schema, data, seed):
    """kron_query with "keep"/"sum"/grouping factors equals numpy take+sum per axis."""
    factors, oracle_ops = {}, []
    for attr in schema.attributes:
        kind = data.draw(st.sampled_from(["keep", "sum", "group", "omit"]))
        if kind == "group":
            n_groups = data.draw(st.integers(1, 3))
            # -1: the value is in no group (a subset restriction)
            assign = data.draw(st.lists(st.integers(-1, n_groups - 1), min_size=attr.size, max_size=attr.size))
            groups = {f"g{k}": [attr.values[j] for j in range(attr.size) if assign[j] == k] for k in range(n_groups)}
            factors[attr.name] = grouping_matrix(attr.values, groups)
            oracle_ops.append([[j for j in range(attr.size) if assign[j] == k] for k in range(n_groups)])
        elif kind == "omit":  # an unnamed attribute is summed
            oracle_ops.append("sum")
        else:
            factors[attr.name] = kind
            oracle_ops.append(kind)
    h = _histogram(schema, seed)
    arr = h.reshape(schema.shape)
    for axis, op in enumerate(oracle_ops):
        if op == "sum":
            arr = arr.sum(axis=axis, keepdims=True)
        elif op != "keep":
            arr = np.stack([arr.take(idx, axis=axis).sum(axis=axis) for idx in op], axis=axis)
    np.testing.assert_array_equal(kron_query(schema, factors) @ h, arr.ravel())


def test_grouping_matrix_structure_and_errors():
    values = ("a", "b", "c", "d")
    g = grouping_matrix(values, {"ab": ["a", "b"], "c": ["c"], "d": ["d"]}).toarray()
    np.testing.assert_array_equal(g, [[1, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]])
    assert (g.sum(axis=0) == 1).all()  # a recode: one 1 per column
    with pytest.raises(DataValidationError, match="two groups") as err:
        grouping_matrix(values, {"x": ["a", "b"], "y": ["b"]})
    assert _field(err) == "grouping"
    with pytest.raises(DataValidationError, match="'z'") as err:
        grouping_matrix(values, {"x": ["a", "z"]})
    assert _field(err) == "grouping"


def test_kron_query_bad_factors():
    s = Schema((Attribute("x", ("0", "1", "2")), Attribute("y", ("a", "b"))))
    with pytest.raises(DataValidationError, match="nope") as err:
        kron_query(s, {"nope": "keep"})
    assert _field(err) == "query"
    with pytest.raises(DataValidationError, match="3 columns") as err:
        kron_query(s, {"x": np.ones((1, 2))})
    assert "x" in _field(err)


# ---------------------------------------------------------------------- sensitivity (6.3 item 18)
def _brute_substitution(a: np.ndarray) -> float:
    n = a.shape[1]
    return max((np.abs(a[:, i] - a[:, j]).sum() for i, j in itertools.combinations(range(n), 2)), default=0.0)


def _brute_add_remove(a: np.ndarray) -> float:
    return max(np.abs(a @ e).sum() for e in np.eye(a.shape[1]))


@given(schemas(max_attrs=3, max_values=4))
def test_identity_and_total_sensitivity(schema):
    if schema.size >= 2:
        assert sensitivity(identity(schema)) == 2
    assert sensitivity(identity(schema), "add/remove") == 1
    assert sensitivity(total(schema)) == 0  # n is public under substitution
    assert sensitivity(total(schema), "add/remove") == 1


@given(schemas(max_attrs=3, min_values=2, max_values=4), st.data())
def test_stacked_disjoint_marginals_have_sensitivity_2k(schema, data):
    """K marginals (each a partition of the cells) stacked: 2K under substitution, K add/remove."""
    d = len(schema.names)
    subsets = data.draw(
        st.lists(st.lists(st.sampled_from(schema.names), min_size=1, max_size=d, unique=True), min_size=1, max_size=4)
    )
    stacked = sp.vstack([marginal(schema, b) for b in subsets]).tocsr()
    k = len(subsets)
    assert sensitivity(stacked) == 2 * k
    assert sensitivity(stacked, "add/remove") == k
    # a grouping of one attribute into a partition is a partition query too
    attr = schema.attributes[0]
    recode = grouping_matrix(attr.values, {"lo": attr.values[:1], "hi": attr.values[1:]})
    assert sensitivity(kron_query(schema, {attr.name: recode})) == 2


@settings(max_examples=150)
@given(
    st.integers(1, 4),
    st.integers(1, 6),
    st.booleans(),
    st.integers(1, 8),
    st.data(),
)
def test_sensitivity_against_brute_force(rows, cols, binary, limit, data):
    entries = st.integers(0, 1) if binary else st.integers(-3, 3)
    a = np.array(data.draw(st.lists(entries, min_size=rows * cols, max_size=rows * cols))).reshape(rows, cols)
    sub, ar = _brute_substitution(a), _brute_add_remove(a)
    assert sensitivity(sp.csr_matrix(a)) == sub
    assert sensitivity(a, "add/remove") == ar
    distinct = len({tuple(col) for col in a.T})
    got = sensitivity(sp.csr_matrix(a), exact_limit=limit)
    if distinct > limit:
        assert got == 2 * ar  # the documented upper bound
        assert got >= sub
    else:
        assert got == sub
    assert sub <= 2 * ar


def test_sensitivity_bad_neighbours():
    with pytest.raises(DataValidationError) as err:
        sensitivity(sp.identity(3), "bounded")
    assert _field(err) == "neighbours"


# ---------------------------------------------------------------------- geocodes (spec 1.4)
def test_geocode_levels_constant():
    assert dict(GEOCODE_LEVELS) == {"nation": 0, **PREFIX}


@given(st.text(alphabet="0123456789", min_size=15, max_size=15))
def test_parse_geocode_prefixes(code):
    parts = parse_geocode(code)
    assert parts == {name: code[:n] for name, n in PREFIX.items()}
    assert parts["block group"][-1] == code[11]  # the first digit of the 4-digit block code
    if code[0] != "0":  # an integer geocode without a leading zero is read as its digits
        assert parse_geocode(int(code)) == parts


@given(
    st.one_of(
        st.text(alphabet="0123456789", max_size=30).filter(lambda s: len(s) != 15),
        st.tuples(
            st.text(alphabet="0123456789", min_size=14, max_size=14),
            st.sampled_from("abZ -.x/"),
            st.integers(0, 14),
        ).map(lambda t: t[0][: t[2]] + t[1] + t[0][t[2] :]),
    )
)
def test_parse_geocode_rejects_bad_codes(code):
    with pytest.raises(DataValidationError) as err:
        parse_geocode(code)
    assert _field(err) == "geocode"


@pytest.mark.parametrize("code", ["01001000100100\u00b2", "\u0660\u06610010001001000"])
def test_parse_geocode_rejects_non_ascii_digits(code):
    with pytest.raises(DataValidationError):
        parse_geocode(code)


_GEOCODES = st.lists(
    st.tuples(
        st.sampled_from(["01", "02", "44"]),
        st.sampled_from(["001", "007"]),
        st.sampled_from(["000100", "020300"]),
        st.sampled_from(["1", "2"]),
        st.sampled_from(["001", "017"]),
    ).map("".join),
    min_size=1,
    max_size=12,
)


@given(_GEOCODES, st.data())
def test_geography_from_geocodes_levels_and_parents(codes, data):
    chosen = data.draw(st.lists(st.sampled_from(LEVEL_NAMES), min_size=1, unique=True))
    kept = sorted(chosen, key=PREFIX.get)
    geo = geography_from_geocodes(codes, levels=chosen, root="US")
    lengths = [PREFIX[n] for n in kept]
    # nodes of each level are exactly the distinct prefixes
    assert geo.names[0] == "US" and geo.n_levels == len(kept) + 1
    for lvl, n in enumerate(lengths, start=2):
        names = {geo.names[i] for i in np.flatnonzero(geo.level == lvl)}
        assert names == {c[:n] for c in codes}
    assert {geo.names[i] for i in geo.leaves} == {c[: lengths[-1]] for c in codes}
    # parent = the prefix of the previous kept level
    for i in range(1, geo.n_regions):
        name, parent = geo.names[i], geo.names[geo.parent[i]]
        lvl = geo.level[i]
        if lvl == 2:
            assert parent == "US"
        else:
            assert parent == name[: lengths[lvl - 3]]
            assert len(name) == lengths[lvl - 2]
    # duplicated codes do not change the tree
    again = geography_from_geocodes(codes + codes[::-1], levels=chosen)
    assert again.names == geo.names


def test_geography_full_levels_are_nation_to_block():
    codes = ["440070001001001", "440070001001002", "440070001002001", "440070002001001", "010010000011001"]
    geo = geography_from_geocodes(codes)
    sizes = {len(geo.names[i]) if i else 0 for i in range(geo.n_regions)}
    assert sizes == {0, 2, 5, 11, 12, 15}
    for i in range(geo.n_regions):
        expected_len = [n for _, n in GEOCODE_LEVELS][geo.level[i] - 1]
        assert (len(geo.names[i]) if i else 0) == expected_len
    assert geo.level_sizes().tolist() == [1, 2, 2, 3, 4, 5]
    with pytest.raises(DataValidationError) as err:
        geography_from_geocodes(codes, levels=("state", "district"))
    assert _field(err) == "levels"
    with pytest.raises(DataValidationError) as err:
        geography_from_geocodes(codes, levels=("nation", "state"))
    assert _field(err) == "levels"
    with pytest.raises(DataValidationError) as err:
        geography_from_geocodes(codes + ["4400700010010"])
    assert _field(err) == "geocode"


# ---------------------------------------------------------------------- public knowledge and validation
# A hand-made instance: hhgq (household, prison, dorm) x age (child, adult); states A, B;
# leaves a1, a2 (under A), b1 (under B).
SMALL = Schema((Attribute("hhgq", ("household", "prison", "dorm")), Attribute("age", ("child", "adult"))))
SMALL_GEO = Hierarchy.from_parent_table({"N": None, "A": "N", "B": "N", "a1": "A", "a2": "A", "b1": "B"})


def _c(g, a):
    return SMALL.cell(hhgq=g, age=a)


def _small_counts():
    m = np.zeros((3, SMALL.size), dtype=np.int64)
    m[0, _c("household", "child")] = 1
    m[0, _c("household", "adult")] = 2
    m[0, _c("prison", "adult")] = 3
    m[1, _c("household", "adult")] = 1
    m[2, _c("dorm", "adult")] = 2
    return m


def _small_gq(**over):
    present = np.array([[1, 1, 0], [1, 0, 0], [0, 0, 1]], dtype=bool)
    lower = np.array([[0, 1, 0], [0, 0, 0], [0, 0, 2]])
    kw = {"cell_type": SMALL.cell_values("hhgq"), "type_names": SMALL.attribute("hhgq").values}
    kw.update(present=present, lower=lower)
    kw.update(over)
    return GQKnowledge(**kw)


def _totals(counts):
    """Region totals by walking the explicit tree (N = all, A = a1 + a2, B = b1)."""
    leaf = counts.sum(axis=1)
    return np.array([leaf.sum(), leaf[0] + leaf[1], leaf[2], leaf[0], leaf[1], leaf[2]])


def _edit():
    coef = np.zeros(SMALL.size)
    coef[_c("household", "adult")] = 4
    coef[_c("household", "child")] = -1
    return Edit("children per adult", coef, ">=")


def _small_data(counts=None, totals=None, total_level=2, gq="default", zeros=None, edits=None):
    """``totals=None``: the invariant totals of ``counts``; else exactly the given public totals."""
    counts = _small_counts() if counts is None else counts
    rest = {
        "gq": _small_gq() if gq == "default" else gq,
        "structural_zeros": np.array([_c("prison", "child")]) if zeros is None else zeros,
        "edits": (_edit(),) if edits is None else edits,
    }
    if totals is None:
        knowledge = PublicKnowledge.from_region_totals(SMALL_GEO, _totals(counts), total_level, **rest)
    else:
        knowledge = PublicKnowledge(totals, total_level, **rest)
    return TopDownData(SMALL, SMALL_GEO, counts, knowledge)


def test_valid_small_instance_and_invariant_totals():
    data = _small_data()
    assert data.population == 9
    assert data.leaf_counts.dtype == np.int64
    # only regions at levels <= total_level are invariants
    kn = data.knowledge
    assert [kn.invariant_total(SMALL_GEO, i) for i in range(6)] == [9, 7, 2, None, None, None]
    np.testing.assert_array_equal(kn.invariant_totals, [9, 7, 2])
    # the totals of regions below the invariant level are not public: refused, not stored
    totals = _totals(_small_counts())
    with pytest.raises(DataValidationError, match="not public") as err:
        _small_data(totals=totals)
    assert _field(err) == "knowledge.invariant_totals"
    # with block totals invariant they are public, and checked against the data
    totals[3] += 5
    with pytest.raises(DataValidationError) as err:
        _small_data(totals=totals, total_level=3)
    assert _field(err) == "knowledge.invariant_totals" and "a1" in err.value.problem


@pytest.mark.parametrize(
    "mutate, field",
    [
        (lambda kw: kw["counts"].__setitem__((1, 0), -1), "leaf_counts"),
        (lambda kw: kw.update(counts=np.zeros((3, SMALL.size + 1), dtype=int), totals=np.zeros(6, int)), "leaf_counts"),
        (lambda kw: kw.update(counts=np.zeros((2, SMALL.size), dtype=int), totals=np.zeros(6, int)), "leaf_counts"),
        (lambda kw: kw.update(totals=np.array([9, 7])), "knowledge.invariant_totals"),
        (lambda kw: kw.update(totals=np.array([9, 7, 2, 6, 1, 2])), "knowledge.invariant_totals"),
        (lambda kw: kw.update(totals=np.array([10, 8, 2])), "knowledge.invariant_totals"),
        (lambda kw: kw.update(totals=np.array([9, 6, 3])), "knowledge.invariant_totals"),
        (lambda kw: kw.update(totals=np.array([[9, 7, 2]])), "knowledge.invariant_totals"),
        (lambda kw: kw.update(total_level=0), "knowledge.total_level"),
        (lambda kw: kw.update(total_level=4), "knowledge.total_level"),
        (lambda kw: kw.update(zeros=np.array([_c("dorm", "adult")])), "knowledge.structural_zeros"),
        (lambda kw: kw["counts"].__setitem__((1, _c("household", "child")), 5), "edit 'children per adult'"),
        (lambda kw: kw["counts"].__setitem__((1, _c("dorm", "child")), 1), "gq"),
        (lambda kw: kw["counts"].__setitem__((2, _c("dorm", "adult")), 1), "gq"),
        (lambda kw: kw.update(gq=_small_gq(cell_type=np.array([0, 0, 1, 1]))), "gq"),
        (
            lambda kw: kw.update(gq=_small_gq(present=np.ones((2, 3), bool), lower=np.zeros((2, 3), int))),
            "gq",
        ),
    ],
)
def test_topdown_data_rejects_invalid_inputs(mutate, field):
    kw = {"counts": _small_counts(), "totals": None, "total_level": 2}
    mutate(kw)  # totals None: the invariant totals of the (mutated) counts, so only the intended defect shows
    with pytest.raises(DataValidationError) as err:
        _small_data(**kw)
    assert _field(err) == field


def test_gq_messages_distinguish_absent_types_and_lower_bounds():
    counts = _small_counts()
    counts[1, _c("dorm", "child")] = 1
    with pytest.raises(DataValidationError, match="absent"):
        _small_data(counts=counts)
    counts = _small_counts()
    counts[2, _c("dorm", "adult")] = 1
    with pytest.raises(DataValidationError, match="lower bound"):
        _small_data(counts=counts)
    # knowledge without GQ facts, zeros or edits accepts the same data
    _small_data(counts=counts, gq=None, zeros=np.empty(0, int), edits=())


@pytest.mark.parametrize(
    "over",
    [
        {"lower": np.array([[0, -1, 0], [0, 0, 0], [0, 0, 2]])},  # negative bound
        {"lower": np.array([[0, 1, 1], [0, 0, 0], [0, 0, 2]])},  # bound on an absent type
        {"lower": np.zeros((3, 2), int), "present": np.ones((3, 2), bool)},  # wrong width
        {"lower": np.zeros((2, 3), int)},  # present/lower shapes differ
        {"cell_type": np.array([0, 0, 1, 1, 2, 3])},  # unknown type
        {"cell_type": np.array([0, 0, 1, 1, 2, -1])},
    ],
)
def test_gq_knowledge_validation(over):
    with pytest.raises(DataValidationError) as err:
        _small_gq(**over)
    assert _field(err) == "gq"


def test_gq_type_matrix_sums_cells_by_type():
    gq = _small_gq()
    counts = _small_counts()
    per_type = (sp.csr_matrix(counts) @ gq.type_matrix().T).toarray()
    oracle = counts.reshape(3, *SMALL.shape).sum(axis=2)  # sum over age
    np.testing.assert_array_equal(per_type, oracle)


def test_topdown_data_rejects_fractional_counts():
    counts = _small_counts().astype(float)
    counts[1, _c("household", "adult")] = 1.5
    totals = _totals(_small_counts())[:3]
    with pytest.raises(DataValidationError) as err:
        _small_data(counts=counts, totals=totals)
    assert _field(err) == "leaf_counts"


@given(st.sampled_from(["<=", ">=", "=="]), st.integers(0, 2**31))
def test_edit_holds_matches_numpy(op, seed):
    rng = np.random.default_rng(seed)
    coef = rng.integers(-3, 4, 6).astype(float)
    hist = rng.integers(0, 3, (12, 6))
    hist[0] = 0  # lhs exactly 0 satisfies every op
    edit = Edit("e", coef, op)
    lhs = hist @ coef
    expected = {"<=": lhs <= 0, ">=": lhs >= 0, "==": lhs == 0}[op]
    np.testing.assert_array_equal(edit.holds(hist), expected)
    np.testing.assert_array_equal(edit.holds(sp.csr_matrix(hist)), expected)
    assert edit.holds(hist[0]).tolist() == [True]


def test_edit_rejects_bad_op():
    with pytest.raises(DataValidationError) as err:
        Edit("e", np.ones(3), ">")
    assert _field(err) == "edit 'e'"


# ---------------------------------------------------------------------- synthetic generator
@pytest.fixture(scope="module")
def small_data():
    return synthetic_census(seed=3, preset="small", races=7)


@pytest.fixture(scope="module")
def tiny2():
    return synthetic_census(seed=5, preset="tiny", races=2)


def _prefix_oracle(data):
    """Node histograms from geocode prefixes: region s holds the leaves whose code starts with s."""
    geo = data.geography
    dense = data.leaf_counts.toarray()
    leaf_codes = np.array([geo.names[i] for i in geo.leaves])
    out = np.zeros((geo.n_regions, data.schema.size), dtype=np.int64)
    for r, name in enumerate(geo.names):
        mask = np.ones(len(leaf_codes), bool) if r == 0 else np.char.startswith(leaf_codes, name)
        out[r] = dense[mask].sum(axis=0)
    return out


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_every_preset_builds_with_fanout_sizes(preset):
    data = synthetic_census(seed=0, preset=preset, races=3)
    fan = PRESETS[preset]
    assert data.geography.level_sizes().tolist() == [1, *np.cumprod(fan).tolist()]
    assert data.geography.is_uniform_depth and data.geography.n_levels == 6
    assert data.leaf_counts.shape == (int(np.prod(fan)), data.schema.size)
    assert data.schema.shape == (8, 2, 2, 3)
    assert data.population == int(data.leaf_counts.sum()) > 0


def test_custom_fanout_and_total_levels():
    fan = (1, 2, 1, 3, 4)
    for name, lvl in [("nation", 1), ("county", 3), ("block", 6)]:
        d = synthetic_census(seed=1, fanout=fan, races=2, total_level=name)
        assert d.geography.level_sizes().tolist() == [1, 1, 2, 2, 6, 24]
        assert d.knowledge.total_level == lvl
        oracle = _prefix_oracle(d).sum(axis=1)
        invariant = d.geography.level <= lvl
        np.testing.assert_array_equal(d.knowledge.invariant_totals, oracle[invariant])
        assert invariant[: invariant.sum()].all()  # the invariant regions come first


def test_aggregation_and_node_histograms_match_prefix_oracle(small_data):
    oracle = _prefix_oracle(small_data)
    np.testing.assert_array_equal(small_data.node_histograms_all().toarray(), oracle)
    agg = small_data.aggregation.toarray()
    geo = small_data.geography
    leaf_codes = [geo.names[i] for i in geo.leaves]
    for r, name in enumerate(geo.names):
        expected = [r == 0 or code.startswith(name) for code in leaf_codes]
        np.testing.assert_array_equal(agg[r], expected)


def test_synthetic_data_satisfy_their_public_knowledge(small_data):
    d, kn = small_data, small_data.knowledge
    frame = d.schema.cells_frame()
    dense = d.leaf_counts.toarray()
    assert (dense >= 0).all()
    # structural zeros = persons under 18 in adult-only GQ types, recomputed from the labels
    zero_cells = np.flatnonzero(frame["hhgq"].isin(ADULT_ONLY_GQ) & (frame["votingage"] == "under 18"))
    np.testing.assert_array_equal(np.sort(kn.structural_zeros), zero_cells)
    np.testing.assert_array_equal(np.sort(adult_only_zeros(d.schema)), zero_cells)
    assert dense[:, zero_cells].sum() == 0
    # the edit: 4 * household adults >= household children on every leaf
    hh = frame["hhgq"] == "household"
    adults = dense[:, np.flatnonzero(hh & (frame["votingage"] == "18 or over"))].sum(axis=1)
    kids = dense[:, np.flatnonzero(hh & (frame["votingage"] == "under 18"))].sum(axis=1)
    assert (4 * adults >= kids).all()
    assert len(kn.edits) == 1 and kn.edits[0].holds(d.leaf_counts).all()
    coef = children_per_adult_edit(d.schema).coef
    np.testing.assert_array_equal(coef, np.where(hh, np.where(frame["votingage"] == "18 or over", 4, -1), 0))
    # state (and nation) totals invariant and equal to the data
    assert kn.total_level == 2
    geo = d.geography
    leaf_codes = np.array([geo.names[i] for i in geo.leaves])
    assert kn.root_total == kn.invariant_totals[0] == dense.sum() == d.population
    for r in np.flatnonzero(geo.level == 2):
        assert kn.invariant_totals[r] == dense[np.char.startswith(leaf_codes, geo.names[r])].sum()
    assert len(kn.invariant_totals) == (geo.level <= 2).sum()  # no county, tract, ... totals
    # GQ facts: persons only in present types, at least the lower bound (>= 1 per occupied facility)
    gq = kn.gq
    types = np.asarray(frame["hhgq"].map({v: i for i, v in enumerate(d.schema.attribute("hhgq").values)}))
    per_type = np.stack([dense[:, types == g].sum(axis=1) for g in range(8)], axis=1)
    assert (per_type[~gq.present] == 0).all()
    assert (per_type >= gq.lower).all()
    assert (gq.lower[:, 0] == 0).all() and (gq.lower[:, 1:][gq.present[:, 1:]] >= 1).all()
    np.testing.assert_array_equal(gq.present[:, 0], per_type[:, 0] > 0)
    assert gq.present[:, 1:].any()  # some GQ facilities exist in this preset
    assert (dense.sum(axis=1) == 0).any()  # and some empty blocks


def test_synthetic_seeding_is_deterministic():
    a = synthetic_census(seed=11, preset="tiny")
    b = synthetic_census(seed=11, preset="tiny")
    c = synthetic_census(seed=12, preset="tiny")
    assert (a.leaf_counts != b.leaf_counts).nnz == 0
    np.testing.assert_array_equal(a.knowledge.gq.lower, b.knowledge.gq.lower)
    np.testing.assert_array_equal(a.knowledge.gq.present, b.knowledge.gq.present)
    assert a.geography.names == c.geography.names
    assert (a.leaf_counts != c.leaf_counts).nnz > 0


def test_synthetic_scale_and_options():
    d = synthetic_census(seed=2, preset="tiny", edits=False, gq_share=0.0, empty_share=0.0)
    assert d.knowledge.edits == ()
    assert not d.knowledge.gq.present[:, 1:].any()
    assert (d.leaf_counts.toarray().sum(axis=1) > 0).all()


@pytest.mark.parametrize(
    "kwargs, field",
    [
        ({"preset": "galaxy"}, "fanout"),
        ({"fanout": (1, 2, 3, 4)}, "fanout"),
        ({"fanout": (1, 0, 1, 1, 1)}, "fanout"),
        ({"fanout": (1, 1, 1, 10, 1)}, "fanout"),
        ({"fanout": (1, 1, 1, 1, 1000)}, "fanout"),
        ({"empty_share": 1.0}, "shares"),
        ({"empty_share": -0.1}, "shares"),
        ({"gq_share": 1.5}, "shares"),
        ({"scale": 0}, "shares"),
        ({"total_level": "planet"}, "total_level"),
    ],
)
def test_synthetic_bad_arguments(kwargs, field):
    with pytest.raises(DataValidationError) as err:
        synthetic_census(seed=0, **{"preset": "tiny", **kwargs})
    assert _field(err) == field


# ---------------------------------------------------------------------- microdata (6.3 item 20)
def _histograms_from_records(data, frame):
    """Leaf histograms rebuilt from records with numpy (labels -> positions -> ravel)."""
    geo = data.geography
    row_of = {geo.names[i]: k for k, i in enumerate(geo.leaves)}
    out = np.zeros((len(geo.leaves), data.schema.size), dtype=np.int64)
    if len(frame) == 0:
        return out
    pos = [frame[a.name].map({v: i for i, v in enumerate(a.values)}).to_numpy() for a in data.schema.attributes]
    np.add.at(out, (frame["geocode"].map(row_of).to_numpy(), np.ravel_multi_index(pos, data.schema.shape)), 1)
    return out


def test_records_round_trip_synthetic(small_data):
    frame = records(small_data)
    assert list(frame.columns) == ["geocode", *small_data.schema.names]
    assert len(frame) == small_data.population
    np.testing.assert_array_equal(_histograms_from_records(small_data, frame), small_data.leaf_counts.toarray())
    assert frame["geocode"].str.len().eq(15).all()


@given(st.integers(0, 2**31), st.floats(0.0, 0.3))
@settings(max_examples=25)
def test_records_round_trip_random_counts(tiny2, seed, density):
    data = tiny2
    rng = np.random.default_rng(seed)
    shape = data.leaf_counts.shape
    counts = np.where(rng.random(shape) < density, rng.integers(1, 4, shape), 0)
    frame = records(data, sp.csr_matrix(counts))
    assert len(frame) == counts.sum()
    np.testing.assert_array_equal(_histograms_from_records(data, frame), counts)


def test_records_rejects_negative_counts(tiny2):
    data = tiny2
    bad = sp.lil_matrix(data.leaf_counts.shape, dtype=np.int64)
    bad[0, 0] = -1
    with pytest.raises(DataValidationError) as err:
        records(data, bad)
    assert _field(err) == "leaf_counts"


def test_from_csv_rebuilds_leaf_counts(tmp_path, small_data):
    path = tmp_path / "persons.csv"
    frame = records(small_data)
    frame.sample(frac=1.0, random_state=0).to_csv(path, index=False)  # order must not matter
    loaded = from_csv(path, races=7)
    assert loaded.population == small_data.population
    assert loaded.name == "persons"
    src_geo, new_geo = small_data.geography, loaded.geography
    src = {src_geo.names[i]: small_data.leaf_counts[k].toarray().ravel() for k, i in enumerate(src_geo.leaves)}
    for k, i in enumerate(new_geo.leaves):
        np.testing.assert_array_equal(loaded.leaf_counts[k].toarray().ravel(), src[new_geo.names[i]])
    # blocks absent from the file are exactly the empty ones
    missing = set(src) - {new_geo.names[i] for i in new_geo.leaves}
    assert all(src[code].sum() == 0 for code in missing)
    # the public knowledge is the state-population invariant, recomputed from the file
    assert loaded.knowledge.total_level == 2 and loaded.knowledge.gq is None
    invariant = loaded.geography.level <= 2
    np.testing.assert_array_equal(loaded.knowledge.invariant_totals, _prefix_oracle(loaded).sum(axis=1)[invariant])
    # a larger race domain keeps the labels (first races are shared), a block invariant works
    wide = from_csv(path, races=63, total_level="block")
    assert wide.population == small_data.population and wide.knowledge.total_level == 6


def test_from_csv_bad_files(tmp_path, tiny2):
    """Malformed input is refused naming the file: a missing column, a geocode that is not 15 digits."""
    data = tiny2
    good = records(data)
    cases = {
        "missing.csv": (good.drop(columns=["hispanic"]), "missing columns.*hispanic"),
        "geocode.csv": (good.assign(geocode=["12345"] + good["geocode"].tolist()[1:]), "15 digits"),
        "letters.csv": (good.assign(geocode=["01001000100100X"] + good["geocode"].tolist()[1:]), "15 digits"),
    }
    for name, (frame, pattern) in cases.items():
        path = tmp_path / name
        frame.to_csv(path, index=False)
        with pytest.raises(DataValidationError, match=pattern) as err:
            from_csv(path, races=2)
        assert _field(err) == str(path)


def test_from_csv_leaves_out_values_outside_the_schema(tmp_path, tiny2):
    """An attribute value that is not one of the schema's is a person left out (the stated rule),
    not a refusal: the loaded histograms are those of the other persons (oracle: numpy on the
    in-domain rows).  A file written with more races than requested keeps its first races."""
    good = records(tiny2)
    unknown = good.assign(cenrace=["Martian"] + good["cenrace"].tolist()[1:])
    unknown.to_csv(tmp_path / "unknown.csv", index=False)
    loaded = from_csv(tmp_path / "unknown.csv", races=2)
    kept = good.iloc[1:]
    assert loaded.population == len(kept)
    by_code = {loaded.geography.names[i]: k for k, i in enumerate(loaded.geography.leaves)}
    oracle = np.zeros((len(by_code), loaded.schema.size), dtype=np.int64)
    pos = [kept[a.name].map({v: i for i, v in enumerate(a.values)}).to_numpy() for a in loaded.schema.attributes]
    np.add.at(oracle, (kept["geocode"].map(by_code).to_numpy(), np.ravel_multi_index(pos, loaded.schema.shape)), 1)
    np.testing.assert_array_equal(loaded.leaf_counts.toarray(), oracle)
    wide = records(synthetic_census(seed=0, preset="tiny", races=7))
    wide.to_csv(tmp_path / "races.csv", index=False)
    narrow = from_csv(tmp_path / "races.csv", races=2)
    first_two = set(pl94_schema(2).attribute("cenrace").values)
    assert narrow.population == int(wide["cenrace"].isin(first_two).sum())
