"""A syntactic certificate of total unimodularity for a model's constraint matrix (spec 3.6).

If every entry is 0 or +-1, every column has at most two non-zeros once single-variable
rows (bounds) are set aside, and the rows can be 2-coloured so that the two non-zeros of a
column lie in different colours when they have the same sign and in the same colour when
their signs differ (Heller-Tompkins), the matrix is totally unimodular.  With integral
right-hand sides and bounds, every vertex of the LP relaxation is then integral
(Hoffman-Kruskal), so simplex returns an integer optimum and no MIP is needed.

The certificate is sufficient, not necessary: a redundant row (such as an explicit total
implied by the flow rows) makes it fail even though the polytope is unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyomo.environ as pyo
from pyomo.repn.plugins.standard_form import LinearStandardFormCompiler

__all__ = ["Certificate", "tum_certificate"]


@dataclass(frozen=True)
class Certificate:
    holds: bool
    reason: str


def tum_certificate(model) -> Certificate:
    """Check the certificate on the active linear constraints of ``model``.

    Parameters
    ----------
    model : pyomo.environ.ConcreteModel
        A linear model.

    Returns
    -------
    Certificate
    """
    objectives = [o for o in model.component_data_objects(pyo.Objective, active=True)]
    for o in objectives:
        o.deactivate()
    try:
        form = LinearStandardFormCompiler().write(model, mixed_form=True)
    finally:
        for o in objectives:
            o.activate()
    bounds = np.array([b for v in form.columns for b in v.bounds if b is not None], dtype=np.float64)
    return matrix_certificate(form.A, np.asarray(form.rhs, dtype=np.float64), bounds, [v.name for v in form.columns])


def matrix_certificate(a, rhs: np.ndarray, bounds: np.ndarray, names=None) -> Certificate:
    """The certificate on a constraint matrix with its right-hand sides and finite bounds."""
    a = a.tocsr()
    rows = np.diff(a.indptr) >= 2  # single-variable rows are bounds
    if not np.allclose(rhs, np.round(rhs)):
        return Certificate(False, "a right-hand side is not integral")
    finite = bounds[np.isfinite(bounds)]
    if not np.allclose(finite, np.round(finite)):
        return Certificate(False, "a variable bound is not integral")
    a = a[rows].tocsc()
    if a.nnz and not np.all(np.isin(a.data, (-1.0, 1.0))):
        return Certificate(False, "a coefficient is not 0 or +-1")
    counts = np.diff(a.indptr)
    if (counts > 2).any():
        j = int(np.argmax(counts))
        name = names[j] if names is not None else f"column {j}"
        return Certificate(False, f"variable {name} appears in {counts.max()} rows")
    return _two_colouring(a)


def _two_colouring(a) -> Certificate:
    """Union-find with parity over rows: each 2-entry column ties its rows' colours."""
    parent = list(range(a.shape[0]))
    parity = [0] * a.shape[0]

    def find(i):
        path = []
        while parent[i] != i:
            path.append(i)
            i = parent[i]
        root, acc = i, 0
        for node in reversed(path):
            acc ^= parity[node]
            parity[node] = acc
            parent[node] = root
        return root

    for j in range(a.shape[1]):
        lo, hi = a.indptr[j], a.indptr[j + 1]
        if hi - lo < 2:
            continue
        (r1, r2), (v1, v2) = a.indices[lo:hi], a.data[lo:hi]
        want = 1 if v1 == v2 else 0  # same sign -> different colours
        root1, root2 = find(r1), find(r2)
        p1, p2 = parity[r1] if root1 != r1 else 0, parity[r2] if root2 != r2 else 0
        if root1 == root2:
            if p1 ^ p2 != want:
                return Certificate(False, "the rows admit no consistent 2-colouring (an odd cycle)")
            continue
        parent[root2] = root1
        parity[root2] = p1 ^ p2 ^ want
    return Certificate(True, "entries in {0, +-1}, two per column, rows 2-colourable")
