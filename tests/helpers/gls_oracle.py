"""An independent oracle of the tree GLS: the dense weighted least squares in the leaves' cells.

Parametrise the problem by the leaves' histograms on the active cells (theta); every region is the
sum of the leaves below it, so every measured answer is one row of a dense design matrix.  The
exact totals are linear equalities ``M theta = T``: their solution set is ``theta0 + N phi`` (N a
basis of the null space of M), and the GLS is the ordinary weighted least squares in ``phi``
solved by ``numpy.linalg.lstsq``; its covariance is ``N (X_N^T W X_N)^{-1} N^T``.  Nothing here
shares code with :mod:`dpmodels.core.tree_gls` (no tree passes, no basis change).

A second oracle, :func:`kkt_gls`, takes every region's histogram as unknowns and solves the KKT
system of the weighted least squares with every equality at once (tree sums, totals, group totals),
the redundant equalities dropped by a pivoted QR; its covariance is ``G H G`` with ``G`` the top-left
block of the KKT matrix's inverse and ``H`` the information matrix.

Also: small random problems (random trees, Kronecker marginals) for the property tests.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp

from dpmodels.core.hierarchy import Hierarchy
from dpmodels.core.tree_gls import GLSQuery, TreeGLSProblem


def dense_gls(problem: TreeGLSProblem) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(estimate, cell variances, total variances)``, regions x cells, by dense linear algebra."""
    h, active = problem.hierarchy, problem.active
    n, k = h.n_regions, len(active)
    leaves = list(h.leaves)
    below = np.zeros((n, len(leaves)))  # below[v, j] = 1 if leaf j is in the subtree of v
    for j, leaf in enumerate(leaves):
        v = int(leaf)
        while v >= 0:
            below[v, j] = 1.0
            v = int(h.parent[v])
    rows, answers, weights = [], [], []
    for q in problem.queries:
        a = q.matrix.toarray()[:, active]
        for v in np.flatnonzero(np.isfinite(q.variances)):
            for r in range(a.shape[0]):
                rows.append(np.kron(below[v], a[r]))
                answers.append(q.values[v, r])
                weights.append(1.0 / q.variances[v])
    x, y, sw = np.array(rows), np.array(answers), np.sqrt(np.array(weights))
    p = len(leaves) * k
    if problem.totals:
        m = np.array([np.kron(below[v], np.ones(k)) for v in problem.totals])
        t = np.array(list(problem.totals.values()))
        theta0, null = np.linalg.lstsq(m, t, rcond=None)[0], sla.null_space(m)
    else:
        theta0, null = np.zeros(p), np.eye(p)
    xn = (x @ null) * sw[:, None]
    phi = np.linalg.lstsq(xn, sw * (y - x @ theta0), rcond=None)[0]
    theta = theta0 + null @ phi
    cov = null @ np.linalg.inv(xn.T @ xn) @ null.T
    est, var, total_var = np.zeros((n, problem.n_cells)), np.zeros((n, problem.n_cells)), np.zeros(n)
    for v in range(n):
        hv = np.kron(below[v], np.eye(k))
        cv = hv @ cov @ hv.T
        est[v, active], var[v, active], total_var[v] = hv @ theta, np.diag(cv), cv.sum()
    return est, var, total_var


def kkt_gls(problem: TreeGLSProblem) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(estimate, cell variances, total variances)`` from the KKT system of every region's histogram."""
    h, active = problem.hierarchy, problem.active
    n, k = h.n_regions, len(active)
    block = np.arange(n * k).reshape(n, k)  # unknown of (region, active cell)
    info, grad = np.zeros((n * k, n * k)), np.zeros(n * k)
    for q in problem.queries:
        a = q.matrix.toarray()[:, active]
        for v in np.flatnonzero(np.isfinite(q.variances)):
            w = 1.0 / q.variances[v]
            info[np.ix_(block[v], block[v])] += w * a.T @ a
            grad[block[v]] += w * a.T @ q.values[v]
    rows, rhs = [], []
    for v in range(n):
        kids = np.flatnonzero(h.parent == v)
        if len(kids) == 0:
            continue
        for c in range(k):
            row = np.zeros(n * k)
            row[block[v, c]] = 1.0
            row[block[kids, c]] = -1.0
            rows.append(row)
            rhs.append(0.0)
    for regions, total in [((v,), t) for v, t in problem.totals.items()] + list(problem.group_totals):
        row = np.zeros(n * k)
        row[block[list(regions)].ravel()] = 1.0
        rows.append(row)
        rhs.append(total)
    e, t = np.array(rows).reshape(-1, n * k), np.array(rhs)
    if len(e):
        _, r, piv = sla.qr(e.T, pivoting=True, mode="economic")
        rank = int((np.abs(np.diag(r)) > 1e-10 * np.abs(r[0, 0])).sum())
        e, t = e[np.sort(piv[:rank])], t[np.sort(piv[:rank])]
    m = len(e)
    kkt = np.block([[info, e.T], [e, np.zeros((m, m))]])
    inverse = np.linalg.inv(kkt)
    x = (inverse @ np.concatenate([grad, t]))[: n * k]
    g = inverse[: n * k, : n * k]
    cov = g @ info @ g
    est, var, total_var = np.zeros((n, problem.n_cells)), np.zeros((n, problem.n_cells)), np.zeros(n)
    for v in range(n):
        cv = cov[np.ix_(block[v], block[v])]
        est[v, active], var[v, active], total_var[v] = x[block[v]], np.diag(cv), cv.sum()
    return est, var, total_var


def random_tree(rng: np.random.Generator, n_regions: int) -> Hierarchy:
    """A random rooted tree: region i's parent is uniform among 0..i-1."""
    pairs = [("r0", None)] + [(f"r{i}", f"r{int(rng.integers(0, i))}") for i in range(1, n_regions)]
    return Hierarchy.from_parent_table(pairs)


def kron_marginal(shape: tuple[int, ...], keep: set[int]) -> sp.csr_matrix:
    """The marginal of a C-order histogram of ``shape`` on the attributes ``keep``."""
    out = sp.csr_matrix(np.ones((1, 1)))
    for i, size in enumerate(shape):
        factor = sp.identity(size) if i in keep else sp.csr_matrix(np.ones((1, size)))
        out = sp.kron(out, factor, format="csr")
    return out


def noisy_queries(rng, tree: Hierarchy, truth: np.ndarray, matrices, variances) -> tuple[GLSQuery, ...]:
    """Query sets with Gaussian noise of the given per-region variances (``inf``: not measured)."""
    out = []
    for k, (matrix, var) in enumerate(zip(matrices, variances, strict=True)):
        answers = truth @ matrix.T.toarray()
        sd = np.sqrt(np.where(np.isfinite(var), var, 0.0))[:, None]
        values = answers + sd * rng.standard_normal(answers.shape)
        out.append(GLSQuery(f"q{k}", matrix, values, var))
    return tuple(out)
