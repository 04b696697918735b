"""The Pyomo blocks every TopDown model shares, with the component names of spec 7.

The L2 and rounding builders (:mod:`.models`) and the failsafe builders (:mod:`.failsafe_models`)
assemble their models from these: the index sets, the parent sums, the root or invariant
totals, the flow constraints ``NF`` (``gq_def``, ``flow_out``, ``flow_in``, ``comb_pop``), the
edits and the weighted least-squares objective.  Every block takes ``hist(t, x)``, the
histogram expression of child t at cell x (a variable ``H[t, x]`` in the L2 models,
``floor + y[t, x]`` in the roundings), so one block serves every builder.

No model carries a constraint without variables: :func:`relation` checks a row whose terms are
all constants (a cell whose floors already meet its parent, an edit on inactive cells) and
omits it; a violated one raises :class:`~dpmodels.core.errors.InfeasibleDomainError` naming it.
"""

from __future__ import annotations

import numpy as np
import pyomo.environ as pyo

from dpmodels.core.errors import DataValidationError, InfeasibleDomainError

from .node_data import NodeProblem

__all__ = [
    "base_model",
    "cell_keys",
    "relation",
    "add_flows",
    "add_totals",
    "add_edits",
    "add_parent_sum",
    "add_rows",
    "l2_objective_terms",
    "check_weights",
]


def base_model(problem: NodeProblem, title: str) -> pyo.ConcreteModel:
    """An empty model with the index sets ``children`` and ``cells`` of ``problem``.

    Parameters
    ----------
    problem : NodeProblem
        The node solve's data.
    title : str
        The model's name.
    """
    m = pyo.ConcreteModel(name=title)
    m.children = pyo.RangeSet(0, problem.m - 1)
    m.cells = pyo.Set(initialize=[int(x) for x in problem.cells], ordered=True)
    return m


def cell_keys(problem: NodeProblem) -> list[tuple[int, int]]:
    """The ``(child, cell)`` index of the histogram variables, child-major.

    Parameters
    ----------
    problem : NodeProblem
        The node solve's data.
    """
    return [(t, int(x)) for t in range(problem.m) for x in problem.cells]


def _type_cells(problem: NodeProblem) -> dict[int, list[int]]:
    types = problem.types()
    return {g: [int(x) for x in problem.cells[types == g]] for g in np.unique(types)}


def relation(lhs, op: str, rhs, row: str):
    """The constraint ``lhs op rhs``; ``Constraint.Skip`` when no variable is left in ``lhs``
    (rounding fixed every term, or no active cell enters the row) and the constants satisfy it.

    No model carries a row without variables (Pyomo would store ``Constraint.Feasible`` as a
    trivial relation, which some solver interfaces, SCIP's among them, cannot take).  A
    violated constant row means no histogram satisfies the model: ``InfeasibleDomainError``
    names the row.

    Parameters
    ----------
    lhs : expression or number
        The left-hand side.
    op : {"<=", ">=", "=="}
        The comparison.
    rhs : float
        The right-hand side (a constant).
    row : str
        The row's component name and index, named by the error.
    """
    if not hasattr(lhs, "is_potentially_variable") or not lhs.is_potentially_variable():
        value = float(pyo.value(lhs))
        rhs = float(rhs)
        holds = {"<=": value <= rhs + 1e-9, ">=": value >= rhs - 1e-9, "==": abs(value - rhs) <= 1e-9}[op]
        if not holds:
            raise InfeasibleDomainError(
                row,
                f"the row has no variable left and its constants violate it ({value:g} {op} {rhs:g}): "
                "no histogram satisfies the model",
            )
        return pyo.Constraint.Skip
    return {"<=": lhs <= rhs, ">=": lhs >= rhs, "==": lhs == rhs}[op]


