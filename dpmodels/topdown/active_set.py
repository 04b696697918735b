"""An exact active-set solver for the node L2 QP: the KKT point itself, not an interior-point approximation.

Every L2 node solve (:func:`dpmodels.topdown.compiled.l2_system`) is ``min 1/2 x'Dx + c'x`` with a
*diagonal* ``D >= 0`` (the identity queries and the sum variables carry the curvature; the flow arcs
have none), equality rows, ``<=`` rows (edits, production caps) and lower bounds.  Given which bounds
and ``<=`` rows hold with equality (the active set), the optimum solves a linear system; with ``D``
diagonal, the columns with curvature are eliminated in closed form, and what is left is a dense
system over the multipliers of the rows on and the free columns without curvature: the size of the
rows, where Clarabel's KKT system also carries every variable and a cone row per bound.

The primal-dual active-set method (Hintermüller, Ito and Kunisch, SIAM J. Optim. 13, 2003) guesses
the active set, solves, and moves every index whose multiplier or slack has the wrong sign; on the
block-level solves of the state preset it stops after a handful of iterations.  At its fixed point the
KKT conditions hold by construction; :func:`solve_l2_active_set` then measures them (primal and dual
residuals, multiplier signs) and calls the result optimal only when they are within ``tol``, which
makes it a certified optimum of the convex QP.  The method may cycle; a repeated active set, a
singular system or ``max_iter`` iterations end it without a solution, and the caller
(:func:`dpmodels.topdown.l2_matrix.l2_matrix`) then runs Clarabel.

The systems are regularised (``delta``) and refined against the exact matrix, so that rows left
without a free column (dependent but consistent) do not stop the factorisation.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
from scipy.linalg.lapack import dgetrf as getrf
from scipy.linalg.lapack import dgetrs as getrs

from dpmodels.core.blas import single_threaded_blas

from .active_set_kernels import assemble, read_off
from .node_solvers import stack_rows

__all__ = ["ActiveSetResult", "solve_l2_active_set", "applies", "warm_up"]

#: Relative regularisation of the iteration's system (removed again by iterative refinement).
DELTA = 1e-10
#: Refinement steps against the unregularised system.
REFINE = 2
#: The dead band of the active-set rule, as a fraction of the certificate's tolerances.
BAND = 0.1
#: The largest absolute primal residual (row, bound) of a certified optimum: a tenth of the driver's
#: verification tolerance (:func:`dpmodels.topdown.verify.verify_children`, absolute 1e-6), so that a
#: certified L2 passes it at any scale.  A relative tolerance let a whole state's root solve (rows of
#: 40 million persons) through with cells at -4e-3, which the verification refused.
PRIMAL_TOL = 1e-7


@dataclass(frozen=True)
class ActiveSetResult:
    """The outcome of :func:`solve_l2_active_set`.

    Parameters
    ----------
    x : numpy.ndarray or None
        The optimum (None unless ``status == "optimal"``).
    status : str
        ``"optimal"`` (the KKT conditions measured within ``tol``), ``"cycle"`` (an active set came
        back), ``"max_iter"``, ``"time_limit"``, ``"singular"`` or ``"kkt residual"`` (a fixed point
        whose residuals exceed ``tol``).
    iterations : int
        Active sets tried.
    objective : float or None
        ``1/2 x'Px + c'x + c0`` at ``x``.
    residual : float
        The largest KKT residual measured, as a fraction of its bound (at most 1 when optimal;
        ``inf`` when no fixed point was reached).
    """

    x: np.ndarray | None
    status: str
    iterations: int
    objective: float | None
    residual: float


def applies(system) -> bool:
    """Whether ``system`` has the shape this solver handles: a diagonal ``P`` and no finite upper
    bounds (every L2 node solve does).

    Parameters
    ----------
    system : LinearSystem
        A matrix-form node solve (:mod:`dpmodels.topdown.compiled`).
    """
    p = system.P
    if p is None or np.isfinite(system.ub).any():
        return False
    p = p.tocsc()  # a no-op for the builders' diagonal (node_solvers.diagonal)
    diagonal_only = np.array_equal(p.indices, np.repeat(np.arange(p.shape[1]), np.diff(p.indptr)))
    return diagonal_only and bool(np.all(p.data >= 0))


def solve_l2_active_set(
    system, max_iter: int = 30, tol: float = 1e-9, time_limit: float | None = None
) -> ActiveSetResult:
    """The L2 QP ``system`` by the primal-dual active-set method, certified by its KKT residuals.

    Parameters
    ----------
    system : LinearSystem
        The QP; :func:`applies` must hold.
    max_iter : int, default 30
        Active sets tried before giving up (status ``"max_iter"``).
    tol : float, default 1e-9
        Bound on the dual KKT residuals, relative to ``1 + max|c|``; the primal ones are held to
        :data:`PRIMAL_TOL` absolute.
    time_limit : float, optional
        Seconds; checked before each iteration (status ``"time_limit"`` when exceeded).

    Raises
    ------
    ValueError
        ``system`` is not of the handled shape (:func:`applies`).
    """
    if not applies(system):
        raise ValueError("the active-set L2 needs a diagonal P >= 0 and no finite upper bounds")
    deadline = None if time_limit is None else time.perf_counter() + time_limit
    with single_threaded_blas():  # thousands of small LUs: BLAS threads only compete (core/blas.py)
        return _iterate(system, _Arrays.of(system, tol), max_iter, deadline)


@dataclass(frozen=True)
class _Arrays:
    """The QP as the kernels read it: ``A`` (equality rows, then ``<=`` rows) in CSC, ``b``, the
    diagonal ``d``, ``c``, the lower bounds (0 where there is none), the dual scale and ``tol``."""

    a: object
    b: np.ndarray
    d: np.ndarray
    c: np.ndarray
    bounded: np.ndarray
    lbz: np.ndarray
    n_eq: int
    dual_scale: float  # 1 + max|c|: the dual residuals' scale
    tol: float

    @property
    def eps_dual(self) -> float:
        """The active-set rule's dead band on multipliers."""
        return BAND * self.tol * self.dual_scale

    @property
    def eps_primal(self) -> float:
        """The active-set rule's dead band on bounds and rows (absolute, as :data:`PRIMAL_TOL`)."""
        return BAND * PRIMAL_TOL

    @classmethod
    def of(cls, system, tol: float) -> _Arrays:
        a = stack_rows([system.a_eq, system.a_ub], system.n).tocsc()
        a.sort_indices()
        b = np.concatenate([system.b_eq, system.b_ub])
        c = np.asarray(system.c, dtype=np.float64)
        bounded = np.isfinite(system.lb)
        return cls(
            a, b, system.P.diagonal().astype(np.float64), c, bounded, np.where(bounded, system.lb, 0.0),
            system.a_eq.shape[0], 1.0 + float(np.abs(c).max(initial=0.0)), tol,
        )  # fmt: skip

    def kernel_args(self) -> tuple:
        return self.a.indptr, self.a.indices, self.a.data, self.d, self.c, self.lbz


