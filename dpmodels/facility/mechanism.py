"""The ε-DP facility-location mechanism on HSTs (spec 3.3-3.8) and its noise calibration.

* :func:`algorithm2` - DP-UFL-tree(ε): Laplace noise of scale ``f/(c η^{L'+ℓ})`` on every node
  below level L' (empty ones too), marking on the noisy counts, ``R = minset(M)``.
* :func:`algorithm1` - UFL-tree-base(ε), the same marking without noise (non-private): mark
  ``ℓ(v) >= L'`` or ``N_v λ^ℓ(v) >= f``, publish ``R = minset(M)``.
* :func:`run_tree` - any tree algorithm of :data:`BASELINES` by name.  Baselines of spec 3.8:
  ``dp_uniform_noise``, ``dp_all_marked`` and ``gupta_style`` are RECONSTRUCTIONS inspired by the
  paper's description of Gupta et al. 2010, not their verified algorithm;
  ``open_all_client_locations`` is the trivial solution.
* :func:`robust_lprime`, :func:`noise_scales`, :func:`epsilon_used` - L', the per-level scales and
  the ε they spend (basic composition, spec 3.6).

No Laplace variable is ever drawn: each noisy node's mark is drawn exactly from its law
(:mod:`.marks`, integer arithmetic on the generator's raw words), so nothing leaks through the
low bits of a floating-point sample (Mironov 2012).  ``rng=None`` draws from the secure
generator; a seed is for experiments (releases record the source, ``describe(rng)``).

A run's result (:mod:`.results`) splits what is published (T, R and public parameters) from what
the true counts N decide; serving the clients from R is post-processing (:mod:`.serving`); the
exact privacy loss of the marks, for audits, is in :mod:`.privacy_audit`; the general-metric
pipeline (FRT-λ tree, then :func:`run_tree`) in :mod:`.general_metric`.
"""

from __future__ import annotations

import math

import numpy as np

from dpmodels.core.errors import DataValidationError
from dpmodels.core.noise import make_rng
from dpmodels.core.randomness import describe

from .checks import check_epsilon, check_lambda
from .data import HSTInstance
from .hst import minset, pad, subtree_counts
from .marks import draw_marks, exact_spend, float_above, level_thresholds
from .results import NO_RANDOMNESS, TreeRun
from .serving import check_sites, serve

__all__ = [
    "BASELINES",
    "MAX_LPRIME",
    "robust_lprime",
    "noise_constant",
    "noise_scales",
    "epsilon_used",
    "algorithm1",
    "algorithm2",
    "run_tree",
]

#: Tree algorithms by name; the last three are labelled reconstructions (spec 3.8).
BASELINES = {
    "dp": "Algorithm 2 (DP-UFL-tree), the paper's mechanism",
    "base": "Algorithm 1 (UFL-tree-base), non-private",
    "open_all_client_locations": "non-private trivial solution: open every location with a client",
    "dp_uniform_noise": "RECONSTRUCTION (not [8]'s verified algorithm): Lap(L'/eps) at every level < L'",
    "dp_all_marked": "RECONSTRUCTION (not [8]'s verified algorithm): publish R = M instead of minset(M)",
    "gupta_style": "RECONSTRUCTION (not [8]'s verified algorithm): uniform noise and R = M",
}
#: Largest L' accepted: padding builds a tree of depth >= L' (spec 2.1 footnote 1).
MAX_LPRIME = 10_000