def add_flows(m, problem: NodeProblem, hist) -> dict[str, list]:
    """``NF(tau, .)`` for every child with flow data: gq_def, flow_out, flow_in, comb_pop
    (flow lower bounds are variable bounds ``flow_lb``).

    Parameters
    ----------
    m : pyomo.environ.ConcreteModel
        The model being built (from :func:`base_model`).
    problem : NodeProblem
        The node solve's data.
    hist : callable
        ``hist(t, x)``: the histogram expression of child t at cell x.

    Returns
    -------
    dict
        The index of ``GQ``, ``F`` and ``CB`` (empty without flow data).
    """
    rows = [(t, c.flows) for t, c in enumerate(problem.children) if c.flows is not None]
    if not rows:
        return {}
    cells_of = _type_cells(problem)
    gq_idx = [(t, g) for t, f in rows for g in range(f.n_types)]
    arc_idx = [(t, g, c) for t, f in rows for g, c in f.arcs()]
    comb_idx = [(t, c) for t, f in rows for c in range(len(f.combos))]
    flow = dict(rows)
    m.GQ = pyo.Var(gq_idx, domain=pyo.NonNegativeReals, doc="population of GQ type g in child t")
    m.F = pyo.Var(
        arc_idx,
        bounds=lambda m, t, g, c: (int(flow[t].lower[c, g]), None),
        doc="flow of type g to combination c (flow_lb: its lower bound f_{g,c})",
    )
    m.CB = pyo.Var(comb_idx, domain=pyo.NonNegativeReals, doc="population of the leaves of combination c")
    m.gq_def = pyo.Constraint(
        gq_idx, rule=lambda m, t, g: m.GQ[t, g] == pyo.quicksum(hist(t, x) for x in cells_of.get(g, []))
    )
    out = {k: [] for k in gq_idx}
    into = {k: [] for k in comb_idx}
    for t, g, c in arc_idx:
        out[t, g].append(m.F[t, g, c])
        into[t, c].append(m.F[t, g, c])
    m.flow_out = pyo.Constraint(gq_idx, rule=lambda m, t, g: m.GQ[t, g] == pyo.quicksum(out[t, g]))
    m.flow_in = pyo.Constraint(comb_idx, rule=lambda m, t, c: m.CB[t, c] == pyo.quicksum(into[t, c]))
    fixed = [(t, c) for t, c in comb_idx if flow[t].population[c] >= 0]
    m.comb_pop = pyo.Constraint(fixed, rule=lambda m, t, c: m.CB[t, c] == int(flow[t].population[c]))
    return {"GQ": gq_idx, "F": arc_idx, "CB": comb_idx}


def add_totals(m, problem: NodeProblem, hist) -> None:
    """Root total, or invariant child totals not already implied by fixed flow populations.

    Parameters
    ----------
    m : pyomo.environ.ConcreteModel
        The model being built (from :func:`base_model`).
    problem : NodeProblem
        The node solve's data.
    hist : callable
        ``hist(t, x)``: the histogram expression of child t at cell x.
    """
    if problem.parent is None:
        m.total = pyo.Constraint(
            rule=lambda m: relation(pyo.quicksum(hist(0, x) for x in m.cells), "==", problem.root_total, "total")
        )
        return
    need = [
        t for t, c in enumerate(problem.children) if c.total is not None and not (c.flows is not None and c.flows.fixed)
    ]
    m.child_total = pyo.Constraint(
        need,
        rule=lambda m, t: relation(
            pyo.quicksum(hist(t, x) for x in m.cells), "==", problem.children[t].total, f"child_total[{t}]"
        ),
    )


def add_edits(m, problem: NodeProblem, hist, use: bool) -> None:
    """The linear edits ``edit[t, j]`` on every child histogram (an empty component unless ``use``).

    Parameters
    ----------
    m : pyomo.environ.ConcreteModel
        The model being built (from :func:`base_model`).
    problem : NodeProblem
        The node solve's data.
    hist : callable
        ``hist(t, x)``: the histogram expression of child t at cell x.
    use : bool
        Add the edits of ``problem``.
    """
    edits = list(problem.edits) if use else []
    idx = [(t, j) for t in range(problem.m) for j in range(len(edits))]

    def rule(m, t, j):
        e = edits[j]
        lhs = pyo.quicksum(float(e.coef[x]) * hist(t, x) for x in m.cells if e.coef[x] != 0)
        return relation(lhs, e.op, 0, f"edit[{t},{j}] ({e.name!r} on child {t})")

    m.edit = pyo.Constraint(idx, rule=rule, doc="linear edits on each child histogram")


