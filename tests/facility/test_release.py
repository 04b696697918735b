"""What a facility run publishes, (T, R), is kept apart from what the true counts N decide.

Two count vectors run with the same noise draws mark the same nodes often enough; whenever they
do, their releases must be identical while the true-data diagnostics (opened set, costs) differ.
Report entries computed from N are labelled ``true ... (diagnostic)``.  These tests failed before
the split: runs had no ``release`` and kept S and the costs as plain fields next to R.

``dpmodels release facility`` and :func:`dpmodels.facility.release.release` are run below as a user
runs them: outputs, the ledger, refusals that write nothing, seeded experiments, one session.
"""

import dataclasses
import json
import subprocess
import sys
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dpmodels
from dpmodels import instances
from dpmodels.core.errors import DataValidationError
from dpmodels.core.facts import ReleaseFacts
from dpmodels.core.randomness import SECURE_SOURCE, SEEDED_SOURCE
from dpmodels.core.session import BudgetExceededError, PrivacySession
from dpmodels.facility.data import HST
from dpmodels.facility.frt import frt_embedding
from dpmodels.facility.general_metric import dp_ufl_general
from dpmodels.facility.hst import is_antichain
from dpmodels.facility.marks import exact_spend
from dpmodels.facility.mechanism import algorithm2, run_tree
from dpmodels.facility.models import build_tree_model, build_ufl_mip
from dpmodels.facility.release import (
    NEIGHBOURS,
    FacilityRelease,
    clamp_counts,
    count_cap,
    level_ledger,
    release_facts,
)
from dpmodels.facility.release import release as facility_release
from dpmodels.facility.results import TreeRelease
from dpmodels.instances.facility import from_csv

OTHER_COUNTS = [3, 1, 1, 0, 0, 0, 1, 1]  # example A has (3, 0, 1, 0, 0, 0, 0, 1)


def test_the_release_holds_exactly_the_published_fields():
    names = [f.name for f in dataclasses.fields(TreeRelease)]
    assert names == ["algorithm", "private", "epsilon", "eps_used", "lprime", "scales", "tree", "R", "randomness"]
    run = algorithm2(instances.load("facility/example-a"), 1.0, rng=0)
    published = run.release.as_dict()
    assert set(published) == {*names}
    assert published["R"] == run.R.tolist() and published["tree"]["parent"] == run.tree.parent.tolist()
    with pytest.raises(AttributeError):
        run.cost = 0.0  # the old names are read-only aliases of the diagnostics
    assert run.cost == run.diagnostics.cost and run.S is run.diagnostics.S


@pytest.mark.parametrize("algorithm", ["dp", "dp_uniform_noise", "dp_all_marked", "gupta_style"])
def test_same_noise_and_marks_give_the_same_release_whatever_the_counts(algorithm):
    a_inst = instances.load("facility/example-a")
    b_inst = a_inst.with_counts(OTHER_COUNTS)
    same_marks = differing_costs = 0
    for seed in range(60):
        a = run_tree(a_inst, 1.0, algorithm, rng=seed, sites="all_nodes")
        b = run_tree(b_inst, 1.0, algorithm, rng=seed, sites="all_nodes")
        if np.array_equal(a.marked, b.marked):
            same_marks += 1
            assert a.release == b.release
            differing_costs += a.diagnostics.cost != b.diagnostics.cost
        assert (a.release == b.release) == np.array_equal(a.R, b.R)  # R is the only data-dependent entry
    assert same_marks >= 5 and differing_costs >= 5


def test_without_noisy_levels_the_release_ignores_the_counts():
    """ε f <= 1 gives L' = 0: every node is marked and R is every leaf, whatever N."""
    a_inst = instances.load("facility/example-a")
    a, b = algorithm2(a_inst, 0.1), algorithm2(a_inst.with_counts(OTHER_COUNTS), 0.1)
    assert a.release == b.release and a.release.lprime == 0 and a.release.scales == ()
    assert a.diagnostics.cost == pytest.approx(9.0) and b.diagnostics.cost != a.diagnostics.cost


