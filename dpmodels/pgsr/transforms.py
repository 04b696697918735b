"""The group-size transforms of the PGSR spec: cumulative (+), decumulative (-) and the chain order.

They act along the size axis of the (regions, sizes) layout; :mod:`dpmodels.pgsr.data` re-exports them.
"""

from __future__ import annotations

import numpy as np

from dpmodels.core.hierarchy import Hierarchy

__all__ = ["cumulative", "decumulate", "chain_cumulative", "chain_decumulate", "chain_order"]


def cumulative(values: np.ndarray) -> np.ndarray:
    """The operator (+): ``c_s = sum_{k<=s} n_k`` along the size axis (spec 2.3).

    Parameters
    ----------
    values : numpy.ndarray
        Counts in the (regions, sizes) layout.
    """
    return np.cumsum(values, axis=-1)


def decumulate(values: np.ndarray) -> np.ndarray:
    """The operator (-): first differences along the size axis, the inverse of (+).

    Parameters
    ----------
    values : numpy.ndarray
        Cumulative counts in the (regions, sizes) layout.
    """
    values = np.asarray(values)
    return np.diff(values, axis=-1, prepend=np.zeros_like(values[..., :1]))


def chain_order(hierarchy: Hierarchy, n_sizes: int) -> tuple[np.ndarray, np.ndarray]:
    """Regions and 0-based sizes of the chain nodes ``a_1..a_{|R|N}`` (spec 4.6).

    Size-major post-order of the DP tree without its dummy root: all of size 1 in
    post-order of the hierarchy, then size 2, and so on.
    """
    post = hierarchy.postorder
    regions = np.tile(post, n_sizes)
    sizes = np.repeat(np.arange(n_sizes), len(post))
    return regions, sizes


def chain_cumulative(hierarchy: Hierarchy, values: np.ndarray) -> np.ndarray:
    """Per-level running sums along the chain: ``c_i = sum of n_j, j <= i, same level``.

    Returned in the (regions, sizes) layout.  Within a level, chain order is size-major
    and then the level's canonical order (which equals its post-order).

    Parameters
    ----------
    hierarchy : Hierarchy
        The regions' hierarchy (rows of ``values`` in its order).
    values : numpy.ndarray
        Counts in the (regions, sizes) layout.
    """
    values = np.asarray(values)
    out = np.empty_like(values)
    for level in range(1, hierarchy.n_levels + 1):
        block = values[hierarchy.level_slice(level)]
        out[hierarchy.level_slice(level)] = np.cumsum(block.T.ravel()).reshape(block.T.shape).T
    return out


def chain_decumulate(hierarchy: Hierarchy, chain: np.ndarray) -> np.ndarray:
    """Inverse of :func:`chain_cumulative`: per-level first differences along the chain.

    Parameters
    ----------
    hierarchy : Hierarchy
        The regions' hierarchy (rows of ``chain`` in its order).
    chain : numpy.ndarray
        Chain-cumulative values in the (regions, sizes) layout.
    """
    chain = np.asarray(chain)
    out = np.empty_like(chain)
    for level in range(1, hierarchy.n_levels + 1):
        block = chain[hierarchy.level_slice(level)]
        flat = block.T.ravel()
        out[hierarchy.level_slice(level)] = np.diff(flat, prepend=np.zeros_like(flat[:1])).reshape(block.T.shape).T
    return out