def _iterate(system, q: _Arrays, max_iter: int, deadline: float | None) -> ActiveSetResult:
    """The primal-dual active-set iterations from the unconstrained minimiser's active bounds."""
    d, b, n_eq = q.d, q.b, q.n_eq
    active = q.bounded & ((d == 0) | (-q.c < q.lbz * np.where(d > 0, d, 1.0)))  # minimiser below its bound
    on = np.arange(len(b)) < n_eq  # the <= rows start off
    seen: set[bytes] = set()
    arrays = q.kernel_args()
    for it in range(1, max_iter + 1):
        if deadline is not None and time.perf_counter() > deadline:
            return ActiveSetResult(None, "time_limit", it - 1, None, np.inf)
        n_on = int(on.sum())
        row_pos = np.where(on, np.cumsum(on) - 1, -1)
        zero_free = ~active & (d == 0)
        col_pos = np.where(zero_free, n_on + np.cumsum(zero_free) - 1, -1)
        size = n_on + int(zero_free.sum())
        k, r, shift = assemble(*arrays, active, row_pos, col_pos, b, size, n_on, DELTA)
        sol = _solve(k, r, shift * np.where(np.arange(size) < n_on, -1.0, 1.0))
        if sol is None:
            return ActiveSetResult(None, "singular", it, None, np.inf)
        z, lam, nu, new_active, new_on, az = read_off(
            *arrays, q.bounded, active, row_pos, col_pos, sol, b, n_eq, q.eps_dual, q.eps_primal
        )
        if np.array_equal(new_active, active) and np.array_equal(new_on, on):
            return _certified(system, q, z, lam, nu, active, az, it)
        key = new_active.tobytes() + new_on.tobytes()
        if key in seen:
            return ActiveSetResult(None, "cycle", it, None, np.inf)
        seen.add(key)
        active, on = new_active, new_on
    return ActiveSetResult(None, "max_iter", max_iter, None, np.inf)