def test_pipeline_release_and_labelled_summary():
    inst = instances.generate("facility/plane", seed=3, n=30, f=0.3)
    counts = inst.N.copy()
    counts[[0, 5]] += [1, 2]
    other = inst.with_counts(counts)
    emb = frt_embedding(inst.d, rng=0)  # the tree depends on d only: the same for both
    equal = differing_costs = 0
    for seed in range(20):
        a = dp_ufl_general(inst, 1.0, rng=seed, embedding=emb)
        b = dp_ufl_general(other, 1.0, rng=seed, embedding=emb)
        assert a.release == a.run.release
        if np.array_equal(a.run.marked, b.run.marked):
            equal += 1
            assert a.release == b.release
            differing_costs += a.diagnostics.realized_cost != b.diagnostics.realized_cost
    assert equal >= 3 and differing_costs >= 1
    s = a.summary()
    public = {"algorithm", "private", "epsilon", "R", "L_prime", "L", "noise_scales", "eps_used", "d_min"}
    public |= {"randomness"}
    assert set(s) - public == {
        f"true {k} (diagnostic)"
        for k in ("realized cost", "set cost", "tree cost", "facility cost", "connection cost", "|S|")
    }
    assert s["true realized cost (diagnostic)"] == a.realized_cost == a.diagnostics.realized_cost
    assert not any("release" in k for k in s)


def test_plugin_labels_the_true_cost():
    tree = instances.load("facility/example-a", f=3.1)
    res = dpmodels.solve(build_tree_model(tree), "facility_mechanism", epsilon=1.0, seed=0)
    assert "cost" not in res.extra_info and res.extra_info["true cost (diagnostic)"] == res.incumbent_objective
    plane = instances.generate("facility/plane", seed=1, n=15)
    res = dpmodels.solve(build_ufl_mip(plane), "facility_mechanism", epsilon=1.0, seed=0)
    assert "cost" not in res.extra_info and "realized_cost" not in res.extra_info
    assert res.extra_info["true cost (diagnostic)"] == pytest.approx(res.incumbent_objective)


# ------------------------------------------------------------------ dpmodels release facility, as a user runs it
def dpmodels_release(*args):
    command = [sys.executable, "-m", "dpmodels.cli", "release", "facility", *map(str, args)]
    return subprocess.run(command, capture_output=True, text=True)


@pytest.fixture
def points(tmp_path):
    """200 points in the unit square with 0-3 clients each; rows 10 and 11 repeat rows 0 and 1."""
    rng = np.random.default_rng(0)
    xy = rng.random((200, 2)).round(4)
    xy[[10, 11]] = xy[[0, 1]]
    frame = pd.DataFrame({"x": xy[:, 0], "y": xy[:, 1], "count": rng.integers(0, 4, 200)})
    frame.to_csv(tmp_path / "points.csv", index=False)
    return tmp_path


def test_release_writes_facilities_tree_and_a_secure_ledger(points):
    out, tree_out = points / "facilities.csv", points / "tree.csv"
    proc = dpmodels_release(
        "--points", points / "points.csv", "--epsilon", "1", "--f", "0.05", "--out", out, "--tree-out", tree_out
    )
    assert proc.returncode == 0, proc.stderr
    assert "cost" not in proc.stdout and "|S|" not in proc.stdout  # nothing computed from the counts but R
    data = pd.read_csv(points / "points.csv")
    facilities, tree = pd.read_csv(out), pd.read_csv(tree_out)
    assert list(facilities.columns) == ["node", "level", "location", "x", "y"] and len(facilities) > 0
    locations = np.unique(data[["x", "y"]].to_numpy(), axis=0)  # the distinct locations, lexicographic order
    assert facilities[["x", "y"]].to_numpy().tolist() == locations[facilities.location].tolist()
    assert list(tree.columns) == ["node", "parent", "level", "rep_location", "in_R", "x", "y"]
    assert sorted(tree.node[tree.in_R]) == sorted(facilities.node)
    hst = HST(tree.parent.to_numpy(), tree.level.to_numpy(), 1.5, np.flatnonzero(tree.level.to_numpy() == 0))
    assert hst.n == 198 and is_antichain(hst, facilities.node.to_numpy())  # duplicates merged; R = minset(M)
    assert tree.loc[tree.level == 0, "rep_location"].nunique() == 198
    ledger = json.loads((points / "facilities.ledger.json").read_text())
    assert ledger["private"] is True and ledger["randomness"] == SECURE_SOURCE
    assert Fraction(ledger["spent"]["epsilon"]) <= 1
    (charge,) = ledger["charges"]
    rows = charge["measurements"]
    assert [r["query"] for r in rows] == [f"marks at level {lvl}" for lvl in range(len(rows))] and rows
    assert all(r["sensitivity"] == 1 and r["epsilon"] == pytest.approx(1 / r["scale"]) for r in rows)
    assert sum(r["epsilon"] for r in rows) <= 1 and charge["randomness"] == SECURE_SOURCE


