"""Facility-location releases on a user's data: points with client counts -> the published (T, R).

:func:`release` runs Algorithm 2 (DP-UFL-tree, spec 3.4) through a
:class:`~dpmodels.core.session.PrivacySession`: on an HST instance directly, on points (or a
metric) through the general-metric pipeline (FRT-λ tree, data independent, then Algorithm 2).
The marks are drawn exactly (:mod:`.marks`) from the session's generator, secure unless the
session is a declared experiment.  The mechanism's ledger has one row per noisy level
(sensitivity 1, scale ``b_ℓ``, epsilon ``1/b_ℓ``); its total, the exact ``Σ 1/b_ℓ``, is below
the request.  Only the release comes back: the tree T, the published super-set R, the public
parameters and R's representative locations; never the opened set or any cost (those depend
on the true counts).  ``dpmodels release facility`` wraps it for files.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import pandas as pd

from dpmodels.core.accounting import Measurement, PrivacyLedger
from dpmodels.core.errors import DataValidationError
from dpmodels.core.session import PrivacySession

from .data import HSTInstance, UFLInstance, check_lambda
from .frt import RADIUS_MODES
from .general_metric import dp_ufl_general
from .hst import rep
from .mechanism import SITE_MODES, TreeRelease, TreeRun, run_tree

__all__ = ["MARK_NOISE", "FacilityRelease", "release", "level_ledger", "facilities_frame", "tree_frame"]

MARK_NOISE = "exact Laplace-tail marks: Bernoulli(P[N_u + Lap(b) >= f/lambda^l]), no Laplace drawn"


@dataclass(frozen=True, eq=False)
class FacilityRelease:
    """What a facility release publishes, nothing computed from the counts but R.

    ``tree`` is the tree run's :class:`~.mechanism.TreeRelease` (T, R, ε, L', scales, ε used,
    randomness); ``scale`` the public ``d_min`` of the embedding (original distance = scale x
    tree distance; 1 on an HST instance); ``facilities`` the location ``rep(u)`` of every
    ``u`` in R, in R's order (post-processing of (T, R): where a candidate opens in the default
    ``"leaves"`` site mode; in ``"all_nodes"`` mode the node itself is the site).
    """

    tree: TreeRelease
    scale: float
    facilities: np.ndarray

    @property
    def R(self) -> tuple:
        return self.tree.R

    def as_dict(self) -> dict:
        return self.tree.as_dict() | {"scale": self.scale, "facilities": self.facilities.tolist()}

    def __eq__(self, other) -> bool:
        return isinstance(other, FacilityRelease) and self.as_dict() == other.as_dict()


def release(
    session: PrivacySession, epsilon, *, lam: float = 1.5, radius_mode: str = "tight", sites: str = "leaves"
) -> FacilityRelease:
    """Spend ``epsilon`` of ``session`` on Algorithm 2; returns the :class:`FacilityRelease`.

    The session's data is an :class:`HSTInstance` (run in site mode ``sites``) or a
    :class:`UFLInstance` (points or a metric: the pipeline with ``lam`` and ``radius_mode``).
    The options are checked before the session is charged, the data before anything is drawn.
    """
    lam = check_lambda(lam, "lam")
    if radius_mode not in RADIUS_MODES:
        raise DataValidationError("radius_mode", f"must be one of {RADIUS_MODES}, got {radius_mode!r}")
    if sites not in SITE_MODES:
        raise DataValidationError("sites", f"must be one of {SITE_MODES}, got {sites!r}")
    return session.run("facility Algorithm 2 (DP-UFL-tree)", _mechanism(lam, radius_mode, sites), epsilon)


def _mechanism(lam: float, radius_mode: str, sites: str):
    """The session's mechanism: the marks drawn from ``rng``, the release and the per-level ledger."""

    def run(data, epsilon, rng):
        eps = _float_at_most(epsilon)
        _check_instance(data)
        if isinstance(data, HSTInstance):
            tree_run, scale = run_tree(data, eps, "dp", rng=rng, sites=sites), 1.0
        else:
            report = dp_ufl_general(data, eps, lam=lam, radius_mode=radius_mode, rng=rng)
            tree_run, scale = report.run, report.embedding.scale
        return _publish(tree_run, scale), level_ledger(tree_run)

    return run


