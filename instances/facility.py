"""Facility-location instances (spec 4, 6, 7): worked examples, HSTs, points, graphs, lower-bound families.

Fixed instances: ``facility/example-a`` (spec 7.2), ``facility/example-b`` (7.3, the Claim-10
counterexample at λ = 1.2), ``facility/example-e`` (7.6, privacy near-tightness; ε = 1 or 0.5 only),
``facility/example-d`` (7.5, the 8-leaf star metric with m = 16).  Generators: random λ-HSTs,
points in the plane (uniform or clustered) and in higher dimension, random geometric graphs with
shortest-path metrics, the two-point and star lower-bound families with their closed-form optimum.
:func:`from_files` loads a user's points and counts; :func:`from_csv` a points CSV with a count column
(what ``dpmodels release facility`` reads).
"""

from __future__ import annotations

import math

import numpy as np

from dpmodels.core.errors import DataValidationError
from dpmodels.core.formulations import register_example
from dpmodels.core.noise import make_rng
from dpmodels.facility.checks import check_lambda
from dpmodels.facility.data import HST, HSTInstance, UFLInstance

from .facility_files import from_csv, from_files, from_frame
from .registry import register_generator, register_instance

__all__ = [
    "example_a",
    "example_b",
    "example_d",
    "example_e",
    "random_hst",
    "plane_points",
    "points_nd",
    "graph_metric",
    "two_point",
    "two_point_opt",
    "star_tree",
    "star_hst",
    "star_metric",
    "star_opt",
    "star_draw_counts",
    "from_files",
    "from_csv",
    "from_frame",
]

EXAMPLE_A_PARENT = [-1, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6]
EXAMPLE_A_LEVEL = [3, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0]


@register_instance("facility/example-a", "spec 7.2: 8-leaf binary 1.5-HST, N = (3,0,1,0,0,0,0,1), f = 3")
def example_a(f: float = 3.0) -> HSTInstance:
    tree = HST(np.array(EXAMPLE_A_PARENT), np.array(EXAMPLE_A_LEVEL), 1.5)
    return HSTInstance(tree, f, [3, 0, 1, 0, 0, 0, 0, 1], name="example A")


@register_instance("facility/example-b", "spec 7.3: Claim-10 counterexample, λ = 1.2, f = 6, N_v = 1, N_z = 6")
def example_b() -> HSTInstance:
    """Root (level 11) with u' and u (level 10); u' has chains to leaves v and z, u one chain to an empty leaf."""
    parent, level = [-1, 0, 0], [11, 10, 10]
    leaves = []
    for top in (1, 1, 2):  # chains to v, z (under u'), and the empty leaf (under u)
        prev = top
        for lvl in range(9, -1, -1):
            parent.append(prev)
            level.append(lvl)
            prev = len(parent) - 1
        leaves.append(prev)
    tree = HST(np.array(parent), np.array(level), 1.2, np.array(leaves))
    return HSTInstance(tree, 6.0, [1, 6, 0], name="example B", info={"u": 2, "u_prime": 1})


def chain_tree(depth: int, lam: float = 1.5) -> HST:
    """A single chain of ``depth`` edges: one location."""
    return HST(np.r_[-1, np.arange(depth)], np.arange(depth, -1, -1), lam)


#: Spec 7.6 fixes f for two budgets only: ε = 1 (L' = 10) and ε = 0.5 (L' = 13).
EXAMPLE_E_F = {1.0: 1.5**9 * 1.0001, 0.5: 2 * 1.5**12 * 1.0001}


@register_instance("facility/example-e", "spec 7.6: chain of depth 15, λ = 1.5, f = 1.5^9 * 1.0001, one empty leaf")
def example_e(epsilon: float = 1.0) -> HSTInstance:
    """``f = 1.5^9 * 1.0001`` for ε = 1 (L' = 10) and ``2 * 1.5^12 * 1.0001`` for ε = 0.5 (L' = 13);
    any other ε is refused (the spec gives no f, hence no exact ε_M, for it)."""
    if epsilon not in EXAMPLE_E_F:
        raise DataValidationError(
            "epsilon", f"example E is defined for ε in {sorted(EXAMPLE_E_F)} only, got {epsilon!r}"
        )
    f = EXAMPLE_E_F[epsilon]
    return HSTInstance(chain_tree(15), f, [0], name="example E", info={"epsilon": float(epsilon)})


@register_instance("facility/example-d", "spec 7.5: star metric, m = 16, f = 1, r = 0.25, N = (1,1,16,1,1,16,1,1)")
def example_d() -> UFLInstance:
    """Centre b (location 0, no clients) and 8 leaves at radius r = 0.25 (2r apart); opt = MIP = LP = 4.5."""
    m, f, N = 16, 1.0, np.array([1, 1, 16, 1, 1, 16, 1, 1])
    r = f / math.sqrt(m)
    d = np.full((N.size + 1, N.size + 1), 2 * r)
    d[0, :] = d[:, 0] = r
    np.fill_diagonal(d, 0.0)
    return UFLInstance(d=d, f=f, N=np.r_[0, N], name="example D", info={"m": m, "r": r, "opt": star_opt(N, m, f, r)})


