"""Private algorithms: Algorithms 1-4 and Mitrovic's private greedy.

Every exponential mechanism (:mod:`.exponential`, whose ``em_probabilities`` and ``em_choice``
are re-exported here, and the base sampler of :mod:`.exact_bases`) draws exactly, with inverse
temperature ``eps' = eps / (2 Delta)`` as a Fraction (Def 2.7), and is charged its exact
per-step cost (spec 1.7) in a :class:`PrivacyAccountant`.  Runs are private
unless flagged, so they need a finite ``eps > 0``; with ``diagnostic=True`` (or a non-private
accountant) ``eps = inf`` is the argmax (lowest index on ties) and ``eps = 0`` is uniform.
Data-independent randomness (gradient samples, Alg. 2 cover sub-samples, Alg. 4 subsets,
rounding) comes from streams separate from the mechanism's (:mod:`.streams`: secure without a
seed, reproducible and not private with one; the accountant records which).

``alg1_distribution`` and ``alg3_distribution`` enumerate the exact output distributions on tiny
instances: the privacy audit of spec 8.2.2 compares them on neighbouring datasets.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

import numpy as np

from dpmodels.core.errors import DataValidationError, PrivacyParameterError

from .accounting import (
    PrivacyAccountant,
    alg1_step_epsilon,
    alg2_step_epsilon,
    check_epsilon,
    check_private_epsilon,
    greedy_step_epsilon,
)
from .algorithms import GreedyResult, _extensions, check_pair, gradient_oracle, k_extensions, swap_rounding
from .data import KSubmodularFunction, SetFunction
from .exact_bases import sample_base as _sample_base
from .exponential import _inv_temp, em_choice, em_probabilities
from .matroids import Matroid
from .multilinear import gradient, has_closed_form, multilinear
from .results import ContinuousRelease, TrueDataDiagnostics, as_tuple, epsilon_spent
from .streams import streams as _streams

__all__ = [
    "em_probabilities",
    "em_choice",
    "grid_cover",
    "PrivateCGResult",
    "private_continuous_greedy",
    "improved_private_continuous_greedy",
    "alg2_sample_size",
    "decompose",
    "lift_to_bases",
    "mitrovic_private_greedy",
    "private_k_greedy",
    "private_k_greedy_sampled",
    "alg4_subset_size",
    "alg1_distribution",
    "alg2_distribution",
    "alg3_distribution",
    "privacy_loss",
]


# ----------------------------------------------------------------------------- streams


def _rngs(seed, names, acc: PrivacyAccountant) -> dict:
    """The run's streams (:func:`.streams.streams`); ``acc`` records the mechanism stream's source."""
    rngs = _streams(seed, names)
    acc.note_randomness(rngs["em"])
    return rngs


# ----------------------------------------------------------------------------- covers


def grid_cover(M: Matroid, q: int) -> np.ndarray:
    """``{z in {0, 1/q, ..., 1}^E : z in P(M)}``: a ``sqrt(|E|)/q``-cover of ``P(M)`` (spec 3.1)."""
    if int(q) < 1:
        raise DataValidationError("q", f"the grid resolution must be >= 1, got {q}")
    if (q + 1) ** M.n > 2_000_000:
        raise DataValidationError("q", f"the grid has (q+1)^|E| = {(q + 1) ** M.n} points; use cover='bases'")
    levels = np.arange(q + 1) / q
    pts = [np.array(z) for z in itertools.product(levels, repeat=M.n)]
    return np.array([z for z in pts if M.contains(z)])


def _cover_points(M: Matroid, cover: str, q, points) -> np.ndarray | None:
    if cover == "bases":
        return None
    if cover == "grid":
        if q is None:
            raise DataValidationError("q", "cover='grid' needs the grid resolution q")
        return grid_cover(M, q)
    if cover == "explicit":
        pts = np.asarray(points, dtype=np.float64)
        if pts.ndim != 2 or pts.shape[1] != M.n or not all(M.contains(p) for p in pts):
            raise DataValidationError("points", "explicit cover points must be rows in P(M)")
        return pts
    raise DataValidationError("cover", f"must be bases, grid or explicit, got {cover!r}")


# ----------------------------------------------------------------------------- Algorithm 1


@dataclass
class PrivateCGResult:
    """``x_T``, the directions, the rounded set, the accountant and counters of Alg. 1 / Alg. 2.

    :attr:`release` holds the private outputs ``x``, ``directions`` and ``S``.  ``diagnostics``
    holds ``f_D(x_T)`` and ``F_D(S)``, evaluated on the true data: report them in experiments,
    never release them (``value`` and ``rounded_value`` are their read-only aliases)."""

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


def _check_run(F: SetFunction, M: Matroid, epsilon, T, value_bound: float | None = None):
    check_pair(F, M)
    eps = check_epsilon(epsilon)
    T = M.r if T is None else int(T)
    if T < 1:
        raise DataValidationError("T", f"the number of steps must be >= 1, got {T}")
    _check_finite_scale(F, M, eps, value_bound)
    return eps, T


def _run_ledger(epsilon, accountant, diagnostic: bool) -> tuple[float, PrivacyAccountant]:
    """``(eps, accountant)`` of a mechanism run.  Private by default, so ``eps`` must be finite and
    ``> 0``; ``diagnostic=True`` or a non-private ``accountant`` admits the limits ``inf`` (the
    exact argmax) and ``0``, and the ledger records them as diagnostics."""
    acc = accountant if accountant is not None else PrivacyAccountant(private=not diagnostic)
    eps = check_private_epsilon(epsilon, private=acc.private and not diagnostic)
    if not 0 < eps < math.inf:
        acc.diagnostics.append(f"epsilon = {eps!r}: a non-private limit, not a private run")
    return eps, acc


def _check_finite_scale(F, M: Matroid, eps: float, value_bound: float | None = None) -> None:
    """Refuse up front a finite ``eps`` at which ``eps' = eps/(2 Delta)`` times the largest possible
    score overflows (review F3): the samplers would then raise, or return a wrong element, on some
    datasets and not on their neighbours.  Only public quantities decide: ``eps``, ``Delta``, the
    rank ``r``, ``|E|`` and the public bound ``M_F`` (``value_bound``, else ``F.max_value`` when
    the class declares it public).  Every score (a marginal gain, a gradient entry, or
    ``<y, grad f>`` with ``y`` in ``P(M)``) is at most ``r M_F``; the extra ``|E|`` factor leaves
    headroom for the samplers' log-space sums.  A private run without a public bound is refused:
    whether its scores overflow would depend on the data."""
    beta = _inv_temp(eps, F.sensitivity)
    if math.isinf(beta) or beta == 0.0:
        return
    bound = value_bound if value_bound is not None else (F.max_value if F.public_max_value else None)
    if bound is None or not math.isfinite(bound):
        raise PrivacyParameterError(
            "max_value",
            "a private run needs a public bound on F (declare max_value, or pass value_bound): without it, "
            "whether the mechanism's scores overflow would depend on the data",
        )
    if not math.isfinite(beta * float(bound) * max(M.r, 1) * M.n):
        raise PrivacyParameterError(
            "epsilon",
            "eps/(2 Delta) times the public score bound r M_F |E| overflows a float; "
            "use a smaller epsilon (epsilon=inf with diagnostic=True is the non-private argmax)",
        )


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
    bases by the spec 6.3 LP, A3)."""
    eps, acc = _run_ledger(epsilon, accountant, diagnostic)
    _, T = _check_run(F, M, eps, T)
    rngs = _rngs(seed, ["em", "gradient", "rounding"], acc)
    grad = gradient_oracle(F, gradient_mode, samples, rngs["gradient"])
    copies = _maurey_copies(cover, maurey_m)
    pts = None if cover == "maurey" else _cover_points(M, cover, q, points)
    beta = _inv_temp(epsilon, F.sensitivity)
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