def _bad_points(tmp_path, kind):
    path = tmp_path / f"{kind}.csv"
    text = {
        "empty": "",
        "header-only": "x,y,count\n",
        "no-count": "x,y\n0,0\n1,1\n",
        "no-coordinates": "count\n1\n2\n",
        "text-coordinate": "x,y,count\n0,0,1\nabc,1,2\n",
        "text-count": "x,y,count\n0,0,1\n1,1,two\n",
        "blank-count": "x,y,count\n0,0,1\n1,1,\n",
        "negative-count": "x,y,count\n0,0,1\n1,1,-1\n",
        "fractional-count": "x,y,count\n0,0,1\n1,1,1.5\n",
        "infinite-coordinate": "x,y,count\n0,inf,1\n1,1,1\n",
    }.get(kind)
    if kind == "not-utf8":
        path.write_bytes(b"x,y,count\n0,0,1\n1,1,2\n\xff\xfe,0,1\n")
    elif kind != "missing":
        path.write_text(text)
    return path


@pytest.mark.parametrize(
    "kind, message",
    [
        ("missing", "file not found"),
        ("empty", "is empty"),
        ("not-utf8", "not UTF-8"),
        ("header-only", "no rows"),
        ("no-count", "'count' column"),
        ("no-coordinates", "no coordinate columns"),
        ("text-coordinate", "column 'x' needs finite numbers; data row 2"),
        ("text-count", "column 'count' needs finite numbers; data row 2"),
        ("blank-count", "data row 2"),
        ("negative-count", "non-negative integers"),
        ("fractional-count", "non-negative integers"),
        ("infinite-coordinate", "column 'y' needs finite numbers"),
    ],
)
def test_bad_points_files_are_refused_before_anything_is_written(tmp_path, kind, message):
    path = _bad_points(tmp_path, kind)
    out = tmp_path / "o.csv"
    proc = dpmodels_release(
        "--points", path, "--epsilon", "1", "--f", "1", "--out", out, "--tree-out", tmp_path / "t.csv"
    )
    assert proc.returncode == 2 and message in proc.stderr, proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted({path.name} - {"missing.csv"})


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--f", "0"], "--f: must be a finite number > 0"),
        (["--f", "-2"], "--f: must be a finite number > 0"),
        (["--f", "nan"], "--f: must be a finite number > 0"),
        (["--f", "cheap"], "invalid float value"),
        (["--epsilon", "0"], "epsilon"),
        (["--epsilon", "-1"], "epsilon"),
        (["--seed", "3"], "not private"),
        (["--lam", "2.5"], "--lam"),
        (["--out", "{dir}/missing/o.csv"], "does not exist"),
        (["--tree-out", "{dir}/missing/t.csv"], "does not exist"),
        (["--out", "{dir}/points.csv"], "would overwrite the input"),
        (["--tree-out", "{dir}/o.csv"], "must differ from --out"),
    ],
)
def test_bad_requests_are_refused_before_anything_is_written(points, extra, message):
    base = {"--points": points / "points.csv", "--epsilon": "1", "--f": "0.05", "--out": points / "o.csv"}
    extra = [str(e).replace("{dir}", str(points)) for e in extra]
    args = [a for flag, value in base.items() if flag not in extra for a in (flag, value)]
    before = {p.name: p.read_bytes() for p in points.iterdir()}
    proc = dpmodels_release(*args, *extra)
    assert proc.returncode == 2 and message in proc.stderr, proc.stderr
    assert {p.name: p.read_bytes() for p in points.iterdir()} == before


