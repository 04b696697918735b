"""DP-UFL-general (spec 2.2): the ε-DP facility-location mechanism on a general metric.

:func:`dp_ufl_general` embeds the locations into an FRT-λ tree (:mod:`.frt`, data independent),
runs the tree mechanism (:func:`~dpmodels.facility.mechanism.run_tree`, Algorithm 2 by default)
on the ``d_min``-scaled instance ``(T, f/d_min, N)``, publishes ``(T, R)`` and reports the costs
in the original units.  Clients connect in the tree metric to ``s_T(v)`` and open
``rep(s_T(v))``, a real location.

As for the tree runs, the result splits what is published (:attr:`PipelineReport.release`: T, R
and the public parameters) from what the true counts N decide (``diagnostics``: the opened set,
each client's facility, the realized, set and tree costs), labelled ``true ... (diagnostic)``
in :meth:`PipelineReport.summary`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpmodels.core.errors import DataValidationError
from dpmodels.core.noise import make_rng

from .checks import check_epsilon, check_lambda
from .data import HST, HSTInstance, UFLInstance
from .frt import Embedding, frt_embedding
from .mechanism import run_tree
from .results import TreeRelease, TreeRun, true_label

__all__ = ["PipelineDiagnostics", "PipelineReport", "dp_ufl_general"]


@dataclass(frozen=True, eq=False)
class PipelineDiagnostics:
    """The pipeline's serving and costs in original units, decided by the true counts N: reports
    and tests only, never released.  ``facility``: the location serving each location with a
    client (-1 otherwise); ``S``: the opened locations; ``realized_cost`` (each client at its
    tree-chosen facility), ``set_cost`` (re-optimised within S) and ``tree_cost`` (in ``s d_T``)."""

    facility: np.ndarray
    S: np.ndarray
    realized_cost: float
    set_cost: float
    tree_cost: float


@dataclass
class PipelineReport:
    """One pipeline run: what it publishes, (T, R), in :attr:`release`, and its true-data report in
    ``diagnostics`` (``facility``, ``S`` and the three costs are read-only aliases of it).

    Parameters
    ----------
    embedding : Embedding
        The FRT-λ tree and its scale ``d_min``.
    run : TreeRun
        The tree algorithm's run on the scaled instance.
    diagnostics : PipelineDiagnostics
        Serving and costs in original units (true data).
    epsilon : float
        The privacy parameter.
    f : float
        The facility cost in original units.
    """

    embedding: Embedding
    run: TreeRun  # on the d_min-scaled instance
    diagnostics: PipelineDiagnostics
    epsilon: float
    f: float

    facility = property(lambda self: self.diagnostics.facility, doc="Serving location (diagnostic).")
    S = property(lambda self: self.diagnostics.S, doc="Opened locations (true-data diagnostic).")
    realized_cost = property(lambda self: self.diagnostics.realized_cost, doc="True cost (diagnostic).")
    set_cost = property(lambda self: self.diagnostics.set_cost, doc="True cost within S (diagnostic).")
    tree_cost = property(lambda self: self.diagnostics.tree_cost, doc="True cost in ``s d_T`` (diagnostic).")

    @property
    def tree(self) -> HST:
        return self.run.tree

    @property
    def R(self) -> np.ndarray:
        return self.run.R

    @property
    def release(self) -> TreeRelease:
        """What the pipeline publishes: the tree run's (T, R) and public parameters (T depends on d only)."""
        return self.run.release

    def summary(self) -> dict:
        """The report of spec 8.1.5: the public |R|, L', L, per-level noise scales, ε used (inf if
        not private), ``d_min`` and the randomness source, then the costs and |S|, labelled
        ``true ... (diagnostic)``."""
        facility_cost = self.f * self.S.size
        true = {
            "realized cost": self.realized_cost,
            "set cost": self.set_cost,
            "tree cost": self.tree_cost,
            "facility cost": facility_cost,
            "connection cost": self.realized_cost - facility_cost,
            "|S|": int(self.S.size),
        }
        public = {
            "algorithm": self.run.algorithm,
            "private": self.run.private,
            "epsilon": self.epsilon,
            "R": int(self.R.size),
            "L_prime": self.run.lprime,
            "L": self.run.tree.L,
            "noise_scales": self.run.scales.tolist(),
            "eps_used": self.run.eps_used,
            "d_min": self.embedding.scale,
            "randomness": self.run.randomness,
        }
        return public | {true_label(k): v for k, v in true.items()}


def dp_ufl_general(
    instance: UFLInstance,
    epsilon: float,
    *,
    lam: float = 1.5,
    radius_mode: str = "tight",
    rng=None,
    algorithm: str = "dp",
    embedding: Embedding | None = None,
) -> PipelineReport:
    """DP-UFL-general (spec 2.2): FRT-λ tree, the tree algorithm on ``(T, f/d_min, N)``, publish (T, R).

    Clients connect in the tree metric to ``s_T(v)`` and open ``rep(s_T(v))`` (a real location).
    ``realized_cost`` charges each client its tree-chosen facility in ``d``; ``set_cost`` lets it
    re-optimise within the opened set.  Pass ``embedding`` to reuse a tree (it depends on d only).

    Parameters
    ----------
    instance : UFLInstance
        The metric, the facility cost and the client counts (private).
    epsilon : float
        The privacy parameter ε > 0.
    lam : float, default 1.5
        λ of the FRT-λ tree.
    radius_mode : {"tight", "geometric"}, default "tight"
        The FRT radii (:data:`~dpmodels.facility.frt.RADIUS_MODES`).
    rng : None, int or numpy.random.Generator, optional
        The tree's and the marks' randomness (None: secure; a seed is not private).
    algorithm : str, default "dp"
        A key of :data:`~dpmodels.facility.mechanism.BASELINES`.
    embedding : Embedding, optional
        A tree to reuse instead of drawing one.

    Returns
    -------
    PipelineReport
    """
    eps = check_epsilon(epsilon)
    lam = check_lambda(lam)
    if not instance.uniform:
        raise DataValidationError("f", "the DP mechanism needs a uniform facility cost")
    rng = make_rng(rng)
    if embedding is None:
        if instance.points is not None:
            embedding = frt_embedding(points=instance.points, lam=lam, radius_mode=radius_mode, rng=rng)
        else:
            embedding = frt_embedding(instance.d, lam=lam, radius_mode=radius_mode, rng=rng)
    elif embedding.tree.n != instance.n or embedding.tree.lam != lam:
        raise DataValidationError("embedding", "the tree must have the instance's locations and λ")
    s = embedding.scale
    scaled = HSTInstance(embedding.tree, instance.f / s, instance.N, name=instance.name + " (tree)")
    run = run_tree(scaled, eps, algorithm, rng=rng, sites="leaves")
    loc = run.tree.location_of
    clients = instance.N > 0
    facility = np.full(instance.n, -1, dtype=np.int64)
    facility[clients] = loc[run.facility[clients]]
    S = np.unique(facility[clients])
    idx = np.flatnonzero(clients)
    if instance.points is not None:
        dist = np.linalg.norm(instance.points[idx] - instance.points[facility[idx]], axis=1)
    else:
        dist = instance.d[idx, facility[idx]]
    realized = instance.f * S.size + float((instance.N[idx] * dist).sum())
    diagnostics = PipelineDiagnostics(facility, S, realized, instance.cost(S), run.cost * s)
    return PipelineReport(embedding, run, diagnostics, eps, instance.f)
