"""TopDown measurement: noisy answers to every query set at every node of every level (spec 2).

The budget is split into per-level shares (default uniform over the L levels, spec erratum 4)
and, within a level, into per-query-set shares (the End-to-End test's "detailed" and
"query" proportions).  Nodes of a level are disjoint (parallel composition); the query
sets of a node and the levels add up.  A query set's noise at a level is calibrated to the
sensitivity of the level's stacked answers, where the changed record may also change node
(:func:`queries.level_sensitivity`).  Measurement happens once, up front; everything after it
is post-processing of the noisy answers and the public knowledge.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np
import scipy.sparse as sp

from dpmodels.core.accounting import PrivacyLedger, split_budget
from dpmodels.core.errors import DataValidationError
from dpmodels.core.noise import as_epsilon, double_geometric, double_geometric_variance, exact, laplace, make_rng
from dpmodels.core.randomness import describe

from .data import Schema, TopDownData
from .queries import QuerySet, identity, level_sensitivity, marginal

__all__ = ["Strategy", "default_strategy", "NodeMeasurement", "Measurements", "measure"]


def _unit_shares(values, field: str) -> list[Fraction] | None:
    """Positive shares summing to 1 within 1e-9 (spec 2.3), made exact; None if not."""
    shares = [exact(v, field) for v in values]
    total = sum(shares)
    if not shares or any(v <= 0 for v in shares) or abs(total - 1) > Fraction(1, 10**9):
        return None
    return [v / total for v in shares]


@dataclass(frozen=True)
class Strategy:
    """Query sets measured at every node, with their within-level budget shares (sum to 1)."""

    queries: tuple[QuerySet, ...]
    shares: tuple[Fraction, ...]

    def __post_init__(self):
        if len(self.queries) != len(self.shares) or not self.queries:
            raise DataValidationError("strategy", "needs one share per query set, at least one set")
        shares = _unit_shares(self.shares, "strategy.shares")
        if shares is None:
            raise DataValidationError(
                "strategy.shares", f"must be positive and sum to 1, got {[str(v) for v in self.shares]}"
            )
        names = [q.name for q in self.queries]
        if len(set(names)) != len(names):
            raise DataValidationError("strategy", f"query set names repeat: {names}")
        object.__setattr__(self, "shares", tuple(shares))


def default_strategy(
    schema: Schema,
    marginals: Sequence[Sequence[str]] = (("hhgq",), ("votingage", "hispanic", "cenrace")),
    detailed_share="1/2",
) -> Strategy:
    """The detailed histogram plus a few marginals (the E2E default shape)."""
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
    """All noisy answers: ``by_node[r]`` lists the measurements of region r."""

    strategy: Strategy
    by_node: list[list[NodeMeasurement]]
    ledger: PrivacyLedger
    level_epsilons: tuple[Fraction, ...]
    mechanism: str
    info: dict = field(default_factory=dict)

    def matrices(self) -> dict[str, sp.csr_matrix]:
        return {q.name: q.matrix for q in self.strategy.queries}


def _level_deltas(strategy: Strategy, geo, level: int, neighbours: str) -> dict[str, float]:
    """Per query set, the L1 sensitivity of ``level``'s stacked answers (spec 2.2).

    A substituted record may move between two nodes of the level, so every level of two or
    more nodes gets ``2 max_a ||A e_a||_1``; see :func:`queries.level_sensitivity`.  Records
    in leaves above ``level`` lie in none of its nodes and can enter or leave them.  A zero
    (the total at the root under substitution, which is public) cannot be measured.
    """
    nodes = int(geo.level_sizes()[level - 1])
    holds_all = bool(geo.level[geo.leaves].min() >= level)
    out = {}
    for q in strategy.queries:
        out[q.name] = level_sensitivity(q.matrix, nodes, neighbours, holds_all=holds_all)
        if out[q.name] == 0:
            raise DataValidationError(
                f"query set {q.name!r}",
                f"has sensitivity 0 at level {level} ({nodes} node) under {neighbours} neighbours (e.g. the "
                "total at the root under substitution, which is public); model it as an invariant instead",
            )
    return out


def measure(
    data: TopDownData,
    epsilon,
    strategy: Strategy | None = None,
    level_shares=None,
    noise: str = "geometric",
    neighbours: str = "substitution",
    rng=None,
) -> Measurements:
    """Measure every query set of ``strategy`` at every node; returns noisy answers and a ledger.

    Every scale is recorded in the ledger (and refused there if no exact sampler can draw it)
    before the first draw, so a bad budget or share never draws noise.  ``noise="laplace"``
    draws floating-point Laplace, which leaks through its low bits: research comparisons only
    (:mod:`dpmodels.topdown.release` refuses it).
    """
    eps = as_epsilon(epsilon)
    strategy = strategy or default_strategy(data.schema)
    geo = data.geography
    level_eps = split_budget(eps, _level_unit_shares(level_shares, geo.n_levels))
    if noise not in ("geometric", "laplace"):
        raise DataValidationError("noise", f"must be 'geometric' or 'laplace', got {noise!r}")
    deltas = [_level_deltas(strategy, geo, level, neighbours) for level in range(1, geo.n_levels + 1)]
    rng = make_rng(rng)
    ledger = PrivacyLedger(randomness=describe(rng))
    plan = _plan(ledger, strategy, geo, level_eps, deltas, noise)
    hist = data.node_histograms_all()
    by_node: list[list[NodeMeasurement]] = [[] for _ in range(geo.n_regions)]
    for rows, query, scale in plan:
        answers = (hist[rows] @ query.matrix.T).toarray()
        draw, variance = _draw(noise, scale, answers.shape, rng)
        noisy = answers + draw
        for k, r in enumerate(rows):
            by_node[r].append(NodeMeasurement(query.name, np.asarray(noisy[k], dtype=np.float64), variance))
    return Measurements(strategy, by_node, ledger, tuple(level_eps), noise, {"neighbours": neighbours})


def _level_unit_shares(level_shares, n_levels: int) -> list[Fraction]:
    """The per-level budget shares (default uniform), exact and summing to 1."""
    shares = level_shares if level_shares is not None else [Fraction(1, n_levels)] * n_levels
    if len(shares) != n_levels:
        raise DataValidationError("level_shares", f"need one share per level ({n_levels}), got {len(shares)}")
    unit = _unit_shares(shares, "level_shares")
    if unit is None:
        raise DataValidationError("level_shares", f"must be positive and sum to 1, got {[str(v) for v in shares]}")
    return unit


def _draw(noise: str, scale: Fraction, shape, rng) -> tuple[np.ndarray, float]:
    """Noise of ``shape`` at ``scale`` (exact double geometric, or float Laplace) and its variance."""
    if noise == "geometric":
        return double_geometric(scale, shape, rng), double_geometric_variance(scale)
    return laplace(scale, shape, rng), 2 * float(scale) ** 2


def _plan(ledger: PrivacyLedger, strategy: Strategy, geo, level_eps, deltas, noise: str) -> list[tuple]:
    """``(rows, query set, scale)`` of every draw, level by level; each recorded in ``ledger`` first."""
    plan = []
    for level in range(1, geo.n_levels + 1):
        rows = np.arange(*geo.level_slice(level).indices(geo.n_regions))
        for query, share in zip(strategy.queries, strategy.shares, strict=True):
            eps_q = level_eps[level - 1] * share
            delta = deltas[level - 1][query.name]
            scale = ledger.record(query.name, f"level {level} / {query.name}", delta, eps_q, noise, rows.size)
            plan.append((rows, query, scale))
    return plan
