"""TopDown under zCDP: squared L2 sensitivities of the query sets and the exact discrete Gaussian.

As the 2020 Census ran TopDown, ``measure(..., noise="discrete-gaussian", rho=R)`` splits a total
zCDP budget ``rho`` exactly over the levels (``level_shares``) and within a level over the query
sets (the strategy's shares), and adds to every query set's stacked answers at a level the exact
discrete Gaussian (Canonne, Kamath and Steinke 2020) at ``sigma^2 = Delta_2^2 / (2 rho_q)``,
``Delta_2^2`` the squared L2 sensitivity of that level's stacked answers ``[A h_1; ...; A h_m]``
(:func:`level_l2_sensitivity`).  That measurement is ``rho_q``-zCDP; the query sets and the levels
add their rhos (sequential composition), the nodes of a level are covered by the stacked vector.

**Squared L2 sensitivities** (the neighbour relations of :func:`~dpmodels.topdown.queries.level_sensitivity`,
case by case; ``c_a = A e_a`` is column ``a`` of the query matrix, ``G = A^T A`` its Gram matrix):

* add/remove: one record joins or leaves one node, ``max_a ||c_a||^2``, at every level;
* substitution, a level of two or more nodes: the record may stay in its node and change cell
  (``||c_a - c_b||^2``) or move to another node, changing the answers of both
  (``||c_a||^2 + ||c_b||^2``, ``a = b`` included): ``max(2 max_a ||c_a||^2, within)`` with
  ``within = max_{a != b} ||c_a - c_b||^2 = G_aa + G_bb - 2 G_ab``.  Unlike L1, where the triangle
  inequality makes the move dominate, ``within`` can be larger when two columns point apart
  (``G_ab < 0``: a negative coefficient);
* substitution, a single node holding every record (the root): ``within``; when records may enter
  or leave it (leaves above the level, or records the bounding rules leave out),
  ``max(within, max_a ||c_a||^2)``.

Coefficients are integers (exact noise refuses others), so every value is an exact integer.
``within`` is computed exactly from the sparse Gram matrix for at most ``exact_limit`` cells (and
at most ``5e7`` Gram entries); beyond, the bound ``2 max ||c_a||^2`` when no coefficient is
negative (``G_ab >= 0``) and ``4 max ||c_a||^2`` otherwise (over-estimating only adds noise).
``tests/topdown/test_zcdp.py`` checks every value against every single-record change of tiny data.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import scipy.sparse as sp

from dpmodels.core.accounting import PrivacyLedger
from dpmodels.core.errors import DataValidationError
from dpmodels.core.gaussian import discrete_gaussian_variance
from dpmodels.core.noise import as_epsilon, noisy_gaussian_integers

from .queries import check_neighbours, require_measurable
from .shares import measured_steps

__all__ = [
    "GAUSSIAN",
    "GAUSSIAN_WORDS",
    "l2_sensitivity",
    "level_l2_sensitivity",
    "level_l2_deltas",
    "gaussian_budget",
    "plan_gaussian",
    "noisy_gaussian_answers",
    "gaussian_facts",
    "gaussian_sampler",
]

#: The zCDP noise's name (``measure(..., noise=GAUSSIAN, rho=...)``, ``--noise discrete-gaussian``).
GAUSSIAN = "discrete-gaussian"
#: The noise as the ledger's rows and the manifests name it.
GAUSSIAN_WORDS = "exact discrete Gaussian (Canonne-Kamath-Steinke)"
_INT64_SAFE = 2**62  # Gram entries and their sums of four stay below 2^63
_BLOCK = 256


def _integer_columns(matrix: sp.spmatrix) -> sp.csc_matrix:
    """``matrix`` as int64 columns, refused unless every coefficient is an integer small enough for exact Gram sums."""
    a = sp.csc_matrix(matrix)
    values = np.asarray(a.data, dtype=np.float64)
    if not (np.isfinite(values).all() and (values == np.round(values)).all()):
        raise DataValidationError(
            "query set",
            "has non-integer coefficients: exact integer noise needs integer answers (a fractional part would "
            "survive the noise and tell neighbouring data apart)",
        )
    largest = int(np.abs(values).max()) if a.nnz else 0  # measured before the int64 cast, which could wrap
    if 4 * largest**2 * max(a.shape[0], 1) >= _INT64_SAFE:
        raise DataValidationError("query set", "coefficients too large for exact squared L2 sensitivities")
    return a.astype(np.int64)


def _column_norms(a: sp.csc_matrix) -> np.ndarray:
    """``||c_a||^2`` of every column, exact int64."""
    return np.asarray(a.multiply(a).sum(axis=0), dtype=np.int64).ravel()


def _within(a: sp.csc_matrix, norms: np.ndarray, exact_limit: int) -> int:
    """``max_{a != b} ||c_a - c_b||^2`` (0 for one cell): exact from the sparse Gram matrix, else a bound.

    ``||c_a - c_b||^2 = G_aa + G_bb - 2 G_ab`` with ``G = A^T A`` computed sparse in int64 (exact:
    :func:`_integer_columns` keeps every sum below ``2^62``), a block of rows at a time.  Beyond
    ``exact_limit`` cells, or when ``G`` would hold more than ``5e7`` entries, the bound of the module
    docstring.
    """
    n = a.shape[1]
    if n < 2:
        return 0
    bound = (2 if (a.data >= 0).all() else 4) * int(norms.max())
    per_row = np.diff(sp.csr_matrix(a).indptr).astype(np.int64)
    if n > exact_limit or int((per_row**2).sum()) > 5e7:  # nnz(G) <= sum of squared row lengths
        return bound
    gram = (a.T @ a).tocsr()
    best = 0
    for start in range(0, n, _BLOCK):
        stop = min(start + _BLOCK, n)
        block = gram[start:stop].toarray()
        moved = norms[start:stop, None] + norms[None, :] - 2 * block
        moved[np.arange(stop - start), np.arange(start, stop)] = 0  # a = b is no substitution (and moves 0)
        best = max(best, int(moved.max()))
    return best


def l2_sensitivity(matrix: sp.spmatrix, neighbours: str = "substitution", exact_limit: int = 2**14) -> int:
    """Squared L2 sensitivity of ``matrix @ h`` for ONE histogram ``h`` that holds every record.

    ``"add/remove"``: ``max_a ||A e_a||_2^2``; ``"substitution"``: ``max_{a != b} ||A (e_a - e_b)||_2^2``
    (see the module docstring for the bound beyond ``exact_limit`` cells).  A level of
    several nodes, where a record can also change node, needs :func:`level_l2_sensitivity`.
    """
    check_neighbours(neighbours)
    a = _integer_columns(matrix)
    norms = _column_norms(a)
    if neighbours == "add/remove":
        return int(norms.max()) if norms.size else 0
    return _within(a, norms, exact_limit)


def level_l2_sensitivity(
    matrix: sp.spmatrix,
    nodes: int,
    neighbours: str = "substitution",
    *,
    holds_all: bool = True,
    exact_limit: int = 2**14,
) -> int:
    """Squared L2 sensitivity ``Delta_2^2`` of one geography level's stacked answers ``[A h_1; ...; A h_nodes]``.

    The cases of :func:`~dpmodels.topdown.queries.level_sensitivity`, squared (module docstring):
    add/remove ``max_a ||c_a||^2``; substitution on ``nodes >= 2`` ``max(2 max_a ||c_a||^2, within)``;
    on a single node ``within`` if it holds every record, else ``max(within, max_a ||c_a||^2)``.
    An exact integer; the discrete Gaussian at ``sigma^2`` on these answers is ``Delta_2^2 / (2 sigma^2)``-zCDP.

    Parameters
    ----------
    matrix
        The query set's integer matrix (queries x cells).
    nodes
        The level's number of nodes.
    neighbours
        ``"substitution"`` (one record changes value, geography included) or ``"add/remove"``.
    holds_all
        Whether a single-node level holds every record (no leaf above it, no record left out).
    exact_limit
        The most cells ``within`` is computed over exactly.
    """
    check_neighbours(neighbours)
    if isinstance(nodes, bool) or not isinstance(nodes, (int, np.integer)) or nodes < 1:
        raise DataValidationError("nodes", f"must be a positive integer (nodes in the level), got {nodes!r}")
    a = _integer_columns(matrix)
    norms = _column_norms(a)
    add = int(norms.max()) if norms.size else 0
    if neighbours == "add/remove":
        return add
    if nodes >= 2 and (a.data >= 0).all():
        return 2 * add  # G_ab >= 0: a change of cell inside a node moves at most G_aa + G_bb <= 2 add
    within = _within(a, norms, exact_limit)
    if nodes >= 2:
        return max(2 * add, within)  # a move between two nodes, or a change of cell inside one
    return within if holds_all else max(within, add)


def level_l2_deltas(strategy, geo, level: int, neighbours: str, records_may_leave: bool) -> dict[str, int]:
    """Per query set, the squared L2 sensitivity of ``level``'s stacked answers (the L1 ``_level_deltas``' cases).

    A single-node level holds every record unless a leaf lies above it or a stated rule may leave a
    record out (``records_may_leave``).  A zero (the total at the root under substitution, which is
    public) cannot be measured and is refused.
    """
    nodes = int(geo.level_sizes()[level - 1])
    holds_all = not records_may_leave and bool(geo.level[geo.leaves].min() >= level)
    check_neighbours(neighbours)
    out = {}
    for q, share in zip(strategy.queries, strategy.shares_at(level), strict=True):
        if share == 0:  # not measured at this level (per-level shares)
            continue
        try:
            _integer_columns(q.matrix)
        except DataValidationError as err:  # name the query set
            raise DataValidationError(f"query set {q.name!r}", err.problem) from None
        sensitivity = level_l2_sensitivity(q.matrix, nodes, neighbours, holds_all=holds_all)
        out[q.name] = require_measurable(q.name, sensitivity, level, nodes, neighbours)
    return out


def gaussian_budget(epsilon, rho) -> Fraction:
    """The zCDP budget of a discrete Gaussian measurement, exact; an ``epsilon`` or a missing ``rho`` is refused."""
    if epsilon is not None:
        raise DataValidationError("epsilon", "the discrete Gaussian is charged in rho (zCDP): pass rho= only")
    if rho is None:
        raise DataValidationError("rho", "the discrete Gaussian needs a zCDP budget rho")
    return as_epsilon(rho, "rho")


def plan_gaussian(ledger: PrivacyLedger, strategy, geo, level_rhos, deltas) -> list[tuple]:
    """``(rows, query set, sigma^2)`` of every draw, level by level, each recorded in ``ledger`` first.

    ``rho_q = rho_level x share`` exactly and ``sigma^2 = Delta_2^2 / (2 rho_q)``
    (:meth:`~dpmodels.core.accounting.PrivacyLedger.record_gaussian`, which refuses a variance whose
    draws could leave the exact integer range): a refusal at any level draws nothing.
    """
    plan = []
    for level, rows, query, share in measured_steps(strategy, geo):
        rho_q = level_rhos[level - 1] * share
        delta = deltas[level - 1][query.name]
        group = f"level {level} / {query.name}"
        sigma2 = ledger.record_gaussian(query.name, group, delta, rho_q, GAUSSIAN_WORDS, rows.size)
        plan.append((rows, query, sigma2))
    return plan


def noisy_gaussian_answers(answers: sp.spmatrix, sigma2: Fraction, rng) -> tuple[np.ndarray, float]:
    """``truth + Z`` in int64 (:func:`~dpmodels.core.noise.noisy_gaussian_integers`) as float64 (an exact
    conversion below ``2^53``), and the discrete Gaussian's variance, which the post-processing weighs by."""
    truth = answers.toarray()
    return noisy_gaussian_integers(truth, sigma2, rng).astype(np.float64), discrete_gaussian_variance(sigma2)