def _float_at_most(epsilon) -> float:
    """The largest float not above the granted ``epsilon`` (a Fraction): the mechanism never asks for more."""
    value = float(epsilon)
    return math.nextafter(value, 0.0) if Fraction(value) > Fraction(epsilon) else value


def _check_instance(data) -> None:
    """A facility instance with one facility cost ``f > 0`` (refused before anything is drawn)."""
    if not isinstance(data, HSTInstance | UFLInstance):
        raise DataValidationError("data", f"must be an HSTInstance or a UFLInstance, got {type(data).__name__}")
    if np.ndim(data.f) != 0 or not data.f > 0:
        raise DataValidationError("f", f"the mechanism needs one facility cost f > 0, got {data.f!r}")


def _publish(tree_run: TreeRun, scale: float) -> FacilityRelease:
    """(T, R) and R's representative locations: nothing else leaves the mechanism."""
    published = tree_run.release
    tree = published.tree
    facilities = tree.location_of[rep(tree)[np.asarray(published.R, dtype=np.int64)]]
    return FacilityRelease(published, float(scale), facilities)


def level_ledger(tree_run: TreeRun) -> PrivacyLedger:
    """One measurement per noisy level ``ℓ < L'``: the marks of its nodes (disjoint subtrees, counts of
    sensitivity 1, parallel within the level), scale ``b_ℓ`` and epsilon ``1/b_ℓ`` exactly; levels add up.

    Built from :class:`~dpmodels.core.accounting.Measurement` directly: the marks sampler draws any
    rational scale, so ``PrivacyLedger.record``'s bound for the integer samplers does not apply.
    """
    ledger = PrivacyLedger(randomness=tree_run.randomness)
    nodes = np.bincount(tree_run.tree.level[tree_run.tree.level < tree_run.lprime], minlength=tree_run.lprime)
    for lvl, b in enumerate(np.asarray(tree_run.scales, dtype=float).tolist()):
        scale = Fraction(b)
        query = f"marks at level {lvl}"
        ledger.entries.append(
            Measurement(query, f"level {lvl}", Fraction(1), 1 / scale, scale, MARK_NOISE, int(nodes[lvl]))
        )
    return ledger


# ---------------------------------------------------------------------- output tables
def facilities_frame(published: FacilityRelease, points: np.ndarray, rows, columns) -> pd.DataFrame:
    """The published candidate facilities: ``node, level, point`` (data row of ``rep(u)``) and its coordinates."""
    R = np.asarray(published.R, dtype=np.int64)
    frame = pd.DataFrame(
        {"node": R, "level": published.tree.tree.level[R], "point": np.asarray(rows)[published.facilities]}
    )
    return frame.join(pd.DataFrame(points[published.facilities], columns=columns))


def tree_frame(published: FacilityRelease, points: np.ndarray, rows, columns) -> pd.DataFrame:
    """The published tree: ``node, parent, level, rep_point`` (data row of the representative leaf),
    ``in_R`` (member of the published R) and the representative's coordinates."""
    tree = published.tree.tree
    location = tree.location_of[rep(tree)]
    in_R = np.zeros(tree.n_nodes, dtype=bool)
    in_R[np.asarray(published.R, dtype=np.int64)] = True
    frame = pd.DataFrame(
        {
            "node": np.arange(tree.n_nodes),
            "parent": tree.parent,
            "level": tree.level,
            "rep_point": np.asarray(rows)[location],
            "in_R": in_R,
        }
    )
    return frame.join(pd.DataFrame(points[location], columns=columns))
