"""One tiny model per TopDown formulation, registered for the contract tests and ``instances.example``.

Imported by :mod:`dpmodels.instances.topdown`, which registers them when it loads.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from dpmodels.core.formulations import register_example

#: The rounding example: children x cells (types A, A, B, B).  The floors of cell 2 already meet
#: its parent, so its parent-sum row has no variable (the builder checks and omits it); child 0
#: has a fixed group-quarters network (population 3), child 1 an invariant total (5), and both
#: bind: the optimum rounds up (child 0, cell 3), (child 1, cells 0 and 1), objective -0.6.
_ROUNDING_HSTAR = np.array([[1.6, 0.3, 1.0, 0.7], [1.4, 1.7, 1.0, 0.3]])
#: The failsafe example: the floors of cell 2 (3) exceed its parent (2) and the free marginal of
#: cells 2-3 (3) leaves nothing for cell 3, so no rounding meets the parent: d* = 2.
_FAILSAFE_HSTAR = np.array([[1.6, 0.3, 2.0, 0.0], [1.4, 1.7, 1.0, 0.0]])


def _example_problem(rounding: bool = False, failsafe: bool = False):
    """A child solve of two children over four active cells (types A, A, B, B)."""
    from dpmodels.topdown.data import FlowData
    from dpmodels.topdown.node_data import ChildSpec, NodeProblem, WeightedQuery

    cells = np.arange(4)
    identity = sp.identity(4, format="csr")
    measured = [np.array([1.2, 0.8, 1.5, 0.2]), np.array([2.1, 0.9, 0.4, 1.1])]
    children = [
        ChildSpec(t, [WeightedQuery("detailed", identity, values, 1.0 + t, True)]) for t, values in enumerate(measured)
    ]
    if rounding:
        children[0].flows = FlowData(np.array([[True, True]]), np.zeros((1, 2), np.int64), np.array([3]))
        children[1].total = 5
    marginal = sp.csr_matrix(np.array([[1.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 1.0]])) if failsafe else None
    return NodeProblem(
        cells, children, parent=np.array([3, 2, 2, 1]), cell_type=np.array([0, 0, 1, 1]), free_marginal=marginal
    )


@register_example("topdown.l2")
def _example_l2():
    """Identity measurements and parent sums only: the closed form (topdown_tree_l2) applies."""
    from dpmodels.topdown.models import build_l2

    return build_l2(_example_problem())


@register_example("topdown.l1")
def _example_l1():
    from dpmodels.topdown.models import build_l1

    return build_l1(_example_problem(rounding=True), _ROUNDING_HSTAR)


@register_example("topdown.failsafe_l2.phase1")
def _example_failsafe_l2_phase1():
    from dpmodels.topdown.failsafe_models import build_failsafe_l2

    return build_failsafe_l2(_example_problem(failsafe=True), 1)


@register_example("topdown.failsafe_l2.phase2")
def _example_failsafe_l2_phase2():
    from dpmodels.topdown.failsafe_models import build_failsafe_l2

    return build_failsafe_l2(_example_problem(failsafe=True), 2, 0.0)


@register_example("topdown.failsafe_l1.phase1")
def _example_failsafe_l1_phase1():
    from dpmodels.topdown.failsafe_models import build_failsafe_l1

    return build_failsafe_l1(_example_problem(failsafe=True), _FAILSAFE_HSTAR, 1)


@register_example("topdown.failsafe_l1.phase2")
def _example_failsafe_l1_phase2():
    from dpmodels.topdown.failsafe_models import build_failsafe_l1

    return build_failsafe_l1(_example_problem(failsafe=True), _FAILSAFE_HSTAR, 2, 2.0)


@register_example("topdown.gls")
def _example_gls():
    """A root, two children and three leaves over a 2 x 2 histogram (cell 3 a structural zero), each
    measured by the detailed query and the first attribute's marginal at the same variance ratio,
    the root's total exact: the basis is the precision's eigenvectors and the total a rank-1 correction."""
    from dpmodels.core.hierarchy import Hierarchy
    from dpmodels.core.tree_gls import GLSQuery, TreeGLSProblem
    from dpmodels.topdown.gls_model import build_gls

    tree = Hierarchy.from_parent_table({"US": None, "A": "US", "B": "US", "A1": "A", "A2": "A", "B1": "B"})
    level_variance = np.array([4.0, 2.0, 2.0, 1.0, 1.0, 1.0])
    detailed = np.array([[9.4, 6.1, 4.2, 0.3], [5.2, 2.8, 1.7, -0.6], [3.1, 2.6, 3.3, 0.8],
                         [2.2, 1.9, 0.4, 0.1], [3.6, 1.2, 1.1, -0.2], [2.7, 3.4, 2.9, 0.5]])  # fmt: skip
    marginal = np.array([[15.8, 4.9], [8.3, 0.9], [6.4, 3.5], [3.7, 0.2], [4.5, 0.9], [6.2, 3.1]])
    queries = (
        GLSQuery("detailed", sp.identity(4, format="csr"), detailed, level_variance),
        GLSQuery("a", sp.csr_matrix(np.kron(np.eye(2), np.ones((1, 2)))), marginal, 2 * level_variance),
    )
    return build_gls(TreeGLSProblem(tree, 4, queries, totals={0: 20}, zeros=[3]))