def robust_lprime(epsilon: float, f: float, lam: float) -> int:
    """``L' = max{0, ⌈log_λ(εf)⌉}`` as the smallest ``ℓ >= 0`` with ``λ^ℓ >= εf (1 - 1e-12)`` (spec 3.3, A10).

    Rounding toward the smaller L' at exact powers of λ is the privacy-safe side.  λ must lie in
    (1, 2) (λ <= 1 has no such ℓ), and L' above :data:`MAX_LPRIME` is refused: the padded tree
    would have that many levels (λ close to 1 with a large εf).

    Parameters
    ----------
    epsilon : float
        The privacy parameter ε > 0.
    f : float
        The facility cost.
    lam : float
        λ in (1, 2).
    """
    lam = check_lambda(lam, "lambda")
    eps = check_epsilon(epsilon)
    if not (math.isfinite(f) and f >= 0):
        raise DataValidationError("f", f"must be finite and >= 0, got {f}")
    target = eps * f * (1 - 1e-12)
    if target <= 1:
        return 0
    estimate = math.log(target) / math.log(lam)
    if estimate > MAX_LPRIME:
        raise DataValidationError(
            "epsilon*f",
            f"L' = ⌈log_λ(εf)⌉ ≈ {estimate:.4g} exceeds {MAX_LPRIME} levels for lambda = {lam}, "
            f"epsilon*f = {eps * f:.4g}: use a larger lambda or a smaller epsilon*f",
        )
    ell = max(0, math.floor(estimate) - 1)  # λ^ell <= target/λ < target: the loop below runs at most ~3 times
    while lam**ell < target:
        ell += 1
    if ell > MAX_LPRIME:
        raise DataValidationError(
            "epsilon*f", f"L' = {ell} exceeds {MAX_LPRIME} levels for lambda = {lam}, epsilon*f = {eps * f:.4g}"
        )
    return ell


def noise_constant(lam: float) -> float:
    """``c = (η - 1)/η²`` with ``η = √λ``."""
    eta = math.sqrt(lam)
    return (eta - 1) / eta**2


def noise_scales(f: float, lam: float, lprime: int) -> np.ndarray:
    """Laplace scale per level ``ℓ = 0..L'-1``: ``b_ℓ = f / (c η^{L'+ℓ})`` (largest at the leaves).

    Parameters
    ----------
    f : float
        The facility cost.
    lam : float
        λ in (1, 2).
    lprime : int
        L' (:func:`robust_lprime`).
    """
    eta = math.sqrt(lam)
    ell = np.arange(lprime, dtype=float)
    return f / (noise_constant(lam) * eta ** (lprime + ell))


def epsilon_used(f: float, lam: float, lprime: int) -> float:
    """Basic composition over one ancestor per noisy level: ``sum_ℓ 1/b_ℓ`` (spec 3.6, <= ε), computed
    exactly for the float scales and rounded up (:func:`.marks.exact_spend`).

    Parameters
    ----------
    f : float
        The facility cost.
    lam : float
        λ in (1, 2).
    lprime : int
        L' (:func:`robust_lprime`).
    """
    return float_above(exact_spend(noise_scales(f, lam, lprime))) if lprime > 0 else 0.0


def algorithm1(instance: HSTInstance, epsilon: float = 1.0, sites: str = "leaves") -> TreeRun:
    """UFL-tree-base(ε) (spec 3.3), non-private; ε = 1 gives the O(1)-approximation.

    Parameters
    ----------
    instance : HSTInstance
        The tree, the facility cost ``f`` and the client counts ``N`` (private).
    epsilon : float, default 1.0
        Sets L' (nothing is drawn).
    sites : {"leaves", "all_nodes"}, default "leaves"
        Where facilities open: ``rep`` of the serving node, or the tree node itself.
    """
    return run_tree(instance, epsilon, "base", sites=sites)


def algorithm2(instance: HSTInstance, epsilon: float, rng=None, sites: str = "leaves") -> TreeRun:
    """DP-UFL-tree(ε) (spec 3.4): ε-DP under adding or removing one client (2ε under replace-one, A1).

    Parameters
    ----------
    instance : HSTInstance
        The tree, the facility cost ``f`` and the client counts ``N`` (private).
    epsilon : float
        The privacy parameter ε > 0.
    rng : None, int or numpy.random.Generator, optional
        The marks' randomness: None draws from the secure generator; a seed is for experiments
        (not private).
    sites : {"leaves", "all_nodes"}, default "leaves"
        Where facilities open: ``rep`` of the serving node, or the tree node itself.

    Returns
    -------
    TreeRun
        The published (T, R) in ``release``; true-data costs in ``diagnostics``.
    """
    return run_tree(instance, epsilon, "dp", rng=rng, sites=sites)


