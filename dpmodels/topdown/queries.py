"""Linear queries on histograms, built as Kronecker products (spec 1.2).

With attributes in schema order, the marginal on a subset ``B`` is ``kron(K_1, ..., K_d)``
with ``K_i = I`` for ``i`` in ``B`` and ``K_i = 1^T`` otherwise; a grouping (recode) of an
attribute uses a 0/1 matrix with one 1 per column.  Applied to a C-order flattened
histogram, ``marginal(schema, B) @ h`` equals ``h.reshape(shape).sum(axis=complement)``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from dpmodels.core.errors import DataValidationError

from .data import Schema

__all__ = [
    "check_neighbours",
    "require_measurable",
    "QuerySet",
    "kron_query",
    "marginal",
    "identity",
    "total",
    "grouping_matrix",
    "sensitivity",
    "level_sensitivity",
    "is_identity",
]


@dataclass(frozen=True, eq=False)
class QuerySet:
    """A named block of linear queries (rows of a sparse matrix over the schema's cells).

    Parameters
    ----------
    name : str
        The query set's name (ledgers, logs).
    matrix : scipy.sparse.csr_matrix
        Queries x cells.
    """

    name: str
    matrix: sp.csr_matrix

    @property
    def rows(self) -> int:
        return self.matrix.shape[0]


def kron_query(schema: Schema, factors: Mapping[str, object]) -> sp.csr_matrix:
    """``kron`` of one factor per attribute: ``"keep"`` (identity), ``"sum"`` (all-ones row),
    or an explicit ``g x |values|`` matrix (grouping or subset).  Unnamed attributes are summed."""
    unknown = set(factors) - set(schema.names)
    if unknown:
        raise DataValidationError("query", f"attributes {sorted(unknown)} are not in the schema {schema.names}")
    out = sp.csr_matrix(np.ones((1, 1)))
    for attr in schema.attributes:
        spec = factors.get(attr.name, "sum")
        if isinstance(spec, str) and spec == "keep":
            k = sp.identity(attr.size, format="csr")
        elif isinstance(spec, str) and spec == "sum":
            k = sp.csr_matrix(np.ones((1, attr.size)))
        else:
            k = sp.csr_matrix(spec)
            if k.shape[1] != attr.size:
                raise DataValidationError(f"query on {attr.name!r}", f"needs {attr.size} columns, got {k.shape[1]}")
        out = sp.kron(out, k, format="csr")
    return out


def marginal(schema: Schema, attributes: Sequence[str]) -> sp.csr_matrix:
    """The marginal on ``attributes`` (rows in C order over the kept attributes).

    Parameters
    ----------
    schema : Schema
        The histogram's attributes.
    attributes : sequence of str
        The attributes kept.
    """
    return kron_query(schema, {a: "keep" for a in attributes})


def identity(schema: Schema) -> sp.csr_matrix:
    """The detailed query: every cell.

    Parameters
    ----------
    schema : Schema
        The histogram's attributes.
    """
    return sp.identity(schema.size, format="csr")


def total(schema: Schema) -> sp.csr_matrix:
    """The total query: one row summing every cell.

    Parameters
    ----------
    schema : Schema
        The histogram's attributes.
    """
    return kron_query(schema, {})


def grouping_matrix(values: Sequence[str], groups: Mapping[str, Sequence[str]]) -> sp.csr_matrix:
    """A recode: one row per group, a 1 where an original value belongs to it (each value once)."""
    rows, cols = [], []
    seen: set[str] = set()
    for g, members in enumerate(groups.values()):
        for m in members:
            if m not in values:
                raise DataValidationError("grouping", f"{m!r} is not a value {list(values)[:5]}...")
            if m in seen:
                raise DataValidationError("grouping", f"{m!r} is in two groups")
            seen.add(m)
            rows.append(g)
            cols.append(list(values).index(m))
    return sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(len(groups), len(values)))


def check_neighbours(neighbours: str) -> None:
    """The relations :func:`level_sensitivity` knows, refused otherwise (naming the field)."""
    if neighbours not in ("substitution", "add/remove"):
        raise DataValidationError("neighbours", f"must be 'substitution' or 'add/remove', got {neighbours!r}")


def sensitivity(matrix: sp.spmatrix, neighbours: str = "substitution", exact_limit: int = 512) -> float:
    """L1 sensitivity of ``matrix @ h`` for ONE histogram ``h`` that holds every record (spec 2.2).

    ``"add/remove"``: ``max_a ||A e_a||_1``.  ``"substitution"`` (the paper's: one record
    changes value): ``max_{a != b} ||A (e_a - e_b)||_1``, computed exactly over the distinct
    columns when there are at most ``exact_limit`` of them, else the upper bound
    ``2 max_a ||A e_a||_1`` (over-estimating only adds noise, it never weakens privacy).
    This is the sensitivity of a single-node level only: a geography level of several nodes,
    where a record can also change node, needs :func:`level_sensitivity`.
    """
    check_neighbours(neighbours)
    a = sp.csc_matrix(matrix, dtype=np.float64)
    norms = np.asarray(abs(a).sum(axis=0)).ravel()
    if neighbours == "add/remove":
        return float(norms.max()) if norms.size else 0.0
    dense_cols = np.unique(a.T.toarray(), axis=0) if a.shape[1] and a.shape[0] * a.shape[1] <= 5e7 else None
    if dense_cols is None or len(dense_cols) > exact_limit:
        return 2.0 * float(norms.max())
    if len(dense_cols) < 2:
        return 0.0
    from scipy.spatial.distance import pdist

    return float(pdist(dense_cols, metric="cityblock").max())


def level_sensitivity(
    matrix: sp.spmatrix,
    nodes: int,
    neighbours: str = "substitution",
    *,
    holds_all: bool = True,
    exact_limit: int = 512,
) -> float:
    """L1 sensitivity of one geography level's stacked answers ``[A h_1; ...; A h_nodes]``.

    The record that changes value may also change its geography, i.e. leave node ``u`` and
    join node ``v`` of the same level: the stacked answers change by ``-A e_a`` in ``u`` and
    ``+A e_b`` in ``v``, L1 ``||A e_a||_1 + ||A e_b||_1``.  So under substitution a level of
    ``nodes >= 2`` has sensitivity ``2 Delta_add`` with ``Delta_add = max_a ||A e_a||_1`` (tight:
    move a record of the heaviest cell between two nodes; no move does more, since one record
    leaves one node and joins one node), whatever the overlap of ``A``'s rows.  A single node
    that holds every record (the root) keeps the smaller within-histogram value
    :func:`sensitivity`; if some records lie outside it (``holds_all=False``: leaves above this
    level), one can also enter or leave it, adding ``Delta_add`` as a candidate.  Under
    add/remove it is ``Delta_add`` at every level (one record joins or leaves one node).
    """
    check_neighbours(neighbours)
    if isinstance(nodes, bool) or not isinstance(nodes, (int, np.integer)) or nodes < 1:
        raise DataValidationError("nodes", f"must be a positive integer (nodes in the level), got {nodes!r}")
    add = sensitivity(matrix, "add/remove")
    if neighbours == "add/remove":
        return add
    if nodes >= 2:
        return 2.0 * add
    within = sensitivity(matrix, neighbours, exact_limit)
    return within if holds_all else max(within, add)


def is_identity(matrix, n: int) -> bool:
    """Whether ``matrix`` is the ``n x n`` identity (the detailed query of a schema of ``n`` cells).

    Parameters
    ----------
    matrix : array_like or scipy.sparse matrix
        A query matrix.
    n : int
        The schema's number of cells.
    """
    a = sp.csr_matrix(matrix)
    return a.shape == (n, n) and a.nnz == n and bool((a.diagonal() == 1).all())


def require_measurable(name: str, sensitivity, level: int, nodes: int, neighbours: str):
    """``sensitivity``, refused when it is 0: such a query set (the total at the root under substitution)
    is public and cannot be measured; it is an invariant.

    Parameters
    ----------
    name : str
        The query set's name.
    sensitivity : int or float
        Its (L1 or squared L2) sensitivity at ``level``.
    level, nodes : int
        The level and its number of nodes.
    neighbours : str
        The neighbour relation.
    """
    if sensitivity == 0:
        raise DataValidationError(
            f"query set {name!r}",
            f"has sensitivity 0 at level {level} ({nodes} node) under {neighbours} neighbours (e.g. the "
            "total at the root under substitution, which is public); model it as an invariant instead",
        )
    return sensitivity