@register_generator("facility/random-hst", "random λ-HST (depth, branching 1..max_branch) with random leaf counts")
def random_hst(
    seed=0,
    depth: int = 4,
    max_branch: int = 3,
    lam: float = 1.5,
    f: float = 5.0,
    max_count: int = 3,
    p_client: float = 0.6,
) -> HSTInstance:
    """Each internal node gets 1..max_branch children; each leaf has clients with probability p_client."""
    if depth < 1 or max_branch < 1 or max_count < 1 or not 0 <= p_client <= 1:
        raise DataValidationError("shape", "need depth >= 1, max_branch >= 1, max_count >= 1, p_client in [0, 1]")
    rng = make_rng(seed)
    parent, level = [-1], [depth]
    frontier = [0]
    for lvl in range(depth - 1, -1, -1):
        nxt = []
        for u in frontier:
            for _ in range(int(rng.integers(1, max_branch + 1))):
                parent.append(u)
                level.append(lvl)
                nxt.append(len(parent) - 1)
        frontier = nxt
    tree = HST(np.array(parent), np.array(level), lam)
    N = np.where(rng.random(tree.n) < p_client, rng.integers(1, max_count + 1, tree.n), 0)
    return HSTInstance(tree, f, N, name=f"random HST (depth {depth}, seed {seed})")


def _counts(rng, n: int, max_count: int, p_client: float) -> np.ndarray:
    return np.where(rng.random(n) < p_client, rng.integers(1, max_count + 1, n), 0)


@register_generator("facility/plane", "n points in the unit square (uniform or in clusters), random client counts")
def plane_points(
    seed=0, n: int = 50, clusters: int = 0, f: float = 0.5, max_count: int = 3, p_client: float = 0.7, dense=True
) -> UFLInstance:
    """``clusters = 0``: uniform points; otherwise Gaussian blobs (sd 0.03) around random centres."""
    return points_nd(seed, n, 2, clusters, f, max_count, p_client, dense)


@register_generator("facility/points", "n points in [0,1]^dim (uniform or clustered), random client counts")
def points_nd(
    seed=0,
    n: int = 50,
    dim: int = 3,
    clusters: int = 0,
    f: float = 0.5,
    max_count: int = 3,
    p_client: float = 0.7,
    dense: bool = True,
) -> UFLInstance:
    """``dense=False`` keeps only coordinates (for 10^5 points: no n x n matrix)."""
    if n < 1 or dim < 1 or clusters < 0:
        raise DataValidationError("shape", f"need n >= 1, dim >= 1, clusters >= 0, got {n}, {dim}, {clusters}")
    rng = make_rng(seed)
    if clusters:
        centres = rng.random((clusters, dim))
        pts = centres[rng.integers(0, clusters, n)] + rng.normal(0, 0.03, (n, dim))
    else:
        pts = rng.random((n, dim))
    N = _counts(rng, n, max_count, p_client)
    name = f"{'clustered' if clusters else 'uniform'} points (n={n}, dim={dim}, seed {seed})"
    if dense:
        from dpmodels.facility.data import euclidean

        return UFLInstance(d=euclidean(pts), f=f, N=N, name=name, info={"points": pts}, check_triangle=n <= 400)
    return UFLInstance(points=pts, f=f, N=N, name=name)


@register_generator("facility/graph", "random geometric graph in the unit square, shortest-path metric")
def graph_metric(
    seed=0, n: int = 40, radius: float = 0.3, f: float = 0.5, max_count: int = 3, p_client: float = 0.7
) -> UFLInstance:
    """Edges between points closer than ``radius`` weighted by length; the largest component is kept."""
    import networkx as nx

    rng = make_rng(seed)
    g = nx.random_geometric_graph(n, radius, seed=int(rng.integers(2**31)))
    for u, v in g.edges:
        g.edges[u, v]["weight"] = math.dist(g.nodes[u]["pos"], g.nodes[v]["pos"])
    comp = sorted(max(nx.connected_components(g), key=len))
    sub = g.subgraph(comp)
    d = nx.floyd_warshall_numpy(sub, nodelist=comp, weight="weight")
    d = (d + d.T) / 2
    N = _counts(rng, len(comp), max_count, p_client)
    pos = np.array([g.nodes[u]["pos"] for u in comp])
    return UFLInstance(
        d=d,
        f=f,
        N=N,
        name=f"geometric graph (n={len(comp)}, seed {seed})",
        labels=tuple(comp),
        info={"points": pos, "radius": radius},
        check_triangle=False,
    )


