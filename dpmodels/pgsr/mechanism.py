"""PGSR mechanisms: the noisy measurement every mechanism starts from, and end-to-end runs (spec 2.4, 4.4-4.6).

A mechanism is a *measurement* (geometric noise on counts, cumulative counts or the chain,
with the budget ``epsilon / L`` per level) followed by a *post-processing* that sees only
the :class:`NoisyGroupSizes` (noisy values plus the public hierarchy, N and G), never the
truth.  Post-processing cannot weaken privacy (Lemma 3), so a mechanism is epsilon-DP as
soon as its measurement is; each run carries a :class:`PrivacyLedger` to prove it.
:func:`measure` draws the noisy values and records the ledger; the post-processings are in
:mod:`dpmodels.pgsr.postprocessing`; :func:`run_mechanism` does both.

=========  ==============================  =========================================
name       measurement (scale per level)   post-processing
=========  ==============================  =========================================
M_H        counts, 2L/eps                  Model 1 QIP on a MIQP solver (scip)
M_H^r      counts, 2L/eps                  Model 1-R on a QP solver, rounded half up
M_H^dp     counts, 2L/eps                  Model 1 by the ``pgsr_dp`` dynamic program
M_dp^OP    counts, 2L/eps                  Model 1 by ``pgsr_dp_op`` (sub-model per value)
M_c        cumulative, z L/eps             Model 2 QIP on a MIQP solver (scip)
M_c^r      cumulative, z L/eps             Model 2-R on a QP solver, rounded, (-)
M_c^dp     cumulative, z L/eps             Algorithm 2 (``pgsr_cdp``)
M_c^ch     chain, z L|R_l|/eps (sound)     Model 3 by ``pgsr_chain``
TopDown    counts, 2L/eps                  the paper's TopDown baseline (spec 3.8)
=========  ==============================  =========================================

Here ``z`` is the data's declared public bound ``z_max`` on one person's quantity (1 in the
paper); the sensitivities and the neighbour relation they assume (``G`` fixed) are derived
in :mod:`dpmodels.pgsr.sensitivity`.  The chain's per-level vector has L1 sensitivity
``|R_l| z_max``, not 1 (spec 2.3, erratum A2): ``calibration="sound"`` (default) scales the
noise accordingly; ``calibration="paper"`` uses the paper's ``L/eps``, which is only
``eps * z_max * sum_l |R_l| / L``-DP, and the ledger says so.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING

import numpy as np

from dpmodels.core.accounting import PrivacyLedger, split_budget
from dpmodels.core.errors import DataValidationError
from dpmodels.core.noise import as_epsilon, noisy_integers
from dpmodels.core.randomness import describe, make_rng

from .data import GroupSizeData, NoisyGroupSizes, chain_cumulative, cumulative
from .sensitivity import NEIGHBOURS, level_sensitivity

if TYPE_CHECKING:
    from .postprocessing import Release

__all__ = ["measure", "MechanismRun", "run_mechanism"]


def measure(
    data: GroupSizeData, epsilon, kind: str, rng=None, calibration: str = "sound"
) -> tuple[NoisyGroupSizes, PrivacyLedger]:
    """Noisy values of ``kind`` ("counts", "cumulative" or "chain") for every region.

    Each level gets ``epsilon / L``; the regions of a level are disjoint (parallel
    composition), the levels add up (sequential composition).  The noise scale is the
    level's sensitivity (which grows with ``data.z_max``) over its budget, except for the
    paper's chain calibration; the ledger always records the true sensitivity and the
    epsilon actually spent.

    Every level's scale is recorded (and checked) before the first draw, so a refused scale
    never leaves noise drawn; the noisy values are computed in int64 (exact integer truth plus
    exact discrete Laplace noise, :func:`dpmodels.core.noise.noisy_integers`) and only then
    converted to float64 for the post-processing, which is exact below ``2^53``.

    Parameters
    ----------
    data : GroupSizeData
        The true group sizes.
    epsilon : float or Fraction
        The total budget of the measurement.
    kind : str
        The measured vectors: ``"counts"``, ``"cumulative"`` or ``"chain"``.
    rng : Generator, int or None
        A Generator or a seed (:func:`dpmodels.core.randomness.make_rng`; None: secure).
    calibration : str
        ``"sound"`` or, for the chain only, the paper's ``"paper"`` (see the module docstring).

    Returns
    -------
    tuple of (NoisyGroupSizes, PrivacyLedger)
        The noisy values (float64, with the public hierarchy, ``G``, ``kind`` and the scales)
        and the ledger of every level's measurement.
    """
    eps = as_epsilon(epsilon)
    if calibration not in ("sound", "paper"):
        raise DataValidationError("calibration", f"must be 'sound' or 'paper', got {calibration!r}")
    rng = make_rng(rng)
    h = data.hierarchy
    truth = _truth(data, kind)
    ledger = PrivacyLedger(randomness=describe(rng))
    scales = _record_levels(ledger, h, kind, calibration, eps, data.z_max, data.N)
    values = truth.copy()
    for level, scale in enumerate(scales, start=1):
        rows = h.level_slice(level)
        values[rows] = noisy_integers(truth[rows], scale, rng)
    info = {"epsilon": eps, "calibration": calibration, "z_max": data.z_max, "neighbours": NEIGHBOURS}
    return NoisyGroupSizes(h, values.astype(np.float64), data.G, kind, tuple(scales), info=info), ledger


def _truth(data: GroupSizeData, kind: str) -> np.ndarray:
    """The exact int64 vectors a measurement of ``kind`` adds noise to."""
    if kind == "counts":
        return np.array(data.counts, dtype=np.int64)
    if kind == "cumulative":
        return cumulative(np.asarray(data.counts, dtype=np.int64))
    if kind == "chain":
        return chain_cumulative(data.hierarchy, np.asarray(data.counts, dtype=np.int64))
    raise DataValidationError("kind", f"must be 'counts', 'cumulative' or 'chain', got {kind!r}")


def _record_levels(ledger, h, kind: str, calibration: str, eps: Fraction, z_max: int, n_sizes: int) -> list[Fraction]:
    """Record every level's measurement in ``ledger`` (which refuses a scale no exact draw can keep
    exact) and return the scales: all of them are checked before anything is drawn."""
    scales = []
    for level, eps_level in enumerate(split_budget(eps, h.n_levels), start=1):
        n_regions = int(h.level_sizes()[level - 1])
        sensitivity = level_sensitivity(kind, n_regions, z_max)
        scale = _level_scale(kind, calibration, sensitivity, eps_level)
        query, group = f"{kind} level {level}", f"level {level}"
        ledger.record(query, group, sensitivity, sensitivity / scale, "double geometric", n_regions * n_sizes)
        scales.append(Fraction(scale))
    return scales


def _level_scale(kind: str, calibration: str, sensitivity: int, eps_level: Fraction) -> Fraction:
    """``sensitivity / eps_level``; the paper's chain calibration uses ``1 / eps_level`` (``L/eps``)
    whatever the sensitivity, so its true cost ``sensitivity * eps_level`` exceeds the budget."""
    if kind == "chain" and calibration == "paper":
        return 1 / eps_level
    return sensitivity / eps_level


@dataclass
class MechanismRun:
    """One end-to-end run: the noisy input, the release and the privacy ledger.

    Parameters
    ----------
    mechanism : str
        The mechanism's name.
    epsilon : Fraction
        The budget asked for.
    noisy : NoisyGroupSizes
        The measured values.
    release : Release
        The post-processing's output.
    ledger : PrivacyLedger
        The measurement's ledger.
    seconds_measure : float
        The measurement's wall time.
    """

    mechanism: str
    epsilon: Fraction
    noisy: NoisyGroupSizes
    release: Release
    ledger: PrivacyLedger
    seconds_measure: float

    @property
    def epsilon_spent(self) -> Fraction:
        """The budget the ledger records as spent (the calibration may exceed ``epsilon``)."""
        return self.ledger.total_epsilon


def run_mechanism(
    name: str, data: GroupSizeData, epsilon, seed=None, calibration: str = "sound", **options
) -> MechanismRun:
    """Measure ``data`` with mechanism ``name``'s noise and post-process the noisy values.

    Parameters
    ----------
    name : str
        A name of :data:`dpmodels.pgsr.postprocessing.MECHANISMS` (``"M_H^dp"``, ``"M_c^ch"``...).
    data : GroupSizeData
        The true group sizes.
    epsilon : float or Fraction
        The total budget of the measurement.
    seed : int, Generator or None
        The noise's randomness (:func:`dpmodels.core.randomness.make_rng`; None: secure).
    calibration : str
        ``"sound"`` or, for the chain only, the paper's ``"paper"`` (:func:`measure`).
    **options
        The post-processing's options (``solver``, ``domains``, ``time_limit``...).

    Returns
    -------
    MechanismRun
        The noisy values, the release, the ledger and the measurement's seconds.
    """
    from .postprocessing import mechanism_spec  # the post-processings import Pyomo: only when run

    spec = mechanism_spec(name)
    spec.check_options(options)
    tick = time.perf_counter()
    noisy, ledger = measure(data, epsilon, spec.kind, make_rng(seed), calibration)
    measured = time.perf_counter() - tick
    release = spec.post(noisy, **options)
    return MechanismRun(name, as_epsilon(epsilon), noisy, release, ledger, measured)
