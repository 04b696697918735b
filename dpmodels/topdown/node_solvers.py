"""Sparse-matrix helpers and the solver calls of the matrix-form node solves (:mod:`.compiled`):
Clarabel on the L2 QP, HiGHS on the rounding LP/MIP.  Split from :mod:`.compiled`, which writes the
systems; both are re-exported there."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

__all__ = ["diagonal", "stack_rows", "solve_l2_clarabel", "solve_l1_highs", "LEAN_MIP"]

#: HiGHS's MIP options of the rounding: heuristics that did not pay on these small MIPs turned off
#: (every one of them is solved at the root: presolve, the root LP and its cuts close the gap).  They
#: change the search, never the target: the MIP is still solved to a zero gap.  ``dpmodels bench
#: topdown --solver-settings`` times the rounding MIPs with them and with HiGHS's defaults.
LEAN_MIP = {
    "mip_heuristic_run_feasibility_jump": False,
    "mip_detect_symmetry": False,
    "mip_heuristic_run_rins": False,
    "mip_heuristic_run_rens": False,
}


def diagonal(values: np.ndarray) -> sp.csc_matrix:
    """``sp.diags(values, format="csc")`` (zeros not stored) straight from its arrays: the same matrix
    without scipy's format conversions, which cost more than a small node solve's assembly."""
    values = np.asarray(values, dtype=np.float64)
    stored = values != 0
    indptr = np.concatenate([[0], np.cumsum(stored)])
    return sp.csc_matrix((values[stored], np.flatnonzero(stored), indptr), shape=(len(values), len(values)))


def stack_rows(blocks, n: int) -> sp.csr_matrix:
    """The CSR blocks (each ``n`` columns) one under the other, duplicates summed: ``sp.vstack`` without
    its format conversions (a quarter of its time on the node solves' systems; the same matrix)."""
    blocks = [b.tocsr() for b in blocks]
    nnz = np.cumsum([0] + [b.nnz for b in blocks])
    indptr = np.concatenate([[0]] + [b.indptr[1:] + start for b, start in zip(blocks, nnz[:-1], strict=True)])
    data = np.concatenate([b.data for b in blocks]) if blocks else np.zeros(0)
    indices = np.concatenate([b.indices for b in blocks]) if blocks else np.zeros(0, dtype=np.int32)
    out = sp.csr_matrix((data, indices, indptr), shape=(int(sum(b.shape[0] for b in blocks)), n))
    out.sum_duplicates()
    return out


def solve_l2_clarabel(
    system, tol: float = 1e-8, direct_solve_method: str = "qdldl", refine: bool = True
) -> tuple[np.ndarray | None, str, float | None]:
    """Clarabel on the QP; returns (x, status, objective).

    Parameters
    ----------
    system : LinearSystem
        The QP.
    tol : float
        Clarabel's gap and feasibility tolerances (absolute and relative).
    direct_solve_method : {"qdldl", "faer"}
        Clarabel's KKT factorisation: ``"qdldl"`` (measured faster here), or ``"faer"``, Clarabel
        0.11's default, which the pre-issue-25 code used (``assembly="previous"``).
    refine : bool
        Clarabel's iterative refinement of each KKT solve.  Off, a solve is cheaper and the
        interior-point method still stops only at ``tol``; ``dpmodels bench topdown-solves``
        measures both on captured node solves.
    """
    import clarabel

    finite = np.isfinite(system.lb)
    bound_rows = sp.csr_matrix(
        (-np.ones(finite.sum()), np.flatnonzero(finite), np.arange(finite.sum() + 1)),
        shape=(int(finite.sum()), system.n),
    )
    a = stack_rows([system.a_eq, system.a_ub, bound_rows], system.n).tocsc()
    b = np.concatenate([system.b_eq, system.b_ub, -system.lb[finite]])
    n_eq, n_ineq = system.a_eq.shape[0], system.a_ub.shape[0] + int(finite.sum())
    cones = ([clarabel.ZeroConeT(n_eq)] if n_eq else []) + ([clarabel.NonnegativeConeT(n_ineq)] if n_ineq else [])
    settings = clarabel.DefaultSettings()
    settings.verbose = False
    # QDLDL, not Clarabel 0.11's default faer: faer's threads do not pay on these KKT systems
    # (``dpmodels bench topdown-solves`` measures both)
    settings.direct_solve_method = direct_solve_method
    settings.iterative_refinement_enable = refine
    settings.tol_gap_abs = settings.tol_gap_rel = settings.tol_feas = tol
    sol = clarabel.DefaultSolver(system.P, system.c, a, b, cones, settings).solve()
    status = str(sol.status)
    if status != "Solved":
        return None, status, None
    x = np.asarray(sol.x)
    return x, status, float(sol.obj_val + system.c0)


def solve_l1_highs(
    system,
    integer: bool,
    simplex: bool = True,
    time_limit: float | None = None,
    presolve: bool = False,
    lean: bool = True,
) -> tuple[np.ndarray | None, str, float | None]:
    """HiGHS on the LP (vertex solution by simplex) or the MIP; returns (x, status, objective).

    Parameters
    ----------
    system : LinearSystem
        The rounding (:func:`l1_system`).
    integer : bool
        The MIP (to a zero relative gap) instead of the LP.
    simplex : bool
        The LP by simplex, for a vertex solution (an integral vertex is the MIP's optimum).
    time_limit : float, optional
        HiGHS's time limit in seconds.
    presolve : bool
        HiGHS's presolve on the simplex LP: off by default, faster on these small LPs
        (``dpmodels bench topdown --solver-settings`` times both).
    lean : bool
        The MIP with :data:`LEAN_MIP` (else HiGHS's default heuristics); still solved to a zero gap.
    """
    import highspy

    from dpmodels.core.highs import new_highs

    h = new_highs()  # output off, and HiGHS's banner kept off our stdout
    if simplex and not integer:
        h.setOptionValue("solver", "simplex")
        h.setOptionValue("presolve", "on" if presolve else "off")
    if integer:
        h.setOptionValue("mip_rel_gap", 0.0)  # optimal means optimal, not within HiGHS's default 1e-4
        for name, value in LEAN_MIP.items() if lean else ():
            h.setOptionValue(name, value)
    if time_limit is not None:
        h.setOptionValue("time_limit", float(time_limit))
    lp = highspy.HighsLp()
    n = system.n
    a = stack_rows([system.a_eq, system.a_ub], system.n).tocsc()
    lp.num_col_, lp.num_row_ = n, a.shape[0]
    lp.col_cost_ = system.c
    lp.col_lower_ = system.lb
    lp.col_upper_ = np.where(np.isfinite(system.ub), system.ub, highspy.kHighsInf)
    lp.row_lower_ = np.concatenate([system.b_eq, np.full(system.a_ub.shape[0], -highspy.kHighsInf)])
    lp.row_upper_ = np.concatenate([system.b_eq, system.b_ub])
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = a.indptr
    lp.a_matrix_.index_ = a.indices
    lp.a_matrix_.value_ = a.data
    if integer:
        continuous = system.n_continuous
        kinds = [highspy.HighsVarType.kInteger] * (n - continuous) + [highspy.HighsVarType.kContinuous] * continuous
        lp.integrality_ = kinds
    h.passModel(lp)
    h.run()
    status = h.modelStatusToString(h.getModelStatus())
    if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        return None, status, None
    return np.asarray(h.getSolution().col_value), status, float(h.getInfo().objective_function_value)