def test_a_seeded_experiment_is_reproducible_and_labelled(points):
    outputs = []
    for name in ("a", "b"):
        proc = dpmodels_release(
            "--points", points / "points.csv", "--epsilon", "2", "--f", "0.05", "--out", points / f"{name}.csv",
            "--tree-out", points / f"{name}-tree.csv", "--seed", "7", "--not-private",
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        outputs.append([(points / f"{name}{suffix}.csv").read_text() for suffix in ("", "-tree")])
    assert outputs[0] == outputs[1]
    ledger = json.loads((points / "a.ledger.json").read_text())
    assert ledger["private"] is False and ledger["randomness"] == SEEDED_SOURCE
    assert ledger["charges"][0]["randomness"] == SEEDED_SOURCE


def test_python_release_spends_from_one_session():
    plane = instances.generate("facility/plane", seed=5, n=60, f=0.3)
    session = PrivacySession(plane, epsilon=1)
    first = facility_release(session, "0.6")
    with pytest.raises(BudgetExceededError):
        facility_release(session, "0.6")  # refused before anything is drawn
    second = facility_release(session, "0.4")
    assert session.spent_epsilon == 1 and len(session.charges) == 2
    for published, charge in zip((first, second), session.charges, strict=True):
        assert isinstance(published, FacilityRelease) and published.tree.randomness == SECURE_SOURCE
        assert not any(hasattr(published, name) for name in ("S", "cost", "diagnostics", "facility"))
        assert sum(row["epsilon"] for row in charge.measurements) <= charge.epsilon
        assert published.tree.eps_used <= charge.epsilon and published.tree.epsilon <= charge.epsilon
        assert len(published.facilities) == len(published.R) and published.scale > 0


def test_python_release_on_a_tree_and_its_exact_ledger():
    tree = instances.load("facility/example-a")
    session = PrivacySession(tree, epsilon="0.75", seed=1, not_private=True)
    published = facility_release(session, "0.75", sites="all_nodes")
    assert published.scale == 1.0 and published.tree.lprime == 2
    run = run_tree(tree, 0.75, rng=0)
    ledger = level_ledger(run)
    assert ledger.total_epsilon == exact_spend(run.scales) <= Fraction(3, 4)
    assert ledger.to_frame()[["sensitivity", "cells"]].to_numpy().tolist() == [[1.0, 8], [1.0, 4]]
    with pytest.raises(DataValidationError, match="f > 0"):
        facility_release(PrivacySession(instances.load("facility/example-a", f=0.0), epsilon=1), 1)
    with pytest.raises(DataValidationError, match="sites"):
        facility_release(session, "0.1", sites="everywhere")


# ------------------------------------------------------------------ issue 22: public means declared, rules not refusals
def _write_points(path, rows) -> None:
    path.write_text("x,y,count\n" + "".join(f"{x},{y},{c}\n" for x, y, c in rows))


def test_a_huge_count_is_clamped_to_the_cap_not_refused(tmp_path):
    """Before issue 22 a count of 2^63 or more wrapped to a negative int64 and refused the whole release."""
    _write_points(tmp_path / "p.csv", [(0, 0, 1), (1, 0, "1e30"), (0, 1, 2**63), (1, 1, 2**40 - 1), (1, 0, 2)])
    data = from_csv(tmp_path / "p.csv", f=1.0)
    cap = count_cap(4)
    assert cap == 2**40 and data.N.tolist() == [1, cap, cap, 2**40 - 1]  # (0,0) (0,1) (1,0) (1,1): sorted
    assert count_cap(2**23) == 2**39 and count_cap(1) == 2**40


COORD = st.tuples(st.integers(0, 3), st.integers(0, 2))
COUNT = st.one_of(st.integers(0, 5), st.integers(2**38, 2**41), st.integers(2**52, 10**25))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(COORD, COUNT), min_size=1, max_size=15))
def test_the_loader_sums_and_clamps_exactly(tmp_path, rows):
    """The oracle: exact Python integers summed per distinct coordinate pair, then min(sum, cap), in sorted order."""
    _write_points(tmp_path / "p.csv", [(x, y, c) for (x, y), c in rows])
    data = from_csv(tmp_path / "p.csv")
    totals: dict = {}
    for (x, y), c in rows:
        totals[(x, y)] = totals.get((x, y), 0) + c
    locations = sorted(totals)
    cap = count_cap(len(locations))
    assert data.points.tolist() == [list(map(float, xy)) for xy in locations]
    assert data.N.tolist() == [min(totals[xy], cap) for xy in locations]