def _solve(k: np.ndarray, r: np.ndarray, shifts: np.ndarray) -> np.ndarray | None:
    """``K0 u = r`` from the regularised ``k = K0 + diag(shifts)`` (LAPACK's LU) and :data:`REFINE`
    steps of iterative refinement against ``K0``; None when the factorisation fails or the result is
    not finite.  (A Cholesky of the rows' block with the zero-curvature columns eliminated after it
    was measured no faster on the state preset's block-level solves.)"""
    if not len(r):
        return r
    lu, piv, info = getrf(k.T)  # k is symmetric: its transpose is the Fortran-order view, not copied
    if info != 0:
        return None
    sol, _ = getrs(lu, piv, r)
    for _ in range(REFINE):
        step, _ = getrs(lu, piv, r - (k @ sol - shifts * sol))
        sol += step
    return sol if np.all(np.isfinite(sol)) else None


def _certified(system, q: _Arrays, z, lam, nu, active, az, iterations) -> ActiveSetResult:
    """The fixed point ``z``, called optimal when its KKT residuals are within their bounds: primal
    (equality rows, ``<=`` rows, bounds) within :data:`PRIMAL_TOL` absolute, stationarity on the free
    columns and the signs of the active bounds' and ``<=`` rows' multipliers within ``tol`` relative to
    ``1 + max|c|``, complementarity within their product."""
    b, n_eq, bounded = q.b, q.n_eq, q.bounded
    primal = max(
        float(np.abs(az[:n_eq] - b[:n_eq]).max(initial=0.0)),
        float((az[n_eq:] - b[n_eq:]).max(initial=0.0)),
        float((system.lb[bounded] - z[bounded]).max(initial=0.0)),
    )
    dual = max(
        float(np.abs(nu[~active]).max(initial=0.0)),
        float((-nu[active]).max(initial=0.0)),
        float((-lam[n_eq:]).max(initial=0.0)),
    )
    complementarity = float(np.abs(lam[n_eq:] * (b[n_eq:] - az[n_eq:])).max(initial=0.0))
    residual = max(primal / PRIMAL_TOL, dual / (q.tol * q.dual_scale), complementarity / (PRIMAL_TOL * q.dual_scale))
    if residual > 1.0:
        return ActiveSetResult(None, "kkt residual", iterations, None, residual)
    objective = float(0.5 * z @ (system.P @ z) + system.c @ z + system.c0)
    return ActiveSetResult(z, "optimal", iterations, objective, residual)


def warm_up() -> None:
    """Compile (or load from numba's cache) the kernels, so that a timed run does not time the compiler:
    one tiny QP, ``min x0^2 + x1^2 - 2 x0`` with ``x0 + x1 = 1``, ``x >= 0``."""
    import scipy.sparse as sp

    from .compiled import LinearSystem

    system = LinearSystem(
        sp.diags([2.0, 2.0], format="csc"), np.array([-2.0, 0.0]), 0.0, sp.csr_matrix(np.ones((1, 2))), np.ones(1),
        sp.csr_matrix((0, 2)), np.zeros(0), np.zeros(2), np.full(2, np.inf), 2,
    )  # fmt: skip
    solve_l2_active_set(system)
