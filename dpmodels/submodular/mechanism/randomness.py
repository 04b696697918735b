"""The random streams of a private submodular run: secure unless a seed is given.

Every private algorithm draws from named, independent streams: ``em`` (the exponential
mechanisms, the only draws whose law depends on the data) and data-independent ones
(gradient samples, cover sub-samples, Alg. 4's subsets, rounding).  :func:`streams` makes them:

* ``seed=None``: each stream is its own :func:`~dpmodels.core.randomness.secure_generator`
  (ChaCha20 keyed from OS entropy), the default of every private run;
* a secure generator (a :class:`~dpmodels.core.session.PrivacySession`'s): each stream is a
  ChaCha20 keyed with 256 bits read from it, so the session's generator is the only source;
* an int, a ``SeedSequence`` or a plain numpy ``Generator``: reproducible numpy streams spawned
  from a ``SeedSequence`` as before (experiments on synthetic data; not private).

:func:`~dpmodels.core.randomness.describe` of the ``em`` stream is what the accountant records.
"""

from __future__ import annotations

import numpy as np

from dpmodels.core.errors import PrivacyParameterError
from dpmodels.core.randomness import derive_secure, is_secure, secure_generator

__all__ = ["streams", "derive_secure"]


def streams(seed, names) -> dict[str, np.random.Generator]:
    """One independent Generator per name (see the module docstring for what ``seed`` may be)."""
    names = list(names)
    if seed is None:
        return {name: secure_generator() for name in names}
    if is_secure(seed):
        return {name: derive_secure(seed) for name in names}
    if isinstance(seed, np.random.RandomState) or isinstance(seed, bool):
        raise PrivacyParameterError("seed", f"must be None, an int, a SeedSequence or a Generator, got {seed!r}")
    if isinstance(seed, np.random.Generator):
        seed = int(seed.integers(2**63))
    seqs = np.random.SeedSequence(seed) if not isinstance(seed, np.random.SeedSequence) else seed
    return dict(zip(names, (np.random.default_rng(s) for s in seqs.spawn(len(names))), strict=True))
