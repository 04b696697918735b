"""The ε-DP facility-location mechanism on HSTs (spec 3.3-3.8), and its privacy accounting.

* :func:`algorithm1` - UFL-tree-base(ε), non-private: mark ``ℓ(v) >= L'`` or ``N_v λ^ℓ(v) >= f``,
  publish ``R = minset(M)``.
* :func:`algorithm2` - DP-UFL-tree(ε): Laplace noise of scale ``f/(c η^{L'+ℓ})`` on every node
  below level L' (empty ones too), the same marking on the noisy counts, ``R = minset(M)``.
* The closest-facility rule in ``d_T`` with node-id ties; site modes ``"leaves"`` (default: open
  ``rep(s_T(v))``) and ``"all_nodes"`` (facilities at tree nodes).
* :func:`privacy_loss_exact` - the exact worst-case log-likelihood ratio of the marked set between
  two count vectors (spec 3.6); :func:`epsilon_used` its closed-form bound.
* The general-metric pipeline built on these, :func:`~dpmodels.facility.general_metric.dp_ufl_general`
  (FRT-λ tree, then :func:`run_tree`), lives in :mod:`.general_metric`.
* Results split what is published (``release``: T, R and public parameters) from what the true
  counts N decide (``diagnostics``: the opened set, each client's facility, every cost); report
  entries computed from N are labelled ``true ... (diagnostic)`` (:func:`true_label`).
* Baselines of spec 3.8: ``dp_uniform_noise``, ``dp_all_marked`` and ``gupta_style`` are
  RECONSTRUCTIONS inspired by the paper's description of Gupta et al. 2010, not their verified
  algorithm; ``open_all_client_locations`` is the trivial solution.

No Laplace variable is ever drawn: each noisy node's mark is drawn exactly from its law
(:mod:`.marks`, integer arithmetic on the generator's raw words), so nothing leaks through the
low bits of a floating-point sample (Mironov 2012).  ``rng=None`` draws from the secure
generator; a seed is for experiments (releases record the source, ``describe(rng)``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from dpmodels.core.errors import DataValidationError
from dpmodels.core.noise import make_rng
from dpmodels.core.randomness import describe

from .data import HST, HSTInstance, check_epsilon, check_lambda
from .hst import minset, nearest_in, node_distance, pad, rep, subtree_counts
from .marks import draw_marks, exact_spend, float_above, level_thresholds

__all__ = [
    "SITE_MODES",
    "BASELINES",
    "NON_PRIVATE",
    "NO_RANDOMNESS",
    "MAX_LPRIME",
    "robust_lprime",
    "noise_constant",
    "noise_scales",
    "epsilon_used",
    "true_label",
    "TreeRelease",
    "TreeDiagnostics",
    "TreeRun",
    "algorithm1",
    "algorithm2",
    "run_tree",
    "privacy_loss_exact",
]

SITE_MODES = ("leaves", "all_nodes")
#: Tree algorithms by name; the last three are labelled reconstructions (spec 3.8).
BASELINES = {
    "dp": "Algorithm 2 (DP-UFL-tree), the paper's mechanism",
    "base": "Algorithm 1 (UFL-tree-base), non-private",
    "open_all_client_locations": "non-private trivial solution: open every location with a client",
    "dp_uniform_noise": "RECONSTRUCTION (not [8]'s verified algorithm): Lap(L'/eps) at every level < L'",
    "dp_all_marked": "RECONSTRUCTION (not [8]'s verified algorithm): publish R = M instead of minset(M)",
    "gupta_style": "RECONSTRUCTION (not [8]'s verified algorithm): uniform noise and R = M",
}
#: Deterministic functions of N: their output changes between neighbours with probability 1, so no
#: finite ε covers them and they report ``eps_used = inf`` and ``private = False``.
NON_PRIVATE = frozenset({"base", "open_all_client_locations"})
#: The randomness source recorded by the deterministic algorithms, which draw nothing.
NO_RANDOMNESS = "none: deterministic, nothing drawn"
#: Largest L' accepted: padding builds a tree of depth >= L' (spec 2.1 footnote 1).
MAX_LPRIME = 10_000


def robust_lprime(epsilon: float, f: float, lam: float) -> int:
    """``L' = max{0, ⌈log_λ(εf)⌉}`` as the smallest ``ℓ >= 0`` with ``λ^ℓ >= εf (1 - 1e-12)`` (spec 3.3, A10).

    Rounding toward the smaller L' at exact powers of λ is the privacy-safe side.  λ must lie in
    (1, 2) (λ <= 1 has no such ℓ), and L' above :data:`MAX_LPRIME` is refused: the padded tree
    would have that many levels (λ close to 1 with a large εf).
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
    """Laplace scale per level ``ℓ = 0..L'-1``: ``b_ℓ = f / (c η^{L'+ℓ})`` (largest at the leaves)."""
    eta = math.sqrt(lam)
    ell = np.arange(lprime, dtype=float)
    return f / (noise_constant(lam) * eta ** (lprime + ell))


