"""Serving clients from a published R (spec 3.2, 3.5): post-processing of the mechanism's output.

Every location is served by its nearest member of R in ``d_T`` (node-id ties), a function of
(T, R) alone; where the facility opens depends on the site mode (``"leaves"``: ``rep`` of that
member; ``"all_nodes"``: the member itself).  The opened set and the costs then follow from the
true counts N, so they are diagnostics (:class:`~.results.TreeDiagnostics`), never released.
"""

from __future__ import annotations

import numpy as np

from dpmodels.core.errors import DataValidationError

from .data import HST
from .hst import nearest_in, node_distance, rep
from .results import TreeDiagnostics

__all__ = ["SITE_MODES", "serve", "check_sites"]

#: Where facilities open: at the leaf ``rep`` of the serving node, or at the tree node itself.
SITE_MODES = ("leaves", "all_nodes")


def serve(tree: HST, f: float, N: np.ndarray, R: np.ndarray, sites: str, n_original: int | None = None):
    """The closest-facility rule (spec 3.5) and the opened set in the chosen site mode (spec 3.2).

    ``n_original``: node count before padding.  In ``all_nodes`` mode a client whose nearest member
    of R is a padded unary root opens the original root instead: post-processing of R, every leaf is
    strictly closer to the old root, so the cost only falls and S stays a set of original sites.

    Parameters
    ----------
    tree : HST
        The (padded) tree.
    f : float
        The facility cost.
    N : numpy.ndarray
        The client count of every location (leaf).
    R : numpy.ndarray
        The published node ids.
    sites : {"leaves", "all_nodes"}
        Where facilities open (:data:`SITE_MODES`).
    n_original : int, optional
        The node count before padding.

    Returns
    -------
    tuple
        ``(assign, diagnostics)``: every location's nearest member of R (a function of (T, R)
        alone) and the :class:`~.results.TreeDiagnostics` the true counts decide.
    """
    ident, _ = nearest_in(tree, R)
    assign = ident[tree.leaf_node]
    clients = N > 0
    if sites == "all_nodes":
        target = assign.copy()
        if n_original is not None and n_original < tree.n_nodes:
            old_root = int(np.flatnonzero(tree.parent == n_original)[0])  # pad() hangs it below node n_original
            target[target >= n_original] = old_root
    else:
        target = rep(tree)[assign]
    facility = np.where(clients, target, -1)
    S = np.unique(facility[clients])
    dist = node_distance(tree, tree.leaf_node[clients], facility[clients]) if clients.any() else np.empty(0)
    return assign, TreeDiagnostics(facility, S, f * S.size, float((N[clients] * dist).sum()))


def check_sites(sites: str) -> str:
    """``sites`` if it is one of :data:`SITE_MODES`, else an error naming the field.

    Parameters
    ----------
    sites : str
        The site mode.
    """
    if sites not in SITE_MODES:
        raise DataValidationError("sites", f"must be one of {SITE_MODES}, got {sites!r}")
    return sites