@register_generator("facility/two-point", "spec 4 two-point instance: d(a,b) = f/√m, b free, N clients at a")
def two_point(seed=0, m: int = 16, N: int = 1, f: float = 1.0) -> UFLInstance:
    """Non-uniform costs (``f`` at a, 0 at b): for the MIP and the lower-bound argument, not the mechanism."""
    if m < 1 or N < 1:
        raise DataValidationError("m", f"need m >= 1 and N >= 1 (the promise N >= 1), got m={m}, N={N}")
    r = f / math.sqrt(m)
    d = np.array([[0.0, r], [r, 0.0]])
    return UFLInstance(d=d, f=np.array([f, 0.0]), N=[N, 0], name=f"two-point (m={m}, N={N})", labels=("a", "b"))


def two_point_opt(N: int, m: int, f: float = 1.0) -> float:
    """Spec 4's cost table: open a (cost f) or not (N f/√m)."""
    return min(f, N * f / math.sqrt(m))


def star_tree(n: int, L: int = 3, lam: float = 1.5) -> HST:
    """The star as an HST: centre b = root (level L), each leaf a_i below a unary chain of L edges."""
    parent, level, leaves = [-1], [L], []
    for _ in range(n):
        prev = 0
        for lvl in range(L - 1, -1, -1):
            parent.append(prev)
            level.append(lvl)
            prev = len(parent) - 1
        leaves.append(prev)
    return HST(np.array(parent), np.array(level), lam, np.array(leaves))


def star_draw_counts(rng, n: int, m: int) -> np.ndarray:
    """The hard distribution 𝒫: ``N_i = m`` w.p. ``1/(√m+1)``, else 1, independently."""
    return np.where(rng.random(n) < 1 / (math.sqrt(m) + 1), m, 1)


def star_opt(N, m: int, f: float, r: float) -> float:
    """Closed-form optimum of a star realisation (spec 4): ``min(A, B)`` with b open (A) or closed (B)."""
    N = np.asarray(N)
    n1, nm = int((N == 1).sum()), int((N == m).sum())
    if n1 + nm != N.size:
        raise DataValidationError("N", f"star counts must be 1 or m = {m}")
    A = f + n1 * r + nm * min(f, m * r)
    B = nm * f + n1 * min(2 * r, f) if nm >= 1 else f + (n1 - 1) * min(2 * r, f)
    return min(A, B)


@register_generator("facility/star", "spec 4 star family as a λ-HST (centre = root, sites all_nodes), N ~ 𝒫")
def star_hst(seed=0, m: int = 16, n: int = 16, L: int = 3, lam: float = 1.5) -> HSTInstance:
    """Radius ``g_L`` = ``√ε f`` with ``ε = 1/m``, so ``f = g_L √m`` (e.g. 19 for λ = 1.5, L = 3, m = 16)."""
    if m < 1 or n < 1:
        raise DataValidationError("m", f"need m >= 1 and n >= 1, got m={m}, n={n}")
    lam = check_lambda(lam)
    tree = star_tree(n, L, lam)
    r = float(tree.g(L))
    f = r * math.sqrt(m)
    N = star_draw_counts(make_rng(seed), n, m)
    return HSTInstance(
        tree, f, N, name=f"star (m={m}, n={n})", info={"m": m, "r": r, "epsilon": 1 / m, "opt": star_opt(N, m, f, r)}
    )


@register_generator("facility/star-metric", "spec 4 star family as a general metric (b, a_1..a_n), N ~ 𝒫")
def star_metric(seed=0, m: int = 16, n: int = 16, f: float = 1.0) -> UFLInstance:
    r = f / math.sqrt(m)
    d = np.full((n + 1, n + 1), 2 * r)
    d[0, :] = d[:, 0] = r
    np.fill_diagonal(d, 0.0)
    N = np.r_[0, star_draw_counts(make_rng(seed), n, m)]
    return UFLInstance(
        d=d, f=f, N=N, name=f"star metric (m={m}, n={n})", info={"m": m, "r": r, "opt": star_opt(N[1:], m, f, r)}
    )


# ---------------------------------------------------------------------- one tiny model per formulation
@register_example("facility.ufl")
def _example_ufl():
    """Example D's star metric (9 locations, f = 1, opt = 4.5): a general-metric UFL MIP."""
    from dpmodels.facility.models import build_ufl_mip

    return build_ufl_mip(example_d())


@register_example("facility.tree")
def _example_tree():
    """Example A (8-leaf binary 1.5-HST, f = 3) with facilities at the leaves (opt = 9)."""
    from dpmodels.facility.models import build_tree_model

    return build_tree_model(example_a())


@register_example("facility.lb9")
def _example_lb9():
    """Claim 9's antichain LP of example A."""
    from dpmodels.facility.models import build_lb9_lp

    return build_lb9_lp(example_a())