def epsilon_used(f: float, lam: float, lprime: int) -> float:
    """Basic composition over one ancestor per noisy level: ``sum_ℓ 1/b_ℓ`` (spec 3.6, <= ε), computed
    exactly for the float scales and rounded up (:func:`.marks.exact_spend`)."""
    return float_above(exact_spend(noise_scales(f, lam, lprime))) if lprime > 0 else 0.0


def true_label(name: str) -> str:
    """The label of a report entry evaluated on the true client counts N: ``"true <name> (diagnostic)"``."""
    return f"true {name} (diagnostic)"


@dataclass(frozen=True, eq=False)
class TreeRelease:
    """Everything a tree run publishes, and nothing else (spec 3.4, A15): the tree T (padded so
    that ``L >= L'``, data independent) and ``R`` (node ids), with the public parameters ``ε``,
    ``L'``, the per-level noise scales and ``ε used`` (``inf`` and ``private = False`` for the
    algorithms of :data:`NON_PRIVATE`, whose R is a deterministic function of N), and the
    randomness source of the marks (``describe(rng)``; :data:`NO_RANDOMNESS` if nothing is drawn).

    Each client derives its facility from (T, R) alone.  Releases compare by value (:meth:`as_dict`).
    """

    algorithm: str
    private: bool
    epsilon: float
    eps_used: float
    lprime: int
    scales: tuple
    tree: HST
    R: tuple
    randomness: str = NO_RANDOMNESS

    def as_dict(self) -> dict:
        """The release as plain Python values (the tree as its parent, level, λ and leaf arrays)."""
        tree = {"parent": self.tree.parent.tolist(), "level": self.tree.level.tolist(), "lam": self.tree.lam}
        tree["leaf_node"] = self.tree.leaf_node.tolist()
        fields = ("algorithm", "private", "epsilon", "eps_used", "lprime")
        out = {k: getattr(self, k) for k in fields} | {"scales": list(self.scales), "tree": tree, "R": list(self.R)}
        return out | {"randomness": self.randomness}

    def __eq__(self, other) -> bool:
        return isinstance(other, TreeRelease) and self.as_dict() == other.as_dict()


@dataclass(frozen=True, eq=False)
class TreeDiagnostics:
    """What the true client counts N decide once R is published, for reports and tests only: never
    release it beside R.  ``facility``: the node serving each location, ``-1`` where ``N_v = 0``;
    ``S``: the opened nodes; the facility and connection costs in ``d_T``, and their sum ``cost``."""

    facility: np.ndarray
    S: np.ndarray
    facility_cost: float
    connection_cost: float

    @property
    def cost(self) -> float:
        return self.facility_cost + self.connection_cost


@dataclass
class TreeRun:
    """One run of a tree algorithm: the published (T, R) in :attr:`release`, the true-data serving
    and costs in ``diagnostics``.

    ``marked`` is the mechanism's marked set M (``R = minset(M)``), internal state that is not
    published.  ``assign`` (``s_T(v)``, every location's nearest member of R) is a function of
    (T, R) alone.  ``S``, ``facility``, ``facility_cost``, ``connection_cost`` and ``cost`` are
    read-only aliases of ``diagnostics``: they depend on the true counts N.
    ``eps_used`` is the privacy spent (basic composition, spec 3.6, the exact ``sum 1/b_ℓ`` rounded
    up); it is ``inf`` for the non-private algorithms of :data:`NON_PRIVATE` (and by default, the
    safe side).  ``randomness`` names the marks' source (``describe(rng)``).
    """

    algorithm: str
    tree: HST  # padded so that L >= L'
    epsilon: float
    lprime: int
    marked: np.ndarray  # boolean over nodes
    R: np.ndarray  # node ids, the published super-set
    sites: str
    assign: np.ndarray  # s_T(v): nearest member of R of every location (node id)
    diagnostics: TreeDiagnostics
    scales: np.ndarray = field(default_factory=lambda: np.empty(0))
    eps_used: float = math.inf
    draws: int = 0
    randomness: str = NO_RANDOMNESS

    S = property(lambda self: self.diagnostics.S, doc="Opened node ids (true-data diagnostic).")
    facility = property(lambda self: self.diagnostics.facility, doc="Serving node per location (diagnostic).")
    facility_cost = property(lambda self: self.diagnostics.facility_cost, doc="``f |S|`` (diagnostic).")
    connection_cost = property(lambda self: self.diagnostics.connection_cost, doc="In ``d_T`` (diagnostic).")
    cost = property(lambda self: self.diagnostics.cost, doc="Total true cost in ``d_T`` (diagnostic).")

    @property
    def private(self) -> bool:
        """Whether the run is ε-DP at a finite ε (``eps_used``); False for Algorithm 1 and the trivial solution."""
        return self.algorithm not in NON_PRIVATE and math.isfinite(self.eps_used)

    @property
    def release(self) -> TreeRelease:
        """What the run publishes: (T, R) and the public parameters, nothing computed from N but R."""
        scales = tuple(float(b) for b in self.scales)
        R = tuple(int(u) for u in self.R)
        fields = (self.algorithm, self.private, self.epsilon, self.eps_used, self.lprime, scales, self.tree, R)
        return TreeRelease(*fields, self.randomness)


