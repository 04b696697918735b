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

**Public means declared.**  The points (coordinates) are public, the counts private; nothing that
shapes the release is computed from the counts: the tree depends on the distinct locations and
the generator only, ``d_min`` on the points, ``L'`` and the scales on ``ε``, ``f`` and ``λ``.  The
only rule applied to the counts is a cap (:func:`count_cap`): each location's count is clamped
to ``C(n) = min(2^40, 2^62 // n)`` for ``n`` public locations, so that every subtree count is an
exact int64 (an unclamped sum could overflow and wrap, silently changing the marks' law, and a
huge count refused would make the release depend on one person).  Clamping changes a count by
at most 1 when one client is added or removed, so the sensitivity stays 1; no real count comes
near 2^40.  :func:`release_facts` states all of this for the release's manifest.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import pandas as pd

from dpmodels.core.accounting import Measurement, PrivacyLedger
from dpmodels.core.errors import DataValidationError
from dpmodels.core.facts import ReleaseFacts
from dpmodels.core.session import PrivacySession

from .checks import check_lambda
from .data import HSTInstance, UFLInstance
from .frt import RADIUS_MODES
from .general_metric import dp_ufl_general
from .hst import rep
from .mechanism import run_tree
from .results import TreeRelease, TreeRun
from .serving import check_sites

__all__ = [
    "MARK_NOISE",
    "NEIGHBOURS",
    "COUNT_CAP",
    "FacilityRelease",
    "count_cap",
    "clamp_counts",
    "release",
    "release_facts",
    "level_ledger",
    "facilities_frame",
    "tree_frame",
]

MARK_NOISE = "exact Laplace-tail marks: Bernoulli(P[N_u + Lap(b) >= f/lambda^l]), no Laplace drawn"
#: The family's neighbour relation (the budget refers to it).
NEIGHBOURS = "add or remove one client at a point (replacing one client, a move, costs 2 epsilon)"
#: The largest count a location keeps, whatever the number of locations (see :func:`count_cap`).
COUNT_CAP = 2**40


@dataclass(frozen=True, eq=False)
class FacilityRelease:
    """What a facility release publishes, nothing computed from the counts but R.

    ``tree`` is the tree run's :class:`~.results.TreeRelease` (T, R, ε, L', scales, ε used,
    randomness); ``scale`` the public ``d_min`` of the embedding (original distance = scale x
    tree distance; 1 on an HST instance); ``facilities`` the location ``rep(u)`` of every
    ``u`` in R, in R's order (post-processing of (T, R): where a candidate opens in the default
    ``"leaves"`` site mode; in ``"all_nodes"`` mode the node itself is the site).

    Parameters
    ----------
    tree : TreeRelease
        The tree run's publication.
    scale : float
        The embedding's ``d_min`` (1 on an HST instance).
    facilities : numpy.ndarray
        The location ``rep(u)`` of every ``u`` in R.
    """

    tree: TreeRelease
    scale: float
    facilities: np.ndarray

    @property
    def R(self) -> tuple:
        return self.tree.R

    def to_frame(self) -> pd.DataFrame:
        """The published candidates, indexed by tree ``node`` (R's order): ``level`` and ``location``
        (the distinct locations numbered in lexicographic order of their coordinates)."""
        R = np.asarray(self.R, dtype=np.int64)
        index = pd.Index(R, name="node")
        return pd.DataFrame({"level": self.tree.tree.level[R], "location": self.facilities}, index=index)

    def as_dict(self) -> dict:
        return self.tree.as_dict() | {"scale": self.scale, "facilities": self.facilities.tolist()}

    def __eq__(self, other) -> bool:
        return isinstance(other, FacilityRelease) and self.as_dict() == other.as_dict()


def release(
    session: PrivacySession, epsilon, *, lam: float = 1.5, radius_mode: str = "tight", sites: str = "leaves"
) -> FacilityRelease:
    """Spend ``epsilon`` of ``session`` on Algorithm 2; returns the :class:`FacilityRelease`.

    The options are checked before the session is charged, the data before anything is drawn.

    Parameters
    ----------
    session
        Its data is an :class:`HSTInstance` (run in site mode ``sites``) or a :class:`UFLInstance`
        (points or a metric: the pipeline with ``lam`` and ``radius_mode``).  Each location's
        count is clamped to :func:`count_cap` first (:func:`clamp_counts`, the stated rule).
    epsilon
        The budget charged to the session (Algorithm 2 spends the exact ``sum 1/b_l``, at most it).
    lam
        λ of the FRT tree, in ``(1, 2)`` (points or a metric only).
    radius_mode
        The FRT radii (:data:`~dpmodels.facility.frt.RADIUS_MODES`).
    sites
        Where facilities open on an HST instance (:data:`~dpmodels.facility.serving.SITE_MODES`).
    """
    lam = check_lambda(lam, "lam")
    if radius_mode not in RADIUS_MODES:
        raise DataValidationError("radius_mode", f"must be one of {RADIUS_MODES}, got {radius_mode!r}")
    check_sites(sites)
    return session.run("facility Algorithm 2 (DP-UFL-tree)", _mechanism(lam, radius_mode, sites), epsilon)


def count_cap(n_locations: int) -> int:
    """``C(n) = min(2^40, 2^62 // n)``: the count each of ``n`` public locations is clamped to.

    Parameters
    ----------
    n_locations
        The number of public locations (leaves), never a count: ``n C(n) <= 2^62``, so every
        subtree count is an exact int64, and ``C(n) <= 2^40 < 2^53``, so a float sum of counts
        clamped at ``C`` is exact (a float sum of non-negative numbers that reaches ``2^53`` stays
        at or above it: rounding to nearest is monotone).
    """
    if isinstance(n_locations, bool) or int(n_locations) < 1:
        raise DataValidationError("n_locations", f"must be an integer >= 1, got {n_locations!r}")
    return min(COUNT_CAP, 2**62 // int(n_locations))


def clamp_counts(data: HSTInstance | UFLInstance) -> HSTInstance | UFLInstance:
    """``data`` with every location's count clamped to :func:`count_cap` (the stated rule; always applied).

    Parameters
    ----------
    data
        A facility instance; its counts are private, its number of locations public.  A count above
        the cap is replaced by the cap, never refused (whether a release happens must not depend
        on one client), and one client more or less still changes each clamped count by at most 1.
    """
    return data.with_counts(np.minimum(data.N, count_cap(data.n)))


def release_facts(
    n_locations: int,
    f: float,
    *,
    lam: float = 1.5,
    radius_mode: str = "tight",
    sites: str = "leaves",
    tree_given: bool = False,
) -> ReleaseFacts:
    """What a facility release states, from the public points and the options only (no count is read).

    Parameters
    ----------
    n_locations
        The number of distinct public locations (points, or an HST's leaves).
    f
        The declared facility opening cost.
    lam, radius_mode
        λ and the radii of the FRT tree (points or a metric).
    sites
        The site mode of an HST instance.
    tree_given
        Whether the data is an HST the user gave (public) rather than points embedded by FRT.
    """
    lam = check_lambda(lam, "lam")
    cap = count_cap(n_locations)
    tree = "the declared HST" if tree_given else f"an FRT tree (lambda = {lam:g}, radii {radius_mode!r}) of the points"
    declared = {"locations": int(n_locations), "f": float(f), "lambda": lam, "tree": tree, "count cap": cap}
    declared |= {"sites": sites} if tree_given else {"radius mode": radius_mode}
    return ReleaseFacts(
        privacy_unit="one client (one unit of a point's count)",
        neighbours=NEIGHBOURS,
        declared=declared,
        invariants={},
        bounding=(
            f"each location's count is clamped to {cap} = min(2^40, 2^62 // locations), so that every subtree "
            "count is exact; one client more or less still changes a clamped count by at most 1",
            "rows with identical coordinates are one location (their counts add up)",
        ),
        post_processing="the published set R is minset of the noisy marks; each candidate's location is its "
        "representative leaf, and the tree is published as drawn (it depends on the points and the generator only)",
        flavor="pure DP",
        notes=(
            "the points (coordinates) are public: list every candidate location, also those without clients; "
            "a point listed only because a client lives there is not protected",
            "the tree depends on the set of distinct coordinates only (locations in lexicographic order), not on the "
            "rows' order or multiplicity; the output's location and rep_location columns number the distinct "
            "locations in that order (0-based), a function of the public coordinates alone",
            "the marks read one random word per noisy node whatever the counts; the run also computes true-data "
            "diagnostics (the opened set, costs), never published, whose running time depends on the counts",
            "the session is charged the requested epsilon, which can exceed what Algorithm 2 spends (L' rounds down)",
        ),
    )


def _mechanism(lam: float, radius_mode: str, sites: str):
    """The session's mechanism: the marks drawn from ``rng``, the release and the per-level ledger."""

    def run(data, epsilon, rng):
        eps = _float_at_most(epsilon)
        _check_instance(data)
        data = clamp_counts(data)
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
def facilities_frame(published: FacilityRelease, points: np.ndarray, columns) -> pd.DataFrame:
    """The published candidate facilities: ``node, level, location`` (of ``rep(u)``) and its coordinates.

    ``location`` numbers the distinct locations in lexicographic order of their coordinates
    (0-based): a label that does not depend on the order of the input rows.
    """
    R = np.asarray(published.R, dtype=np.int64)
    frame = pd.DataFrame({"node": R, "level": published.tree.tree.level[R], "location": published.facilities})
    return frame.join(pd.DataFrame(points[published.facilities], columns=columns))


def tree_frame(published: FacilityRelease, points: np.ndarray, columns) -> pd.DataFrame:
    """The published tree: ``node, parent, level, rep_location`` (the representative leaf's location,
    numbered as in :func:`facilities_frame`), ``in_R`` (member of the published R) and the
    representative's coordinates."""
    tree = published.tree.tree
    location = tree.location_of[rep(tree)]
    in_R = np.zeros(tree.n_nodes, dtype=bool)
    in_R[np.asarray(published.R, dtype=np.int64)] = True
    frame = pd.DataFrame(
        {
            "node": np.arange(tree.n_nodes),
            "parent": tree.parent,
            "level": tree.level,
            "rep_location": location,
            "in_R": in_R,
        }
    )
    return frame.join(pd.DataFrame(points[location], columns=columns))
