"""Pyomo models of the metric-DP perturbation LP and its Benders pieces (spec 2.2, 6.2-6.6).

* :func:`build_full_lp` - the perturbation-matrix optimisation (Eqs. 4-7); solved by any LP
  backend, or by the ``mdp_benders`` plugin, which decomposes this same model.
* :func:`build_master` - the Benders master over the boundary records, with a ``cuts``
  ConstraintList and the Property-3.2 initial rows.
* :func:`build_subproblem` - block l's internal records given the boundary values, which are
  mutable Params: the model is built once and re-solved for every master iterate.
* :func:`build_subproblem_dual` and :func:`build_ray_lp` - the explicit dual (Eq. 18-19) and
  the normalised ray LP for feasibility cuts.

The matrix forms in :mod:`dpmodels.metricdp.lp`, :mod:`dpmodels.metricdp.benders.master` and
:mod:`dpmodels.metricdp.benders.subproblems` build the same rows for scale; tests check both reach
the same optima.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyomo.environ as pyo

from dpmodels.core.errors import DataValidationError
from dpmodels.core.formulations import register_formulation
from dpmodels.core.marker import attach_marker

from .benders.master import master_init_cuts
from .data import MDPInstance, Partition
from .privacy_audit import repair

__all__ = [
    "build_full_lp",
    "build_master",
    "build_subproblem",
    "build_subproblem_dual",
    "build_ray_lp",
    "perturbation_matrix",
    "cut_from_duals",
    "FullLPPayload",
]


@dataclass(frozen=True, eq=False)
class FullLPPayload:
    """Payload of the full perturbation LP: the instance it was built from (records, outputs,
    metric, costs, prior, eps, eta; its mDP graph gives the rows)."""

    instance: MDPInstance


def _pairs(instance: MDPInstance, mask=None):
    g = instance.graph
    keep = np.ones(g.n_pairs, dtype=bool) if mask is None else mask
    return [(int(i), int(j), float(c)) for i, j, c in zip(g.src[keep], g.dst[keep], g.coef[keep], strict=True)]


@register_formulation(
    "mdp.full_lp",
    payload=FullLPPayload,
    integer=False,
    objective="linear",
    doc="the metric-DP perturbation LP (Eqs. 4-7): expected loss, mDP rows, unit row sums",
)
def build_full_lp(
    instance: MDPInstance, *, include_ub: bool = False, mdp_slack: float = 0.0, z_min: float = 0.0
) -> pyo.ConcreteModel:
    """The full perturbation LP: ``min sum p_i c_ik z_ik`` s.t. mDP rows for every neighbouring
    pair and output, unit measure per record, ``z >= z_min`` (and ``z <= 1`` with ``include_ub``).

    Parameters
    ----------
    instance : MDPInstance
        The instance (records, outputs, metric, prior, ``eps`` per km, ``eta``).
    include_ub : bool
        Also bound every ``z <= 1``.
    mdp_slack, z_min : float
        The reference code's relaxations (spec 12); both 0 by default, and ``mdp_benders`` only
        solves the exact model.
    """
    m = pyo.ConcreteModel(name="mDP perturbation LP")
    m.R = pyo.RangeSet(0, instance.N - 1, doc="secret records")
    m.O = pyo.RangeSet(0, instance.K - 1, doc="outputs")
    m.z = pyo.Var(m.R, m.O, bounds=(z_min, 1.0 if include_ub else None), doc="Pr[Q(r_i) = o_k]")
    pairs = _pairs(instance)
    m.E = pyo.Set(initialize=[(i, j) for i, j, _ in pairs], dimen=2, doc="ordered neighbouring pairs")
    coef = {(i, j): c for i, j, c in pairs}
    m.mdp = pyo.Constraint(
        m.E,
        m.O,
        rule=lambda m, i, j, k: m.z[i, k] - coef[i, j] * m.z[j, k] <= mdp_slack,
        doc="z_ik <= exp(eps d_ij) z_jk",
    )
    m.unit = pyo.Constraint(m.R, rule=lambda m, i: pyo.quicksum(m.z[i, k] for k in m.O) == 1, doc="sum_k z_ik = 1")
    w = instance.weighted_cost
    m.objective = pyo.Objective(
        expr=pyo.quicksum(float(w[i, k]) * m.z[i, k] for i in m.R for k in m.O if w[i, k]), sense=pyo.minimize
    )
    attach_marker(
        m,
        "mdp.full_lp",
        FullLPPayload(instance),
        {"include_ub": include_ub, "mdp_slack": mdp_slack, "z_min": z_min, "relax": False},
        {"z": [(i, k) for i in range(instance.N) for k in range(instance.K)]},
    )
    return m


def build_master(
    instance: MDPInstance, part: Partition, *, init_cuts: str = "all", max_coeff: float = 1e12, max_rows: int = 200_000
) -> pyo.ConcreteModel:
    """The Benders master (Eqs. 9-15): boundary vectors, one ``w_l >= 0`` per block with internal
    records, mDP rows among boundary records, unit measure, Property-3.2 rows and a ``cuts`` list.

    Parameters
    ----------
    instance : MDPInstance
        The instance (records, outputs, metric, prior, ``eps`` per km, ``eta``).
    part : Partition
        The records' partition into blocks.
    init_cuts, max_coeff, max_rows
        Which Property-3.2 rows start in the master
        (:func:`~dpmodels.metricdp.benders.master.master_init_cuts`).
    """
    y = part.all_boundary
    m = pyo.ConcreteModel(name="mDP Benders master")
    m.Y = pyo.Set(initialize=[int(i) for i in y], ordered=True)
    m.O = pyo.RangeSet(0, instance.K - 1)
    m.blocks = pyo.Set(initialize=[b for b, x in enumerate(part.internal) if len(x)], ordered=True)
    m.z = pyo.Var(m.Y, m.O, domain=pyo.NonNegativeReals)
    m.w = pyo.Var(m.blocks, domain=pyo.NonNegativeReals, doc="estimated internal cost of block l")
    in_y = np.zeros(instance.N, dtype=bool)
    in_y[y] = True
    g = instance.graph
    pairs = _pairs(instance, in_y[g.src] & in_y[g.dst])
    coef = {(i, j): c for i, j, c in pairs}
    m.EY = pyo.Set(initialize=list(coef), dimen=2)
    m.mdp = pyo.Constraint(m.EY, m.O, rule=lambda m, i, j, k: m.z[i, k] - coef[i, j] * m.z[j, k] <= 0)
    m.unit = pyo.Constraint(m.Y, rule=lambda m, i: pyo.quicksum(m.z[i, k] for k in m.O) == 1)
    ii, jj, cc = master_init_cuts(instance, part, y, init_cuts, max_coeff, max_rows)
    path = {(int(y[a]), int(y[b])): float(c) for a, b, c in zip(ii, jj, cc, strict=True)}
    m.P = pyo.Set(initialize=list(path), dimen=2, doc="non-neighbouring boundary pairs (Property 3.2)")
    m.path = pyo.Constraint(m.P, m.O, rule=lambda m, i, j, k: m.z[i, k] - path[i, j] * m.z[j, k] <= 0)
    m.cuts = pyo.ConstraintList(doc="Benders feasibility and optimality cuts")
    wc = instance.weighted_cost
    m.objective = pyo.Objective(
        expr=pyo.quicksum(float(wc[i, k]) * m.z[i, k] for i in m.Y for k in m.O) + pyo.quicksum(m.w.values()),
        sense=pyo.minimize,
    )
    return m


def _block_pairs(instance: MDPInstance, part: Partition, block: int):
    g = instance.graph
    internal = np.zeros(instance.N, dtype=bool)
    internal[part.internal[block]] = True
    xx = internal[g.src] & internal[g.dst]
    xy = internal[g.src] & ~internal[g.dst]
    return _pairs(instance, xx), _pairs(instance, xy)


def build_subproblem(instance: MDPInstance, part: Partition, block: int) -> pyo.ConcreteModel:
    """Block l's primal (Eq. 17) in ``>=`` form; ``m.ybar[j, k]`` (mutable) are the boundary values.

    Row names follow the dual multipliers: ``alpha`` (internal pairs), ``beta`` (``x_i <=
    exp(eps d) y_j``), ``gamma`` (``y_j <= exp(eps d) x_i``), ``mu`` (unit measure).

    Parameters
    ----------
    instance : MDPInstance
        The instance (records, outputs, metric, prior, ``eps`` per km, ``eta``).
    part : Partition
        The records' partition into blocks.
    block : int
        The block ``l``.
    """
    xx, xy = _block_pairs(instance, part, block)
    m = pyo.ConcreteModel(name=f"mDP Benders subproblem {block}")
    m.X = pyo.Set(initialize=[int(i) for i in part.internal[block]], ordered=True)
    m.O = pyo.RangeSet(0, instance.K - 1)
    links = sorted({j for _, j, _ in xy})
    m.L = pyo.Set(initialize=links, ordered=True, doc="boundary records adjacent to the block's internal ones")
    m.ybar = pyo.Param(m.L, m.O, mutable=True, initialize=0.0, doc="master values z_jk")
    m.x = pyo.Var(m.X, m.O, domain=pyo.NonNegativeReals)
    cxx = {(i, j): c for i, j, c in xx}
    cxy = {(i, j): c for i, j, c in xy}
    m.EXX = pyo.Set(initialize=list(cxx), dimen=2)
    m.EXY = pyo.Set(initialize=list(cxy), dimen=2)
    m.alpha = pyo.Constraint(m.EXX, m.O, rule=lambda m, i, j, k: cxx[i, j] * m.x[j, k] - m.x[i, k] >= 0)
    m.beta = pyo.Constraint(m.EXY, m.O, rule=lambda m, i, j, k: -m.x[i, k] >= -cxy[i, j] * m.ybar[j, k])
    m.gamma = pyo.Constraint(m.EXY, m.O, rule=lambda m, i, j, k: cxy[i, j] * m.x[i, k] >= m.ybar[j, k])
    m.mu = pyo.Constraint(m.X, rule=lambda m, i: pyo.quicksum(m.x[i, k] for k in m.O) == 1)
    wc = instance.weighted_cost
    m.objective = pyo.Objective(
        expr=pyo.quicksum(float(wc[i, k]) * m.x[i, k] for i in m.X for k in m.O), sense=pyo.minimize
    )
    m.coef = cxy
    return m


def build_subproblem_dual(instance: MDPInstance, part: Partition, block: int, ybar: dict) -> pyo.ConcreteModel:
    """The explicit dual (Eqs. 18-19) at boundary values ``ybar[(j, k)]``: ``max (b - B y) a``
    s.t. ``A' a <= c``, ``alpha, beta, gamma >= 0``, ``mu`` free.

    Parameters
    ----------
    instance : MDPInstance
        The instance (records, outputs, metric, prior, ``eps`` per km, ``eta``).
    part : Partition
        The records' partition into blocks.
    block : int
        The block ``l``.
    ybar : dict
        The boundary values, ``(record, output) -> value``.
    """
    xx, xy = _block_pairs(instance, part, block)
    m = pyo.ConcreteModel(name=f"mDP subproblem {block} dual")
    X = [int(i) for i in part.internal[block]]
    m.O = pyo.RangeSet(0, instance.K - 1)
    cxx = {(i, j): c for i, j, c in xx}
    cxy = {(i, j): c for i, j, c in xy}
    m.alpha = pyo.Var(list(cxx), m.O, domain=pyo.NonNegativeReals)
    m.beta = pyo.Var(list(cxy), m.O, domain=pyo.NonNegativeReals)
    m.gamma = pyo.Var(list(cxy), m.O, domain=pyo.NonNegativeReals)
    m.mu = pyo.Var(X)
    wc = instance.weighted_cost

    def column(m, i, k):
        expr = m.mu[i]
        expr -= pyo.quicksum(m.alpha[i, j, k] for (a, j) in cxx if a == i)
        expr += pyo.quicksum(cxx[j, i] * m.alpha[j, i, k] for (j, b) in cxx if b == i)
        expr -= pyo.quicksum(m.beta[i, j, k] for (a, j) in cxy if a == i)
        expr += pyo.quicksum(cxy[i, j] * m.gamma[i, j, k] for (a, j) in cxy if a == i)
        return expr <= float(wc[i, k])

    m.dual_rows = pyo.Constraint(X, m.O, rule=column)
    m.objective = pyo.Objective(
        expr=pyo.quicksum(m.mu.values())
        + pyo.quicksum((m.gamma[i, j, k] - cxy[i, j] * m.beta[i, j, k]) * ybar[j, k] for (i, j) in cxy for k in m.O),
        sense=pyo.maximize,
    )
    return m


def build_ray_lp(instance: MDPInstance, part: Partition, block: int, ybar: dict) -> pyo.ConcreteModel:
    """The normalised ray LP (spec 6.6 C1): the dual's rows with right-hand side 0, inequality
    multipliers summing to at most 1.  A positive optimum certifies infeasibility.

    Parameters
    ----------
    instance : MDPInstance
        The instance (records, outputs, metric, prior, ``eps`` per km, ``eta``).
    part : Partition
        The records' partition into blocks.
    block : int
        The block ``l``.
    ybar : dict
        The boundary values, ``(record, output) -> value``.
    """
    m = build_subproblem_dual(instance, part, block, ybar)
    for con in m.dual_rows.values():
        con.set_value((con.lower, con.body, 0.0))
    m.norm = pyo.Constraint(
        expr=pyo.quicksum(m.alpha.values()) + pyo.quicksum(m.beta.values()) + pyo.quicksum(m.gamma.values()) <= 1
    )
    m.name = f"mDP subproblem {block} ray LP"
    return m


def cut_from_duals(sub_model, duals) -> tuple[float, dict]:
    """``phi(z) = const + sum coeff[(j, k)] z_jk`` from the subproblem's row duals (a ComponentMap)."""
    const = sum(duals[c] for c in sub_model.mu.values())
    coeff: dict = {}
    for (i, j, k), con in sub_model.beta.items():
        coeff[j, k] = coeff.get((j, k), 0.0) - sub_model.coef[i, j] * duals[con]
    for (_i, j, k), con in sub_model.gamma.items():
        coeff[j, k] = coeff.get((j, k), 0.0) + duals[con]
    return float(const), coeff


