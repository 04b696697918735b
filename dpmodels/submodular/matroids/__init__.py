"""Matroids on ``E = {0..n-1}`` (spec 1.4, 6.1, A16): the constraint of every algorithm of the family.

* :mod:`.base` -- the :class:`Matroid` interface (independence, rank, bases, extensions, the
  product-weight base sampler) and the uniform, partition and explicit matroids.
* :mod:`.graphic` -- graphic matroids: the forests of a graph.
* :mod:`.laminar` -- laminar matroids: a laminar family of sets with capacities.
"""

from .base import ExplicitMatroid, Matroid, PartitionMatroid, UniformMatroid, check_pair, esp_sample
from .graphic import GraphicMatroid
from .laminar import LaminarMatroid

__all__ = [
    "Matroid",
    "UniformMatroid",
    "PartitionMatroid",
    "ExplicitMatroid",
    "GraphicMatroid",
    "LaminarMatroid",
    "check_pair",
    "esp_sample",
]
