"""Generalised least squares on a tree of histograms: the best linear unbiased estimate, in linear time.

Every region ``v`` of a :class:`~dpmodels.core.hierarchy.Hierarchy` has an unknown histogram
``x_v`` over the same cells, and a parent's histogram is the sum of its children's.  Region ``v``
has noisy answers ``y_{v,q} = A_q x_v + e`` to query sets ``q`` (matrices ``A_q``), the noise
independent with mean 0 and variance ``sigma^2_{v,q}`` per answer (any distribution: discrete
Laplace, discrete Gaussian, ...).  Three kinds of public facts are exact: *structural zeros* (cells
that are 0 in every region), *totals* of some regions, and *group totals* (the sum of the totals
of a set of regions, e.g. sibling parts of a state held to one public population).  The
generalised least squares
estimate minimises

    sum_v sum_q ||A_q x_v - y_{v,q}||^2 / sigma^2_{v,q}

subject to the tree sums and the facts.  By Gauss-Markov (Aitken) it is the best linear unbiased
estimate (BLUE): unbiased, and no other linear unbiased estimate has a smaller variance of any
linear combination.  It is **real-valued**: cells may come out negative or fractional (no
non-negativity, no integrality, which would bias it); inequality facts (group-quarters flows,
edits) are not used.

:func:`solve_tree_gls` computes it without forming the problem's matrix (Hay et al. 2010 for one
count per region; the same two passes as a Kalman filter and smoother on the tree): in a basis
in which every region's precision matrix is diagonal (:func:`~dpmodels.core.tree_gls_passes.common_basis`)
the problem separates into one scalar tree problem per coordinate; an upward pass combines each
region's own measurement with the sum of its children's estimates by inverse variance, a downward
pass splits the parent's residual among the children in proportion to their variances.  When no
such basis exists (structural zeros with variance ratios that differ between regions), the same
passes run on the precision matrices (:mod:`dpmodels.core.tree_gls_dense`: cubic in the cells).  Totals
along a basis coordinate are fixed in the passes; otherwise they, and every group total, are imposed
afterwards by the exact rank-``J`` correction of the constrained BLUE
(:mod:`dpmodels.core.tree_gls_facts`: ``J`` exact sums; one more pass per sum gives the covariance it
needs).  The cost is linear in the number of regions (times the cells, squared when the basis is not
the cells themselves, and times ``J + 1``).

The variances of the estimate (:class:`GLSResult`) are exact for the stated noise variances;
the intervals of :meth:`GLSResult.intervals` are discussed there.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from statistics import NormalDist

import numpy as np
import scipy.sparse as sp

from .errors import DataValidationError
from .hierarchy import Hierarchy
from .tree_gls_dense import dense_passes
from .tree_gls_facts import MAX_CORRECTION_ENTRIES, ExactSums, correct_for_sums, information_runs
from .tree_gls_passes import (
    TreeLevels,
    common_basis,
    estimate_means,
    floor_precisions,
    posterior_variances,
    upward_variances,
)

__all__ = [
    "GLSQuery",
    "TreeGLSProblem",
    "GLSResult",
    "solve_tree_gls",
    "gls_objective",
    "interval_halfwidth",
    "MAX_CORRECTION_ENTRIES",
]


@dataclass(frozen=True, eq=False)
class GLSQuery:
    """One query set measured at (some of) the regions.

    Parameters
    ----------
    name : str
        The query set's name.
    matrix : scipy.sparse matrix
        Answers x cells.
    values : numpy.ndarray
        Regions x answers: the noisy answers (rows of unmeasured regions are ignored).
    variances : numpy.ndarray
        One noise variance per region (> 0; ``inf`` where the region was not measured by this set).
    """

    name: str
    matrix: sp.csr_matrix
    values: np.ndarray
    variances: np.ndarray

    def measured(self) -> np.ndarray:
        return np.isfinite(self.variances)


@dataclass(frozen=True, eq=False)
class TreeGLSProblem:
    """A tree GLS problem: the hierarchy, the cells, the noisy query sets and the exact facts.

    Parameters
    ----------
    hierarchy : Hierarchy
        The regions (rows of every array are in its order).
    n_cells : int
        The histogram's length.
    queries : tuple of GLSQuery
        The measurements.
    totals : dict, optional
        Region position -> its exact (public) total over all cells.
    zeros : sequence of int, optional
        Cells that are 0 in every region (public structural zeros).
    group_totals : sequence of (sequence of int, float), optional
        ``(region positions, total)``: the exact (public) sum of the totals of distinct regions.
    """

    hierarchy: Hierarchy
    n_cells: int
    queries: tuple[GLSQuery, ...]
    totals: dict = field(default_factory=dict)
    zeros: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    group_totals: tuple = ()

    def __post_init__(self):
        n = self.hierarchy.n_regions
        if isinstance(self.n_cells, bool) or not isinstance(self.n_cells, int | np.integer) or self.n_cells < 1:
            raise DataValidationError("n_cells", f"must be a positive integer, got {self.n_cells!r}")
        if not self.queries:
            raise DataValidationError("queries", "need at least one query set")
        object.__setattr__(self, "queries", tuple(_checked_query(q, n, int(self.n_cells)) for q in self.queries))
        zeros = np.unique(np.asarray(self.zeros, dtype=np.int64))
        if zeros.size and (zeros[0] < 0 or zeros[-1] >= self.n_cells):
            raise DataValidationError("zeros", f"cells must be in 0..{self.n_cells - 1}, got {zeros.tolist()[:5]}")
        if zeros.size == self.n_cells:
            raise DataValidationError("zeros", "every cell is a structural zero: nothing to estimate")
        object.__setattr__(self, "zeros", zeros)
        totals = {}
        for region, value in dict(self.totals).items():
            if isinstance(region, bool) or not isinstance(region, int | np.integer) or not 0 <= region < n:
                raise DataValidationError("totals", f"keys must be region positions 0..{n - 1}, got {region!r}")
            if not np.isfinite(value):
                raise DataValidationError("totals", f"region {self.hierarchy.names[region]!r} has total {value!r}")
            totals[int(region)] = float(value)
        object.__setattr__(self, "totals", totals)
        object.__setattr__(self, "group_totals", _checked_groups(self.group_totals, self.hierarchy))

    @property
    def active(self) -> np.ndarray:
        """The cells that are not structural zeros (the estimate's unknowns)."""
        return np.setdiff1d(np.arange(self.n_cells), self.zeros)


def _checked_query(q: GLSQuery, n_regions: int, n_cells: int) -> GLSQuery:
    matrix = sp.csr_matrix(q.matrix, dtype=np.float64)
    field_name = f"query set {q.name!r}"
    if matrix.shape[1] != n_cells or not np.isfinite(matrix.data).all():
        raise DataValidationError(field_name, f"needs a finite matrix with {n_cells} columns, got {matrix.shape}")
    variances = np.asarray(q.variances, dtype=np.float64).reshape(-1)
    if variances.shape != (n_regions,):
        raise DataValidationError(field_name, f"needs one variance per region ({n_regions}), got {variances.shape}")
    if np.isnan(variances).any() or (variances <= 0).any():
        raise DataValidationError(
            field_name, "variances must be > 0 (inf: not measured); exact facts are totals or zeros"
        )
    values = np.asarray(q.values, dtype=np.float64)
    if values.shape != (n_regions, matrix.shape[0]):
        raise DataValidationError(field_name, f"values need shape ({n_regions}, {matrix.shape[0]}), got {values.shape}")
    if not np.isfinite(values[np.isfinite(variances)]).all():
        raise DataValidationError(field_name, "a measured region has a missing or infinite value")
    return GLSQuery(q.name, matrix, values, variances)


def _checked_groups(groups, hierarchy: Hierarchy) -> tuple[tuple[tuple[int, ...], float], ...]:
    """``(regions, total)`` pairs with distinct valid region positions and a finite total."""
    n, out = hierarchy.n_regions, []
    for entry in groups:
        try:
            regions, total = entry
            positions = tuple(int(r) for r in regions)
            ok = all(not isinstance(r, bool) and int(r) == r for r in regions)
        except (TypeError, ValueError):
            raise DataValidationError("group_totals", f"entries are (regions, total), got {entry!r}") from None
        if not ok or not positions or len(set(positions)) != len(positions) or not all(0 <= r < n for r in positions):
            raise DataValidationError("group_totals", f"needs distinct region positions in 0..{n - 1}, got {regions!r}")
        if not np.isfinite(total):
            raise DataValidationError("group_totals", f"the group {positions} has total {total!r}")
        out.append((positions, float(total)))
    return tuple(out)


@dataclass
class GLSResult:
    """The GLS estimate of every region and its variances.

    Parameters
    ----------
    hierarchy : Hierarchy
        The regions (rows in its order).
    estimate : numpy.ndarray
        Regions x cells (0 in the structural zeros).  Real-valued: it may be negative or fractional.
    variance : numpy.ndarray
        Regions x cells: the variance of each estimated cell (exact for the stated noise variances).
    total_variance : numpy.ndarray
        The variance of each region's estimated total (0 where the total is exact).
    objective : float
        The weighted sum of squared residuals at the estimate.
    info : dict
        How it was computed (``basis``, ``totals``: ``"fixed coordinate"`` or ``"rank-J correction"``,
        ``J``: the exact sums of the correction, ``group totals`` when any).
    """

    hierarchy: Hierarchy
    estimate: np.ndarray
    variance: np.ndarray
    total_variance: np.ndarray
    objective: float
    info: dict = field(default_factory=dict)

    @property
    def totals(self) -> np.ndarray:
        """Each region's estimated total."""
        return self.estimate.sum(axis=1)

    def intervals(self, level: float = 0.95, method: str = "normal", of: str = "cells"):
        """``(low, high)`` confidence intervals of every cell (``of="cells"``) or region total (``"totals"``).

        ``method="normal"``: ``estimate +- z sd``.  Exact coverage when the noise is Gaussian; under
        the discrete Gaussian (variance stated exactly) the estimate is a sum of lattice variables
        and the coverage is close to nominal.  Under (discrete) Laplace noise it is approximate: an
        estimate that pools many measurements is close to normal, but one dominated by a single
        Laplace draw (a leaf cell measured once) covers less, about 93.7% at 95% for a continuous
        Laplace (``1 - exp(-1.96 sqrt 2)``).  ``method="chebyshev"``: ``estimate +- sd / sqrt(1 - level)``,
        which covers at least ``level`` whatever the noise's distribution (wider).  A region or cell
        whose value is exact has a zero-width interval.

        Parameters
        ----------
        level : float, default 0.95
            The nominal coverage, in (0, 1).
        method : {"normal", "chebyshev"}
            The interval's rule.
        of : {"cells", "totals"}
            Intervals of every cell, or of every region's total.
        """
        if of not in ("cells", "totals"):
            raise DataValidationError("of", f"must be 'cells' or 'totals', got {of!r}")
        centre, var = (self.estimate, self.variance) if of == "cells" else (self.totals, self.total_variance)
        half = interval_halfwidth(var, level, method)
        return centre - half, centre + half


def interval_halfwidth(variance, level: float = 0.95, method: str = "normal") -> np.ndarray:
    """Half-width of an interval of nominal coverage ``level`` for an estimate of ``variance``.

    Parameters
    ----------
    variance : array_like
        The estimates' variances.
    level : float, default 0.95
        The nominal coverage, in (0, 1).
    method : {"normal", "chebyshev"}
        ``z_{(1+level)/2} sd`` or ``sd / sqrt(1 - level)`` (see :meth:`GLSResult.intervals`).
    """
    if isinstance(level, bool) or not isinstance(level, int | float) or not 0 < level < 1:
        raise DataValidationError("level", f"must be a number in (0, 1), got {level!r}")
    sd = np.sqrt(np.maximum(np.asarray(variance, dtype=np.float64), 0.0))
    if method == "normal":
        return NormalDist().inv_cdf((1 + level) / 2) * sd
    if method == "chebyshev":
        return sd / np.sqrt(1 - level)
    raise DataValidationError("method", f"must be 'normal' or 'chebyshev', got {method!r}")


def gls_objective(problem: TreeGLSProblem, estimate: np.ndarray) -> float:
    """``sum_v sum_q ||A_q x_v - y_{v,q}||^2 / sigma^2_{v,q}`` over the measured regions.

    Parameters
    ----------
    problem : TreeGLSProblem
        The measurements.
    estimate : numpy.ndarray
        Regions x cells.
    """
    total = 0.0
    for q in problem.queries:
        rows = q.measured()
        residual = (q.matrix @ estimate[rows].T).T - q.values[rows]
        total += float(((residual**2).sum(axis=1) / q.variances[rows]).sum())
    return total


def solve_tree_gls(problem: TreeGLSProblem) -> GLSResult:
    """The GLS (best linear unbiased) estimate of every region, with its variances (module docstring).

    Parameters
    ----------
    problem : TreeGLSProblem
        The tree, the noisy query sets, the structural zeros, the exact totals and group totals.

    Returns
    -------
    GLSResult
    """
    h, active = problem.hierarchy, problem.active
    parts = _measurement_parts(problem, active)
    ones = np.ones(len(active))
    found = common_basis(parts["precisions"], ones)
    levels = TreeLevels(h)
    if found is None:
        sums = _exact_sums(problem, with_totals=True)
        runs = information_runs(parts["information"], ones, sums)
        est, cell_var, total_var = dense_passes(levels, parts["precisions"], parts["pattern"], runs, h.names)
        info = {"basis": "none (matrix passes)", "totals": "rank-J correction"}
    else:
        est, cell_var, total_var, sums, info = _scalar_route(problem, parts, found, levels)
    coords, cell_var, total_var = correct_for_sums(sums, est, cell_var, total_var)
    estimate = np.zeros((h.n_regions, problem.n_cells))
    variance = np.zeros((h.n_regions, problem.n_cells))
    estimate[:, active], variance[:, active] = coords, cell_var
    info.update(J=len(sums), patterns=len(parts["precisions"]))
    if problem.group_totals:
        info["group totals"] = "rank-J correction"
    return GLSResult(h, estimate, variance, total_var, gls_objective(problem, estimate), info)


def _exact_sums(problem: TreeGLSProblem, with_totals: bool) -> ExactSums:
    """The facts of the rank-J correction: the region totals (unless the passes fix them), then the groups."""
    names = problem.hierarchy.names
    sums = [((r,), t, names[r]) for r, t in sorted(problem.totals.items())] if with_totals else []
    for regions, total in problem.group_totals:
        sums.append((regions, total, "group of " + "+".join(names[r] for r in regions)))
    return ExactSums.of(sums, problem.hierarchy.n_regions)


def _scalar_route(problem: TreeGLSProblem, parts: dict, found, levels: TreeLevels):
    """The passes on scalar coordinates; the estimates (and covariance runs) mapped back to the cells."""
    basis, diagonals, aligned = found
    h = problem.hierarchy
    lam = floor_precisions(np.stack(diagonals)[parts["pattern"]])
    b = parts["information"] if basis is None else parts["information"] @ basis
    ones = np.ones(b.shape[1])
    c = ones if basis is None else basis.T @ ones  # a region's total is c . (its coordinates)
    fixed, fixed_values = _fixed_totals(problem, c, aligned, lam.shape)
    S, C = upward_variances(levels, lam, fixed, h.names)
    sums = _exact_sums(problem, with_totals=not aligned)
    runs = information_runs(b, c, sums)
    run_values = np.zeros(runs.shape)  # the covariance runs fix their coordinates at 0
    run_values[..., 0] = fixed_values
    est, _, _ = estimate_means(levels, lam, runs, fixed, run_values, S, C, h.names)
    var = posterior_variances(levels, S, C)
    if basis is None:
        cells, cell_var = est, var
    else:  # one product for every region and run: cells = V coordinates
        n, k, r = est.shape
        cells = (basis @ est.transpose(1, 0, 2).reshape(k, n * r)).reshape(-1, n, r).transpose(1, 0, 2)
        cell_var = var @ (basis**2).T
    info = {
        "basis": "cells" if basis is None else "eigenvectors",
        "totals": "fixed coordinate" if aligned else "rank-J correction",
    }
    return cells, cell_var, var @ c**2, sums, info


def _measurement_parts(problem: TreeGLSProblem, active: np.ndarray) -> dict:
    """The distinct precision matrices on the active cells, each region's pattern and information vector."""
    weights = np.stack([np.where(q.measured(), 1.0 / q.variances, 0.0) for q in problem.queries], axis=1)
    patterns, pattern = np.unique(weights, axis=0, return_inverse=True)
    restricted = [q.matrix[:, active] if len(active) < problem.n_cells else q.matrix for q in problem.queries]
    grams = [(a.T @ a).toarray() for a in restricted]
    precisions = [sum(w * g for w, g in zip(row, grams, strict=True)) for row in patterns]
    information = np.zeros((problem.hierarchy.n_regions, len(active)))
    for k, (q, a) in enumerate(zip(problem.queries, restricted, strict=True)):
        values = np.where(q.measured()[:, None], q.values, 0.0) * weights[:, k][:, None]
        information += np.asarray((a.T @ values.T).T)
    return {"precisions": precisions, "pattern": np.asarray(pattern).reshape(-1), "information": information}


def _fixed_totals(problem: TreeGLSProblem, c: np.ndarray, aligned: bool, shape) -> tuple[np.ndarray, np.ndarray]:
    """The coordinates the exact totals fix when they lie along one basis coordinate."""
    fixed = np.zeros(shape, dtype=bool)
    values = np.zeros(shape)
    if aligned and problem.totals:
        k = int(np.argmax(np.abs(c)))
        regions = np.array(sorted(problem.totals))
        fixed[regions, k] = True
        values[regions, k] = np.array([problem.totals[r] for r in regions]) / c[k]
    return fixed, values