def test_the_tree_does_not_depend_on_the_order_of_the_rows(tmp_path):
    """Locations are in coordinate order: a file listing clients row by row (in whatever order) gives the same
    locations, counts and, with the same generator, the same release.  Before issue 22 the order of first
    appearance, which such a file's rows decide, ordered the locations and so shaped the tree."""
    rng = np.random.default_rng(4)
    xy = rng.random((30, 2)).round(3)
    clients = [tuple(xy[i]) for i in rng.integers(0, 30, 60)] + [tuple(p) for p in xy]
    counts = [1] * 60 + [0] * 30
    orders = (np.arange(90), rng.permutation(90))
    loaded = []
    for k, order in enumerate(orders):
        _write_points(tmp_path / f"{k}.csv", [(*clients[i], counts[i]) for i in order])
        loaded.append(from_csv(tmp_path / f"{k}.csv", f=0.2))
    a, b = loaded
    assert a.points.tolist() == b.points.tolist() and a.N.tolist() == b.N.tolist()
    releases = [facility_release(PrivacySession(d, 1, seed=9, not_private=True), 1) for d in loaded]
    assert releases[0].tree == releases[1].tree and releases[0].facilities.tolist() == releases[1].facilities.tolist()


def test_the_python_release_clamps_every_count_first():
    """A session on counts above the cap releases exactly what it releases on the clamped counts (same stream)."""
    tree = instances.load("facility/example-a")
    huge = tree.with_counts([2**62, 2**62, 1, 0, 0, 0, 0, 2**61])
    clamped = tree.with_counts([2**40, 2**40, 1, 0, 0, 0, 0, 2**40])
    assert clamp_counts(huge).N.tolist() == clamped.N.tolist()
    for seed in range(5):
        runs = [
            facility_release(PrivacySession(d, "0.75", seed=seed, not_private=True), "0.75") for d in (huge, clamped)
        ]
        assert runs[0] == runs[1]


def test_release_facts_state_the_public_points_and_the_rule():
    facts = release_facts(198, 0.05, lam=1.5, radius_mode="tight")
    assert isinstance(facts, ReleaseFacts) and facts.flavor == "pure DP" and facts.neighbours == NEIGHBOURS
    assert facts.declared == {
        "locations": 198,
        "f": 0.05,
        "lambda": 1.5,
        "tree": "an FRT tree (lambda = 1.5, radii 'tight') of the points",
        "count cap": 2**40,
        "radius mode": "tight",
    }
    assert facts.invariants == {} and any("clamped to 1099511627776" in rule for rule in facts.bounding)
    assert any("points (coordinates) are public" in note for note in facts.notes)
    json.dumps(facts.to_dict())
    hst = release_facts(8, 3.0, sites="all_nodes", tree_given=True)
    assert hst.declared["tree"] == "the declared HST" and hst.declared["sites"] == "all_nodes"
    with pytest.raises(DataValidationError, match="lam"):
        release_facts(8, 3.0, lam=2.5)
