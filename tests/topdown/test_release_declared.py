"""TopDown releases on declared public facts (issue 22): the geography is declared, never derived from
the persons; out-of-domain persons are left out by stated rules; ``release_facts`` states it all.

Oracles: the blocks file itself (its geocode prefixes give every level's regions), brute force over
every single-record substitution (a replacement record may be left out by the rules, i.e. removed),
and the exact privacy loss of the double-geometric law, ``sum |f(D) - f(D')| / scale`` over the
measured cells (per coordinate, ``sup_y (|y - f'| - |y - f|) / scale = |f - f'| / scale``), with the
truths built by the loader the command line uses and the scales read from its JSON ledger.
"""

import json
import tempfile
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from dpmodels import cli
from dpmodels.core.errors import DataValidationError
from dpmodels.core.session import PrivacySession
from dpmodels.instances.topdown import from_csv, synthetic_census
from dpmodels.topdown.data import BOUNDING_RULES
from dpmodels.topdown.mechanism import Strategy, default_strategy
from dpmodels.topdown.queries import QuerySet, identity
from dpmodels.topdown.release import release, release_facts

RACES = 2
PREFIX = (0, 2, 5, 11, 12, 15)  # geocode prefix length of each level (1 = the nation)
#: Declared blocks: two states, three counties; the last two blocks stay empty in every file below.
BLOCKS = ("010010001001001", "010010001001002", "010020002002001", "020030003003001", "020030003003002")
ALONE, MOVED_TO = BLOCKS[0], BLOCKS[2]  # D: one person alone in ALONE; D': that person in MOVED_TO
PERSON = {"hhgq": "household", "votingage": "18 or over", "hispanic": "hispanic", "cenrace": "AIAN"}


def _persons(where: str) -> pd.DataFrame:
    """Three persons in BLOCKS[1] and BLOCKS[2], and the person of the pair in block ``where``."""
    others = [
        (BLOCKS[1], "household", "under 18", "not hispanic", "Asian"),
        (BLOCKS[2], "household", "18 or over", "not hispanic", "AIAN"),
        (BLOCKS[2], "nursing", "18 or over", "hispanic", "Asian"),
    ]
    rows = [dict(zip(["geocode", *PERSON], row, strict=True)) for row in others]
    return pd.DataFrame([*rows, {"geocode": where, **PERSON}])


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    """blocks.csv, and D / D' (neighbours: one person substituted into another declared block)."""
    root = tmp_path_factory.mktemp("pair")
    pd.DataFrame({"geocode": BLOCKS}).to_csv(root / "blocks.csv", index=False)
    _persons(ALONE).to_csv(root / "d.csv", index=False)
    _persons(MOVED_TO).to_csv(root / "d2.csv", index=False)
    return root


def _release(root: Path, persons: str, name: str, *extra) -> list[str]:
    outs = ["--out-microdata", str(root / f"{name}.csv"), "--out-histograms", str(root / f"{name}.hist.csv")]
    return ["release", "topdown", "--persons", str(root / persons), "--races", str(RACES), *outs, *extra]


# ---------------------------------------------------------------------- the command line
def test_release_without_blocks_exits_2_and_writes_nothing(pair, capsys):
    """Regression: without --blocks the geography came from the persons (a person alone in a block made
    it appear); now --blocks is required, and only a release declared --not-private may omit it (its
    ledger and manifest then say it is not private)."""
    before = sorted(p.name for p in pair.iterdir())
    assert cli.main(_release(pair, "d.csv", "none", "--epsilon", "1")) == 2
    assert "--blocks: is required" in capsys.readouterr().err
    assert sorted(p.name for p in pair.iterdir()) == before
    assert cli.main(_release(pair, "d.csv", "none", "--epsilon", "1", "--not-private")) == 0
    assert "NOT private" in capsys.readouterr().err
    assert json.loads((pair / "none.ledger.json").read_text())["private"] is False
    manifest = json.loads((pair / "none.manifest.json").read_text())
    assert manifest["private"] is False and manifest["notes"][0].startswith("NOT PRIVATE")


