"""Two-level implied constraints of TopDown with their witnesses: Theorem 3 and Lemma 1.

A node histogram is only worth publishing if it can be *extended* to integer leaf histograms
that satisfy every leaf's public facts (spec 1.3, Problem 2).  Deciding that is NP-complete in
general (Theorems 1-2); these are the two-level structures for which it is easy, each with the
constructive witness its proof gives:

* :func:`maxflow_extension` / :func:`hall_constraints` -- Theorem 3 (buckets -> regions with
  totals and lower bounds): the max-flow check of spec 3.9(b) and its complete Hall set.
* :func:`lemma1_bounds` / :func:`allocate` -- Lemma 1 (2x2 tables with leaf margins) and its
  Allocate procedure (spec 4.3, with the erratum fix that advances the leaf index).

Constraints are the triples of :mod:`.constraints`: ``(coefficients, op, rhs)``.
"""

from __future__ import annotations

from dataclasses import dataclass

import networkx as nx
import numpy as np

from dpmodels.core.errors import DataValidationError

from .constraints import bool_array, int_array, satisfies

__all__ = [
    "MaxFlowCheck",
    "maxflow_extension",
    "hall_constraints",
    "Lemma1Set",
    "lemma1_bounds",
    "allocate",
]

HALL_MAX_BUCKETS = 16


# ---------------------------------------------------------------------- Theorem 3: max flow and Hall
@dataclass(frozen=True)
class MaxFlowCheck:
    """Outcome of the max-flow extendability check (spec 3.9(b)).

    ``flow_value`` is the max flow of the network with the lower bounds already placed
    (``sum(lower)`` plus the max flow of the residual network); ``required`` is ``sum(totals)``.
    ``extension`` is the integer ``k x m`` table ``x_{j,i}`` when ``extendable``, else None.
    """

    extendable: bool
    flow_value: int
    required: int
    extension: np.ndarray | None


def _theorem3_data(totals, allowed, lower, equal, k: int | None = None):
    n = int_array(totals, "totals")
    if n.ndim != 1:
        raise DataValidationError("totals", f"must be a vector (one total per region), got shape {n.shape}")
    allowed = np.asarray(allowed)
    if allowed.ndim != 2 or allowed.shape[1] != len(n) or (k is not None and allowed.shape[0] != k):
        want = f"({k if k is not None else 'k'}, {len(n)})"
        raise DataValidationError("allowed", f"must be buckets x regions = {want}, got {allowed.shape}")
    allowed = bool_array(allowed, "allowed", allowed.shape)
    shape = allowed.shape
    c = np.zeros(shape, np.int64) if lower is None else int_array(lower, "lower", shape)
    eq = np.zeros(shape, bool) if equal is None else bool_array(equal, "equal", shape)
    if (c[~allowed] != 0).any():
        j, i = np.argwhere(~allowed & (c != 0))[0]
        raise DataValidationError(
            "lower", f"cell ({j}, {i}) is forced to 0 (not allowed) but has lower bound {c[j, i]}"
        )
    n_res = n - c.sum(axis=0)
    if (n_res < 0).any():
        i = int(np.flatnonzero(n_res < 0)[0])
        raise DataValidationError(
            "totals", f"region {i} total {n[i]} is below the sum of its lower bounds {c[:, i].sum()}"
        )
    free = allowed & ~eq  # cells with op ">=": they get an arc
    return n, c, free, n_res


