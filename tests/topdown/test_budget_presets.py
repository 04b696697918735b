"""The 2020 production's budget allocation as a preset (issue 25): the published fractions, exact shares,
the ledger charging exactly the declared rho, and the levels a geography lacks renormalized exactly."""

from fractions import Fraction

import pytest

from dpmodels import instances
from dpmodels.core.errors import DataValidationError
from dpmodels.topdown.budget_presets import (
    PL94_2020_GEOLEVEL_SHARES,
    PL94_2020_PASSES,
    PL94_2020_QUERY_SHARES,
    PL94_2020_RHO,
    budget_preset,
)
from dpmodels.topdown.data import pl94_schema
from dpmodels.topdown.driver import topdown
from dpmodels.topdown.mechanism import Strategy, measure, plan_measurement
from dpmodels.topdown.queries import QuerySet, identity, total
from dpmodels.topdown.solve import NodeOptions

#: person_US.ini [budget] geolevel_budget_prop, US to Block (the spec's numbers).
PUBLISHED = (104, 1440, 447, 687, 1256, 165)


def test_the_published_geolevel_shares_sum_to_exactly_one():
    assert [v * 4099 for v in PL94_2020_GEOLEVEL_SHARES.values()] == list(PUBLISHED)
    assert sum(PL94_2020_GEOLEVEL_SHARES.values()) == 1
    for level, shares in PL94_2020_QUERY_SHARES.items():
        assert all(isinstance(v, Fraction) for v in shares) and sum(shares) == 1, level
    assert PL94_2020_QUERY_SHARES["US"][0] == 0  # no total at the nation: it is invariant
    assert PL94_2020_RHO == Fraction(542**2, 339**2) and round(float(PL94_2020_RHO), 2) == 2.56


@pytest.fixture(scope="module")
def tiny():
    return instances.generate("topdown/synthetic", preset="tiny", races=2, seed=4, edits=False)


@pytest.mark.parametrize("rho", [Fraction(1), PL94_2020_RHO, Fraction(7, 3)])
def test_the_ledger_charges_exactly_the_declared_rho(tiny, rho):
    preset = budget_preset("pl94-2020", tiny.schema, tiny.geography.n_levels)
    plan = plan_measurement(tiny, None, preset.strategy, preset.level_shares, "discrete-gaussian", rho=rho)
    assert plan.ledger.total_rho == rho  # exact Fractions: no rounding anywhere
    assert sum(plan.level_rhos) == rho
    names = [q.name for q in preset.strategy.queries]
    for entry in plan.ledger.entries:
        level = int(entry.group.split(" / ")[0].removeprefix("level "))
        census = preset.levels[level - 1]
        share = PL94_2020_QUERY_SHARES[census][names.index(entry.query)]
        assert entry.rho == rho * PL94_2020_GEOLEVEL_SHARES[census] * share  # the production's rho_q
    at_us = {e.query for e in plan.ledger.entries if e.group.startswith("level 1 /")}
    assert "total" not in at_us and len(at_us) == 10


def test_fewer_levels_renormalize_the_present_shares_exactly():
    preset = budget_preset("pl94-2020", pl94_schema(3), 4, ["nation", "state", "county", "block"])
    kept = [PL94_2020_GEOLEVEL_SHARES[v] for v in ("US", "State", "County", "Block")]
    assert preset.level_shares == tuple(v / sum(kept) for v in kept) and sum(preset.level_shares) == 1
    assert preset.level_shares[1] / preset.level_shares[0] == Fraction(1440, 104)  # ratios kept
    assert preset.renormalized and preset.strategy.per_level[3] == PL94_2020_QUERY_SHARES["Block"]
    for levels, word in [
        (None, "name the geography's levels"),
        (["nation", "county", "state", "block"], "preset's order"),
        (["nation", "state", "county", "town"], "not levels of the preset"),
        (["nation", "state", "block"], "one name per geography level"),
    ]:
        with pytest.raises(DataValidationError, match=word):
            budget_preset("pl94-2020", pl94_schema(3), 4, levels)
    with pytest.raises(DataValidationError, match="must be one of"):
        budget_preset("pl94-2019", pl94_schema(3), 6)


def test_per_level_shares_are_checked():
    schema = pl94_schema(2)
    queries = (QuerySet("detailed", identity(schema)), QuerySet("total", total(schema)))
    with pytest.raises(DataValidationError, match=r"per_level\[1\].*sum to 1"):
        Strategy(queries, (Fraction(1, 2), Fraction(1, 2)), ((1, 0), (Fraction(1, 3), Fraction(1, 3))))
    with pytest.raises(DataValidationError, match="one share per query set"):
        Strategy(queries, (Fraction(1, 2), Fraction(1, 2)), ((1,),))
    strategy = Strategy(queries, (Fraction(1, 2), Fraction(1, 2)), ((1, 0), (0, 1)))
    assert strategy.shares_at(1) == (1, 0) and strategy.shares_at(2) == (0, 1)


def test_a_release_with_the_preset_and_its_passes_keeps_every_constraint(tiny):
    preset = budget_preset("pl94-2020", tiny.schema, tiny.geography.n_levels)
    measured = measure(tiny, None, preset.strategy, preset.level_shares, "discrete-gaussian", rng=3, rho=Fraction(2))
    assert {m.query for m in measured.by_node[0]} == {q.name for q in preset.strategy.queries} - {"total"}
    options = NodeOptions(passes=PL94_2020_PASSES)
    result = topdown(measured, tiny.knowledge, tiny.schema, tiny.geography, options)
    hard = ("negative cells", "invariant totals off", "structural zeros off", "inconsistent parents")
    assert all(result.checks[k] == 0 for k in hard), result.checks
    skipped = result.log[(result.log["method"] == "skipped") & (result.log["level"] == 1)]
    assert len(skipped) == 1  # the nation measures no total: its first pass is skipped
