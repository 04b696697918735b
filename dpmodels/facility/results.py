"""What a tree run of the facility mechanism publishes, and what the true counts decide (spec 3.4, A15).

* :class:`TreeRelease` -- the published (T, R) with the public parameters, nothing else.
* :class:`TreeDiagnostics` -- the opened set, each client's facility and the costs: computed from
  the true counts N, for reports and tests only.
* :class:`TreeRun` -- one run: both of the above and the mechanism's internal state.
* :func:`true_label` -- the label of a report entry evaluated on the true counts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .data import HST

__all__ = ["NON_PRIVATE", "NO_RANDOMNESS", "TreeRelease", "TreeDiagnostics", "TreeRun", "true_label"]

#: Deterministic functions of N: their output changes between neighbours with probability 1, so no
#: finite ε covers them and they report ``eps_used = inf`` and ``private = False``.
NON_PRIVATE = frozenset({"base", "open_all_client_locations"})
#: The randomness source recorded by the deterministic algorithms, which draw nothing.
NO_RANDOMNESS = "none: deterministic, nothing drawn"


def true_label(name: str) -> str:
    """The label of a report entry evaluated on the true client counts N: ``"true <name> (diagnostic)"``.

    Parameters
    ----------
    name : str
        What the entry measures (``"cost"``, ``"|S|"``, ...).
    """
    return f"true {name} (diagnostic)"


@dataclass(frozen=True, eq=False)
class TreeRelease:
    """Everything a tree run publishes, and nothing else (spec 3.4, A15): the tree T (padded so
    that ``L >= L'``, data independent) and ``R`` (node ids), with the public parameters ``ε``,
    ``L'``, the per-level noise scales and ``ε used`` (``inf`` and ``private = False`` for the
    algorithms of :data:`NON_PRIVATE`, whose R is a deterministic function of N), and the
    randomness source of the marks (``describe(rng)``; :data:`NO_RANDOMNESS` if nothing is drawn).

    Each client derives its facility from (T, R) alone.  Releases compare by value (:meth:`as_dict`).

    Parameters
    ----------
    algorithm : str
        The tree algorithm.
    private : bool
        Whether the run is ε-DP at a finite ε.
    epsilon : float
        The privacy parameter.
    eps_used : float
        The privacy spent.
    lprime : int
        L'.
    scales : tuple
        The Laplace scale per noisy level.
    tree : HST
        The (padded) tree T.
    R : tuple
        The published node ids.
    randomness : str, optional
        The marks' randomness source.
    """

    algorithm: str
    private: bool
    epsilon: float
    eps_used: float
    lprime: int
    scales: tuple
    tree: HST
    R: tuple
    randomness: str = NO_RANDOMNESS

    def as_dict(self) -> dict:
        """The release as plain Python values (the tree as its parent, level, λ and leaf arrays)."""
        tree = {"parent": self.tree.parent.tolist(), "level": self.tree.level.tolist(), "lam": self.tree.lam}
        tree["leaf_node"] = self.tree.leaf_node.tolist()
        fields = ("algorithm", "private", "epsilon", "eps_used", "lprime")
        out = {k: getattr(self, k) for k in fields} | {"scales": list(self.scales), "tree": tree, "R": list(self.R)}
        return out | {"randomness": self.randomness}

    def __eq__(self, other) -> bool:
        return isinstance(other, TreeRelease) and self.as_dict() == other.as_dict()


@dataclass(frozen=True, eq=False)
class TreeDiagnostics:
    """What the true client counts N decide once R is published, for reports and tests only: never
    release it beside R.  ``facility``: the node serving each location, ``-1`` where ``N_v = 0``;
    ``S``: the opened nodes; the facility and connection costs in ``d_T``, and their sum ``cost``.

    Parameters
    ----------
    facility : numpy.ndarray
        The serving node of every location, -1 without clients.
    S : numpy.ndarray
        The opened nodes.
    facility_cost : float
        ``f |S|``.
    connection_cost : float
        The clients' distances in ``d_T``.
    """

    facility: np.ndarray
    S: np.ndarray
    facility_cost: float
    connection_cost: float

    @property
    def cost(self) -> float:
        return self.facility_cost + self.connection_cost


@dataclass
class TreeRun:
    """One run of a tree algorithm: the published (T, R) in :attr:`release`, the true-data serving
    and costs in ``diagnostics``.

    ``marked`` is the mechanism's marked set M (``R = minset(M)``), internal state that is not
    published.  ``assign`` (``s_T(v)``, every location's nearest member of R) is a function of
    (T, R) alone.  ``S``, ``facility``, ``facility_cost``, ``connection_cost`` and ``cost`` are
    read-only aliases of ``diagnostics``: they depend on the true counts N.
    ``eps_used`` is the privacy spent (basic composition, spec 3.6, the exact ``sum 1/b_ℓ`` rounded
    up); it is ``inf`` for the non-private algorithms of :data:`NON_PRIVATE` (and by default, the
    safe side).  ``randomness`` names the marks' source (``describe(rng)``).

    Parameters
    ----------
    algorithm : str
        The key of :data:`~dpmodels.facility.mechanism.BASELINES` that ran.
    tree : HST
        The tree, padded so that ``L >= L'``.
    epsilon : float
        The privacy parameter.
    lprime : int
        L'.
    marked : numpy.ndarray
        The marked set M (boolean over nodes; not published).
    R : numpy.ndarray
        The published node ids.
    sites : str
        The site mode.
    assign : numpy.ndarray
        Every location's nearest member of R (node id).
    diagnostics : TreeDiagnostics
        What the true counts decide.
    scales : numpy.ndarray, optional
        The Laplace scale per noisy level.
    eps_used : float, default inf
        The privacy spent.
    draws : int, default 0
        The number of marks drawn.
    randomness : str, optional
        The marks' randomness source.
    """

    algorithm: str
    tree: HST  # padded so that L >= L'
    epsilon: float
    lprime: int
    marked: np.ndarray  # boolean over nodes
    R: np.ndarray  # node ids, the published super-set
    sites: str
    assign: np.ndarray  # s_T(v): nearest member of R of every location (node id)
    diagnostics: TreeDiagnostics
    scales: np.ndarray = field(default_factory=lambda: np.empty(0))
    eps_used: float = math.inf
    draws: int = 0
    randomness: str = NO_RANDOMNESS

    S = property(lambda self: self.diagnostics.S, doc="Opened node ids (true-data diagnostic).")
    facility = property(lambda self: self.diagnostics.facility, doc="Serving node per location (diagnostic).")
    facility_cost = property(lambda self: self.diagnostics.facility_cost, doc="``f |S|`` (diagnostic).")
    connection_cost = property(lambda self: self.diagnostics.connection_cost, doc="In ``d_T`` (diagnostic).")
    cost = property(lambda self: self.diagnostics.cost, doc="Total true cost in ``d_T`` (diagnostic).")

    @property
    def private(self) -> bool:
        """Whether the run is ε-DP at a finite ε (``eps_used``); False for Algorithm 1 and the trivial solution."""
        return self.algorithm not in NON_PRIVATE and math.isfinite(self.eps_used)

    @property
    def release(self) -> TreeRelease:
        """What the run publishes: (T, R) and the public parameters, nothing computed from N but R."""
        scales = tuple(float(b) for b in self.scales)
        R = tuple(int(u) for u in self.R)
        fields = (self.algorithm, self.private, self.epsilon, self.eps_used, self.lprime, scales, self.tree, R)
        return TreeRelease(*fields, self.randomness)
