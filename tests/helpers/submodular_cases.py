"""Small matroids of every kind for the submodular tests (importable: tests/helpers is on the path)."""

import numpy as np

from dpmodels.submodular.matroids import (
    ExplicitMatroid,
    GraphicMatroid,
    LaminarMatroid,
    PartitionMatroid,
    UniformMatroid,
)


def make(kind: str):
    """A fixed small matroid of ``kind`` (one of ``KINDS``)."""
    if kind == "uniform":
        return UniformMatroid(6, 3)
    if kind == "partition":
        return PartitionMatroid([0, 0, 1, 1, 1, 2, 2], [1, 2, 1])
    if kind == "laminar":
        return LaminarMatroid(7, [[0, 1, 2], [0, 1], [3, 4, 5, 6], [5, 6], list(range(7))], [2, 1, 2, 1, 3])
    if kind == "graphic":  # two components: a 4-cycle with a chord and a triangle
        return GraphicMatroid(7, [(0, 1), (1, 2), (2, 3), (3, 0), (0, 2), (4, 5), (5, 6), (6, 4)])
    if kind == "explicit":  # the graphic matroid of a triangle plus a parallel edge, as a list
        base = UniformMatroid(4, 2)
        sets = [tuple(np.flatnonzero(s)) for s in base.independent_sets() if not (s[0] and s[3])]
        return ExplicitMatroid(4, sets)
    raise ValueError(kind)


KINDS = ["uniform", "partition", "laminar", "graphic", "explicit"]