def add_parent_sum(m, problem: NodeProblem, hist) -> None:
    """``parent_sum[x]``: the children add up to the parent at every cell (none at the root).

    Parameters
    ----------
    m : pyomo.environ.ConcreteModel
        The model being built (from :func:`base_model`).
    problem : NodeProblem
        The node solve's data.
    hist : callable
        ``hist(t, x)``: the histogram expression of child t at cell x.
    """
    if problem.parent is None:
        return
    parent = dict(zip((int(x) for x in problem.cells), problem.parent.tolist(), strict=True))
    m.parent_sum = pyo.Constraint(
        m.cells,
        rule=lambda m, x: relation(pyo.quicksum(hist(t, x) for t in m.children), "==", parent[x], f"parent_sum[{x}]"),
    )


def add_rows(m, problem: NodeProblem, hist, failsafe: bool = False) -> None:
    """``production_row[k, i]``: row i of the block ``problem.rows[k]`` (:mod:`.child_rows`: earlier
    passes' rounded answers, group totals, occupancy caps); an empty component without rows.  A block
    marked ``implied`` (the parent sums imply it) enters the failsafe models only.

    Parameters
    ----------
    m : pyomo.environ.ConcreteModel
        The model being built (from :func:`base_model`).
    problem : NodeProblem
        The node solve's data.
    hist : callable
        ``hist(t, x)``: the histogram expression of child t at cell x.
    failsafe : bool, default False
        A failsafe model (it relaxes the parent sums, so the implied rows bind).
    """
    cells, n = list(m.cells), problem.n
    rows = {}
    for k, block in enumerate(problem.rows):
        block.check_shape(problem.m, n)
        if block.implied and not failsafe:
            continue
        for i, (cols, vals, rhs) in enumerate(block.terms()):
            rows[k, i] = (block, cols, vals, rhs)

    def rule(m, k, i):
        block, cols, vals, rhs = rows[k, i]
        lhs = pyo.quicksum(float(v) * hist(int(c) // n, cells[int(c) % n]) for c, v in zip(cols, vals, strict=True))
        return relation(lhs, block.op, rhs, f"production_row[{k},{i}] ({block.name!r})")

    m.production_row = pyo.Constraint(list(rows), rule=rule, doc="production rows on the children (child_rows.py)")


def l2_objective_terms(m, problem: NodeProblem, hist, weights: str):
    """Weighted squared residuals; identity queries directly, others through ``resid`` rows.

    Parameters
    ----------
    m : pyomo.environ.ConcreteModel
        The model being built (from :func:`base_model`).
    problem : NodeProblem
        The node solve's data.
    hist : callable
        ``hist(t, x)``: the histogram expression of child t at cell x.
    weights : {"inverse_variance", "paper"}
        The query weights (``"paper"``: 1).

    Returns
    -------
    expression
        The objective's sum of squares.
    """
    terms, resid_rows = [], []
    cells = list(m.cells)
    for t, child in enumerate(problem.children):
        for qi, q in enumerate(child.queries):
            w = q.weight if weights == "inverse_variance" else 1.0
            if q.identity:
                terms += [w * (hist(t, x) - float(v)) ** 2 for x, v in zip(cells, q.values, strict=True)]
                continue
            coo = q.matrix.tocoo()
            rows: dict[int, list] = {}
            for r, col, val in zip(coo.row, coo.col, coo.data, strict=True):
                rows.setdefault(int(r), []).append(float(val) * hist(t, cells[col]))
            resid_rows += [((t, qi, r), pyo.quicksum(rows[r]) - float(q.values[r]), w) for r in sorted(rows)]
            # a row with no active cell answers 0 exactly: its squared error is a constant, kept so that
            # the objective is the weighted squared error of every measured row (as in the matrix form)
            terms += [w * float(q.values[r]) ** 2 for r in range(q.matrix.shape[0]) if r not in rows]
    expr_of = {k: e for k, e, _ in resid_rows}
    m.resid = pyo.Var(list(expr_of), doc="residual of a measured query row")
    m.resid_def = pyo.Constraint(list(expr_of), rule=lambda m, *k: m.resid[k] == expr_of[k])
    terms += [w * m.resid[k] ** 2 for k, _, w in resid_rows]
    return pyo.quicksum(terms)


def check_weights(weights: str) -> None:
    """Refuse a weighting other than ``"inverse_variance"`` and ``"paper"``.

    Parameters
    ----------
    weights : str
        The ``weights`` option of a builder.
    """
    if weights not in ("inverse_variance", "paper"):
        raise DataValidationError("weights", f"must be 'inverse_variance' or 'paper' (w = 1), got {weights!r}")
