"""The matrix-form L2 of a node solve: the exact active-set method first, Clarabel where it does not
apply or does not finish (split from :mod:`.solve`).

On the state preset's block-level solves the active set (:mod:`.active_set`) is faster than
Clarabel and returns the KKT point itself (``dpmodels bench topdown --solver-settings`` times both);
on the county and tract levels its dense systems grow to thousands of rows, where Clarabel's sparse
factorisation wins, so those stay with Clarabel (:data:`ACTIVE_SET_MAX_SIZE`).
"""

from __future__ import annotations

from .active_set import applies, solve_l2_active_set
from .compiled import solve_l2_clarabel
from .forced_zeros import expanded, without_forced_zeros

__all__ = ["CLARABEL_ATTEMPTS", "ACTIVE_SET_MAX_SIZE", "matrix_l2_backend", "l2_matrix"]

#: The matrix path's Clarabel attempts, in order: (tolerance, iterative refinement).
CLARABEL_ATTEMPTS = ((1e-10, False), (1e-10, True), (1e-8, True))
#: The largest dense system (rows + zero-curvature columns) the active-set L2 factorises; larger
#: systems (the county and tract levels) go to Clarabel, whose sparse factorisation wins there.
ACTIVE_SET_MAX_SIZE = 600


def matrix_l2_backend(opts) -> str:
    """The L2 backend of ``l2="auto"`` where the closed form does not apply: on the matrix path the
    exact active-set method (falling back to Clarabel), except in the pre-issue-25 assembly, which
    kept Clarabel; through Pyomo (the reference path) Clarabel."""
    return "topdown_active_set_l2" if opts.path == "compiled" and opts.assembly != "previous" else "clarabel"


def l2_matrix(system, opts, backend: str):
    """The matrix-form L2 by ``backend``; returns ``(x, status, objective, method)``, ``method`` saying
    what solved it.  ``"topdown_active_set_l2"`` (:mod:`.active_set`) is tried on systems of at most
    :data:`ACTIVE_SET_MAX_SIZE` rows and zero-curvature columns, and Clarabel solves the rest and
    every system the active set leaves unsolved (a cycle, or residuals above its tolerance)."""
    if opts.assembly == "previous":
        x, status, objective = solve_l2_clarabel(system, tol=1e-8, direct_solve_method="faer")
        return x, status, objective, "clarabel"
    reduced, keep = without_forced_zeros(system)  # exact: the columns every feasible point holds at 0
    if backend == "topdown_active_set_l2" and applies(reduced) and _dense_size(reduced) <= ACTIVE_SET_MAX_SIZE:
        result = solve_l2_active_set(reduced)
        if result.status == "optimal":
            return expanded(result.x, keep, system.n), "Solved", result.objective, "active_set"
        backend = f"clarabel (active set: {result.status})"
    else:
        backend = "clarabel"
    x, status, objective = _clarabel(reduced)
    return expanded(x, keep, system.n), status, objective, backend


def _dense_size(system) -> int:
    """The largest dense system the active set would factorise: every row and zero-curvature column."""
    return system.a_eq.shape[0] + system.a_ub.shape[0] + int((system.P.diagonal() == 0).sum())


def _clarabel(reduced):
    """Clarabel on the matrix form, trying :data:`CLARABEL_ATTEMPTS` in order until one solves.

    The pre-issue-25 code (``assembly="previous"``) ran faer at tolerance 1e-8.  Now QDLDL at 1e-10,
    which brings the histogram within about 1e-5 of the optimum (median; 1e-3 at 1e-8), so that
    equivalent formulations round alike; first without iterative refinement (cheaper, and the
    interior-point method still stops only at 1e-10), then with it, then at 1e-8."""
    for tol, refine in CLARABEL_ATTEMPTS:
        x, status, objective = solve_l2_clarabel(reduced, tol=tol, refine=refine)
        if x is not None:
            break
    return x, status, objective
