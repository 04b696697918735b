"""The exact exponential mechanism over the bases of a matroid (Algorithm 1, ``cover="bases"``):
``Pr[B] ~ exp(beta sum_{e in B} g_e)`` drawn with exact coins, nothing exponentiated in floats.

* :mod:`.bases` -- :func:`sample_base`, which picks the sampler from the public matroid: conditional
  Poisson sampling (uniform, partition), enumeration (small or explicit), or sequential decisions.
* :mod:`.graphic` -- sequential exact spanning forests (the matrix-tree method, interval bounds).
* :mod:`.laminar` -- sequential exact bases of a laminar matroid (generating polynomials).
* :mod:`.coins` -- the exact coins: ``Bernoulli(exp(-gamma))``, ``Bernoulli(sigma(z))`` and a
  lazily revealed uniform compared with rigorous bounds.
"""

from .bases import ENUMERATE_MAX, conditional_poisson, integer_vector, sample_base
from .coins import ExpCoins, LazyUniform, decimal_exp_bounds, exp_bounds, logistic_bernoulli
from .graphic import sample_forest
from .laminar import sample_laminar

__all__ = [
    "sample_base",
    "conditional_poisson",
    "integer_vector",
    "ENUMERATE_MAX",
    "sample_forest",
    "sample_laminar",
    "ExpCoins",
    "LazyUniform",
    "logistic_bernoulli",
    "exp_bounds",
    "decimal_exp_bounds",
]