def perturbation_matrix(model, instance: MDPInstance, *, raw: bool = False) -> np.ndarray:
    """The solved ``z`` of a full-LP model as an N x K array, repaired to an exactly eps-mDP
    mechanism (:func:`~dpmodels.metricdp.privacy_audit.repair`; a no-op for the already repaired
    matrices of ``mdp_benders`` and ``mdp_ipm``).

    ``raw=True`` returns the solver's values as loaded, which are **not private**: LP solvers
    meet the mDP rows only to an additive tolerance, and HiGHS leaves entries ``z_ik ~ 1e-8``
    beside a neighbour's ``z_jk = 0`` (an infinite privacy loss).  Use it only to inspect the
    solver's answer.

    Parameters
    ----------
    model : pyomo.environ.ConcreteModel
        A solved :func:`build_full_lp` model.
    instance : MDPInstance
        The instance (records, outputs, metric, prior, ``eps`` per km, ``eta``).
    raw : bool
        The solver's values as loaded (not private).
    """
    z = np.zeros((instance.N, instance.K))
    if len(model.z) != z.size:
        raise DataValidationError("model", f"z has {len(model.z)} entries, the instance needs N x K = {z.size}")
    for (i, k), v in model.z.items():
        if v.value is None:
            raise DataValidationError("model", f"z[{i}, {k}] has no value: solve the model first")
        z[i, k] = v.value
    return z if raw else repair(instance, z)[0]