def _measurements(ledger: dict) -> list[dict]:
    (charge,) = ledger["charges"]
    return charge["measurements"]


def test_exact_privacy_loss_of_neighbouring_files_through_the_command_line(pair):
    """D and D' differ by one person moved from a block where it is alone to another declared block:
    both releases offer the same blocks and have identical ledgers, and the exact privacy loss of the
    measurement (truths from the CLI's loader, scales from its ledger) is at most the ledger's epsilon."""
    for persons, name in (("d.csv", "out"), ("d2.csv", "out2")):
        assert cli.main(_release(pair, persons, name, "--blocks", str(pair / "blocks.csv"), "--epsilon", "1")) == 0
    ledgers = [json.loads((pair / f"{name}.ledger.json").read_text()) for name in ("out", "out2")]
    assert all(ledger["private"] is True for ledger in ledgers)
    assert _measurements(ledgers[0]) == _measurements(ledgers[1])  # queries, cells, sensitivities, scales
    # the same keys are available: every level's regions are the declared blocks' prefixes (oracle)
    regions = [sorted({code[:k] for code in BLOCKS}) for k in PREFIX]
    cells = {}
    for row in _measurements(ledgers[0]):
        cells.setdefault(int(row["group"].split()[1]), set()).add(row["cells"])
    assert cells == {level: {len(r)} for level, r in enumerate(regions, start=1)}
    for name in ("out", "out2"):
        micro = pd.read_csv(pair / f"{name}.csv", dtype=str)
        hist = pd.read_csv(pair / f"{name}.hist.csv", dtype={"region": str})
        assert set(micro.geocode) <= set(BLOCKS) and set(hist[hist.level == 6].region) <= set(BLOCKS)
    # the exact loss, summed over every measured cell of every level and query set (sequential groups)
    data = [from_csv(pair / f, races=RACES, blocks=pair / "blocks.csv") for f in ("d.csv", "d2.csv")]
    hists = [d.node_histograms_all().toarray() for d in data]
    matrices = {q.name: q.matrix.toarray() for q in default_strategy(data[0].schema).queries}
    geo = data[0].geography
    loss = Fraction(0)
    for row in _measurements(ledgers[0]):
        rows = np.flatnonzero(geo.level == int(row["group"].split()[1]))
        f1, f2 = (h[rows] @ matrices[row["query"]].T for h in hists)
        loss += Fraction(int(np.abs(f1 - f2).sum())) / Fraction(row["scale"])
    assert 0 < loss <= Fraction(ledgers[0]["spent"]["epsilon"]) * (1 + Fraction(1, 10**12))


# ---------------------------------------------------------------------- the Python release
@pytest.fixture(scope="module")
def census():
    return synthetic_census(seed=2, preset="tiny", races=RACES)


def test_a_private_release_refuses_a_geography_derived_from_the_records(pair):
    derived = from_csv(pair / "d.csv", races=RACES)
    session = PrivacySession(derived, epsilon=1)
    state = json.dumps(session.rng.bit_generator.state, default=str)
    with pytest.raises(DataValidationError, match="--blocks FILE") as err:
        release(session, 1)
    assert err.value.field == "blocks"
    assert json.dumps(session.rng.bit_generator.state, default=str) == state  # nothing drawn
    assert session.charges == [] and session.spent_epsilon == 0  # refused before the session charged
    experiment = PrivacySession(derived, epsilon=1, seed=0, not_private=True)
    assert release(experiment, 1).node_counts[0].sum() == derived.population
    declared = from_csv(pair / "d.csv", races=RACES, blocks=pair / "blocks.csv")
    assert release(PrivacySession(declared, epsilon=1), 1).node_counts[0].sum() == declared.population


