"""What one TopDown solve sends to a worker: its parent's data, and the public context once per worker.

A level's solves go through :func:`dpmodels.core.executors.map_tasks`.  A solve's
:class:`~dpmodels.topdown.node_data.NodeProblem` holds two kinds of data:

* its own: the parent's released histogram on its active cells, every child's noisy answers
  (with the rows of the public query matrices that touch those cells), invariant total and
  group-quarters network, and the production rows of the solve;
* the public context every solve of a run shares: the GQ type of every cell, the linear edits
  and the failsafe's free marginal (``cell_type``, ``edits``, ``free_marginal``).

:func:`ship` takes the shared fields out of a problem and lets its children share one copy of
each restricted query matrix (the restriction of a query to the parent's active cells is the same
matrix for every child; built per child it was pickled once per child); the context goes as
``map_tasks``' ``shared`` argument, which Dask sends once to every worker.  :func:`unship` puts
the context back on the worker: the problem solved is the one the driver built, field for field.
No true data is in a task: the post-processing sees only noisy measurements and public facts.

Measured at the county preset (951 regions, 2,016 cells, eps = 4; ``dpmodels bench cluster``):
the largest task went from 288 KB to 80 KB, the mean from 138 KB to 30 KB (49 tasks), plus 58 KB
of public context once per worker and level.
"""

from __future__ import annotations

import copy
from dataclasses import replace

import numpy as np
import scipy.sparse as sp

from .node_data import ChildSpec, NodeProblem

__all__ = ["SHARED_FIELDS", "ship", "unship", "shared_context"]

#: The fields of a :class:`NodeProblem` that are the same for every solve of a run (public).
SHARED_FIELDS = ("cell_type", "edits", "free_marginal")

_EMPTY = {"cell_type": None, "edits": (), "free_marginal": None}


def shared_context(problem: NodeProblem) -> dict:
    """The shared public fields of ``problem`` (:data:`SHARED_FIELDS`), as :func:`unship` takes them.

    Parameters
    ----------
    problem : NodeProblem
        Any solve of the run (they all carry the same context).
    """
    return {name: getattr(problem, name) for name in SHARED_FIELDS}


def ship(problem: NodeProblem) -> NodeProblem:
    """``problem`` without its shared context, its children sharing equal query matrices.

    The input is not changed.  ``unship(ship(p), shared_context(p))`` has every field of ``p``
    (the same arrays, the same matrices' entries).

    Parameters
    ----------
    problem : NodeProblem
        A solve as the driver builds it.
    """
    out = copy.copy(problem)
    for name in SHARED_FIELDS:
        setattr(out, name, _EMPTY[name])
    out.children = _share_matrices(problem.children)
    return out


def unship(problem: NodeProblem, context: dict) -> NodeProblem:
    """The problem :func:`ship` took apart, with the shared ``context`` back in.

    Parameters
    ----------
    problem : NodeProblem
        A shipped problem.
    context : dict
        :func:`shared_context` of the run.
    """
    out = copy.copy(problem)
    for name in SHARED_FIELDS:
        setattr(out, name, context[name])
    return out


def _share_matrices(children: list[ChildSpec]) -> list[ChildSpec]:
    """The children, each query matrix equal to an earlier child's replaced by that one object
    (pickle then writes it once per task)."""
    seen: dict[tuple, list[sp.csr_matrix]] = {}
    out = []
    for child in children:
        shared = [_first_equal(q.matrix, seen.setdefault(_key(q), [])) for q in child.queries]
        if all(m is q.matrix for m, q in zip(shared, child.queries, strict=True)):
            out.append(child)  # already shared (the driver's specs slice once per parent): nothing to copy
            continue
        queries = [q if m is q.matrix else replace(q, matrix=m) for m, q in zip(shared, child.queries, strict=True)]
        out.append(replace(child, queries=queries))
    return out


def _key(query) -> tuple:
    return query.name, query.matrix.shape, query.matrix.nnz


def _first_equal(matrix: sp.csr_matrix, candidates: list) -> sp.csr_matrix:
    for other in candidates:
        if other is matrix or _same(other, matrix):
            return other
    candidates.append(matrix)
    return matrix


def _same(a: sp.csr_matrix, b: sp.csr_matrix) -> bool:
    """Equal csr matrices entry for entry, and stored alike (same index arrays and dtypes)."""
    return (
        type(a) is type(b)
        and a.dtype == b.dtype
        and a.indptr.dtype == b.indptr.dtype
        and a.indices.dtype == b.indices.dtype
        and a.has_sorted_indices == b.has_sorted_indices
        and np.array_equal(a.indptr, b.indptr)
        and np.array_equal(a.indices, b.indices)
        and np.array_equal(a.data, b.data)
    )
