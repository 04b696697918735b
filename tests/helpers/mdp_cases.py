"""Small random metric-DP instances for the mDP tests (importable: tests/helpers is on the path)."""

import numpy as np

from dpmodels.metricdp.data import MDPInstance, euclidean_distances


def random_instance(seed, n, k, eps, eta, grid=False):
    """``n`` records (uniform in a 4 x 4 square, or the first cells of a unit grid), ``k`` random
    outputs, Euclidean losses and a Dirichlet prior."""
    rng = np.random.default_rng(seed)
    if grid:
        side = int(np.ceil(np.sqrt(n)))
        pts = np.array([(r, c) for r in range(side) for c in range(side)], float)[:n]
    else:
        pts = rng.uniform(0, 4, size=(n, 2))
    outs = rng.uniform(0, 4, size=(k, 2))
    d = euclidean_distances(pts)
    cost = euclidean_distances(pts, outs)
    prior = rng.dirichlet(np.ones(n))
    return MDPInstance(d, cost, prior, eps, eta, d_ro=cost, features=pts)
