"""TopDown measurement: noisy answers to every query set at every node of every level (spec 2).

The budget is split into per-level shares (default uniform over the L levels, spec erratum 4)
and, within a level, into per-query-set shares (the End-to-End test's "detailed" and
"query" proportions).  Nodes of a level are disjoint (parallel composition); the query
sets of a node and the levels add up.  A query set's noise at a level is calibrated to the
sensitivity of the level's stacked answers, where the changed record may also change node
(:func:`queries.level_sensitivity`).  Measurement happens once, up front; everything after it
is post-processing of the noisy answers and the public knowledge.

Exact noise is added in integers: the true answers are int64 (integer query coefficients
times integer counts) and ``truth + noise`` is formed in int64 by
:func:`dpmodels.core.noise.noisy_integers`; only the exact noisy integers become float64, for
the post-processing.  A query set with a non-integer coefficient is refused for exact noise:
a non-integer answer plus integer noise keeps its fractional part, which tells neighbours apart.
``noise="discrete-gaussian"`` with ``rho=`` measures under zCDP instead (:mod:`dpmodels.topdown.zcdp`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np
import scipy.sparse as sp

from dpmodels.core.accounting import PrivacyLedger, split_budget
from dpmodels.core.errors import DataValidationError
from dpmodels.core.noise import as_epsilon, exact, make_rng
from dpmodels.core.randomness import describe

from .data import Schema, TopDownData
from .noisy_answers import answer_matrices, noisy_answers, row_chunks
from .queries import QuerySet, identity, level_sensitivity, marginal, require_measurable
from .shares import level_row, level_unit_shares, measured_steps, unit_shares
from .zcdp import GAUSSIAN, gaussian_budget, level_l2_deltas, plan_gaussian

__all__ = [
    "Strategy",
    "default_strategy",
    "NodeMeasurement",
    "Measurements",
    "MeasurementPlan",
    "plan_measurement",
    "measure",
    "level_unit_shares",
]


@dataclass(frozen=True)
class Strategy:
    """Query sets measured at every node, with their within-level budget shares (sum to 1).

    Parameters
    ----------
    queries : tuple of QuerySet
        The query sets, distinct names.
    shares : tuple of Fraction
        Their positive shares of a level's budget, summing to 1.
    per_level : tuple of tuple of Fraction, optional
        Shares level by level (one row per geography level, root first), as the 2020 production
        allocates (:mod:`.budget_presets`): non-negative, each row summing to 1; a 0 leaves the query
        set unmeasured at that level.  Empty: ``shares`` at every level.
    """

    queries: tuple[QuerySet, ...]
    shares: tuple[Fraction, ...]
    per_level: tuple[tuple[Fraction, ...], ...] = ()

    def __post_init__(self):
        if len(self.queries) != len(self.shares) or not self.queries:
            raise DataValidationError("strategy", "needs one share per query set, at least one set")
        shares = unit_shares(self.shares, "strategy.shares")
        if shares is None:
            raise DataValidationError(
                "strategy.shares", f"must be positive and sum to 1, got {[str(v) for v in self.shares]}"
            )
        names = [q.name for q in self.queries]
        if len(set(names)) != len(names):
            raise DataValidationError("strategy", f"query set names repeat: {names}")
        object.__setattr__(self, "shares", tuple(shares))
        object.__setattr__(
            self, "per_level", tuple(level_row(row, k, len(names)) for k, row in enumerate(self.per_level))
        )

    def shares_at(self, level: int) -> tuple[Fraction, ...]:
        """The query sets' shares of ``level``'s budget (1 = the root): its ``per_level`` row if declared,
        else ``shares``; a 0 leaves a query set unmeasured there.

        Parameters
        ----------
        level : int
            The geography level, 1 at the root.
        """
        return self.per_level[level - 1] if self.per_level else self.shares

    def check_levels(self, n_levels: int) -> None:
        """Refuse per-level shares that do not give one row per geography level."""
        if self.per_level and len(self.per_level) != n_levels:
            raise DataValidationError(
                "strategy.per_level", f"needs one row per geography level ({n_levels}), got {len(self.per_level)}"
            )


def default_strategy(
    schema: Schema,
    marginals: Sequence[Sequence[str]] = (("hhgq",), ("votingage", "hispanic", "cenrace")),
    detailed_share="1/2",
) -> Strategy:
    """The detailed histogram plus a few marginals (the E2E default shape).

    Parameters
    ----------
    schema : Schema
        The histogram's attributes.
    marginals : sequence of sequence of str
        The attribute sets of the marginals.
    detailed_share : str or Fraction, default "1/2"
        The detailed query's share; the marginals split the rest equally.
    """
    marginals = [tuple(m) for m in marginals if set(m) <= set(schema.names)]
    queries = [QuerySet("detailed", identity(schema))] + [
        QuerySet(" x ".join(m), marginal(schema, m)) for m in marginals
    ]
    if not marginals:
        return Strategy(tuple(queries), (Fraction(1),))
    first = exact(detailed_share, "detailed_share")
    rest = [(1 - first) / len(marginals)] * len(marginals)
    return Strategy(tuple(queries), (first, *rest))


@dataclass
class NodeMeasurement:
    """Noisy answers of one query set at one node, with the per-row variance."""

    query: str
    values: np.ndarray
    variance: float


@dataclass
class Measurements:
    """All noisy answers: ``by_node[r]`` lists the measurements of region r.

    Parameters
    ----------
    strategy : Strategy
        What was measured.
    by_node : list of list of NodeMeasurement
        The noisy answers of every region.
    ledger : PrivacyLedger
        Every scale, recorded before the first draw.
    level_epsilons : tuple of Fraction
        The budget of every level (``inf`` with the discrete Gaussian: no pure-DP epsilon).
    mechanism : str
        The noise (``"geometric"``, ``"laplace"`` or ``"discrete-gaussian"``).
    info : dict, optional
        Free-form metadata (with the discrete Gaussian: ``rho`` and ``level_rhos``, exact).
    """

    strategy: Strategy
    by_node: list[list[NodeMeasurement]]
    ledger: PrivacyLedger
    level_epsilons: tuple[Fraction, ...]
    mechanism: str
    info: dict = field(default_factory=dict)

    def matrices(self) -> dict[str, sp.csr_matrix]:
        return {q.name: q.matrix for q in self.strategy.queries}


def _level_deltas(strategy: Strategy, geo, level: int, neighbours: str, records_may_leave: bool) -> dict[str, float]:
    """Per query set, the L1 sensitivity of ``level``'s stacked answers (spec 2.2).

    A substituted record may move between two nodes of the level, so every level of two or
    more nodes gets ``2 max_a ||A e_a||_1``; see :func:`queries.level_sensitivity`.  Records
    in leaves above ``level`` lie in none of its nodes and can enter or leave them, and so can
    records that a stated rule leaves out (``records_may_leave``).  A zero (the total at the
    root under substitution, which is public) cannot be measured.
    """
    nodes = int(geo.level_sizes()[level - 1])
    holds_all = not records_may_leave and bool(geo.level[geo.leaves].min() >= level)
    out = {}
    for q, share in zip(strategy.queries, strategy.shares_at(level), strict=True):
        if share == 0:  # not measured at this level (per-level shares)
            continue
        out[q.name] = require_measurable(
            q.name, level_sensitivity(q.matrix, nodes, neighbours, holds_all=holds_all), level, nodes, neighbours
        )
    return out


@dataclass
class MeasurementPlan:
    """What a measurement fixes before its first draw: the level budgets, the integer query matrices,
    every ``(rows, query set, scale)`` step in drawing order (the scale is ``sigma^2`` for the discrete
    Gaussian, whose levels' rhos are ``level_rhos``), and the ledger that recorded them."""

    strategy: Strategy
    level_epsilons: tuple[Fraction, ...]
    matrices: dict[str, sp.csr_matrix]
    steps: list[tuple]
    ledger: PrivacyLedger
    level_rhos: tuple[Fraction, ...] = ()


def plan_measurement(
    data: TopDownData,
    epsilon,
    strategy: Strategy | None = None,
    level_shares=None,
    noise: str = "geometric",
    neighbours: str = "substitution",
    *,
    records_may_leave: bool = False,
    randomness: str = "",
    rho=None,
) -> MeasurementPlan:
    """Check and record every scale of a measurement without drawing; refuse anything that cannot run.

    Reads only the declared parts of ``data``: the schema, the geography and the root's
    invariant total (the answers' magnitude bound).  A release calls it before the session is
    charged, so that a refusal of its public parameters costs no budget.

    Parameters
    ----------
    data, epsilon, strategy, level_shares, noise, neighbours, records_may_leave, rho
        As for :func:`measure`.
    randomness
        The noise source recorded in the plan's ledger.
    """
    gaussian = noise == GAUSSIAN
    if rho is not None and not gaussian:
        raise DataValidationError("rho", f"goes with noise={GAUSSIAN!r}; {noise!r} takes epsilon")
    eps = gaussian_budget(epsilon, rho) if gaussian else as_epsilon(epsilon)
    strategy = strategy or default_strategy(data.schema)
    geo = data.geography
    strategy.check_levels(geo.n_levels)
    level_eps = split_budget(eps, level_unit_shares(level_shares, geo.n_levels))
    if noise not in ("geometric", "laplace", GAUSSIAN):
        raise DataValidationError("noise", f"must be 'geometric', 'laplace' or {GAUSSIAN!r}, got {noise!r}")
    sensitivities = level_l2_deltas if gaussian else _level_deltas
    deltas = [sensitivities(strategy, geo, lv, neighbours, records_may_leave) for lv in range(1, geo.n_levels + 1)]
    matrices = answer_matrices(strategy, noise, data.knowledge.root_total)
    ledger = PrivacyLedger(randomness=randomness)
    if gaussian:  # level_eps holds the levels' rhos; the steps' scales are sigma^2
        steps = plan_gaussian(ledger, strategy, geo, level_eps, deltas)
        return MeasurementPlan(strategy, (float("inf"),) * geo.n_levels, matrices, steps, ledger, tuple(level_eps))
    steps = _plan(ledger, strategy, geo, level_eps, deltas, noise)
    return MeasurementPlan(strategy, tuple(level_eps), matrices, steps, ledger)


def measure(
    data: TopDownData,
    epsilon,
    strategy: Strategy | None = None,
    level_shares=None,
    noise: str = "geometric",
    neighbours: str = "substitution",
    rng=None,
    *,
    records_may_leave: bool = False,
    rho=None,
) -> Measurements:
    """Measure every query set of ``strategy`` at every node; returns noisy answers and a ledger.

    Every scale is recorded in the ledger (and refused there if no exact sampler can draw it, or
    if its noise could leave the exact integer range) before the first draw
    (:func:`plan_measurement`), so a bad budget or share never draws noise.  ``noise="geometric"``
    forms ``truth + noise`` in int64 (:func:`~dpmodels.core.noise.noisy_integers`) and converts the
    exact result to float64; ``noise="laplace"`` draws floating-point Laplace, which leaks through
    its low bits: research comparisons only (:mod:`dpmodels.topdown.release` refuses it).

    Parameters
    ----------
    data
        The person histograms, geography, schema and public knowledge.
    epsilon
        The total budget, split over the levels by ``level_shares`` and within a level by the
        strategy's shares.
    strategy
        The query sets measured at every node (default :func:`default_strategy`).  With exact
        noise every coefficient must be an integer, else the query set is refused.
    level_shares
        Per-level budget shares (default uniform), positive and summing to 1.
    noise
        ``"geometric"`` (exact discrete Laplace, int64 arithmetic), ``"laplace"`` (research) or
        ``"discrete-gaussian"`` (zCDP, int64; ``epsilon`` None, :mod:`~dpmodels.topdown.zcdp`).
    neighbours
        ``"substitution"`` (one record changes value, geography included) or ``"add/remove"``.
    rng
        The generator (None: the secure one).
    records_may_leave
        True when a stated rule leaves some records out before counting (a release from files:
        persons outside the declared blocks or the schema's values).  A substitution may then
        replace a counted record by one that is left out, i.e. remove it, so every level is also
        calibrated for one record entering or leaving it: a single-node level gets
        ``max(within, max_a ||A e_a||_1)`` instead of the within-node value (levels of two or more
        nodes already have ``2 max_a ||A e_a||_1``, which covers a removal).  For the default
        strategy nothing changes (within = 2 >= 1 at the root).
    rho
        The zCDP budget of the discrete Gaussian, split as an epsilon: ``sigma^2 = Delta_2^2 / (2 rho_q)``.
    """
    rng = make_rng(rng)
    plan = plan_measurement(
        data,
        epsilon,
        strategy,
        level_shares,
        noise,
        neighbours,
        records_may_leave=records_may_leave,
        randomness=describe(rng),
        rho=rho,
    )
    geo = data.geography
    hist = data.node_histograms_all()
    by_node: list[list[NodeMeasurement]] = [[] for _ in range(geo.n_regions)]
    for rows, query, scale in plan.steps:
        matrix = plan.matrices[query.name].T
        for part in row_chunks(rows, matrix.shape[1]):  # a level at a time would hold ~12 dense copies
            noisy, variance = noisy_answers(noise, hist[part] @ matrix, scale, rng)
            for k, r in enumerate(part):
                by_node[r].append(NodeMeasurement(query.name, noisy[k], variance))
    info = {"neighbours": neighbours, "records_may_leave": records_may_leave}
    if plan.level_rhos:
        info.update(rho=sum(plan.level_rhos, Fraction(0)), level_rhos=plan.level_rhos)
    return Measurements(plan.strategy, by_node, plan.ledger, plan.level_epsilons, noise, info)


def _plan(ledger: PrivacyLedger, strategy: Strategy, geo, level_eps, deltas, noise: str) -> list[tuple]:
    """``(rows, query set, scale)`` of every draw, level by level; each recorded in ``ledger`` first."""
    plan = []
    for level, rows, query, share in measured_steps(strategy, geo):
        eps_q = level_eps[level - 1] * share
        delta = deltas[level - 1][query.name]
        scale = ledger.record(query.name, f"level {level} / {query.name}", delta, eps_q, noise, rows.size)
        plan.append((rows, query, scale))
    return plan
