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

``noise="discrete-gaussian"`` measures the same vectors under zCDP instead (as the 2020 Census
did): a total ``rho`` split exactly into ``rho / L`` per level, and per level the exact discrete
Gaussian (:func:`dpmodels.core.gaussian.discrete_gaussian`) at ``sigma^2 = Delta_2^2 / (2 rho / L)``,
``Delta_2^2`` the level's squared L2 sensitivity (:func:`~dpmodels.pgsr.sensitivity.level_l2_sensitivity`:
2, ``z_max``, ``|R_l| z_max``); the ledger records each level's rho (zCDP rows, which add up) and
the level scales that size truncated domains follow :func:`~dpmodels.pgsr.domains.gaussian_domain_scale`.

``level_shares`` splits the budget over the levels in proportion to the shares given (exact
fractions) instead of evenly; the levels' noises then differ, and a post-processing that weighs
each value by its variance (:func:`dpmodels.pgsr.weights.measured_weights`, what a release does)
trusts the better-measured levels more.  :func:`measure` itself returns unweighted values: the
paper's objectives, as its experiments run them.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING

import numpy as np

from dpmodels.core.accounting import PrivacyLedger, split_budget
from dpmodels.core.errors import DataValidationError
from dpmodels.core.noise import as_epsilon, exact, noisy_gaussian_integers, noisy_integers
from dpmodels.core.randomness import describe, make_rng

from .data import GroupSizeData, NoisyGroupSizes, chain_cumulative, cumulative
from .domains import gaussian_domain_scale
from .sensitivity import NEIGHBOURS, level_l2_sensitivity, level_sensitivity

if TYPE_CHECKING:
    from .postprocessing import Release

__all__ = ["measure", "MechanismRun", "run_mechanism", "NOISES", "level_split"]

#: The noises :func:`measure` draws: the default (pure DP, budget ``epsilon``) and zCDP (budget ``rho``).
NOISES = ("discrete-laplace", "discrete-gaussian")
#: The noise as the ledger's rows and the manifests name it.
GAUSSIAN_WORDS = "exact discrete Gaussian (Canonne-Kamath-Steinke)"


def measure(
    data: GroupSizeData,
    epsilon,
    kind: str,
    rng=None,
    calibration: str = "sound",
    *,
    noise: str = "discrete-laplace",
    rho=None,
    level_shares=None,
) -> tuple[NoisyGroupSizes, PrivacyLedger]:
    """Noisy values of ``kind`` ("counts", "cumulative" or "chain") for every region.

    Each level gets ``epsilon / L`` (or its share of ``epsilon``, given ``level_shares``); the
    regions of a level are disjoint (parallel composition), the levels add up (sequential
    composition).  The noise scale is the
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
    noise : str
        ``"discrete-laplace"`` (default: pure DP, the budget is ``epsilon``) or
        ``"discrete-gaussian"`` (zCDP: the budget is ``rho`` and ``epsilon`` must be None).
    rho : Fraction, str or float, optional
        The total zCDP budget of a discrete Gaussian measurement (``rho / L`` per level).
    level_shares : sequence, optional
        One positive share per level, root first (ints, Fractions, decimal strings): level ``l``
        gets ``budget * share_l / sum(shares)``, exactly.  None: equal shares.

    Returns
    -------
    tuple of (NoisyGroupSizes, PrivacyLedger)
        The noisy values (float64, with the public hierarchy, ``G``, ``kind`` and the scales)
        and the ledger of every level's measurement.
    """
    if noise == "discrete-gaussian":
        if epsilon is not None:
            raise DataValidationError("epsilon", "the discrete Gaussian is charged in rho (zCDP): pass rho= only")
        return _measure_gaussian(data, rho, kind, rng, calibration, level_shares)
    if noise != "discrete-laplace":
        raise DataValidationError("noise", f"must be one of {NOISES}, got {noise!r}")
    if rho is not None:
        raise DataValidationError("rho", "goes with noise='discrete-gaussian'; the discrete Laplace takes epsilon")
    eps = as_epsilon(epsilon)
    if calibration not in ("sound", "paper"):
        raise DataValidationError("calibration", f"must be 'sound' or 'paper', got {calibration!r}")
    rng = make_rng(rng)
    h = data.hierarchy
    truth = _truth(data, kind)
    ledger = PrivacyLedger(randomness=describe(rng))
    split = level_split(eps, h.n_levels, level_shares)
    scales = _record_levels(ledger, h, kind, calibration, split, data.z_max, data.N)
    values = truth.copy()
    for level, scale in enumerate(scales, start=1):
        rows = h.level_slice(level)
        values[rows] = noisy_integers(truth[rows], scale, rng)
    info = {"epsilon": eps, "calibration": calibration, "z_max": data.z_max, "neighbours": NEIGHBOURS}
    if level_shares is not None:
        info["epsilon_per_level"] = tuple(split)
    return NoisyGroupSizes(h, values.astype(np.float64), data.G, kind, tuple(scales), info=info), ledger