def gaussian_facts(deltas: list[dict[str, int]], plan=None) -> dict:
    """What a release states of a discrete Gaussian measurement.

    ``deltas`` are the squared L2 sensitivities of every query set at every level
    (:func:`level_l2_deltas`); ``plan`` (a :class:`~dpmodels.topdown.mechanism.MeasurementPlan`
    with the release's rho) adds the rho of every level and the rho and ``sigma^2`` of every query
    set at every level, read off the ledger that the measurement records before it draws (exact
    fractions, as text).
    """
    facts = {
        "l2_sensitivity_squared_per_level": [dict(level) for level in deltas],
        "budget_per_level": "rho x level share, then x query-set share, exact fractions (zCDP: the rhos of the "
        "levels and query sets add; the nodes of a level are one stacked measurement)",
        "noise": f"{GAUSSIAN_WORDS}, int64: sigma^2 = Delta_2^2 / (2 rho) per level and query set",
    }
    if plan is None:
        return facts
    by_level: list[dict] = [{} for _ in deltas]
    for m in plan.ledger.entries:
        level = int(m.group.split(" / ")[0].removeprefix("level "))
        by_level[level - 1][m.query] = m
    if [{q: int(m.sensitivity) for q, m in level.items()} for level in by_level] != facts[
        "l2_sensitivity_squared_per_level"
    ]:
        raise AssertionError("the plan's ledger and the stated squared L2 sensitivities differ")  # a bug, never data
    facts["rho_per_level"] = [str(r) for r in plan.level_rhos]
    facts["rho_per_level_and_query_set"] = [{q: str(m.rho) for q, m in level.items()} for level in by_level]
    facts["sigma2_per_level_and_query_set"] = [{q: str(m.scale) for q, m in level.items()} for level in by_level]
    return facts


def gaussian_sampler(facts: dict) -> str:
    """The manifest's sampler line of a discrete Gaussian release, with ``sigma^2`` of every level and query set."""
    levels = "; ".join(
        f"level {k}: " + ", ".join(f"{q} {v}" for q, v in level.items())
        for k, level in enumerate(facts["sigma2_per_level_and_query_set"], start=1)
    )
    return f"{GAUSSIAN_WORDS}, Alg. 3, on int64 answers; sigma^2 = Delta_2^2 / (2 rho_q): {levels}"
