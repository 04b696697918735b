"""Compile (or load from numba's cache) every PGSR kernel before anything is timed.

A comparison or a benchmark that times the first call of a numba kernel measures the compiler
(seconds), not the algorithm: every timed harness calls :func:`warm_up` first.
"""

from __future__ import annotations

import numpy as np

from .algorithms.chain import solve_chain
from .algorithms.cumulative import solve_cumulative_dp
from .algorithms.hierarchical import solve_hierarchical
from .algorithms.window import solve_exact
from .data import NoisyGroupSizes
from .mechanism import measure

__all__ = ["warm_up"]


def warm_up() -> None:
    """Run every exact solver once on tiny instances: the table DP, the window solver (relaxation,
    windows, certificate), Algorithm 2's isotonic step and the chain DP and PAVA."""
    from dpmodels.instances.pgsr import census_like, random_tree

    data = random_tree(seed=0)
    wiggle = np.resize([1.0, -1.0, 2.0, 0.0, -2.0], data.counts.size).reshape(data.counts.shape)
    noisy = NoisyGroupSizes(data.hierarchy, data.counts + wiggle, data.G, level_scales=(1,) * data.hierarchy.n_levels)
    for solve in (solve_hierarchical, solve_exact):
        solve(noisy)
        solve(noisy, "truncated", on_infeasible="widen")
    tiny = census_like(seed=1, scale=1e-4, N=20, n_states=3, n_counties=6)
    solve_cumulative_dp(measure(tiny, 1.0, "cumulative", rng=0)[0])
    chain = measure(tiny, 1.0, "chain", rng=0)[0]
    for method in ("dp", "pava"):
        solve_chain(chain, "truncated", on_infeasible="widen", method=method)
