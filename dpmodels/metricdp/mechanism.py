"""Metric-DP mechanisms: perturbation matrices, and the draw of each record's output (spec 7, 9.1).

A perturbation matrix ``Z`` (N x K) is the mechanism: record ``r_i`` is reported as output
``o_k`` with probability ``Z[i, k] / sum_k Z[i, k]``.  :func:`optimal_mechanism` solves the
perturbation LP for the loss-optimal one from public inputs only, :func:`exponential_mechanism`
is the paper's baseline; both are repaired and proven exactly eps-mDP
(:mod:`dpmodels.metricdp.privacy_audit`).  :func:`perturb` applies one to a release's records:
the charge in a :class:`~dpmodels.core.accounting.PrivacyLedger`, then :func:`sample_outputs`
draws each output exactly with the core's sampler and the generator it is given.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from dpmodels.core.accounting import PrivacyLedger
from dpmodels.core.errors import DataValidationError
from dpmodels.core.randomness import make_rng
from dpmodels.core.selection import sample_proportional

from .data import MDPInstance
from .privacy_audit import expected_loss, repair, require_exact_mdp

__all__ = [
    "SOLVERS",
    "NOISE",
    "Mechanism",
    "optimal_mechanism",
    "given_mechanism",
    "exponential_mechanism",
    "perturb",
    "sample_outputs",
]

#: The solvers of the perturbation LP a release may use: ``mdp_ipm`` certifies its gap.
SOLVERS = ("mdp_ipm", "highs")
#: How each record's output is drawn (the ledger's noise).
NOISE = "one draw per record from its row of the audited perturbation matrix (exact proportional sampler)"


@dataclass(frozen=True, eq=False)
class Mechanism:
    """An exactly eps-mDP perturbation matrix and how it was obtained (public: no record is read).

    ``loss`` is the expected loss of ``z`` under the public prior; ``bound`` a certified lower
    bound on the optimal loss (``mdp_ipm``; ``None`` when not certified) and ``gap`` the relative
    gap between them; ``repair_weight`` the weight of the uniform mechanism the repair mixed in.

    Parameters
    ----------
    z : numpy.ndarray
        The perturbation matrix (N x K), exactly eps-mDP.
    solver : str
        How it was obtained (``"mdp_ipm"``, ``"highs"`` or ``"given"``).
    status : str
        The solver's status.
    loss : float
        The expected loss of ``z``.
    bound : float or None
        A certified lower bound on the optimal loss.
    gap : float or None
        The relative gap between ``loss`` and ``bound``.
    repair_weight : float
        The uniform mechanism's weight in the repair.
    seconds : float
        The solve's wall time.
    """

    z: np.ndarray
    solver: str
    status: str
    loss: float
    bound: float | None
    gap: float | None
    repair_weight: float
    seconds: float

    def as_dict(self) -> dict:
        """The ledger's ``optimisation`` entry."""
        return {
            "solver": self.solver,
            "status": self.status,
            "expected loss": self.loss,
            "certified lower bound": self.bound,
            "relative gap": self.gap,
            "gap certified": self.bound is not None,
            "uniform weight in repair": self.repair_weight,
            "seconds": self.seconds,
        }


def optimal_mechanism(
    instance: MDPInstance, solver: str = "mdp_ipm", gap: float = 1e-3, time_limit: float | None = None
) -> Mechanism:
    """The loss-optimal perturbation matrix of ``instance`` (public), exactly eps-mDP.

    ``build_full_lp`` solved with ``mdp_ipm`` to the certified relative ``gap`` (its incumbent is
    already repaired; its bound is a weak-duality certificate), or with ``highs`` (its matrix meets
    the mDP rows only to a tolerance, so it is repaired here; its bound is not certified).  A run
    stopped by ``time_limit`` still returns an exactly private incumbent; the status says so.

    Parameters
    ----------
    instance : MDPInstance
        The public domain (locations, metric, prior, ``eps`` per km, ``eta``).
    solver : str
        One of :data:`SOLVERS`.
    gap : float
        The certified relative gap ``mdp_ipm`` stops at.
    time_limit : float, optional
        Seconds for the solve.

    Returns
    -------
    Mechanism
        The repaired, audited matrix and how it was obtained.
    """
    from dpmodels.core.facade import solve

    from .models import build_full_lp, perturbation_matrix

    if solver not in SOLVERS:
        raise DataValidationError("solver", f"must be one of {list(SOLVERS)}, got {solver!r}")
    tick = time.perf_counter()
    model = build_full_lp(instance)
    options = {"gap": gap} if solver == "mdp_ipm" else {}
    result = solve(model, solver, time_limit=time_limit, **options)
    status = str(getattr(result.extra_info, "status", None) or result.termination_condition.name)
    if result.solution_loader.get_number_of_solutions() == 0:
        raise DataValidationError("solver", f"{solver} returned no mechanism ({status})")
    z, weight = repair(instance, perturbation_matrix(model, instance, raw=True))
    z = require_exact_mdp(instance, z, "mechanism")
    loss = expected_loss(instance, z)
    bound = None
    if solver == "mdp_ipm" and result.objective_bound is not None and np.isfinite(result.objective_bound):
        bound = float(min(result.objective_bound, loss))
    gap_reached = None if bound is None else (loss - bound) / max(abs(loss), 1e-12)
    return Mechanism(z, solver, status, loss, bound, gap_reached, float(weight), time.perf_counter() - tick)


