"""Partitioning the secret records into blocks for Benders (spec 4.3).

All four partitioners of the paper are k-means with M clusters on different embeddings:
k-m-DV (rows of the full metric distance matrix, the paper's proposal), k-m-rec (the raw
feature vectors), k-m-adj (0/1 neighbour rows), and balanced spectral clustering (the M
smallest eigenvectors of the unnormalised Laplacian of the mDP graph).  k-means is Lloyd's
algorithm with k-means++ seeding from a seeded Generator, as MATLAB's default; empty
clusters are dropped by :meth:`Partition.from_labels`.

The seed here is not a privacy parameter: partitioning reads only the public domain (record
locations, their distances and mDP graph; never a user's record or the prior), and only steers
how the solver decomposes the LP.  Whatever the partition, the matrix is repaired and proven
by the exact audit before use, and releasing outputs (:func:`.mechanism.sample_outputs`) draws
from its own ``rng``, the secure generator by default; no seed from this module reaches it.
"""

from __future__ import annotations

import numpy as np

from dpmodels.core.errors import DataValidationError
from dpmodels.core.randomness import make_rng

from .data import MDPInstance, Partition

__all__ = ["kmeans", "partition", "PARTITIONERS", "embedding"]

PARTITIONERS = ("k-m-DV", "k-m-rec", "k-m-adj", "BSC")


def kmeans(points: np.ndarray, k: int, seed=None, max_iter: int = 100) -> np.ndarray:
    """Cluster labels of Lloyd's k-means (squared Euclidean) with k-means++ seeding.

    ``seed`` (int, SeedSequence or Generator) makes the starting centres reproducible; None
    draws them from the secure generator.  Either way only public points are clustered.
    """
    x = np.asarray(points, dtype=np.float64)
    n = len(x)
    if not 1 <= k <= n:
        raise DataValidationError("M", f"must be in 1..{n} (records), got {k}")
    rng = make_rng(seed)
    centres = [x[rng.integers(n)]]
    d2 = ((x - centres[0]) ** 2).sum(axis=1)
    for _ in range(1, k):
        probs = d2 / d2.sum() if d2.sum() > 0 else np.full(n, 1.0 / n)
        centres.append(x[rng.choice(n, p=probs)])
        d2 = np.minimum(d2, ((x - centres[-1]) ** 2).sum(axis=1))
    c = np.array(centres)
    labels = np.full(n, -1)
    for _ in range(max_iter):
        dist = (x**2).sum(axis=1)[:, None] - 2 * x @ c.T + (c**2).sum(axis=1)[None, :]
        new = dist.argmin(axis=1)
        if np.array_equal(new, labels):
            break
        labels = new
        for j in range(k):
            members = x[labels == j]
            if len(members):
                c[j] = members.mean(axis=0)
    return labels


def embedding(instance: MDPInstance, method: str) -> np.ndarray:
    """The vectors a partitioner clusters (spec 4.3 table)."""
    if method == "k-m-DV":
        return instance.d_rr
    if method == "k-m-rec":
        if instance.features is None:
            raise DataValidationError("features", "k-m-rec clusters the record vectors; this instance has none")
        return np.asarray(instance.features, dtype=np.float64).reshape(instance.N, -1)
    g = instance.graph
    adjacency = np.zeros((instance.N, instance.N))
    adjacency[g.src, g.dst] = 1.0
    if method == "k-m-adj":
        return adjacency
    if method == "BSC":
        laplacian = np.diag(adjacency.sum(axis=1)) - adjacency
        return np.linalg.eigh(laplacian)[1]
    raise DataValidationError("partitioner", f"unknown {method!r}; choose from {PARTITIONERS} or pass labels")


def partition(instance: MDPInstance, method="k-m-DV", M: int = 25, seed=0) -> Partition:
    """A :class:`Partition` from a partitioner name or from given labels (an array).

    Parameters
    ----------
    instance : MDPInstance
        The instance (records, outputs, metric, prior, ``eps`` per km, ``eta``).
    method : str or array_like
        One of :data:`PARTITIONERS` (``"k-m-DV"``, ``"k-m-rec"``, ``"k-m-adj"``, ``"BSC"``)
        or one block label per record.
    M : int
        The number of blocks asked for (empty clusters are dropped).
    seed : int
        k-means' starting centres, so that a solver run is reproducible; it touches no private
        data and no released output (see the module docstring).
    """
    if not isinstance(method, str):
        return Partition.from_labels(method, instance.graph)
    vectors = embedding(instance, method)
    if method == "BSC":
        vectors = vectors[:, :M]  # the M smallest eigenvectors
    return Partition.from_labels(kmeans(vectors, M, seed), instance.graph)