def _serve(tree: HST, f: float, N: np.ndarray, R: np.ndarray, sites: str, n_original: int | None = None):
    """The closest-facility rule (spec 3.5) and the opened set in the chosen site mode (spec 3.2).

    ``n_original``: node count before padding.  In ``all_nodes`` mode a client whose nearest member
    of R is a padded unary root opens the original root instead: post-processing of R, every leaf is
    strictly closer to the old root, so the cost only falls and S stays a set of original sites.
    """
    ident, _ = nearest_in(tree, R)
    assign = ident[tree.leaf_node]
    clients = N > 0
    if sites == "all_nodes":
        target = assign.copy()
        if n_original is not None and n_original < tree.n_nodes:
            old_root = int(np.flatnonzero(tree.parent == n_original)[0])  # pad() hangs it below node n_original
            target[target >= n_original] = old_root
    else:
        target = rep(tree)[assign]
    facility = np.where(clients, target, -1)
    S = np.unique(facility[clients])
    dist = node_distance(tree, tree.leaf_node[clients], facility[clients]) if clients.any() else np.empty(0)
    return assign, TreeDiagnostics(facility, S, f * S.size, float((N[clients] * dist).sum()))


def _check_sites(sites: str) -> str:
    if sites not in SITE_MODES:
        raise DataValidationError("sites", f"must be one of {SITE_MODES}, got {sites!r}")
    return sites


def algorithm1(instance: HSTInstance, epsilon: float = 1.0, sites: str = "leaves") -> TreeRun:
    """UFL-tree-base(ε) (spec 3.3), non-private; ε = 1 gives the O(1)-approximation."""
    return run_tree(instance, epsilon, "base", sites=sites)


def algorithm2(instance: HSTInstance, epsilon: float, rng=None, sites: str = "leaves") -> TreeRun:
    """DP-UFL-tree(ε) (spec 3.4): ε-DP under adding or removing one client (2ε under replace-one, A1)."""
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
    """
    if algorithm not in BASELINES:
        raise DataValidationError("algorithm", f"must be one of {sorted(BASELINES)}, got {algorithm!r}")
    eps = check_epsilon(epsilon)
    lam = check_lambda(instance.tree.lam, "tree.lam")
    sites = _check_sites(sites)
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
        assign, diagnostics = _serve(tree, f, N, R, sites, n_original)
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
    assign, diagnostics = _serve(tree, f, N, R, sites, n_original)
    return TreeRun(algorithm, tree, eps, lp, marked, R, sites, assign, diagnostics, scales, used, draws, source)


def _noisy_marks(counts, level, lp: int, scales, thresholds, rng) -> tuple[np.ndarray, int]:
    """Every node at level >= L' marked; every node below (empty ones too) marked by its exact draw."""
    marked = level >= lp
    noisy = np.flatnonzero(~marked)
    if noisy.size:
        marked[noisy] = draw_marks(counts[noisy], level[noisy], scales, thresholds, rng)
    return marked, int(noisy.size)


def _log_tail(x: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``log P[Lap(b) >= x]`` and ``log P[Lap(b) < x]``, numerically stable."""
    z = np.exp(-np.abs(x) / b)
    half = math.log(0.5)
    pos = x >= 0
    log_p = np.where(pos, half - x / b, np.log1p(-0.5 * z))
    log_q = np.where(pos, np.log1p(-0.5 * z), half + x / b)
    return log_p, log_q


def privacy_loss_exact(instance: HSTInstance, other_counts, epsilon: float, algorithm: str = "dp") -> float:
    """Exact worst-case privacy loss ``ε_M`` of the marked set between N and ``other_counts`` (spec 3.6).

    Marks are independent across nodes, so ``ε_M = sum_u max(|ln p_u/p'_u|, |ln (1-p_u)/(1-p'_u)|)``
    with ``p_u = P[N_u + Lap(b_ℓ) >= f/λ^ℓ]``.  R and the clients' facilities are post-processing.
    """
    if algorithm not in ("dp", "dp_uniform_noise"):
        raise DataValidationError("algorithm", "the exact oracle covers the noise of 'dp' and 'dp_uniform_noise'")
    eps = check_epsilon(epsilon)
    lam = check_lambda(instance.tree.lam, "tree.lam")
    other = instance.with_counts(other_counts).N
    lp = robust_lprime(eps, instance.f, lam)
    tree = pad(instance.tree, lp)
    noisy = np.flatnonzero(tree.level < lp)
    if noisy.size == 0:
        return 0.0
    scales = noise_scales(instance.f, lam, lp) if algorithm == "dp" else np.full(lp, lp / eps)
    lvl = tree.level[noisy]
    b = scales[lvl]
    threshold = instance.f / lam ** lvl.astype(float)
    a = subtree_counts(tree, instance.N)[noisy]
    a2 = subtree_counts(tree, other)[noisy]
    lp1, lq1 = _log_tail(threshold - a, b)
    lp2, lq2 = _log_tail(threshold - a2, b)
    return float(np.maximum(np.abs(lp1 - lp2), np.abs(lq1 - lq2)).sum())