def run_tree(instance: HSTInstance, epsilon: float, algorithm: str = "dp", rng=None, sites: str = "leaves") -> TreeRun:
    """Any tree algorithm of :data:`BASELINES` on an HST instance.

    The law of the marks, which an exact sampler must reproduce: nodes at level ``ℓ >= L'`` are
    always marked; a node ``u`` at ``ℓ < L'`` with subtree count ``N_u``, threshold ``τ = f/λ^ℓ``
    and scale ``b = scales[ℓ]`` is marked independently with ``P[N_u + Lap(b) >= τ]``, that is
    ``½ e^{-γ}`` if ``N_u < τ`` and ``1 - ½ e^{-γ}`` otherwise, ``γ = |τ - N_u| / b``
    (``= c η^{L'-ℓ} |1 - N_u λ^ℓ / f|`` for ``dp`` and ``dp_all_marked``).  The marks are drawn
    exactly from that law (:func:`.marks.draw_marks`, τ = ``Fraction(f) / Fraction(λ^ℓ)`` from the
    floats); ``rng=None`` is the secure generator.

    Parameters
    ----------
    instance : HSTInstance
        The tree, the facility cost ``f`` and the client counts ``N`` (private).
    epsilon : float
        The privacy parameter ε > 0.
    algorithm : str, default "dp"
        A key of :data:`BASELINES`.
    rng : None, int or numpy.random.Generator, optional
        The marks' randomness: None draws from the secure generator; a seed is for experiments
        (not private).
    sites : {"leaves", "all_nodes"}, default "leaves"
        Where facilities open: ``rep`` of the serving node, or the tree node itself.

    Returns
    -------
    TreeRun
    """
    if algorithm not in BASELINES:
        raise DataValidationError("algorithm", f"must be one of {sorted(BASELINES)}, got {algorithm!r}")
    eps = check_epsilon(epsilon)
    lam = check_lambda(instance.tree.lam, "tree.lam")
    sites = check_sites(sites)
    f, N = instance.f, instance.N
    lp = robust_lprime(eps, f, lam)
    tree = pad(instance.tree, lp)
    n_original = instance.tree.n_nodes
    counts = subtree_counts(tree, N)
    level = tree.level
    scales, used, draws, source = np.empty(0), math.inf, 0, NO_RANDOMNESS  # inf: NON_PRIVATE
    if algorithm == "open_all_client_locations":
        marked = level >= 0
        R = tree.leaf_node[N > 0] if np.any(N > 0) else tree.leaf_node
        assign, diagnostics = serve(tree, f, N, R, sites, n_original)
        return TreeRun(algorithm, tree, eps, lp, marked, np.sort(R), sites, assign, diagnostics, scales, used)
    if algorithm == "base":
        marked = (level >= lp) | (counts * lam ** level.astype(float) >= f)
    else:
        scales = noise_scales(f, lam, lp) if algorithm in ("dp", "dp_all_marked") else np.full(lp, lp / eps)
        used = float_above(exact_spend(scales))
        rng = make_rng(rng)
        source = describe(rng)
        marked, draws = _noisy_marks(counts, level, lp, scales, level_thresholds(f, lam, lp), rng)
    R = np.flatnonzero(marked if algorithm in ("dp_all_marked", "gupta_style") else minset(tree, marked))
    assign, diagnostics = serve(tree, f, N, R, sites, n_original)
    return TreeRun(algorithm, tree, eps, lp, marked, R, sites, assign, diagnostics, scales, used, draws, source)


def _noisy_marks(counts, level, lp: int, scales, thresholds, rng) -> tuple[np.ndarray, int]:
    """Every node at level >= L' marked; every node below (empty ones too) marked by its exact draw."""
    marked = level >= lp
    noisy = np.flatnonzero(~marked)
    if noisy.size:
        marked[noisy] = draw_marks(counts[noisy], level[noisy], scales, thresholds, rng)
    return marked, int(noisy.size)
