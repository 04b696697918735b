"""The privacy mechanisms of the family: each takes the objective ``F`` (the private data), the
matroid, a budget and a generator, draws with the exact exponential mechanism, and charges every
step to a :class:`~dpmodels.submodular.accounting.PrivacyAccountant`.

* :mod:`.continuous` -- Algorithms 1 and 2, private continuous greedy (:func:`private_continuous_greedy`,
  :func:`improved_private_continuous_greedy`).
* :mod:`.greedy` -- Mitrovic et al.'s private greedy, Algorithms 3 and 4 (private k-greedy).
* :mod:`.exponential` -- the exponential mechanism over a list of scores, drawn exactly
  (the bases of a matroid are drawn by :mod:`dpmodels.submodular.exact`).
* :mod:`.covers` -- the covers of the matroid polytope the continuous mechanisms draw from.
* :mod:`.contract` -- what every run starts from: its ledger, its random streams, the up-front
  refusal of an epsilon at which the scores could overflow.
* :mod:`.randomness` -- the named random streams: secure unless a seed is given.

Rounding the continuous mechanisms' output is public post-processing (:mod:`dpmodels.submodular.rounding`);
the exact output laws, for audits, are in :mod:`dpmodels.submodular.privacy_audit`.
"""

from .continuous import (
    PrivateCGResult,
    alg2_sample_size,
    improved_private_continuous_greedy,
    private_continuous_greedy,
)
from .covers import grid_cover
from .exponential import centred_logits, em_choice, em_probabilities, inverse_temperature
from .greedy import alg4_subset_size, mitrovic_private_greedy, private_k_greedy, private_k_greedy_sampled
from .randomness import streams

__all__ = [
    "private_continuous_greedy",
    "improved_private_continuous_greedy",
    "PrivateCGResult",
    "grid_cover",
    "alg2_sample_size",
    "mitrovic_private_greedy",
    "private_k_greedy",
    "private_k_greedy_sampled",
    "alg4_subset_size",
    "em_choice",
    "em_probabilities",
    "centred_logits",
    "inverse_temperature",
    "streams",
]
