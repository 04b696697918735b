"""Submodular and k-submodular instances (spec 7.2, 7.3 [S], 8.4).

The paper has no datasets: the fixed instances are the spec's worked examples (the partition-matroid
greedy trap, Example 1, and the k-coverage Example 2, each with its neighbouring dataset), the
generators draw sparse synthetic coverage, facility-location and k-coverage instances, and the
loaders read a user's sets file (coverage) or sparse similarity file (facility location) without
ever allocating a dense |E| x |V| matrix.  :func:`from_csv` (:mod:`.submodular_csv`) reads the
files of ``dpmodels release submodular``: the public ground set and matroid, the private
coverage pairs and optional weights, data outside the declared bounds handled by stated rules.
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from dpmodels.core.errors import DataValidationError
from dpmodels.core.formulations import register_example
from dpmodels.core.noise import make_rng
from dpmodels.submodular.data import KSubmodularInstance, SubmodularInstance
from dpmodels.submodular.matroids import GraphicMatroid, PartitionMatroid, UniformMatroid
from dpmodels.submodular.objectives import FacilityLocation, KCoverage, WeightedCoverage

from .registry import register_generator, register_instance
from .submodular_csv import from_csv

__all__ = [
    "trap",
    "k_coverage_example",
    "coverage",
    "facility",
    "k_coverage",
    "coverage_from_file",
    "facility_from_file",
    "make_matroid",
    "from_csv",
]


@register_instance("submodular/trap", "spec 8.4 Example 1: partition-matroid greedy trap (greedy 0.55 OPT)")
def trap() -> SubmodularInstance:
    """E = {a, b, c}, blocks {a, b} and {c} of capacity 1; users p, q, s with w = (1, 0.1, 1),
    N(a) = {p, q}, N(b) = {s}, N(c) = {p}; Delta = 1.  Neighbour: s moves from b to a."""
    inc = np.array([[1, 1, 0], [0, 0, 1], [1, 0, 0]])
    F = WeightedCoverage(inc, [1.0, 0.1, 1.0], sensitivity=1.0)
    M = PartitionMatroid([0, 0, 1], [1, 1])
    return SubmodularInstance(F, M, "submodular/trap", F.replace_user(2, [0]))


@register_instance("submodular/k-coverage-example", "spec 8.4 Example 2: k-coverage, k = 2, uniform rank 2, OPT 5")
def k_coverage_example() -> KSubmodularInstance:
    """N_1(1) = {v1, v2}, N_2(1) = {v3}, N_1(2) = {v2, v3}, N_2(2) = {v4, v5}, N_1(3) = {v1},
    N_2(3) = {v1, v2, v3}; Delta = 1.  Neighbour: v1 leaves every set and joins N_2(2)."""
    n1, n2 = np.zeros((3, 5)), np.zeros((3, 5))
    for e, users in {0: [0, 1], 1: [1, 2], 2: [0]}.items():
        n1[e, users] = 1
    for e, users in {0: [2], 1: [3, 4], 2: [0, 1, 2]}.items():
        n2[e, users] = 1
    F = KCoverage([n1, n2], sensitivity=1.0)
    n1p, n2p = n1.copy(), n2.copy()
    n1p[:, 0] = n2p[:, 0] = 0
    n2p[1, 0] = 1
    return KSubmodularInstance(
        F, UniformMatroid(3, 2), "submodular/k-coverage-example", KCoverage([n1p, n2p], sensitivity=1.0)
    )


def make_matroid(kind: str, n: int, rank: int, rng, blocks: int | None = None):
    """A uniform matroid of rank ``rank``, a partition matroid of ``blocks`` random blocks with
    capacities summing to about ``rank``, or (``graphic``) n edges of a random graph."""
    if kind == "uniform":
        return UniformMatroid(n, rank)
    if kind == "partition":
        blocks = blocks or max(1, rank)
        if not 1 <= blocks <= n:
            raise DataValidationError("blocks", f"must be in 1..{n}, got {blocks}")
        labels = np.concatenate([np.arange(blocks), rng.integers(blocks, size=n - blocks)])
        caps = np.full(blocks, max(1, rank // blocks))
        return PartitionMatroid(rng.permutation(labels), caps)
    if kind == "graphic":
        return _random_graphic(n, rank, rng)
    raise DataValidationError("matroid", f"must be uniform, partition or graphic, got {kind!r}")


def _random_graphic(n_edges: int, rank: int, rng) -> GraphicMatroid:
    """A random simple graph on ``rank + 1`` vertices with ``n_edges`` edges (a spanning path first)."""
    V = rank + 1
    pairs = [(i, j) for i in range(V) for j in range(i + 1, V)]
    if n_edges > len(pairs) or n_edges < rank:
        raise DataValidationError("n", f"a simple graph on {V} vertices has {rank}..{len(pairs)} edges, got {n_edges}")
    perm = rng.permutation(V)
    path = {tuple(sorted((int(perm[i]), int(perm[i + 1])))) for i in range(rank)}
    rest = [p for p in pairs if p not in path]
    extra = [rest[i] for i in rng.choice(len(rest), n_edges - rank, replace=False)]
    edges = sorted(path) + extra
    return GraphicMatroid(V, [edges[i] for i in rng.permutation(len(edges))])


@register_generator("submodular/coverage", "sparse weighted coverage (users pick ~degree elements), any matroid")
def coverage(
    seed=0, n=50, users=200, degree=3.0, rank=5, matroid="uniform", blocks=None, weighted=False
) -> SubmodularInstance:
    """Each user covers ``1 + Poisson(degree - 1)`` random elements; ``nnz ~ users * degree`` memory.
    Neighbour: user 0 replaced by a user covering element 0 only."""
    rng = make_rng(seed)
    if n < 1 or users < 1 or degree < 1:
        raise DataValidationError("n, users, degree", "need n >= 1, users >= 1, degree >= 1")
    deg = np.minimum(1 + rng.poisson(degree - 1, size=users), n)
    rows = np.concatenate([rng.choice(n, d, replace=False) for d in deg])
    cols = np.repeat(np.arange(users), deg)
    inc = sp.csc_matrix((np.ones(rows.size), (rows, cols)), shape=(n, users))
    w = rng.uniform(0.5, 1.0, users) if weighted else np.ones(users)
    F = WeightedCoverage(inc, w, sensitivity=1.0)  # public bound: every weight is drawn in [0.5, 1] or is 1
    M = make_matroid(matroid, n, rank, rng, blocks)
    return SubmodularInstance(F, M, f"submodular/coverage(n={n})", F.replace_user(0, [0]))


@register_generator("submodular/facility", "facility location on random 2-D points, benefits of the nearest sites")
def facility(seed=0, n=30, customers=100, nearest=5, rank=5, matroid="uniform", blocks=None) -> SubmodularInstance:
    """Customers benefit ``1 - d / d_max`` from each of their ``nearest`` sites (sparse, in [0, 1])."""
    rng = make_rng(seed)
    nearest = min(nearest, n)
    sites, pts = rng.random((n, 2)), rng.random((customers, 2))
    rows, vals = [], []
    for j in range(customers):
        d = np.linalg.norm(sites - pts[j], axis=1)
        near = np.argsort(d)[:nearest]
        rows.append(near)
        vals.append(np.clip(1.0 - d[near] / np.sqrt(2), 0.0, 1.0))
    c = sp.csc_matrix(
        (np.concatenate(vals), (np.concatenate(rows), np.repeat(np.arange(customers), nearest))), shape=(n, customers)
    )
    F = FacilityLocation(c, benefit_bound=1.0)  # public bound: benefits 1 - d / d_max lie in [0, 1]
    M = make_matroid(matroid, n, rank, rng, blocks)
    return SubmodularInstance(F, M, f"submodular/facility(n={n})", F.replace_customer(0, np.zeros(n)))


@register_generator("submodular/k-coverage", "random k-coverage with a uniform matroid on supports")
def k_coverage(seed=0, n=8, users=20, k=2, degree=2.0, rank=3) -> KSubmodularInstance:
    """Each user joins ``N_i(e)`` for ``1 + Poisson(degree - 1)`` random pairs ``(e, i)``."""
    rng = make_rng(seed)
    mats = [sp.lil_matrix((n, users)) for _ in range(k)]
    for v in range(users):
        for pair in rng.choice(n * k, min(n * k, 1 + rng.poisson(degree - 1)), replace=False):
            mats[int(pair) % k][int(pair) // k, v] = 1
    F = KCoverage([m.tocsr() for m in mats], sensitivity=1.0)
    mats[0][:, 0] = 0
    for m in mats[1:]:
        m[:, 0] = 0
    return KSubmodularInstance(
        F,
        UniformMatroid(n, rank),
        f"submodular/k-coverage(n={n})",
        KCoverage([m.tocsr() for m in mats], sensitivity=1.0),
    )


def _lines(path):
    with open(path) as fh:
        for raw in fh:
            line = raw.split("#", 1)[0].strip()
            if line:
                yield line


def coverage_from_file(
    path, rank: int, *, sensitivity: float, matroid: str = "uniform", weights=None, blocks=None, seed=0
) -> SubmodularInstance:
    """Weighted coverage from a sets file: one line per element, ``[label:] user user ...``.

    User names may be any tokens; ``weights`` is an optional file of ``user weight`` lines
    (default 1).  ``sensitivity`` is the declared, data-independent bound ``Delta`` on any user's
    weight (required: it must not be read off the private file); a weight above it is refused.
    Reading is streaming and the incidence sparse: memory is linear in the file.  The number of
    users is counted in the file, not declared, so the function is marked
    ``public_record_count = False``: research use only, a private release refuses it.
    """
    users: dict[str, int] = {}
    rows, cols = [], []
    n = 0
    for line in _lines(path):
        members = line.split(":", 1)[1] if ":" in line else line
        for tok in dict.fromkeys(members.replace(",", " ").split()):  # a repeated user is one incidence
            rows.append(n)
            cols.append(users.setdefault(tok, len(users)))
        n += 1
    if n == 0:
        raise DataValidationError("path", f"{path}: no element lines")
    w = np.ones(len(users))
    if weights is not None:
        for line in _lines(weights):
            name, value = line.replace(",", " ").split()[:2]
            if name not in users:
                raise DataValidationError("weights", f"user {name!r} does not appear in {path}")
            w[users[name]] = float(value)
    inc = sp.csc_matrix((np.ones(len(rows)), (rows, cols)), shape=(n, max(1, len(users))))
    F = WeightedCoverage(inc, w if users else np.ones(1), sensitivity=sensitivity)
    F.public_record_count = False  # the users were counted in the file: a private release refuses F
    return SubmodularInstance(F, make_matroid(matroid, n, rank, make_rng(seed), blocks), f"coverage:{Path(path).name}")


def facility_from_file(
    path, rank: int, *, sensitivity: float, matroid: str = "uniform", blocks=None, seed=0
) -> SubmodularInstance:
    """Facility location from a sparse similarity CSV ``site,customer,benefit`` (header optional).

    Sites and customers may be any labels; sites are numbered in order of first appearance.
    ``sensitivity`` is the declared, data-independent benefit bound ``B = Delta`` (required: it must
    not be read off the private file); a benefit outside ``[0, B]`` is refused.  The customers are
    counted in the file (``public_record_count = False``): research use only, a private release
    refuses the function."""
    sites: dict[str, int] = {}
    customers: dict[str, int] = {}
    rows, cols, vals = [], [], []
    with open(path, newline="") as fh:
        for rec in csv.reader(fh):
            if not rec or rec[0].startswith("#"):
                continue
            try:
                value = float(rec[2])
            except (ValueError, IndexError):
                if not rows:
                    continue  # header line
                raise DataValidationError("path", f"{path}: bad line {rec!r}; expected site,customer,benefit") from None
            rows.append(sites.setdefault(rec[0].strip(), len(sites)))
            cols.append(customers.setdefault(rec[1].strip(), len(customers)))
            vals.append(value)
    if not rows:
        raise DataValidationError("path", f"{path}: no site,customer,benefit lines")
    c = sp.csc_matrix((vals, (rows, cols)), shape=(len(sites), len(customers)))
    F = FacilityLocation(c, benefit_bound=sensitivity)
    F.public_record_count = False  # the customers were counted in the file: a private release refuses F
    return SubmodularInstance(
        F, make_matroid(matroid, len(sites), rank, make_rng(seed), blocks), f"facility:{Path(path).name}"
    )


# ---------------------------------------------------------------------- one tiny model per formulation
@register_example("submodular.matroid_lp")
def _example_matroid_lp():
    """A graphic matroid (a triangle with a pendant edge; Martin's flows in the model), mixed weights."""
    from dpmodels.submodular.models import build_matroid_lp

    return build_matroid_lp(GraphicMatroid(4, [(0, 1), (1, 2), (0, 2), (2, 3)]), [2.0, 1.0, 3.0, -1.0])


@register_example("submodular.multilinear")
def _example_multilinear():
    from dpmodels.submodular.models import build_multilinear_relaxation

    inst = trap()
    return build_multilinear_relaxation(inst.function, inst.matroid)


@register_example("submodular.coverage_milp")
def _example_coverage_milp():
    from dpmodels.submodular.models import build_coverage_milp

    inst = trap()
    return build_coverage_milp(inst.function, inst.matroid)


@register_example("submodular.facility_milp")
def _example_facility_milp():
    from dpmodels.submodular.models import build_facility_milp

    inst = facility(seed=0, n=5, customers=8, nearest=2, rank=2)
    return build_facility_milp(inst.function, inst.matroid)


@register_example("submodular.kcoverage_milp")
def _example_kcoverage_milp():
    from dpmodels.submodular.models import build_kcoverage_milp

    inst = k_coverage_example()
    return build_kcoverage_milp(inst.function, inst.matroid)


@register_example("submodular.lift_lp")
def _example_lift_lp():
    """The trap's partition matroid, a point of its polytope and all of its bases."""
    from dpmodels.submodular.models import build_lift_lp

    M = trap().matroid
    return build_lift_lp(M, np.array([0.5, 0.25, 0.5]), M.bases())
