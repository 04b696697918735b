"""The per-child checks of a TopDown solve's result, for all children at once (issue 25).

:func:`~dpmodels.topdown.solve.verify_children` checks every constraint of a solve on its result.
The per-child part (invariant totals, group-quarters flows, edits) ran child by child; here it is a
few matrix products over the children.  The checks and tolerances are those of
:func:`dpmodels.topdown.previous.previous_child_checks` (tests compare the two); a child whose
combination populations are fixed (an invariant level) still goes through the exact routing check
:func:`~dpmodels.topdown.implied.group_quarters.flows_hold`.
"""

from __future__ import annotations

import numpy as np

from .node_data import NodeProblem

__all__ = ["child_checks"]


def _type_totals(problem: NodeProblem, v: np.ndarray) -> np.ndarray:
    """Children x types: the persons of every GQ type."""
    types = problem.types()
    n_types = next(c.flows.n_types for c in problem.children if c.flows is not None)
    onehot = np.zeros((len(types), n_types))
    onehot[np.arange(len(types)), types] = 1.0
    return v @ onehot


def _flows_ok(problem: NodeProblem, v: np.ndarray, tol: float) -> np.ndarray:
    """Per child: whether its type totals route through its combination network (True without one)."""
    from .implied.group_quarters import flows_hold

    ok = np.ones(problem.m, dtype=bool)
    if all(c.flows is None for c in problem.children):
        return ok
    totals = _type_totals(problem, v)
    free = []
    for t, child in enumerate(problem.children):
        if child.flows is not None and child.flows.fixed:  # populations fixed: the exact routing check
            ok[t] = flows_hold(child.flows, problem.types(), v[t], tol)
        elif child.flows is not None:
            free.append(t)
    if free:  # only lower bounds: no persons of an absent type, at least each type's minimum
        present = np.array([problem.children[t].flows.combos.any(axis=0) for t in free])
        minimum = np.array([problem.children[t].flows.type_minimum for t in free])
        ok[free] = ~((totals[free] > tol) & ~present).any(axis=1) & (totals[free] + tol >= minimum).all(axis=1)
    return ok


def child_checks(problem: NodeProblem, v: np.ndarray, edits: bool, tol: float) -> list[str]:
    """The problems of the children's invariant totals, group-quarters flows and edits (empty: all hold).

    Parameters
    ----------
    problem : NodeProblem
        The solve.
    v : numpy.ndarray
        Child histograms (children x active cells), float.
    edits : bool
        Check the edits.
    tol : float
        Absolute tolerance (an edit's is scaled by ``1 + sum |coef * h|``, as before).
    """
    totals = np.array([np.nan if c.total is None else c.total for c in problem.children], dtype=np.float64)
    total_bad = np.abs(v.sum(axis=1) - totals) > tol  # nan (no invariant total) compares False
    flows_ok = _flows_ok(problem, v, tol)
    edit_bad = []
    for e in problem.edits if edits else ():
        coef = e.coef[problem.cells]
        lhs = v @ coef
        scaled = tol * (1 + np.abs(v * coef).sum(axis=1))
        edit_bad.append({"<=": lhs > scaled, ">=": lhs < -scaled, "==": np.abs(lhs) > scaled}[e.op])
    issues = []
    for t in range(problem.m):
        if total_bad[t]:
            issues.append(f"child {t} total")
        if not flows_ok[t]:
            issues.append(f"child {t} group quarters")
        issues += [f"child {t} edit {e.name}" for e, bad in zip(problem.edits, edit_bad, strict=False) if bad[t]]
    return issues


def leaves_breaking_gq(leaf_counts: np.ndarray, knowledge, geography) -> int:
    """How many released leaf histograms break their group-quarters facts (``check_release``).

    A leaf below the invariant level breaks them when it has persons of a type absent from it or fewer
    than the type's lower bound (what :func:`~dpmodels.topdown.implied.group_quarters.flows_hold` checks
    on a single-leaf network), computed for all such leaves at once; a leaf at an invariant level goes
    through ``flows_hold`` with its network.

    Parameters
    ----------
    leaf_counts : numpy.ndarray or scipy.sparse matrix
        Leaves x cells, in the geography's leaf order.
    knowledge : PublicKnowledge
        The public knowledge (with GQ facts).
    geography : Hierarchy
        The geography tree.
    """
    from .implied.group_quarters import flows_hold

    gq = knowledge.gq
    per_type = np.asarray(leaf_counts @ gq.type_matrix().T.toarray(), dtype=np.float64)
    leaves = geography.leaves
    free = geography.level[leaves] > knowledge.total_level
    tol = 1e-6
    bad = ((per_type > tol) & ~gq.present).any(axis=1) | (per_type + tol < gq.lower).any(axis=1)
    count = int(bad[free].sum())
    for k in np.flatnonzero(~free):
        row = leaf_counts[k]
        row = np.asarray(row.todense()).ravel() if hasattr(row, "todense") else np.asarray(row).ravel()
        count += not flows_hold(knowledge.flow_data(geography, int(leaves[k])), gq.cell_type, row)
    return count
