"""Pyomo models of the TopDown solves (spec section 3), with the component names of spec 7.

One :class:`NodeProblem` describes the solve for the children of one node (or the root
solve, which has no parent and a fixed total).  From it:

* :func:`build_l2` - least squares on the noisy measurements (Eqs. 6/9, with flows 20/23);
* :func:`build_l1` - the rounding in its implementable form ``H = floor(H*) + y`` (Eqs.
  7/11, 22/25; spec erratum 1: the box is ``[floor, floor + 1]``, not ``|H - H*| <= 1``);
* :func:`build_failsafe_l2` / :func:`build_failsafe_l1` - phase 1 (distance to
  feasibility) and phase 2 (objective within ``d* + 1``) of spec 3.8.

Formulations (registered with their marker payloads): ``topdown.l2`` (QP, :class:`L2Payload`),
``topdown.l1`` (MILP, or its LP with ``relax=True``; :class:`RoundingPayload`),
``topdown.failsafe_l2.phase1`` (LP) and ``.phase2`` (QP) with :class:`FailsafeL2Payload`,
``topdown.failsafe_l1.phase1`` / ``.phase2`` (MILPs) with :class:`FailsafeL1Payload`.  No model
carries a constraint without variables: a row whose terms are all constants (a cell whose
floors already meet its parent, an edit on inactive cells) is checked and omitted, and a
violated one raises :class:`~dpmodels.core.errors.InfeasibleDomainError` naming it.

Histogram variables exist only for the node's *active* cells: the cells with a positive
parent count that are not structural zeros (spec 3.3 shortcuts); the rest are 0.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyomo.environ as pyo
import scipy.sparse as sp

from dpmodels.core.errors import DataValidationError, InfeasibleDomainError
from dpmodels.core.formulations import register_formulation
from dpmodels.core.marker import attach_marker, get_marker

from .data import Edit, FlowData

__all__ = [
    "WeightedQuery",
    "ChildSpec",
    "NodeProblem",
    "split_floor",
    "build_l2",
    "build_l1",
    "build_failsafe_l2",
    "build_failsafe_l1",
    "build_failsafe_l2_phase1",
    "build_failsafe_l2_phase2",
    "build_failsafe_l1_phase1",
    "build_failsafe_l1_phase2",
    "histogram_values",
    "L2Payload",
    "RoundingPayload",
    "FailsafeL2Payload",
    "FailsafeL1Payload",
]


# ---------------------------------------------------------------------- problem data
@dataclass(eq=False)
class WeightedQuery:
    """Noisy answers ``values`` of ``matrix @ h`` (columns = the node's active cells), weight ``w``."""

    name: str
    matrix: sp.csr_matrix
    values: np.ndarray
    weight: float
    identity: bool = False


@dataclass(eq=False)
class ChildSpec:
    """One child (or the root itself) of a solve: its measurements and public knowledge."""

    node: int
    queries: list[WeightedQuery]
    total: int | None = None
    flows: FlowData | None = None


@dataclass(eq=False)
class NodeProblem:
    """Everything a TopDown solve for one parent sees: no true data, only noisy answers and
    public knowledge.  ``parent`` is ``None`` for the root solve, whose total is ``root_total``."""

    cells: np.ndarray
    children: list[ChildSpec]
    parent: np.ndarray | None = None
    root_total: int | None = None
    cell_type: np.ndarray | None = None
    edits: tuple[Edit, ...] = ()
    free_marginal: sp.csr_matrix | None = None
    info: dict = field(default_factory=dict)

    def __post_init__(self):
        if (self.parent is None) == (self.root_total is None):
            raise DataValidationError("problem", "give a parent histogram (child solve) or a root total, not both")
        if self.parent is not None and len(self.parent) != len(self.cells):
            raise DataValidationError("parent", "needs one value per active cell")
        if self.parent is None and len(self.children) != 1:
            raise DataValidationError("children", "the root solve has exactly one 'child': the root")

    @property
    def m(self) -> int:
        return len(self.children)

    @property
    def n(self) -> int:
        return len(self.cells)

    def types(self) -> np.ndarray:
        """GQ type of every active cell."""
        return self.cell_type[self.cells]


def split_floor(hstar: np.ndarray, tol: float = 1e-8) -> tuple[np.ndarray, np.ndarray]:
    """``(floor, fraction)`` of an L2 solution after snapping near-integers and tiny negatives."""
    h = np.where(np.abs(hstar - np.round(hstar)) <= tol, np.round(hstar), hstar)
    h = np.where((h < 0) & (h > -1e-6), 0.0, h)
    if (h < 0).any():
        raise DataValidationError("hstar", f"L2 solution has negative values down to {h.min()}")
    low = np.floor(h)
    return low.astype(np.int64), h - low


# ---------------------------------------------------------------------- marker payloads
@dataclass(frozen=True, eq=False)
class L2Payload:
    """Payload of ``topdown.l2``: the node problem and the build choices the L2 solve uses."""

    problem: NodeProblem
    weights: str
    edits: bool


@dataclass(frozen=True, eq=False)
class RoundingPayload:
    """Payload of ``topdown.l1``: the node problem, the L2 solution ``hstar`` (children x active
    cells), its ``floor`` and ``fraction``, the rounding objective (``"l1"`` or ``"paper"``),
    whether edits are rows of the model, and ``l1_constant`` (objective + constant =
    ``||H - H*||_1`` for ``objective="l1"``; None for ``"paper"``)."""

    problem: NodeProblem
    hstar: np.ndarray
    floor: np.ndarray
    fraction: np.ndarray
    objective: str
    edits: bool
    l1_constant: float | None


@dataclass(frozen=True, eq=False)
class FailsafeL2Payload:
    """Payload of the L2 failsafe phases: the node problem, and for phase 2 ``d_star`` and the
    weights of the L2 objective (None in phase 1)."""

    problem: NodeProblem
    phase: int
    d_star: float | None
    weights: str | None


@dataclass(frozen=True, eq=False)
class FailsafeL1Payload:
    """Payload of the rounding failsafe phases: the node problem, ``hstar``, its ``floor`` and
    ``fraction``, and ``d_star`` (phase 2)."""

    problem: NodeProblem
    phase: int
    hstar: np.ndarray
    floor: np.ndarray
    fraction: np.ndarray
    d_star: float | None


# ---------------------------------------------------------------------- shared blocks
def _base(problem: NodeProblem, title: str) -> pyo.ConcreteModel:
    m = pyo.ConcreteModel(name=title)
    m.children = pyo.RangeSet(0, problem.m - 1)
    m.cells = pyo.Set(initialize=[int(x) for x in problem.cells], ordered=True)
    return m


def _keys(problem: NodeProblem) -> list[tuple[int, int]]:
    return [(t, int(x)) for t in range(problem.m) for x in problem.cells]


def _type_cells(problem: NodeProblem) -> dict[int, list[int]]:
    types = problem.types()
    return {g: [int(x) for x in problem.cells[types == g]] for g in np.unique(types)}


def _relation(lhs, op: str, rhs, row: str):
    """The constraint ``lhs op rhs``; ``Constraint.Skip`` when no variable is left in ``lhs``
    (rounding fixed every term, or no active cell enters the row) and the constants satisfy it.

    No model carries a row without variables (Pyomo would store ``Constraint.Feasible`` as a
    trivial relation, which some solver interfaces, SCIP's among them, cannot take).  A
    violated constant row means no histogram satisfies the model: ``InfeasibleDomainError``
    names the row (``row``: component name and index).
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


def _add_flows(m, problem: NodeProblem, hist) -> dict[str, list]:
    """``NF(tau, .)`` for every child with flow data: gq_def, flow_out, flow_in, comb_pop
    (flow lower bounds are variable bounds ``flow_lb``).  ``hist(t, x)`` is the histogram
    expression of child t at cell x.  Returns the layout of ``GQ``, ``F`` and ``CB`` (empty
    without flow data)."""
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


def _add_totals(m, problem: NodeProblem, hist) -> None:
    """Root total, or invariant child totals not already implied by fixed flow populations."""
    if problem.parent is None:
        m.total = pyo.Constraint(
            rule=lambda m: _relation(pyo.quicksum(hist(0, x) for x in m.cells), "==", problem.root_total, "total")
        )
        return
    need = [
        t for t, c in enumerate(problem.children) if c.total is not None and not (c.flows is not None and c.flows.fixed)
    ]
    m.child_total = pyo.Constraint(
        need,
        rule=lambda m, t: _relation(
            pyo.quicksum(hist(t, x) for x in m.cells), "==", problem.children[t].total, f"child_total[{t}]"
        ),
    )


def _add_edits(m, problem: NodeProblem, hist, use: bool) -> None:
    edits = list(problem.edits) if use else []
    idx = [(t, j) for t in range(problem.m) for j in range(len(edits))]

    def rule(m, t, j):
        e = edits[j]
        lhs = pyo.quicksum(float(e.coef[x]) * hist(t, x) for x in m.cells if e.coef[x] != 0)
        return _relation(lhs, e.op, 0, f"edit[{t},{j}] ({e.name!r} on child {t})")

    m.edit = pyo.Constraint(idx, rule=rule, doc="linear edits on each child histogram")


def _add_parent_sum(m, problem: NodeProblem, hist) -> None:
    if problem.parent is None:
        return
    parent = dict(zip((int(x) for x in problem.cells), problem.parent.tolist(), strict=True))
    m.parent_sum = pyo.Constraint(
        m.cells,
        rule=lambda m, x: _relation(pyo.quicksum(hist(t, x) for t in m.children), "==", parent[x], f"parent_sum[{x}]"),
    )


def _l2_objective_terms(m, problem: NodeProblem, hist, weights: str):
    """Weighted squared residuals; identity queries directly, others through ``resid`` rows."""
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
    expr_of = {k: e for k, e, _ in resid_rows}
    m.resid = pyo.Var(list(expr_of), doc="residual of a measured query row")
    m.resid_def = pyo.Constraint(list(expr_of), rule=lambda m, *k: m.resid[k] == expr_of[k])
    terms += [w * m.resid[k] ** 2 for k, _, w in resid_rows]
    return pyo.quicksum(terms)


def _check_weights(weights: str) -> None:
    if weights not in ("inverse_variance", "paper"):
        raise DataValidationError("weights", f"must be 'inverse_variance' or 'paper' (w = 1), got {weights!r}")


# ---------------------------------------------------------------------- L2
@register_formulation(
    "topdown.l2",
    payload=L2Payload,
    integer=False,
    objective="quadratic",
    doc="TopDown L2 solve: weighted least squares under parent sums, totals, flows and edits (QP)",
)
def build_l2(
    problem: NodeProblem, *, weights: str = "inverse_variance", edits: bool = True, fingerprint: bool = True
) -> pyo.ConcreteModel:
    """The L2 solve: the closest non-negative histograms to the measurements that satisfy the
    parent sums (or the root total), the flow constraints, invariant totals and edits."""
    _check_weights(weights)
    m = _base(problem, "TopDown L2" + (" (root)" if problem.parent is None else ""))
    m.H = pyo.Var(m.children, m.cells, domain=pyo.NonNegativeReals, doc="child histograms H*_t[x]")

    def hist(t, x):
        return m.H[t, x]

    _add_parent_sum(m, problem, hist)
    _add_totals(m, problem, hist)
    flow_layout = _add_flows(m, problem, hist)
    _add_edits(m, problem, hist, edits)
    m.objective = pyo.Objective(expr=_l2_objective_terms(m, problem, hist, weights), sense=pyo.minimize)
    attach_marker(
        m,
        "topdown.l2",
        L2Payload(problem, weights, edits),
        {"relax": True, "weights": weights, "edits": edits},
        {"H": _keys(problem), **flow_layout},
        fingerprint,
    )
    return m


# ---------------------------------------------------------------------- L1
def _rounding_rhs(problem: NodeProblem, low: np.ndarray) -> np.ndarray | None:
    if problem.parent is None:
        return None
    rhs = problem.parent - low.sum(axis=0)
    if (rhs < 0).any() or (rhs > problem.m).any():
        raise DataValidationError("hstar", "floors do not fit the parent: the L2 solution does not sum to the parent")
    return rhs


@register_formulation(
    "topdown.l1",
    payload=RoundingPayload,
    integer=True,
    objective="linear",
    doc="TopDown L1 rounding H = floor(H*) + y, y binary (MILP; relax=True: its LP)",
)
def build_l1(
    problem: NodeProblem,
    hstar: np.ndarray,
    *,
    relax: bool = False,
    objective: str = "l1",
    edits: bool = True,
    fingerprint: bool = True,
) -> pyo.ConcreteModel:
    """The rounding solve: ``H = floor(H*) + y`` with ``y`` binary, minimising
    ``sum (1 - 2 phi) y`` (exactly ``||H - H*||_1`` up to a constant; ``objective="paper"``
    uses ``-phi``), subject to the same constraints as L2 on ``H``.

    Only cells whose parent is not already met by the floors get a ``y``; a row left with no
    ``y`` is checked on the floors and omitted (``InfeasibleDomainError`` if they violate it)."""
    if objective not in ("l1", "paper"):
        raise DataValidationError("objective", f"must be 'l1' or 'paper', got {objective!r}")
    hstar = np.asarray(hstar, dtype=np.float64).reshape(problem.m, problem.n)
    low, phi = split_floor(hstar)
    rhs = _rounding_rhs(problem, low)
    m = _base(problem, "TopDown L1 rounding" + (" (root)" if problem.parent is None else "") + (" LP" if relax else ""))
    col = {int(x): j for j, x in enumerate(problem.cells)}
    movable = [(t, x) for t in range(problem.m) for x in m.cells if rhs is None or rhs[col[x]] > 0]
    m.y = pyo.Var(movable, domain=pyo.UnitInterval if relax else pyo.Binary, doc="round up: H = floor(H*) + y")
    ymove = set(movable)

    def hist(t, x):
        base = int(low[t, col[x]])
        return base + m.y[t, x] if (t, x) in ymove else base

    _add_parent_sum(m, problem, hist)
    _add_totals(m, problem, hist)
    flow_layout = _add_flows(m, problem, hist)
    _add_edits(m, problem, hist, edits)
    if not relax and hasattr(m, "GQ"):
        for v in (m.GQ, m.F, m.CB):
            v.domain = pyo.NonNegativeIntegers if v is not m.F else pyo.Integers
    cost = (1 - 2 * phi) if objective == "l1" else -phi
    m.objective = pyo.Objective(
        expr=pyo.quicksum(float(cost[t, col[x]]) * m.y[t, x] for t, x in movable), sense=pyo.minimize
    )
    constant = float(phi.sum()) if objective == "l1" else None  # objective + constant = ||H - H*||_1
    attach_marker(
        m,
        "topdown.l1",
        RoundingPayload(problem, hstar, low, phi, objective, edits, constant),
        {"relax": relax, "objective": objective, "edits": edits},
        {"y": movable, **flow_layout},
        fingerprint,
    )
    return m


# ---------------------------------------------------------------------- failsafe
def _failsafe_common(m, problem: NodeProblem, hist, integer: bool) -> dict[str, list]:
    parent = dict(zip((int(x) for x in problem.cells), problem.parent.tolist(), strict=True))
    m.s = pyo.Var(
        m.cells,
        domain=pyo.NonNegativeIntegers if integer else pyo.NonNegativeReals,
        doc="|sum of children - parent| per cell",
    )
    m.fs_slack_pos = pyo.Constraint(
        m.cells, rule=lambda m, x: m.s[x] >= pyo.quicksum(hist(t, x) for t in m.children) - parent[x]
    )
    m.fs_slack_neg = pyo.Constraint(
        m.cells, rule=lambda m, x: m.s[x] >= parent[x] - pyo.quicksum(hist(t, x) for t in m.children)
    )
    marg = problem.free_marginal
    if marg is None:
        raise DataValidationError("free_marginal", "the failsafe needs the marginal over the unconstrained attributes")
    sub = sp.csr_matrix(marg[:, problem.cells])
    sub.eliminate_zeros()
    target = sub @ problem.parent
    cells = list(m.cells)
    rows = [z for z in range(sub.shape[0]) if sub.indptr[z + 1] > sub.indptr[z]]

    def marginal_row(m, z):
        lo, hi = sub.indptr[z], sub.indptr[z + 1]
        lhs = pyo.quicksum(
            float(v) * hist(t, cells[c])
            for t in m.children
            for c, v in zip(sub.indices[lo:hi], sub.data[lo:hi], strict=True)
        )
        return _relation(lhs, "==", float(target[z]), f"fs_marg[{z}]")

    m.fs_marg = pyo.Constraint(rows, rule=marginal_row)
    _add_totals(m, problem, hist)
    return {"s": list(m.cells), **_add_flows(m, problem, hist)}


def _failsafe_budget(m, d_star: float) -> None:
    m.fs_budget = pyo.Constraint(
        rule=lambda m: _relation(pyo.quicksum(m.s.values()), "<=", d_star + 1, "fs_budget"),
        doc="phase 2: distance to the parent at most d* + 1",
    )


def _failsafe_child(problem: NodeProblem) -> None:
    if problem.parent is None:
        raise DataValidationError("problem", "the failsafe applies to child solves")


def _l2_failsafe_model(problem: NodeProblem, phase: int):
    _failsafe_child(problem)
    m = _base(problem, f"TopDown L2 failsafe phase {phase}")
    m.H = pyo.Var(m.children, m.cells, domain=pyo.NonNegativeReals)

    def hist(t, x):
        return m.H[t, x]

    layout = {"H": _keys(problem), **_failsafe_common(m, problem, hist, integer=False)}
    return m, hist, layout


@register_formulation(
    "topdown.failsafe_l2.phase1",
    payload=FailsafeL2Payload,
    integer=False,
    objective="linear",
    doc="TopDown L2 failsafe phase 1: least L1 distance to the parent, free marginal exact (LP)",
)
def build_failsafe_l2_phase1(problem: NodeProblem, *, fingerprint: bool = True) -> pyo.ConcreteModel:
    """Phase 1 of the L2 failsafe (spec 3.8): minimise the distance ``sum s`` of the children's
    sums to the parent, with the marginal over the unconstrained attributes kept exact."""
    m, _, layout = _l2_failsafe_model(problem, 1)
    m.objective = pyo.Objective(expr=pyo.quicksum(m.s.values()), sense=pyo.minimize)
    payload = FailsafeL2Payload(problem, 1, None, None)
    attach_marker(m, "topdown.failsafe_l2.phase1", payload, {"relax": True}, layout, fingerprint)
    return m


@register_formulation(
    "topdown.failsafe_l2.phase2",
    payload=FailsafeL2Payload,
    integer=False,
    objective="quadratic",
    doc="TopDown L2 failsafe phase 2: the L2 objective within distance d* + 1 of the parent (QP)",
)
def build_failsafe_l2_phase2(
    problem: NodeProblem, d_star: float, *, weights: str = "inverse_variance", fingerprint: bool = True
) -> pyo.ConcreteModel:
    """Phase 2 of the L2 failsafe (spec 3.8): minimise the L2 objective with ``sum s <= d* + 1``."""
    _check_weights(weights)
    m, hist, layout = _l2_failsafe_model(problem, 2)
    _failsafe_budget(m, d_star)
    m.objective = pyo.Objective(expr=_l2_objective_terms(m, problem, hist, weights), sense=pyo.minimize)
    payload = FailsafeL2Payload(problem, 2, float(d_star), weights)
    attach_marker(m, "topdown.failsafe_l2.phase2", payload, {"relax": True}, layout, fingerprint)
    return m


def build_failsafe_l2(
    problem: NodeProblem,
    phase: int,
    d_star: float | None = None,
    *,
    weights: str = "inverse_variance",
    fingerprint: bool = True,
) -> pyo.ConcreteModel:
    """Failsafe for the L2 solve of a child problem: phase 1 minimises the distance to the
    parent (``sum s``) with the marginal over unconstrained attributes kept exact; phase 2
    minimises the L2 objective with ``sum s <= d* + 1`` (spec 3.8).  Builds
    ``topdown.failsafe_l2.phase1`` or ``.phase2``."""
    _check_weights(weights)
    if phase == 1:
        return build_failsafe_l2_phase1(problem, fingerprint=fingerprint)
    if phase == 2 and d_star is not None:
        return build_failsafe_l2_phase2(problem, d_star, weights=weights, fingerprint=fingerprint)
    raise DataValidationError("phase", f"must be 1, or 2 with d_star; got {phase}, {d_star}")


def _l1_failsafe_model(problem: NodeProblem, hstar: np.ndarray, phase: int):
    _failsafe_child(problem)
    hstar = np.asarray(hstar, dtype=np.float64).reshape(problem.m, problem.n)
    low, phi = split_floor(hstar)
    m = _base(problem, f"TopDown L1 failsafe phase {phase}")
    m.y = pyo.Var(m.children, m.cells, domain=pyo.Binary)
    col = {int(x): j for j, x in enumerate(problem.cells)}

    def hist(t, x):
        return int(low[t, col[x]]) + m.y[t, x]

    layout = {"y": _keys(problem), **_failsafe_common(m, problem, hist, integer=True)}
    if hasattr(m, "GQ"):
        for v in (m.GQ, m.F, m.CB):
            v.domain = pyo.NonNegativeIntegers if v is not m.F else pyo.Integers
    return m, hstar, low, phi, col, layout


@register_formulation(
    "topdown.failsafe_l1.phase1",
    payload=FailsafeL1Payload,
    integer=True,
    objective="linear",
    doc="TopDown rounding failsafe phase 1: least L1 distance to the parent, y binary (MILP)",
)
def build_failsafe_l1_phase1(problem: NodeProblem, hstar: np.ndarray, *, fingerprint: bool = True) -> pyo.ConcreteModel:
    """Phase 1 of the rounding failsafe: ``H = floor(H*) + y`` with binary ``y`` and integer
    slacks, minimising the distance ``sum s`` to the parent."""
    m, hstar, low, phi, _, layout = _l1_failsafe_model(problem, hstar, 1)
    m.objective = pyo.Objective(expr=pyo.quicksum(m.s.values()), sense=pyo.minimize)
    payload = FailsafeL1Payload(problem, 1, hstar, low, phi, None)
    attach_marker(m, "topdown.failsafe_l1.phase1", payload, {"relax": False}, layout, fingerprint)
    return m


@register_formulation(
    "topdown.failsafe_l1.phase2",
    payload=FailsafeL1Payload,
    integer=True,
    objective="linear",
    doc="TopDown rounding failsafe phase 2: the rounding objective within distance d* + 1 (MILP)",
)
def build_failsafe_l1_phase2(
    problem: NodeProblem, hstar: np.ndarray, d_star: float, *, fingerprint: bool = True
) -> pyo.ConcreteModel:
    """Phase 2 of the rounding failsafe: minimise ``sum (1 - 2 phi) y`` with ``sum s <= d* + 1``."""
    m, hstar, low, phi, col, layout = _l1_failsafe_model(problem, hstar, 2)
    _failsafe_budget(m, d_star)
    m.objective = pyo.Objective(
        expr=pyo.quicksum(float(1 - 2 * phi[t, col[x]]) * m.y[t, x] for t in m.children for x in m.cells),
        sense=pyo.minimize,
    )
    payload = FailsafeL1Payload(problem, 2, hstar, low, phi, float(d_star))
    attach_marker(m, "topdown.failsafe_l1.phase2", payload, {"relax": False}, layout, fingerprint)
    return m


def build_failsafe_l1(
    problem: NodeProblem, hstar: np.ndarray, phase: int, d_star: float | None = None, *, fingerprint: bool = True
) -> pyo.ConcreteModel:
    """Failsafe for the rounding: ``H = floor(H*) + y`` with binary ``y`` and integer slacks
    (phase 1: distance to the parent; phase 2: the rounding objective within ``d* + 1``).
    Builds ``topdown.failsafe_l1.phase1`` or ``.phase2``."""
    if phase == 1:
        return build_failsafe_l1_phase1(problem, hstar, fingerprint=fingerprint)
    if phase == 2 and d_star is not None:
        return build_failsafe_l1_phase2(problem, hstar, d_star, fingerprint=fingerprint)
    raise DataValidationError("phase", f"must be 1, or 2 with d_star; got {phase}, {d_star}")


# ---------------------------------------------------------------------- solutions
def histogram_values(model) -> np.ndarray:
    """The solved child histograms as a (children x active cells) array."""
    marker = get_marker(model)
    payload = marker.data
    problem: NodeProblem = payload.problem
    col = {int(x): j for j, x in enumerate(problem.cells)}
    if "H" in marker.layout:
        out = np.zeros((problem.m, problem.n))
        for t, x in marker.layout["H"]:
            out[t, col[x]] = pyo.value(model.H[t, x])
        return out
    out = payload.floor.astype(np.float64).copy()
    for t, x in marker.layout["y"]:
        out[t, col[x]] += pyo.value(model.y[t, x])
    return out