def _measure_gaussian(data: GroupSizeData, rho, kind: str, rng, calibration: str, level_shares=None):
    """:func:`measure` with the exact discrete Gaussian: ``rho / L`` per level, ``sigma^2 = Delta_2^2 L / (2 rho)``."""
    if rho is None:
        raise DataValidationError("rho", "the discrete Gaussian needs a zCDP budget rho")
    budget = as_epsilon(rho, "rho")
    if calibration != "sound":
        raise DataValidationError("calibration", "the paper's chain calibration is a Laplace rule; use 'sound'")
    rng = make_rng(rng)
    h = data.hierarchy
    truth = _truth(data, kind)
    ledger = PrivacyLedger(randomness=describe(rng))
    variances = []
    split = level_split(budget, h.n_levels, level_shares, "rho")
    for level, rho_level in enumerate(split, start=1):
        n_regions = int(h.level_sizes()[level - 1])
        sensitivity = level_l2_sensitivity(kind, n_regions, data.z_max)
        query, group = f"{kind} level {level}", f"level {level}"
        cells = n_regions * data.N
        variances.append(ledger.record_gaussian(query, group, sensitivity, rho_level, GAUSSIAN_WORDS, cells))
    values = truth.copy()
    for level, sigma2 in enumerate(variances, start=1):
        rows = h.level_slice(level)
        values[rows] = noisy_gaussian_integers(truth[rows], sigma2, rng)
    info = {
        "rho": budget,
        "noise": "discrete-gaussian",
        "sigma2_per_level": tuple(variances),
        "calibration": calibration,
        "z_max": data.z_max,
        "neighbours": NEIGHBOURS,
    }
    if level_shares is not None:
        info["rho_per_level"] = tuple(split)
    scales = tuple(gaussian_domain_scale(v) for v in variances)
    return NoisyGroupSizes(h, values.astype(np.float64), data.G, kind, scales, info=info), ledger


def _truth(data: GroupSizeData, kind: str) -> np.ndarray:
    """The exact int64 vectors a measurement of ``kind`` adds noise to."""
    if kind == "counts":
        return np.array(data.counts, dtype=np.int64)
    if kind == "cumulative":
        return cumulative(np.asarray(data.counts, dtype=np.int64))
    if kind == "chain":
        return chain_cumulative(data.hierarchy, np.asarray(data.counts, dtype=np.int64))
    raise DataValidationError("kind", f"must be 'counts', 'cumulative' or 'chain', got {kind!r}")


def level_split(budget: Fraction, n_levels: int, level_shares=None, unit: str = "epsilon") -> list[Fraction]:
    """The budget of every level: ``budget / L``, or ``budget * share / sum(shares)`` (exact fractions).

    Parameters
    ----------
    budget : Fraction
        The measurement's total epsilon or rho.
    n_levels : int
        The hierarchy's number of levels.
    level_shares : sequence, optional
        One positive share per level, root first; None: equal shares.
    unit : str
        ``"epsilon"`` or ``"rho"``, for the error.
    """
    if level_shares is None:
        return split_budget(budget, n_levels)
    if isinstance(level_shares, str) or not hasattr(level_shares, "__len__") or len(level_shares) != n_levels:
        raise DataValidationError("level_shares", f"need one share per level ({n_levels}), got {level_shares!r}")
    shares = [exact(share, "level_shares") for share in level_shares]
    if any(share <= 0 for share in shares):
        raise DataValidationError("level_shares", f"must be > 0 (every level is measured), got {level_shares!r}")
    split = split_budget(budget, shares)
    if sum(split) != budget:  # split_budget's shares are exact; a failure here is a bug, never a leak
        raise DataValidationError("level_shares", f"the levels' {unit} do not add up to {budget}")
    return split