def maxflow_extension(x, totals, allowed, lower=None, equal=None) -> MaxFlowCheck:
    """Can the base histogram ``x`` (k buckets) be split over m regions with the given totals?

    Theorem 3 / spec 3.9(b): cell ``(j, i)`` may be positive only where ``allowed[j, i]``;
    ``lower[j, i]`` is an integer lower bound ``c_{j,i}`` (default 0) and ``equal[j, i]`` fixes
    the cell to it.  The lower bounds are placed first (``x'_j = x_j - sum_i c_{j,i}``,
    ``n'_i = n_i - sum_j c_{j,i}``), then the rest is a max flow s -> bucket -> region -> t
    with capacities ``x'_j``, infinity on the free cells and ``n'_i``.  Integer capacities give
    an integral max flow, so the answer is exact and the flow is the integer extension.

    Parameters
    ----------
    x : array_like
        The k bucket counts (integers).
    totals : array_like
        The m region totals ``n_i``.
    allowed : array_like
        Buckets x regions, boolean: where a cell may be positive.
    lower : array_like, optional
        Integer lower bounds ``c_{j,i}`` (default 0).
    equal : array_like, optional
        Buckets x regions, boolean: cells fixed to their lower bound.

    Returns
    -------
    MaxFlowCheck
    """
    xv = int_array(x, "x", nonneg=False)
    if xv.ndim != 1:
        raise DataValidationError("x", f"must be a vector (one count per bucket), got shape {xv.shape}")
    n, c, free, n_res = _theorem3_data(totals, allowed, lower, equal, k=len(xv))
    x_res = xv - c.sum(axis=1)
    graph = nx.DiGraph()
    graph.add_nodes_from(["s", "t"])
    for j, cap in enumerate(x_res):
        graph.add_edge("s", ("x", j), capacity=max(int(cap), 0))
    for i, cap in enumerate(n_res):
        graph.add_edge(("y", i), "t", capacity=int(cap))
    for j, i in np.argwhere(free):
        graph.add_edge(("x", int(j)), ("y", int(i)))  # no capacity attribute = infinite
    value, flow = nx.maximum_flow(graph, "s", "t")
    required = int(n.sum())
    extendable = bool((x_res >= 0).all() and xv.sum() == required and value == n_res.sum())
    extension = None
    if extendable:
        extension = c.copy()
        for j, i in np.argwhere(free):
            extension[j, i] += int(flow[("x", int(j))][("y", int(i))])
    return MaxFlowCheck(extendable, int(value) + int(c.sum()), required, extension)


def hall_constraints(totals, allowed, lower=None, equal=None) -> list[tuple[np.ndarray, str, int]]:
    """Theorem 3's complete implied set on the bucket counts ``x`` (the Gale/Hall condition).

    ``sum_j x_j = sum_i n_i``; ``x_j >= sum_i c_{j,i}`` for every bucket; and for every nonempty
    set ``A`` of buckets, ``sum_{j in A} x_j <= sum_{i in neigh(A)} (n_i - sum_j c_{j,i}) +
    sum_{j in A} sum_i c_{j,i}``, where ``neigh(A)`` are the regions reachable from ``A``
    through a free (``>=``) cell.  There are ``2^k - 1`` subset rows, so k is limited to 16:
    use :func:`maxflow_extension` (the compact certificate) for anything bigger.

    Parameters
    ----------
    totals : array_like
        The m region totals ``n_i``.
    allowed : array_like
        Buckets x regions, boolean (at most 16 buckets).
    lower : array_like, optional
        Integer lower bounds ``c_{j,i}``.
    equal : array_like, optional
        Cells fixed to their lower bound.

    Returns
    -------
    list of tuple
        ``(coefficients, op, rhs)`` triples over ``x``.
    """
    allowed_arr = np.asarray(allowed)
    k = allowed_arr.shape[0] if allowed_arr.ndim == 2 else -1
    if k > HALL_MAX_BUCKETS:
        raise DataValidationError(
            "allowed",
            f"{k} buckets would need 2^{k} - 1 Hall subset constraints; the limit is {HALL_MAX_BUCKETS} "
            "(use maxflow_extension, which checks the same condition in polynomial time)",
        )
    n, c, free, n_res = _theorem3_data(totals, allowed_arr, lower, equal)
    k = free.shape[0]
    masks = np.arange(1, 2**k)
    subsets = ((masks[:, None] >> np.arange(k)) & 1).astype(np.int64)  # (2^k - 1) x k
    neigh = (subsets @ free.astype(np.int64)) > 0
    rhs = neigh.astype(np.int64) @ n_res + subsets @ c.sum(axis=1)
    out: list[tuple[np.ndarray, str, int]] = [(np.ones(k, np.int64), "==", int(n.sum()))]
    out += [(np.eye(k, dtype=np.int64)[j], ">=", int(c[j].sum())) for j in range(k)]
    out += [(subsets[s], "<=", int(rhs[s])) for s in range(len(masks))]
    return out


# ---------------------------------------------------------------------- Lemma 1 and Allocate
@dataclass(frozen=True)
class Lemma1Set:
    """Lemma 1's complete implied set for a 2x2 parent ``h`` of leaves with known margins.

    ``h[i,0] + h[i,1] = row_totals[i]``, ``h[0,j] + h[1,j] = col_totals[j]`` and
    ``lower <= h[1,1] <= upper``; the other cells' nonnegativity follows.
    """

    row_totals: np.ndarray
    col_totals: np.ndarray
    lower: int
    upper: int

    def constraints(self) -> list[tuple[np.ndarray, str, int]]:
        """The set as triples over ``h`` flattened in C order ``(h00, h01, h10, h11)``."""
        r, c = self.row_totals, self.col_totals
        e11 = np.array([0, 0, 0, 1])
        return [
            (np.array([1, 1, 0, 0]), "==", int(r[0])),
            (np.array([0, 0, 1, 1]), "==", int(r[1])),
            (np.array([1, 0, 1, 0]), "==", int(c[0])),
            (np.array([0, 1, 0, 1]), "==", int(c[1])),
            (e11, "<=", int(self.upper)),
            (e11, ">=", int(self.lower)),
        ]

    def table(self, h11: int) -> np.ndarray:
        """The unique 2x2 table with these margins and ``h[1,1] = h11`` (maybe negative)."""
        h01 = int(self.col_totals[1]) - h11
        h10 = int(self.row_totals[1]) - h11
        return np.array([[int(self.row_totals[0]) - h01, h01], [h10, h11]], dtype=np.int64)


