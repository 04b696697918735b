"""Primal recovery for Benders on the perturbation LP: exactly eps-mDP mechanisms near the master's
point, whose losses are the certified upper bounds (issue 15).

Why: Benders' own upper bound is the loss of the mechanism assembled at its *separation* point,
and only when every block is feasible there.  On the paper-like grid (20 x 25 cells of 1.5 km,
eps = 10/km, 25 blocks) the lower bound reached the optimum 1.2735 at iteration 4 while that
upper bound stayed at 1.2768 for 496 more iterations: the master's boundary rows ``z_m`` put
exact zeros where the optimum has tiny positive entries, and on a connected mDP graph every
column of a feasible Z has one support (spec 2.2), so the blocks next to such a zero are
infeasible at ``z_m``, and the in-out separation points (half the exponential mechanism) were
feasible but cost 0.3% more.

What it does: the uniform boundary rows ``u`` are feasible for every block (the uniform
mechanism is feasible for the full LP), and the boundary rows at which every block is feasible
form a convex set, so ``p(lam) = (1 - lam) z_m + lam u`` is feasible for every ``lam`` from
some ``lam*`` on, and the loss of the best mechanism through it,
``UB(lam) = c_Y p(lam) + sum_l v_l(p(lam))``, is convex there.  :class:`Recovery` tracks the best
``lam`` across iterations (two or three block rounds per iteration: ``lam`` and its neighbours on
a geometric grid), assembles the blocks' rows at the best point, makes the matrix stochastic and
exactly mDP with the project's repair (the mDP rows hold to solver tolerance there, so the
uniform weight of the repair was ~1e-11), and audits it (:func:`~dpmodels.metricdp.privacy_audit.
is_exactly_mdp`) before its loss may become an upper bound.  The trial points' block solves are
ordinary separations: :func:`~dpmodels.metricdp.benders.driver.benders` adds their cuts that cut the
master's point off.

Measured and left out (paper-like grid unless said): (a) completing ``z_m`` with each block's
least-infeasible (elastic) rows and repairing the whole matrix by mixing in the uniform mechanism
(:func:`~dpmodels.metricdp.privacy_audit.repair`): 1.61, the elastic rows are expensive; mixing
``z_m`` with the exponential mechanism's rows instead of ``u``: feasible from 1% on, 1.278;
(b) the full LP with each block restricted to convex combinations of its stored solutions and
the boundary rows free (an inner approximation, HiGHS): better bounds on the 8 x 10 notebook
grid (0.909 against 1.011 at iteration 1) but not fewer iterations there (the lower bound was
the bottleneck), 0.35 s per warm solve and 13 s cold at paper scale, and once a value above one
of its own columns' (1.3197 against 1.2749) under e^15 coefficients; (c) the same LP with one
column per block (the boundary rows re-optimised against fixed blocks, a stitching LP): 1.3435 to
1.2937 at the exponential mechanism's point, subsumed by the segment; a trial at the master's
point itself each iteration: one 8 x 10 grid went from 2 to 300 iterations.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..data import MDPInstance
from ..privacy_audit import expected_loss, is_exactly_mdp, repair
from .subproblems import BlockOutcome

__all__ = ["Recovery", "Trial", "Candidate", "assemble", "certified_candidate"]


@dataclass
class Candidate:
    """An audited, exactly eps-mDP mechanism, its loss, and the block outcomes it was built from."""

    z: np.ndarray
    loss: float
    point: np.ndarray  # the boundary rows (master order, flattened) it was assembled at
    outcomes: list[BlockOutcome]
    uniform_weight: float  # the repair's weight of the uniform mechanism (0 when none was needed)


def assemble(instance: MDPInstance, y_order: np.ndarray, zy: np.ndarray, subs, outcomes) -> np.ndarray:
    """The full perturbation matrix in record order: ``zy`` for Y, the blocks' rows for each X_l."""
    K = instance.K
    z = np.zeros((instance.N, K))
    z[y_order] = zy.reshape(-1, K)
    for sub, out in zip(subs, outcomes, strict=True):
        z[sub.internal] = out.x.reshape(-1, K)
    return z


def certified_candidate(instance: MDPInstance, y_order: np.ndarray, zy: np.ndarray, subs, outcomes) -> Candidate | None:
    """The repaired mechanism assembled at ``zy`` if every block is feasible there and it passes
    the exact audit, else None: no upper bound is ever taken from an unaudited matrix."""
    if not all(out.feasible for out in outcomes):
        return None
    z, weight = repair(instance, assemble(instance, y_order, zy, subs, outcomes))
    if not is_exactly_mdp(instance, z):  # repair guarantees it; the audit is what certifies it
        return None
    return Candidate(z, expected_loss(instance, z), zy, outcomes, weight)


@dataclass
class Trial:
    """One recovery point: its uniform weight, the blocks' outcomes there and the certified mechanism, if any."""

    weight: float
    outcomes: list[BlockOutcome]
    candidate: Candidate | None


@dataclass
class Recovery:
    """Tracking search for the weight ``lam`` of the uniform boundary rows in the recovery point.

    Each :meth:`run` evaluates ``lam`` and then its neighbour ``lam / factor``, or, if that is not
    better, ``lam * factor`` (two or three block rounds), keeps the best certified candidate and
    moves ``lam`` to where it was found.  When no point was feasible, ``lam`` grows by
    ``factor**2`` for the next iteration (``lam = 1`` is the uniform rows, always feasible).
    """

    anchor: np.ndarray  # uniform boundary rows, flattened in master order
    weight: float = 1e-3
    factor: float = 4.0
    min_weight: float = 1e-12
    trials: list[Trial] = field(default_factory=list)  # the last run's, in the order evaluated

    @classmethod
    def uniform(cls, n_boundary: int, K: int, weight: float = 1e-3) -> Recovery:
        return cls(np.full(n_boundary * K, 1.0 / K), weight)

    def point(self, z_master: np.ndarray, lam: float) -> np.ndarray:
        return (1.0 - lam) * z_master + lam * self.anchor

    def run(self, z_master: np.ndarray, evaluate) -> Candidate | None:
        """The best certified candidate on the segment near the tracked ``lam``.  ``evaluate(point)``
        solves the blocks at ``point`` and returns their outcomes and the certified mechanism there
        (None when some block is infeasible); every trial is kept in :attr:`trials`."""
        self.trials = []

        def at(lam: float) -> Candidate | None:
            lam = min(1.0, max(self.min_weight, lam))
            for trial in self.trials:
                if trial.weight == lam:
                    return trial.candidate
            outcomes, cand = evaluate(self.point(z_master, lam))
            self.trials.append(Trial(lam, outcomes, cand))
            return cand

        lam, f = self.weight, self.factor
        here = at(lam)
        if here is None:
            at(lam * f)
        else:
            down = at(lam / f)
            if down is None or down.loss >= here.loss:
                at(lam * f)
        feasible = [t for t in self.trials if t.candidate is not None]
        if not feasible:
            self.weight = min(1.0, lam * f * f)
            return None
        best = min(feasible, key=lambda t: t.candidate.loss)
        self.weight = best.weight
        return best.candidate
