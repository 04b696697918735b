"""Where the noise's randomness comes from: a cryptographically secure stream, or a seed.

A release on real data draws from :func:`secure_generator`: ChaCha20 (20 rounds, the
stream cipher behind Linux's ``getrandom``) keyed with 256 bits of OS entropy
(``secrets``), exposed as a numpy ``Generator`` so that every sampler takes one
argument type.  Its keystream is the standard one (a known-answer test pins RFC 7539's
vector), so the same key gives the same bits on every platform.

A seed makes an experiment on a synthetic instance reproducible; it is never private
(anyone who knows or guesses the seed can subtract the noise).  :func:`make_rng` keeps the
research habit (a seed or a Generator in, a Generator out) but draws securely when given
no seed; :func:`release_rng` is what release paths call: it refuses a seed unless the
caller says explicitly that the output is not private.  :func:`describe` names the source
so that every ledger can record it.
"""

from __future__ import annotations

import secrets

import numpy as np
import randomgen

from .errors import PrivacyParameterError

__all__ = [
    "SecureGenerator",
    "secure_generator",
    "make_rng",
    "release_rng",
    "is_secure",
    "describe",
    "SECURE_SOURCE",
    "SEEDED_SOURCE",
]

SECURE_SOURCE = "secure: ChaCha20 keyed with 256 bits of OS entropy"
SEEDED_SOURCE = "seeded: reproducible, NOT private (experiments on synthetic data only)"


class SecureGenerator(np.random.Generator):
    """A numpy Generator over a ChaCha20 stream keyed from OS entropy (see :func:`secure_generator`)."""


def secure_generator() -> SecureGenerator:
    """A fresh cryptographically secure Generator: ChaCha20 with a 256-bit key from ``secrets``."""
    return SecureGenerator(randomgen.ChaCha(key=secrets.randbits(256), counter=0, rounds=20))


def is_secure(rng) -> bool:
    """Whether ``rng`` is a Generator made by :func:`secure_generator`."""
    return isinstance(rng, SecureGenerator)


def describe(rng) -> str:
    """The randomness source of ``rng`` as recorded in ledgers and releases."""
    return SECURE_SOURCE if is_secure(rng) else SEEDED_SOURCE


def make_rng(seed=None) -> np.random.Generator:
    """A Generator for research code: secure when ``seed`` is None, else seeded (not private).

    Accepts None, an int, a ``SeedSequence`` or a ``Generator`` (returned as is); a legacy
    ``RandomState`` is refused.
    """
    if seed is None:
        return secure_generator()
    if isinstance(seed, np.random.Generator):
        return seed
    if isinstance(seed, np.random.RandomState):
        raise PrivacyParameterError("rng", "legacy RandomState is not accepted; pass a numpy Generator or a seed")
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer | np.random.SeedSequence):
        raise PrivacyParameterError("seed", f"must be None, an int, a SeedSequence or a Generator, got {seed!r}")
    return np.random.default_rng(seed)


def release_rng(seed=None, *, not_private: bool = False) -> np.random.Generator:
    """The Generator of a release: secure, unless a seed is given *and* ``not_private=True``.

    A seeded release is reproducible by whoever learns the seed, so it is refused unless the
    caller declares the output not private (it then says so in its ledger).
    """
    if seed is None:
        return secure_generator()
    if not not_private:
        raise PrivacyParameterError(
            "seed",
            "a release on real data draws from the secure generator; a seeded output is not private. "
            "Leave the seed out, or declare the output not private (not_private=True, or --not-private on "
            "the command line) for an experiment; the ledger will say so",
        )
    return make_rng(seed)