def _record_levels(ledger, h, kind: str, calibration: str, split, z_max: int, n_sizes: int) -> list[Fraction]:
    """Record every level's measurement in ``ledger`` (which refuses a scale no exact draw can keep
    exact) and return the scales: all of them are checked before anything is drawn."""
    scales = []
    for level, eps_level in enumerate(split, start=1):
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
    epsilon : Fraction or None
        The budget asked for (None for a discrete Gaussian run, whose budget is ``rho``).
    noisy : NoisyGroupSizes
        The measured values.
    release : Release
        The post-processing's output.
    ledger : PrivacyLedger
        The measurement's ledger.
    seconds_measure : float
        The measurement's wall time.
    rho : Fraction or None
        The zCDP budget asked for, for a discrete Gaussian run.
    """

    mechanism: str
    epsilon: Fraction | None
    noisy: NoisyGroupSizes
    release: Release
    ledger: PrivacyLedger
    seconds_measure: float
    rho: Fraction | None = None

    @property
    def epsilon_spent(self) -> Fraction | float:
        """The budget the ledger records as spent (the calibration may exceed ``epsilon``; ``inf`` for
        the discrete Gaussian, which is not pure DP: read :attr:`rho_spent`)."""
        return self.ledger.total_epsilon

    @property
    def rho_spent(self) -> Fraction | float:
        """The zCDP rho the ledger records as spent (a pure run's ``eps^2 / 2``)."""
        return self.ledger.total_rho


def run_mechanism(
    name: str,
    data: GroupSizeData,
    epsilon,
    seed=None,
    calibration: str = "sound",
    *,
    noise: str = "discrete-laplace",
    rho=None,
    level_shares=None,
    weighted: bool = False,
    **options,
) -> MechanismRun:
    """Measure ``data`` with mechanism ``name``'s noise and post-process the noisy values.

    Parameters
    ----------
    name : str
        A name of :data:`dpmodels.pgsr.postprocessing.MECHANISMS` (``"M_H^dp"``, ``"M_c^ch"``...).
    data : GroupSizeData
        The true group sizes.
    epsilon : float, Fraction or None
        The total budget of the measurement (None with ``noise="discrete-gaussian"``).
    seed : int, Generator or None
        The noise's randomness (:func:`dpmodels.core.randomness.make_rng`; None: secure).
    calibration : str
        ``"sound"`` or, for the chain only, the paper's ``"paper"`` (:func:`measure`).
    noise, rho : str, optional
        ``"discrete-laplace"`` (default) or ``"discrete-gaussian"`` with its zCDP budget ``rho``
        (:func:`measure`).
    level_shares : sequence, optional
        The budget's split over the levels (:func:`measure`; None: even).
    weighted : bool
        Post-process with each value weighed by its level's variance
        (:func:`dpmodels.pgsr.weights.measured_weights`, as a release does); False (default): the
        paper's unweighted objectives.
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
    noisy, ledger = measure(
        data, epsilon, spec.kind, make_rng(seed), calibration, noise=noise, rho=rho, level_shares=level_shares
    )
    measured = time.perf_counter() - tick
    if weighted:
        from .weights import measured_weights

        noisy = measured_weights(noisy)
    release = spec.post(noisy, **options)
    if noise == "discrete-gaussian":
        return MechanismRun(name, None, noisy, release, ledger, measured, as_epsilon(rho, "rho"))
    return MechanismRun(name, as_epsilon(epsilon), noisy, release, ledger, measured)