def _worst_change(a: np.ndarray) -> int:
    """Brute force at one node holding every counted record: the largest ``|A (e_i - e_j)|_1`` over
    substitutions between cells, and ``|A e_i|_1`` for a record replaced by one the rules leave out."""
    n = a.shape[1]
    moves = [np.abs(a[:, i] - a[:, j]).sum() for i in range(n) for j in range(n)]
    removals = [np.abs(a[:, i]).sum() for i in range(n)]
    return int(max(moves + removals))


def test_release_calibrates_the_root_for_a_record_the_rules_leave_out(census):
    """Regression: a query set whose columns are close (within-node substitution 1) but heavy
    (|A e_a| = 2) was calibrated 1 at the root; a person replaced by an out-of-domain record is a
    removal there, so the release calibrates the root with the brute-force maximum over both."""
    n = census.schema.size
    close = np.vstack([np.ones(n), np.r_[0, np.ones(n - 1)]])
    strategy = Strategy(
        (QuerySet("detailed", identity(census.schema)), QuerySet("close", sp.csr_matrix(close))), ("1/2", "1/2")
    )
    session = PrivacySession(census, epsilon=2, seed=1, not_private=True)
    release(session, 2, strategy)
    rows = {row["group"]: row for row in session.charges[0].measurements}
    for query in strategy.queries:
        assert rows[f"level 1 / {query.name}"]["sensitivity"] == _worst_change(query.matrix.toarray())
    assert rows["level 1 / close"]["sensitivity"] == 2


# ---------------------------------------------------------------------- release_facts
def test_release_facts_state_the_declared_geography_schema_strategy_and_rules(pair):
    data = from_csv(pair / "d.csv", races=RACES, blocks=pair / "blocks.csv")
    facts = release_facts(data)
    declared = facts.declared
    assert declared["blocks"] == len(BLOCKS)
    assert declared["regions_per_level"] == [len({code[:k] for code in BLOCKS}) for k in PREFIX]
    assert declared["schema"] == {"hhgq": 8, "votingage": 2, "hispanic": 2, "cenrace": RACES}
    assert declared["cells"] == 8 * 2 * 2 * RACES and declared["total_level"] == 2
    assert [s["query_set"] for s in declared["strategy"]] == ["detailed", "hhgq", "votingage x hispanic x cenrace"]
    assert sum(Fraction(s["share"]) for s in declared["strategy"]) == 1
    assert declared["level_shares"] == ["1/6"] * 6
    (invariant,) = facts.invariants
    assert "levels 1..2" in invariant and "3 regions" in facts.invariants[invariant]  # the nation, 2 states
    assert facts.bounding == BOUNDING_RULES and facts.flavor == "pure DP"
    assert facts.neighbours.startswith("substitution: ")
    assert "one person" in facts.privacy_unit and "L1" in facts.post_processing
    json.dumps(facts.to_dict())  # JSON-able
    derived = release_facts(from_csv(pair / "d.csv", races=RACES))
    assert "blocks" not in derived.declared and "regions_per_level" not in derived.declared
    assert derived.notes[0].startswith("NOT PRIVATE")


@settings(max_examples=15, deadline=None)
@given(st.lists(st.booleans(), min_size=4, max_size=4), st.sampled_from(BLOCKS))
def test_release_facts_do_not_depend_on_the_persons(keep, where):
    """Any subset of the persons, the moved person in any declared block: the same facts."""
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        pd.DataFrame({"geocode": BLOCKS}).to_csv(root / "blocks.csv", index=False)
        persons = _persons(where)[np.r_[keep] | np.r_[False, False, False, True]]
        persons.to_csv(root / "p.csv", index=False)
        facts = release_facts(from_csv(root / "p.csv", races=RACES, blocks=root / "blocks.csv"))
        _persons(ALONE).to_csv(root / "d.csv", index=False)
        reference = release_facts(from_csv(root / "d.csv", races=RACES, blocks=root / "blocks.csv"))
    assert facts.to_dict() == reference.to_dict()