def given_mechanism(instance: MDPInstance, z) -> Mechanism:
    """A matrix the caller brings, as a :class:`Mechanism`, if it passes the exact audit.

    Parameters
    ----------
    instance : MDPInstance
        The public domain.
    z : array_like
        The perturbation matrix (N x K); refused unless exactly eps-mDP.
    """
    z = require_exact_mdp(instance, z, "mechanism")
    return Mechanism(z, "given", "given", expected_loss(instance, z), None, None, 0.0, 0.0)


def exponential_mechanism(instance: MDPInstance) -> np.ndarray:
    """Eq. 66: ``Z[i, k] ~ exp(-eps d(r_i, o_k) / 2)``, normalised per record (stable softmax).

    eps-mDP for *all* pairs in exact arithmetic (triangle inequality), hence feasible for the
    LP; in floating point a tight ratio can be off by an ulp and ``exp`` underflows to 0 next
    to a positive neighbour, so the softmax is passed through
    :func:`~dpmodels.metricdp.privacy_audit.repair` (usually t = 0).

    Parameters
    ----------
    instance : MDPInstance
        The instance; it needs its record-output distances ``d_ro``.

    Returns
    -------
    numpy.ndarray
        The exactly eps-mDP matrix (N x K, rows summing to 1).
    """
    if instance.d_ro is None:
        raise DataValidationError("d_ro", "the exponential mechanism needs record-output distances")
    logits = -instance.epsilon * instance.d_ro / 2
    logits -= logits.max(axis=1, keepdims=True)
    z = np.exp(logits)
    return repair(instance, z / z.sum(axis=1, keepdims=True))[0]


def perturb(instance: MDPInstance, z, records, rng) -> tuple[np.ndarray, PrivacyLedger]:
    """The mechanism applied to a release's records: the charge recorded, then one draw per record.

    Parameters
    ----------
    instance : MDPInstance
        The public domain; its ``epsilon`` (per km) is what each record's guarantee is charged.
    z : numpy.ndarray
        The perturbation matrix (N x K); refused unless exactly eps-mDP (:func:`sample_outputs`).
    records : array_like of int
        Location indices in ``0..N-1``, one per user.
    rng : numpy.random.Generator
        The draws' generator (the secure one on real data; its description goes in the ledger).

    Returns
    -------
    tuple of (numpy.ndarray, PrivacyLedger)
        The output index drawn for each record and the ledger of the charge.
    """
    records = _record_indices(instance, records)
    ledger = PrivacyLedger(private=True)
    ledger.note_randomness(rng)
    ledger.charge(
        f"mDP perturbation of {len(records)} records (epsilon per km)",
        instance.epsilon,
        group="every record, once (local: each record its own guarantee)",
        noise=NOISE,
    )
    return sample_outputs(instance, z, records, rng), ledger


def sample_outputs(instance: MDPInstance, z: np.ndarray, records, rng=None) -> np.ndarray:
    """Perturb ``records`` (indices) with mechanism ``Z``: one output index per record.

    ``Z`` is refused unless it passes the exact ratio audit (:func:`require_exact_mdp`); each
    output is drawn exactly from its record's row by the core sampler
    (:func:`dpmodels.core.selection.sample_proportional`).  ``rng=None`` draws from the secure
    generator, as a release on real data must; a seed or Generator makes an experiment
    reproducible and the outputs not private (:func:`dpmodels.core.randomness.make_rng`).

    Parameters
    ----------
    instance : MDPInstance
        The instance (N records, K outputs).
    z : numpy.ndarray
        The perturbation matrix; refused unless exactly eps-mDP.
    records : array_like of int
        Record indices in ``0..N-1``.
    rng : Generator, int or None
        The generator or a seed (None: secure).

    Returns
    -------
    numpy.ndarray
        One output index (``0..K-1``) per record.
    """
    z = require_exact_mdp(instance, z)
    rng = make_rng(rng)
    records = _record_indices(instance, records)
    out = np.empty(len(records), dtype=np.intp)
    for r in np.unique(records):
        where = np.flatnonzero(records == r)
        out[where] = sample_proportional(z[r], rng, size=len(where))
    return out


def _record_indices(instance: MDPInstance, records) -> np.ndarray:
    """``records`` as a vector of integer indices in ``0..N-1``, else a named error."""
    records = np.atleast_1d(np.asarray(records))
    if records.dtype.kind not in "iu" or (records.size and (records.min() < 0 or records.max() >= instance.N)):
        raise DataValidationError("records", f"must be record indices in 0..{instance.N - 1}")
    return records
