"""The tree GLS as a Pyomo model: formulation ``topdown.gls`` (a continuous QP).

One variable per region and active cell (``x[region, cell]``, real, unbounded: the GLS estimate
is unbiased, so neither non-negative nor integer), one constraint per internal region and cell
(the region equals the sum of its children), one per exact total and one per group total (the sum
of the group's regions' totals), and the objective

    sum over measured (region, query set, answer) of (A_q[answer] . x_region - y)^2 / variance.

Structural zeros have no variable (they are 0).  Any convex QP solver (Clarabel, HiGHS) solves it;
SCIP finds the optimum but cannot bound the free variables, so it never proves it and stops only at
its time limit (reported as such, not optimal).  The
``topdown_gls`` plugin (:mod:`dpmodels.solvers.topdown_gls`) solves the same object in closed form
by two passes over the tree (:func:`dpmodels.core.tree_gls.solve_tree_gls`).  The problem comes
from TopDown's measurements (:func:`dpmodels.topdown.gls.gls_problem`) or PGSR's counts
(:func:`dpmodels.pgsr.gls.gls_problem`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyomo.environ as pyo

from dpmodels.core.formulations import register_formulation
from dpmodels.core.marker import attach_marker, get_marker
from dpmodels.core.tree_gls import TreeGLSProblem

__all__ = ["GLSPayload", "build_gls", "gls_values"]


@dataclass(frozen=True, eq=False)
class GLSPayload:
    """Payload of ``topdown.gls``: the tree GLS problem (measurements, zeros, totals, group totals)."""

    problem: TreeGLSProblem


@register_formulation(
    "topdown.gls",
    payload=GLSPayload,
    integer=False,
    objective="quadratic",
    doc="Tree GLS / BLUE: weighted least squares of every region's histogram under the tree sums and exact "
    "(region and group) totals",
)
def build_gls(problem: TreeGLSProblem, *, fingerprint: bool = True) -> pyo.ConcreteModel:
    """The weighted least-squares model of a tree of histograms (module docstring).

    Parameters
    ----------
    problem : TreeGLSProblem
        The hierarchy, the noisy query sets with their variances, the structural zeros, totals and
        group totals.
    fingerprint : bool, default True
        Record the model's structural hash in its marker (structure plugins need it).

    Returns
    -------
    pyomo.environ.ConcreteModel
        The model, with its structure marker (formulation ``topdown.gls``).
    """
    h, active = problem.hierarchy, [int(c) for c in problem.active]
    names = list(h.names)
    m = pyo.ConcreteModel(name="tree GLS")
    m.regions = pyo.Set(initialize=names, ordered=True, doc="regions of the hierarchy")
    m.cells = pyo.Set(initialize=active, ordered=True, doc="cells that are not structural zeros")
    m.x = pyo.Var(m.regions, m.cells, domain=pyo.Reals, doc="estimated count of a region's cell")
    internal = [names[i] for i in h.internal]
    kids = {names[i]: [names[c] for c in h.children(i)] for i in h.internal}
    m.internal = pyo.Set(initialize=internal, ordered=True)
    m.consistency = pyo.Constraint(
        m.internal,
        m.cells,
        rule=lambda m, r, c: m.x[r, c] == pyo.quicksum(m.x[k, c] for k in kids[r]),
        doc="a region equals the sum of its children",
    )
    totals = {names[r]: t for r, t in sorted(problem.totals.items())}
    m.total_regions = pyo.Set(initialize=list(totals), ordered=True)
    m.totals = pyo.Constraint(
        m.total_regions,
        rule=lambda m, r: pyo.quicksum(m.x[r, c] for c in m.cells) == totals[r],
        doc="exact (invariant) totals",
    )
    groups = [([names[r] for r in regions], total) for regions, total in problem.group_totals]
    m.groups = pyo.Set(initialize=range(len(groups)), ordered=True, doc="groups of regions with one exact total")
    m.group_totals = pyo.Constraint(
        m.groups,
        rule=lambda m, g: pyo.quicksum(m.x[r, c] for r in groups[g][0] for c in m.cells) == groups[g][1],
        doc="exact group totals (the sum of the group's region totals)",
    )
    m.objective = pyo.Objective(expr=_objective(m, problem, names, active), sense=pyo.minimize)
    layout = {"x": [(r, c) for r in names for c in active]}
    attach_marker(m, "topdown.gls", GLSPayload(problem), {"relax": False}, layout, fingerprint)
    return m


def _objective(m, problem: TreeGLSProblem, names, active):
    """The weighted squared residuals of every measured answer (rows with no active cell are constants)."""
    position = {c: j for j, c in enumerate(active)}
    terms = []
    for q in problem.queries:
        matrix = q.matrix.tocsr()
        for v in np.flatnonzero(q.measured()):
            weight = 1.0 / float(q.variances[v])
            for row in range(matrix.shape[0]):
                lo, hi = matrix.indptr[row], matrix.indptr[row + 1]
                row_cells = zip(matrix.indices[lo:hi], matrix.data[lo:hi], strict=True)
                pairs = [(int(j), float(a)) for j, a in row_cells if j in position]
                fit = pyo.quicksum(a * m.x[names[v], j] for j, a in pairs) if pairs else 0.0
                terms.append(weight * (fit - float(q.values[v, row])) ** 2)
    return pyo.quicksum(terms)


def gls_values(model) -> np.ndarray:
    """The solved estimate of a ``build_gls`` model as regions x cells (0 in the structural zeros).

    Parameters
    ----------
    model : pyomo.environ.ConcreteModel
        A solved model of :func:`build_gls`.
    """
    problem: TreeGLSProblem = get_marker(model).data.problem
    out = np.zeros((problem.hierarchy.n_regions, problem.n_cells))
    index = problem.hierarchy.index
    for r, c in get_marker(model).layout["x"]:
        out[index[r], c] = pyo.value(model.x[r, c])
    return out