def _margins(row_sums, col_sums) -> tuple[np.ndarray, np.ndarray]:
    r = int_array(row_sums, "row_sums")
    c = int_array(col_sums, "col_sums")
    if r.ndim != 2 or r.shape[1] != 2 or c.shape != r.shape:
        raise DataValidationError("row_sums/col_sums", f"must both be (leaves, 2), got {r.shape} and {c.shape}")
    bad = np.flatnonzero(r.sum(axis=1) != c.sum(axis=1))
    if len(bad):
        leaf = int(bad[0])
        raise DataValidationError(
            "col_sums", f"leaf {leaf}: row sums total {r[leaf].sum()} but column sums total {c[leaf].sum()}"
        )
    return r, c


def lemma1_bounds(row_sums, col_sums) -> Lemma1Set:
    """Lemma 1: the complete implied set of a 2x2 parent whose leaves have fixed margins.

    ``row_sums[l] = (r_l[0], r_l[1])`` and ``col_sums[l] = (c_l[0], c_l[1])``.  The bounds are
    the sums of the per-leaf Frechet bounds: ``h[1,1] <= sum_l min(r_l[1], c_l[1])`` and
    ``h[1,1] >= sum_l (c_l[1] - min(c_l[1], r_l[0]))``.

    Parameters
    ----------
    row_sums : array_like
        Leaves x 2: every leaf's row sums.
    col_sums : array_like
        Leaves x 2: every leaf's column sums.

    Returns
    -------
    Lemma1Set
    """
    r, c = _margins(row_sums, col_sums)
    upper = int(np.minimum(r[:, 1], c[:, 1]).sum())
    lower = int((c[:, 1] - np.minimum(c[:, 1], r[:, 0])).sum())
    return Lemma1Set(r.sum(axis=0), c.sum(axis=0), lower, upper)


def allocate(h, row_sums, col_sums) -> np.ndarray:
    """Allocate (spec 4.3): split a 2x2 parent ``h`` into integer leaf tables with given margins.

    Every leaf starts at its least ``h_l[1,1]``; the leftover of ``h[1,1]`` is poured into the
    leaves in order up to their Frechet upper bound (advancing the leaf index, the erratum fix of
    spec 8 item 14), and the margins fix the other three cells.  Returns a ``(leaves, 2, 2)``
    array summing to ``h``.  Raises :class:`DataValidationError` when ``h`` violates Lemma 1's
    complete set, i.e. when no such split exists.

    Parameters
    ----------
    h : array_like
        The 2x2 parent table.
    row_sums : array_like
        Leaves x 2: every leaf's row sums.
    col_sums : array_like
        Leaves x 2: every leaf's column sums.
    """
    r, c = _margins(row_sums, col_sums)
    h = int_array(h, "h", shape=(2, 2), nonneg=False)
    lemma = lemma1_bounds(r, c)
    if not satisfies(lemma.constraints(), h.ravel()):
        raise DataValidationError(
            "h",
            f"{h.tolist()} is not extendable: Lemma 1 needs row sums {lemma.row_totals.tolist()}, column sums "
            f"{lemma.col_totals.tolist()} and {lemma.lower} <= h[1,1] <= {lemma.upper}",
        )
    m = len(r)
    h11 = c[:, 1] - np.minimum(r[:, 0], c[:, 1])
    leftover = int(h[1, 1] - h11.sum())
    leaf = 0
    while leftover > 0:
        step = min(int(min(r[leaf, 1], c[leaf, 1]) - h11[leaf]), leftover)
        h11[leaf] += step
        leftover -= step
        leaf += 1  # the erratum fix: without it the loop never ends
    out = np.empty((m, 2, 2), dtype=np.int64)
    out[:, 1, 1] = h11
    out[:, 0, 1] = c[:, 1] - h11
    out[:, 1, 0] = r[:, 1] - h11
    out[:, 0, 0] = c[:, 0] - out[:, 1, 0]
    return out