def decompose(M: Matroid, directions) -> tuple[list, np.ndarray]:
    """Bases and coefficients with ``sum beta_B 1_B >= (1/T) sum_t y_t`` (public post-processing).

    0/1 base directions are used as they are; other points are lifted by the spec 6.3 LP, solved by
    column generation (:func:`lift_to_bases`), which is feasible for points of ``P(M)``."""
    T = len(directions)
    bases, coef = [], []
    for y in directions:
        if np.all((y == 0) | (y == 1)) and M.is_independent(y > 0.5) and int(y.sum()) == M.r:
            bases.append(y > 0.5)
            coef.append(1.0 / T)
            continue
        for B, lam in lift_to_bases(M, y):
            bases.append(B)
            coef.append(lam / T)
    coef = np.asarray(coef)
    return bases, coef / coef.sum()


def lift_to_bases(M: Matroid, y, max_iter: int = 500, tol: float = 1e-9):
    """Column generation on the lift LP (spec 6.3): restricted master over the bases found so far
    (HiGHS via Pyomo), pricing by the greedy max-weight base under the duals of the ``dominate``
    rows; stops when no base has positive reduced cost.  Public post-processing: ``y`` is an output."""
    import pyomo.environ as pyo

    from dpmodels.core.facade import solve

    from .models import build_lift_lp

    y = np.asarray(y, dtype=np.float64)
    if not M.contains(y):
        raise DataValidationError("y", "must lie in the matroid polytope")
    columns = [M.max_weight_base(y)]
    for _ in range(max_iter):
        model = build_lift_lp(M, y, columns, check=False)
        res = solve(model, "highs", raise_on_nonoptimal=True)
        duals = res.solution_loader.get_duals()
        pi = np.array([max(0.0, float(duals[model.dominate[e]])) for e in range(M.n)])
        mu = float(duals[model.convex])
        B = M.max_weight_base(pi)
        if pi[B].sum() + mu <= tol or any(np.array_equal(B, c) for c in columns):
            break
        columns.append(B)
    if res.incumbent_objective > 1e-7:
        raise DataValidationError(
            "y", f"could not be dominated by a convex combination of bases (shortfall {res.incumbent_objective})"
        )
    lam = np.clip([pyo.value(model.lam[b]) for b in range(len(columns))], 0.0, None)
    lam = lam / lam.sum()
    return [(columns[b], float(lam[b])) for b in np.flatnonzero(lam > 1e-12)]


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
    ``info`` holds only public quantities (``N``, ``K_L``, ``width``, ``value_bound``)."""
    eps, T = _check_run(F, M, epsilon, T, value_bound)
    if not 0 < eps < math.inf:
        raise PrivacyParameterError("epsilon", f"Algorithm 2 needs a finite positive epsilon, got {epsilon!r}")
    width = _alg2_width(eps, F.sensitivity, mu, mu_mode)
    bound, N, K_L = _alg2_size(F, M, width, sample_size, value_bound)
    acc = accountant if accountant is not None else PrivacyAccountant(private=True)
    rngs = _rngs(seed, ALG2_STREAMS, acc)
    grad = gradient_oracle(F, gradient_mode, samples, rngs["gradient"])
    pts = _cover_points(M, cover, q, None)
    beta = _inv_temp(epsilon, F.sensitivity)
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
    """``(value_bound, N, K_L)`` from public inputs only (review F3); called after :func:`_check_run`,
    which refuses a function without a public bound."""
    if value_bound is None:  # _check_run has refused a run without a public bound
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


def _alg2_width(eps: float, sensitivity: float, mu, mu_mode: str) -> float:
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


# ----------------------------------------------------------------------------- greedy-type mechanisms


def _greedy_mechanism_setup(F, M: Matroid, epsilon, accountant, diagnostic: bool = False):
    """Checks and state every greedy-type private mechanism starts from: ``(eps, accountant, beta)``."""
    check_pair(F, M)
    eps, acc = _run_ledger(epsilon, accountant, diagnostic)
    _check_finite_scale(F, M, eps)
    return eps, acc, _inv_temp(epsilon, F.sensitivity)


def mitrovic_private_greedy(
    F: SetFunction,
    M: Matroid,
    epsilon,
    seed=None,
    accountant: PrivacyAccountant | None = None,
    diagnostic: bool = False,
) -> GreedyResult:
    """Mitrovic et al.: ``r`` EM steps over the feasible ``e`` with score ``F(S + e) - F(S)``; ``eps`` per step."""
    eps, acc, beta = _greedy_mechanism_setup(F, M, epsilon, accountant, diagnostic)
    rng = _rngs(seed, ["em"], acc)["em"]
    start = F.calls
    S = np.zeros(F.n, bool)
    order = []
    for t in range(M.r):
        cand = _extensions(M, S)
        base = F(S)
        gains = []
        for e in cand:
            S[e] = True
            gains.append(F(S) - base)
            S[e] = False
        idx, _ = em_choice(gains, beta, rng)
        S[cand[idx]] = True
        order.append(cand[idx])
        acc.charge(f"mitrovic step {t + 1}", greedy_step_epsilon(epsilon))
    calls = F.calls - start
    res = GreedyResult(S, TrueDataDiagnostics(F(S)), calls, order)
    res.accountant = acc
    return res


def _k_step(F: KSubmodularFunction, s, cand, beta, rng):
    """One EM over ``cand x [k]`` with score ``Delta_{e,i} F(s)`` (``k |cand| + 1`` oracle calls)."""
    base = F(s)
    pairs, gains = [], []
    for e in cand:
        for i in range(1, F.k + 1):
            s[e] = i
            gains.append(F(s) - base)
            s[e] = 0
            pairs.append((e, i))
    idx, probs = em_choice(gains, beta, rng)
    return pairs[idx], pairs, probs


def private_k_greedy(
    F: KSubmodularFunction,
    M: Matroid,
    epsilon,
    seed=None,
    accountant: PrivacyAccountant | None = None,
    diagnostic: bool = False,
) -> GreedyResult:
    """Algorithm 3: ``r`` EM steps over ``Lambda(x) x [k]``; ``eps`` per step (cancellation), ``eps r`` total."""
    eps, acc, beta = _greedy_mechanism_setup(F, M, epsilon, accountant, diagnostic)
    rng = _rngs(seed, ["em"], acc)["em"]
    start = F.calls
    s = np.zeros(F.n, dtype=np.int64)
    order = []
    for t in range(M.r):
        (e, i), _, _ = _k_step(F, s, k_extensions(M, s), beta, rng)
        s[e] = i
        order.append((e, i))
        acc.charge(f"alg3 step {t + 1}", greedy_step_epsilon(epsilon))
    calls = F.calls - start
    res = GreedyResult(s, TrueDataDiagnostics(F(s)), calls, order)
    res.accountant = acc
    return res


def alg4_subset_size(n: int, r: int, t: int, gamma: float) -> int:
    """``s_t = min(ceil((|E|-t+1)/(r-t+1) ln(r/gamma)), |E|-t+1)`` (A13)."""
    return min(math.ceil((n - t + 1) / (r - t + 1) * math.log(r / gamma)), n - t + 1)


#: Alg. 4's independent random streams, in spawn order (the subsets ``R`` never see data).
ALG4_STREAMS = ("em", "subsets")


def private_k_greedy_sampled(
    F: KSubmodularFunction,
    M: Matroid,
    epsilon,
    gamma: float = 0.1,
    seed=None,
    accountant: PrivacyAccountant | None = None,
    diagnostic: bool = False,
) -> GreedyResult:
    """Algorithm 4: like Alg. 3 but over ``R cap Lambda`` for a uniform ``R`` of size ``s_t`` drawn from
    a data-independent stream; an empty intersection redraws ``R`` (counted in ``info``)."""
    if not 0 < gamma < 1:
        raise DataValidationError("gamma", f"the failure probability must be in (0, 1), got {gamma}")
    eps, acc, beta = _greedy_mechanism_setup(F, M, epsilon, accountant, diagnostic)
    rngs = _rngs(seed, ALG4_STREAMS, acc)
    start = F.calls
    s = np.zeros(F.n, dtype=np.int64)
    order, redraws, sizes = [], 0, []
    r = M.r
    for t in range(1, r + 1):
        lam = set(k_extensions(M, s))
        free = np.flatnonzero(s == 0)
        size = alg4_subset_size(F.n, r, t, gamma)
        while True:
            R = rngs["subsets"].choice(free, size=min(size, free.size), replace=False)
            cand = sorted(int(e) for e in R if int(e) in lam)
            if cand:
                break
            redraws += 1
        sizes.append(len(cand))
        (e, i), _, _ = _k_step(F, s, cand, beta, rngs["em"])
        s[e] = i
        order.append((e, i))
        acc.charge(f"alg4 step {t}", greedy_step_epsilon(epsilon))
    calls = F.calls - start
    res = GreedyResult(s, TrueDataDiagnostics(F(s)), calls, order)
    res.accountant = acc
    res.info = {"redraws": redraws, "candidates": sizes}
    return res


# ----------------------------------------------------------------------------- exact distributions


def alg1_distribution(
    F: SetFunction, M: Matroid, epsilon, T: int | None = None, cover: str = "bases", q: int | None = None
) -> dict[tuple, float]:
    """The exact distribution of ``x_T`` of Alg. 1 with exact gradients (tiny instances)."""
    eps, T = _check_run(F, M, epsilon, T)
    pts = _cover_points(M, cover, q, None)
    cands = np.array(M.bases(), dtype=float) if pts is None else pts
    beta = _inv_temp(eps, F.sensitivity)
    return _continuous_distribution(F.n, T, lambda t, x: (cands, em_probabilities(cands @ gradient(F, x), beta)))


def alg2_distribution(
    F: SetFunction, M: Matroid, epsilon, subsamples, width: float | None = None
) -> dict[tuple, float]:
    """The exact distribution of ``x_T`` of Alg. 2 conditional on its (data-independent) per-step
    sub-samples ``subsamples[t]`` (arrays of cover points), with exact gradients; ``T = len(subsamples)``.
    ``width`` is ``ln(1 + mu)`` (default ``eps``, i.e. ``mu = e^eps - 1``)."""
    check_pair(F, M)
    eps = check_epsilon(epsilon)
    if not 0 < eps < math.inf:
        raise PrivacyParameterError("epsilon", f"Algorithm 2 needs a finite positive epsilon, got {epsilon!r}")
    _check_finite_scale(F, M, eps)
    w = eps if width is None else float(width)
    T = len(subsamples)
    beta = _inv_temp(eps, F.sensitivity)

    def step(t, x):
        pts = np.asarray(subsamples[t], dtype=np.float64)
        return pts, em_probabilities(w * np.floor(pts @ gradient(F, x) / w), beta)

    return _continuous_distribution(F.n, T, step)


def _continuous_distribution(n: int, T: int, step) -> dict[tuple, float]:
    """Enumerate every path of a continuous-greedy sampler: ``step(t, x_t)`` gives the candidate
    points and their probabilities; ``x_t = total / T`` as in the samplers."""
    out: dict[tuple, float] = {}

    def walk(total, t, p):
        x = total / T
        if t == T:
            key = tuple(np.round(x, 12))
            out[key] = out.get(key, 0.0) + p
            return
        pts, probs = step(t, x)
        for y, py in zip(pts, probs, strict=True):
            if py > 0:
                walk(total + y, t + 1, p * py)

    walk(np.zeros(n), 0, 1.0)
    return out


def alg3_distribution(F: KSubmodularFunction, M: Matroid, epsilon) -> dict[tuple, float]:
    """The exact distribution of the output ``x`` of Alg. 3 (tiny instances)."""
    _, _, beta = _greedy_mechanism_setup(F, M, epsilon, None, diagnostic=True)  # an audit oracle, no release
    out: dict[tuple, float] = {}

    def walk(s, t, p):
        if t == M.r:
            key = tuple(int(v) for v in s)
            out[key] = out.get(key, 0.0) + p
            return
        base = F(s)
        pairs, gains = [], []
        for e in k_extensions(M, s):
            for i in range(1, F.k + 1):
                s2 = s.copy()
                s2[e] = i
                pairs.append(s2)
                gains.append(F(s2) - base)
        for s2, ps in zip(pairs, em_probabilities(gains, beta), strict=True):
            if ps > 0:
                walk(s2, t + 1, p * ps)

    walk(np.zeros(F.n, dtype=np.int64), 0, 1.0)
    return out


def privacy_loss(P: dict, Q: dict) -> float:
    """``max_o |ln P(o)/Q(o)|`` over the union of supports (``inf`` if the supports differ)."""
    worst = 0.0
    for o in set(P) | set(Q):
        p, q = P.get(o, 0.0), Q.get(o, 0.0)
        if p == 0.0 and q == 0.0:
            continue
        if p == 0.0 or q == 0.0:
            return math.inf
        worst = max(worst, abs(math.log(p / q)))
    return worst
