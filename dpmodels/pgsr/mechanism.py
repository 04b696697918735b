"""PGSR mechanisms end to end: noisy measurement, then post-processing (spec 2.4, 4.4-4.6).

A mechanism is a *measurement* (geometric noise on counts, cumulative counts or the chain,
with the budget ``epsilon / L`` per level) followed by a *post-processing* that sees only
the :class:`NoisyGroupSizes` (noisy values plus the public hierarchy, N and G), never the
truth.  Post-processing cannot weaken privacy (Lemma 3), so a mechanism is epsilon-DP as
soon as its measurement is; each run carries a :class:`PrivacyLedger` to prove it.

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

import functools
import inspect
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from dpmodels.core.accounting import PrivacyLedger, split_budget
from dpmodels.core.errors import DataValidationError
from dpmodels.core.facade import solve
from dpmodels.core.marker import get_marker
from dpmodels.core.noise import as_epsilon, noisy_integers
from dpmodels.core.randomness import describe, make_rng

from .algorithms.relaxation import relaxed_values
from .data import GroupSizeData, NoisyGroupSizes, chain_cumulative, cumulative
from .domains import resolve_domains
from .models import build_cumulative_qip, build_hierarchical_qip, released_counts
from .sensitivity import NEIGHBOURS, level_sensitivity

__all__ = [
    "Release",
    "MechanismRun",
    "MECHANISMS",
    "measure",
    "postprocess",
    "run_mechanism",
]


# ---------------------------------------------------------------------- measurement
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
    data
        The true group sizes.
    epsilon
        The total budget of the measurement.
    kind
        The measured vectors: ``"counts"``, ``"cumulative"`` or ``"chain"``.
    rng
        A Generator or a seed (:func:`dpmodels.core.randomness.make_rng`; None: secure).
    calibration
        ``"sound"`` or, for the chain only, the paper's ``"paper"`` (see the module docstring).
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


# ---------------------------------------------------------------------- post-processing
@dataclass
class Release:
    """What a post-processing returns: released counts n in (regions, sizes) layout."""

    counts: np.ndarray
    status: str
    objective: float | None
    seconds: float
    solver: str
    info: dict = field(default_factory=dict)


def _timed(func: Callable) -> Callable:
    """Record the post-processing wall time in ``Release.seconds``."""

    @functools.wraps(func)
    def wrapper(noisy: NoisyGroupSizes, **options) -> Release:
        tick = time.perf_counter()
        release = func(noisy, **options)
        release.seconds = time.perf_counter() - tick
        return release

    return wrapper


def _fingerprinted(solver: str) -> bool:
    """Whether a model solved by ``solver`` needs its fingerprint: only structure plugins read it.
    A backend (clarabel, highs, scip) never does, and hashing the model took about a third of
    M_H^r's and M_c^r's post-processing with clarabel (1.0 of 3.2 s and 2.3 of 5.9 s, profiled,
    13,500 cells)."""
    from dpmodels.core.capabilities import BACKENDS, canonical

    return canonical(solver) not in BACKENDS


def _model_release(model, solver: str, rounding: str, time_limit: float | None) -> Release:
    results = solve(model, solver, time_limit=time_limit)
    status = results.solution_status.name
    if results.solution_loader.get_number_of_solutions() == 0:
        shape = get_marker(model).data.noisy.values.shape
        return Release(
            np.full(shape, np.nan), status, None, 0.0, solver, {"termination": results.termination_condition.name}
        )
    counts = released_counts(model, rounding)
    if rounding == "none":
        counts = np.round(counts)  # integer solutions within the MIP tolerance
    return Release(
        counts.astype(np.int64) if np.isfinite(counts).all() else counts,
        status,
        results.incumbent_objective,
        0.0,
        solver,
        {"termination": results.termination_condition.name, "bound": results.objective_bound},
    )


@_timed
def post_hierarchical_qip(noisy, solver="scip", domains="truncated", time_limit=None) -> Release:
    """M_H: Model 1 solved as a QIP."""
    model = build_hierarchical_qip(noisy, domains=domains, on_infeasible="widen", fingerprint=_fingerprinted(solver))
    return _model_release(model, solver, "none", time_limit)


@_timed
def post_hierarchical_relaxed(noisy, solver="clarabel", domains="truncated", time_limit=None) -> Release:
    """M_H^r: Model 1-R, then every entry rounded half up (may break consistency).

    ``solver="pgsr_relax"`` solves Model 1-R on the plain data by demand functions (no Pyomo
    model: about a second on the census shape, where the model alone takes minutes and GBs).
    """
    if solver == "pgsr_relax":
        return _plain_relaxed_release(noisy, domains, time_limit)
    model = build_hierarchical_qip(
        noisy, relax=True, domains=domains, on_infeasible="widen", fingerprint=_fingerprinted(solver)
    )
    return _model_release(model, solver, "half_up", time_limit)


def _plain_relaxed_release(noisy, domains, time_limit) -> Release:
    if time_limit is not None:
        raise DataValidationError("time_limit", "pgsr_relax is a finite algorithm with nothing to stop; leave it unset")
    dom = resolve_domains(noisy, domains, None, "widen")
    relaxed = relaxed_values(noisy, dom)
    objective = float(((relaxed - noisy.values) ** 2).sum())
    counts = np.floor(relaxed + 0.5).astype(np.int64)
    return Release(counts, "optimal", objective, 0.0, "pgsr_relax", {"domain_widenings": dom.widenings})


@_timed
def post_hierarchical_dp(noisy, domains="truncated", method="windows") -> Release:
    """M_H^dp: the exact optimum of Model 1 on ``domains``.

    ``method="windows"`` (default) certifies it from windows around the relaxation, at a cost that
    does not grow with the domain (:mod:`.algorithms.window`); ``"tables"`` is the paper's TableMerge DP.
    """
    sol = _hierarchical_solver(method)(noisy, domains, on_infeasible="widen")
    return Release(sol.counts, "optimal", sol.objective, 0.0, "pgsr_dp", sol.info)


def _hierarchical_solver(method: str):
    """The exact Model 1 solver called ``method`` (see :func:`post_hierarchical_dp`)."""
    from .algorithms.hierarchical import solve_hierarchical
    from .algorithms.window import solve_exact

    solvers = {"windows": solve_exact, "tables": solve_hierarchical}
    if method not in solvers:
        raise DataValidationError("method", f"must be one of {sorted(solvers)}, got {method!r}")
    return solvers[method]


@_timed
def post_hierarchical_dp_op(noisy, domains="truncated", subsolver="highs") -> Release:
    """M_dp^OP: the same DP with one Model 4 solve per table entry."""
    from .algorithms.op import solve_hierarchical_op

    sol = solve_hierarchical_op(noisy, domains, on_infeasible="widen", subsolver=subsolver)
    return Release(sol.counts, "optimal", sol.objective, 0.0, "pgsr_dp_op", sol.info)


@_timed
def post_cumulative_qip(noisy, solver="scip", domains="truncated", time_limit=None) -> Release:
    """M_c: Model 2 solved as a QIP."""
    model = build_cumulative_qip(noisy, domains=domains, on_infeasible="widen", fingerprint=_fingerprinted(solver))
    return _model_release(model, solver, "none", time_limit)


@_timed
def post_cumulative_relaxed(noisy, solver="clarabel", domains="truncated", time_limit=None) -> Release:
    """M_c^r: Model 2-R, rounded half up, then de-cumulated."""
    model = build_cumulative_qip(
        noisy, relax=True, domains=domains, on_infeasible="widen", fingerprint=_fingerprinted(solver)
    )
    return _model_release(model, solver, "half_up", time_limit)


@_timed
def post_cumulative_dp(noisy, domains="truncated") -> Release:
    """M_c^dp: Algorithm 2 (isotonic step, rounding, then the DP)."""
    from .algorithms.cumulative import solve_cumulative_dp

    sol = solve_cumulative_dp(noisy, domains)
    return Release(sol.counts, "feasible", sol.objective, 0.0, "pgsr_cdp", sol.info)


@_timed
def post_chain(noisy, domains="truncated") -> Release:
    """M_c^ch: the corrected Model 3 by the chain DP."""
    from .algorithms.chain import solve_chain

    sol = solve_chain(noisy, domains, on_infeasible="widen")
    return Release(sol.counts, "optimal", sol.objective, 0.0, "pgsr_chain", sol.info)


@_timed
def post_topdown(noisy) -> Release:
    """TopDown (the paper's baseline): simplex projections and largest-remainder roundings, top down."""
    from .algorithms.topdown_baseline import solve_topdown_baseline

    sol = solve_topdown_baseline(noisy)
    return Release(sol.counts, "feasible", sol.objective, 0.0, "topdown_baseline", sol.info)


@dataclass(frozen=True)
class MechanismSpec:
    name: str
    kind: str
    post: Callable[..., Release]
    description: str

    @property
    def options(self) -> list[str]:
        """Keyword options its post-processing accepts."""
        return [p for p in inspect.signature(self.post).parameters if p != "noisy"]

    def check_options(self, options: dict) -> None:
        unknown = sorted(set(options) - set(self.options))
        if unknown:
            raise DataValidationError("options", f"{self.name} takes {self.options}, not {unknown}")


MECHANISMS: dict[str, MechanismSpec] = {
    m.name: m
    for m in [
        MechanismSpec("M_H", "counts", post_hierarchical_qip, "Model 1 QIP (exact, MIQP solver)"),
        MechanismSpec("M_H^r", "counts", post_hierarchical_relaxed, "Model 1-R QP + rounding"),
        MechanismSpec("M_H^dp", "counts", post_hierarchical_dp, "Model 1 by the TableMerge DP (exact)"),
        MechanismSpec(
            "M_dp^OP", "counts", post_hierarchical_dp_op, "Model 1 by the DP with sub-model solves (exact, slow)"
        ),
        MechanismSpec("M_c", "cumulative", post_cumulative_qip, "Model 2 QIP (exact, MIQP solver)"),
        MechanismSpec("M_c^r", "cumulative", post_cumulative_relaxed, "Model 2-R QP + rounding"),
        MechanismSpec("M_c^dp", "cumulative", post_cumulative_dp, "Algorithm 2: isotonic + rounding + DP"),
        MechanismSpec("M_c^ch", "chain", post_chain, "Model 3 by the chain DP (exact)"),
        MechanismSpec("TopDown", "counts", post_topdown, "TopDown baseline: per-level simplex projection + rounding"),
    ]
}


def postprocess(name: str, noisy: NoisyGroupSizes, **options) -> Release:
    """Run mechanism ``name``'s post-processing on noisy data only."""
    spec = _spec(name)
    noisy.require_kind(spec.kind, name)
    spec.check_options(options)
    return spec.post(noisy, **options)


def _spec(name: str) -> MechanismSpec:
    if name not in MECHANISMS:
        raise DataValidationError("mechanism", f"unknown {name!r}; choose from {list(MECHANISMS)}")
    return MECHANISMS[name]


@dataclass
class MechanismRun:
    """One end-to-end run: the noisy input, the release and the privacy ledger."""

    mechanism: str
    epsilon: Fraction
    noisy: NoisyGroupSizes
    release: Release
    ledger: PrivacyLedger
    seconds_measure: float

    @property
    def epsilon_spent(self) -> Fraction:
        return self.ledger.total_epsilon


def run_mechanism(
    name: str, data: GroupSizeData, epsilon, seed=None, calibration: str = "sound", **options
) -> MechanismRun:
    """Measure ``data`` with mechanism ``name``'s noise and post-process the noisy values.

    ``options`` go to the post-processing (``solver``, ``domains``, ``time_limit`` ...).
    """
    spec = _spec(name)
    spec.check_options(options)
    tick = time.perf_counter()
    noisy, ledger = measure(data, epsilon, spec.kind, make_rng(seed), calibration)
    measured = time.perf_counter() - tick
    release = spec.post(noisy, **options)
    return MechanismRun(name, as_epsilon(epsilon), noisy, release, ledger, measured)
