"""Verification of a TopDown node solve: every constraint checked on the result (spec 4.2).

:func:`verify_children` runs after every L2 solve, rounding and failsafe of
:func:`dpmodels.topdown.solve.solve_node`: a solver's answer is kept only when it holds.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .child_checks import child_checks
from .child_rows import rows_hold
from .node_data import NodeProblem

__all__ = ["Verification", "verify_children"]


@dataclass
class Verification:
    ok: bool
    problems: list[str]


def verify_children(
    problem: NodeProblem,
    values: np.ndarray,
    integral: bool,
    edits: bool = True,
    d_star: float | None = None,
    tol: float = 1e-6,
    assembly: str = "batched",
) -> Verification:
    """Check every constraint of a node solve on ``values`` (children x active cells).

    With ``d_star`` (a failsafe result) the parent sums may be off by at most ``d* + 1`` in
    L1, but the marginal over the unconstrained attributes must still match.

    Parameters
    ----------
    problem : NodeProblem
        The node solve's data (noisy answers and public knowledge only).
    values : numpy.ndarray
        Child histograms (children x active cells).
    integral : bool
        Also require integers.
    edits : bool, default True
        Keep the linear edits.
    d_star : float, optional
        A failsafe result's distance to the parent.
    tol : float, default 1e-6
        Absolute tolerance.
    assembly : {"batched", "previous"}, default "batched"
        The per-child checks for all children at once, or child by child as before issue 25.

    Returns
    -------
    Verification
    """
    issues = []
    v = np.asarray(values, dtype=np.float64)
    if integral and np.abs(v - np.round(v)).max(initial=0) > 0:
        issues.append("not integral")
    if (v < -tol).any():
        issues.append("negative")
    if problem.parent is None:
        if abs(v.sum() - problem.root_total) > tol * max(1, problem.root_total):
            issues.append("root total")
    else:
        gap = np.abs(v.sum(axis=0) - problem.parent)
        if d_star is None and (gap > tol).any():
            issues.append("parent sums")
        if d_star is not None:
            if gap.sum() > d_star + 1 + tol:
                issues.append("failsafe distance above d* + 1")
            marg = problem.free_marginal[:, problem.cells]
            if np.abs(marg @ v.sum(axis=0) - marg @ problem.parent).max(initial=0) > tol:
                issues.append("failsafe marginal")
    issues += [f"rows {name}" for name in rows_hold(problem, v, tol)]
    if assembly == "previous":  # the child-by-child checks of before issue 25 (bench side by side)
        from .previous import previous_child_checks

        issues += previous_child_checks(problem, v, edits, tol)
    else:
        issues += child_checks(problem, v, edits, tol)
    return Verification(not issues, issues)
