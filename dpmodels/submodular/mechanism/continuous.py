"""Algorithms 1 and 2: the private continuous-greedy mechanisms.

At each of ``T`` steps an exponential mechanism picks a direction ``y`` of the matroid polytope
with score ``<y, grad f(x)>`` and inverse temperature ``eps' = eps / (2 Delta)`` as a Fraction
(Def 2.7), drawn exactly (:mod:`.exponential`, and the base sampler of :mod:`dpmodels.submodular.exact`) and
charged its exact per-step cost (spec 1.7) in a :class:`PrivacyAccountant`; ``x_T`` is the mean
of the directions.  Algorithm 1 draws from a cover of ``P(M)`` (the bases, averages of bases, a
grid or explicit points); Algorithm 2 from a data-independent uniform sub-sample of the cover with
a quantised score.  A run starts under the family's contract (:mod:`.contract`: ledger, streams,
overflow refusal); gradient samples, Alg. 2's cover sub-samples and rounding draw from streams
separate from the exponential mechanism's.  ``x_T`` is rounded by swap rounding of bases;
non-base directions are first lifted to bases by the spec 6.3 LP (public post-processing,
:mod:`dpmodels.submodular.rounding`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from dpmodels.core.errors import DataValidationError, PrivacyParameterError

from ..accounting import PrivacyAccountant, alg1_step_epsilon, alg2_step_epsilon
from ..algorithms import gradient_oracle
from ..data import SetFunction
from ..exact.bases import sample_base as _sample_base
from ..matroids import Matroid
from ..objectives import has_closed_form, multilinear
from ..results import ContinuousRelease, TrueDataDiagnostics, as_tuple, epsilon_spent
from ..rounding import decompose, swap_rounding
from .contract import check_run, run_ledger, run_streams
from .covers import cover_points
from .exponential import em_choice, inverse_temperature

__all__ = [
    "PrivateCGResult",
    "private_continuous_greedy",
    "improved_private_continuous_greedy",
    "alg2_sample_size",
    "alg2_width",
    "ALG2_STREAMS",
]


# ----------------------------------------------------------------------------- Algorithm 1


@dataclass
class PrivateCGResult:
    """``x_T``, the directions, the rounded set, the accountant and counters of Alg. 1 / Alg. 2.

    :attr:`release` holds the private outputs ``x``, ``directions`` and ``S``.  ``diagnostics``
    holds ``f_D(x_T)`` and ``F_D(S)``, evaluated on the true data: report them in experiments,
    never release them (``value`` and ``rounded_value`` are their read-only aliases).

    Parameters
    ----------
    x : numpy.ndarray
        ``x_T`` (published).
    directions : list
        The directions drawn (published).
    S : numpy.ndarray or None
        The rounded base (published).
    diagnostics : TrueDataDiagnostics
        Values on the true data (never published).
    accountant : PrivacyAccountant
        The run's ledger.
    calls : int
        Oracle calls.
    score_evaluations : int
        Scores the exponential mechanisms evaluated.
    info : dict, optional
        Public parameters of the run.
    """

    x: np.ndarray
    directions: list
    S: np.ndarray | None
    diagnostics: TrueDataDiagnostics
    accountant: PrivacyAccountant
    calls: int
    score_evaluations: int
    info: dict = field(default_factory=dict)

    value = property(lambda self: self.diagnostics.value, doc="``f_D(x_T)`` on the true data (a diagnostic).")
    rounded_value = property(lambda self: self.diagnostics.rounded_value, doc="``F_D(S)`` (a diagnostic).")

    @property
    def release(self) -> ContinuousRelease:
        """The published output: ``x_T``, the directions, ``S``, the epsilon charged, public info."""
        S = None if self.S is None else as_tuple(self.S)
        dirs = tuple(as_tuple(y) for y in self.directions)
        info = tuple(sorted(self.info.items()))
        return ContinuousRelease(as_tuple(self.x), dirs, S, epsilon_spent(self.accountant), info)


def private_continuous_greedy(
    F: SetFunction,
    M: Matroid,
    epsilon,
    T: int | None = None,
    cover: str = "bases",
    q: int | None = None,
    points=None,
    maurey_m: int | None = None,
    gradient_mode: str = "auto",
    samples: int | None = None,
    rounding: str = "swap",
    seed=None,
    accountant: PrivacyAccountant | None = None,
    diagnostic: bool = False,
) -> PrivateCGResult:
    """Algorithm 1: at each of ``T`` steps (default ``r``) an EM over the cover ``C`` with score
    ``<y, grad f(x)>`` and ``eps' = eps/(2 Delta)``, then ``x = (y_1 + ... + y_t) / T``; charged ``2 eps r`` per step.

    Covers (A1): ``bases`` (EM over the bases via the matroid's product-weight sampler; the default),
    ``maurey`` (averages of ``maurey_m`` bases: ``maurey_m`` independent base EMs at ``eps'/m``, a
    ``sqrt(r/m)``-cover of ``B(M)``), ``grid`` (the faithful certified cover, tiny instances) and
    ``explicit``.  Rounding: swap rounding of the bases (grid/explicit directions are first lifted to
    bases by the spec 6.3 LP, A3).

    Parameters
    ----------
    F : SetFunction
        The objective (the private data), with its declared sensitivity.
    M : Matroid
        The constraint, on the same ground set.
    epsilon : float or Fraction
        The paper's per-mechanism epsilon (> 0 and finite unless ``diagnostic``).
    T : int, optional
        The number of steps (default the rank).
    cover : {"bases", "maurey", "grid", "explicit"}, default "bases"
        The cover of ``P(M)`` the mechanism draws from.
    q : int, optional
        The grid resolution (``cover="grid"``).
    points : array_like, optional
        The explicit cover (``cover="explicit"``).
    maurey_m : int, optional
        Bases averaged per direction (``cover="maurey"``).
    gradient_mode : {"auto", "closed_form", "exact_enum", "sampled"}, default "auto"
        How ``grad f`` is computed.
    samples : int, optional
        Common random sets per sampled gradient (``gradient_mode="sampled"``).
    rounding : {"swap", "none"}, default "swap"
        Round ``x_T`` to a base.
    seed : None, int or numpy.random.Generator, optional
        None (or a secure generator) for a private run; a seed gives reproducible streams, not private.
    accountant : PrivacyAccountant, optional
        The ledger charged (default: a new one).
    diagnostic : bool, default False
        Admit the non-private limits ``eps = inf`` (argmax) and ``eps = 0`` (uniform).

    Returns
    -------
    PrivateCGResult
    """
    eps, acc = run_ledger(epsilon, accountant, diagnostic)
    _, T = check_run(F, M, eps, T)
    rngs = run_streams(seed, ["em", "gradient", "rounding"], acc)
    grad = gradient_oracle(F, gradient_mode, samples, rngs["gradient"])
    copies = _maurey_copies(cover, maurey_m)
    pts = None if cover == "maurey" else cover_points(M, cover, q, points)
    beta = inverse_temperature(epsilon, F.sensitivity)
    start, scores = F.calls, 0
    total = np.zeros(F.n)  # x_t = (sum of directions) / T: no drift from repeated x + y/T (spec 8.4 T=1000)
    x = total
    directions, parts = [], []
    for t in range(T):
        g = grad(x)
        if pts is None:
            picks = [_sample_base(M, g, beta / copies, rngs["em"]) for _ in range(copies)]
            parts += [(B, 1.0 / (copies * T)) for B in picks]
            y = np.mean(picks, axis=0)
            scores += M.n * copies
        else:
            idx, _ = em_choice(pts @ g, beta, rngs["em"])
            y = pts[idx]
            scores += len(pts)
        acc.charge(f"alg1 step {t + 1}", alg1_step_epsilon(epsilon, M.r))
        directions.append(y)
        total = total + y
        x = total / T
    info = {"cover": cover, "cover_size": None if pts is None else len(pts), "maurey_m": copies}
    return _finish(F, M, directions, acc, F.calls - start, scores, rounding, rngs["rounding"], info, parts or None)


def _maurey_copies(cover: str, maurey_m) -> int:
    if cover != "maurey":
        if maurey_m is not None:
            raise DataValidationError("maurey_m", f"is an option of cover='maurey', not of cover={cover!r}")
        return 1
    if maurey_m is None or int(maurey_m) < 1:
        raise DataValidationError("maurey_m", f"cover='maurey' needs maurey_m >= 1, got {maurey_m!r}")
    return int(maurey_m)


def _finish(F, M, directions, acc, calls, scores, rounding, rng, info=None, parts=None) -> PrivateCGResult:
    """``x_T``, its value, and swap rounding of ``parts`` (bases and weights) or of the lifted directions."""
    x = np.clip(np.mean(directions, axis=0), 0.0, 1.0)
    value = multilinear(F, x) if has_closed_form(F) or F.n <= 16 else float("nan")
    S = rounded = None
    if rounding == "swap":
        if parts is not None:
            bases, coef = [B for B, _ in parts], np.array([c for _, c in parts])
        else:
            bases, coef = decompose(M, directions)
        S = swap_rounding(M, bases, coef, rng)
        rounded = F(S)
    elif rounding != "none":
        raise DataValidationError("rounding", f"must be swap or none, got {rounding!r}")
    diagnostics = TrueDataDiagnostics(value, rounded)
    return PrivateCGResult(x, directions, S, diagnostics, acc, calls, scores, dict(info or {}))


# ----------------------------------------------------------------------------- Algorithm 2


def alg2_sample_size(n: int, r: int, max_value: float, width: float) -> tuple[int, int]:
    """``(N, K_L)``: ``K_L <= ceil(r M_F / width) + 1`` and ``N = ceil(ln(2 K_L / theta) / (2 lambda^2))``
    with ``lambda = 1/sqrt|E|``, ``theta = 1/|E|^2``.  ``max_value`` must be a *public* bound ``M_F``
    (A7 iv): ``N`` fixes how many points the EM sees, so a data-derived ``M_F`` would leak."""
    K_L = math.ceil(r * max_value / width) + 1
    lam, theta = 1.0 / math.sqrt(n), 1.0 / n**2
    return math.ceil(math.log(2 * K_L / theta) / (2 * lam**2)), K_L


#: Alg. 2's independent random streams, in spawn order (the cover sub-samples never see data).
ALG2_STREAMS = ("em", "gradient", "subsample", "rounding")


def improved_private_continuous_greedy(
    F: SetFunction,
    M: Matroid,
    epsilon,
    T: int | None = None,
    cover: str = "bases",
    q: int | None = None,
    mu: float | None = None,
    mu_mode: str = "paper",
    sample_size: int | None = None,
    value_bound: float | None = None,
    gradient_mode: str = "auto",
    samples: int | None = None,
    rounding: str = "swap",
    seed=None,
    accountant: PrivacyAccountant | None = None,
) -> PrivateCGResult:
    """Algorithm 2 read as spec 3.2: an EM over a data-independent uniform sub-sample ``C'`` of the
    cover (a multiset of ``N`` points) with the quantised score ``w floor(<y, grad f>/w)``,
    ``w = ln(1 + mu)``; ``mu = e^eps - 1`` (A7 ii) or ``mu_mode="scale"`` (``w = Delta``, A7 v).
    Charged ``2 eps r + eps w / Delta`` per step.  Requires ``0 < eps < inf``.

    ``N`` is ``sample_size`` or else :func:`alg2_sample_size` from the public bound ``value_bound``
    (default: ``F.max_value`` when the function class declares it public; a callable whose
    ``max_value`` was read off the data needs ``value_bound``, which every private run requires).  The released
    ``info`` holds only public quantities (``N``, ``K_L``, ``width``, ``value_bound``).

    Parameters
    ----------
    F : SetFunction
        The objective (the private data), with its declared sensitivity.
    M : Matroid
        The constraint, on the same ground set.
    epsilon : float or Fraction
        The paper's per-mechanism epsilon, finite and > 0.
    T : int, optional
        The number of steps (default the rank).
    cover : {"bases", "grid"}, default "bases"
        The cover sub-sampled.
    q : int, optional
        The grid resolution (``cover="grid"``).
    mu : float, optional
        The quantisation parameter (``w = ln(1 + mu)``), overriding ``mu_mode``.
    mu_mode : {"paper", "scale"}, default "paper"
        ``mu = e^eps - 1``, or ``w = Delta``.
    sample_size : int, optional
        ``N``, the sub-sample size (default from ``value_bound``).
    value_bound : float, optional
        A public bound ``M_F`` (default ``F.max_value`` when public).
    gradient_mode : {"auto", "closed_form", "exact_enum", "sampled"}, default "auto"
        How ``grad f`` is computed.
    samples : int, optional
        Common random sets per sampled gradient (``gradient_mode="sampled"``).
    rounding : {"swap", "none"}, default "swap"
        Round ``x_T`` to a base.
    seed : None, int or numpy.random.Generator, optional
        None (or a secure generator) for a private run; a seed gives reproducible streams, not private.
    accountant : PrivacyAccountant, optional
        The ledger charged (default: a new one).

    Returns
    -------
    PrivateCGResult
    """
    eps, T = check_run(F, M, epsilon, T, value_bound)
    if not 0 < eps < math.inf:
        raise PrivacyParameterError("epsilon", f"Algorithm 2 needs a finite positive epsilon, got {epsilon!r}")
    width = alg2_width(eps, F.sensitivity, mu, mu_mode)
    bound, N, K_L = _alg2_size(F, M, width, sample_size, value_bound)
    acc = accountant if accountant is not None else PrivacyAccountant(private=True)
    rngs = run_streams(seed, ALG2_STREAMS, acc)
    grad = gradient_oracle(F, gradient_mode, samples, rngs["gradient"])
    pts = cover_points(M, cover, q, None)
    beta = inverse_temperature(epsilon, F.sensitivity)
    start, scores = F.calls, 0
    total = np.zeros(F.n)
    x = total
    directions = []
    for t in range(T):
        sub = _uniform_cover_sample(M, pts, N, rngs["subsample"])
        g = grad(x)
        quantised = width * np.floor(sub @ g / width)
        idx, _ = em_choice(quantised, beta, rngs["em"])
        scores += len(sub)
        acc.charge(f"alg2 step {t + 1}", alg2_step_epsilon(epsilon, M.r, width, F.sensitivity))
        directions.append(sub[idx])
        total = total + sub[idx]
        x = total / T
    info = {"sample_size": N, "K_L": K_L, "width": width, "value_bound": bound}
    return _finish(F, M, directions, acc, F.calls - start, scores, rounding, rngs["rounding"], info)


def _alg2_size(F: SetFunction, M: Matroid, width: float, sample_size, value_bound):
    """``(value_bound, N, K_L)`` from public inputs only (review F3); called after :func:`check_run`,
    which refuses a function without a public bound."""
    if value_bound is None:  # check_run has refused a run without a public bound
        value_bound = F.max_value
    bound = float(value_bound)
    if not 0 < bound < math.inf:
        raise PrivacyParameterError("value_bound", f"must be a finite positive bound M_F, got {value_bound!r}")
    N, K_L = alg2_sample_size(F.n, M.r, bound, width)
    if sample_size is not None:
        N = int(sample_size)
    if N < 1:
        raise DataValidationError("sample_size", f"must be >= 1, got {N}")
    return bound, N, K_L


def alg2_width(eps: float, sensitivity: float, mu, mu_mode: str) -> float:
    """Algorithm 2's quantisation width ``w = ln(1 + mu)``.

    Parameters
    ----------
    eps : float
        The run's epsilon (``w = eps`` for ``mu_mode="paper"``: ``mu = e^eps - 1``).
    sensitivity : float
        The declared ``Delta`` (``w = Delta`` for ``mu_mode="scale"``).
    mu : float or None
        An explicit ``mu > 0``, overriding ``mu_mode``.
    mu_mode : {"paper", "scale"}
        How ``mu`` is chosen when not given.
    """
    if mu is not None:
        if mu <= 0:
            raise PrivacyParameterError("mu", f"must be > 0, got {mu}")
        return math.log1p(mu)
    if mu_mode == "paper":
        return eps  # mu = e^eps - 1
    if mu_mode == "scale":
        return sensitivity
    raise DataValidationError("mu_mode", f"must be paper or scale, got {mu_mode!r}")


def _uniform_cover_sample(M: Matroid, pts, N: int, rng) -> np.ndarray:
    """``N`` uniform draws (with replacement) from the cover; for ``bases``, uniform bases."""
    if pts is None:
        zeros = np.zeros(M.n)
        return np.array([M.sample_base(zeros, rng) for _ in range(N)], dtype=float)
    return pts[rng.integers(len(pts), size=N)]
