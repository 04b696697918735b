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
    "derive_secure",
    "make_rng",
    "release_rng",
    "is_secure",
    "describe",
    "SECURE_SOURCE",
    "SEEDED_SOURCE",
]

SECURE_SOURCE = "secure: ChaCha20 keyed with 256 bits of OS entropy"
SEEDED_SOURCE = "seeded: reproducible, NOT private (experiments on synthetic data only)"


_MINT = object()  # only this module makes SecureGenerators: the label must follow the key's origin


class SecureGenerator(np.random.Generator):
    """A numpy Generator over a ChaCha20 stream keyed from OS entropy.

    Made only by :func:`secure_generator` (a fresh key from ``secrets``) or :func:`derive_secure`
    (a key read from another secure generator's stream).  Calling the class directly is refused:
    ``SecureGenerator(PCG64(0))`` or a ChaCha20 with a known key would otherwise carry the secure
    label while drawing predictable noise.
    """

    def __init__(self, bit_generator, *, _mint=None):
        if _mint is not _MINT:
            raise TypeError(
                "SecureGenerator is made by dpmodels.core.randomness.secure_generator() (or derive_secure from "
                "another secure generator); wrap a seeded bit generator in numpy.random.Generator instead"
            )
        if type(bit_generator) is not randomgen.ChaCha or bit_generator.state["state"]["rounds"] != 20:
            raise TypeError("a SecureGenerator draws from ChaCha20 (randomgen.ChaCha with 20 rounds)")
        super().__init__(bit_generator)
        self._origin = bit_generator


def secure_generator() -> SecureGenerator:
    """A fresh cryptographically secure Generator: ChaCha20 with a 256-bit key from ``secrets``."""
    return SecureGenerator(randomgen.ChaCha(key=secrets.randbits(256), counter=0, rounds=20), _mint=_MINT)


def derive_secure(parent: SecureGenerator) -> SecureGenerator:
    """A ChaCha20 generator keyed with 256 bits of ``parent``'s stream (secure because ``parent`` is).

    Parameters
    ----------
    parent
        A secure generator (:func:`is_secure`); anything else is refused.
    """
    if not is_secure(parent):
        raise PrivacyParameterError("parent", "derive_secure needs a secure generator (made by secure_generator)")
    words = np.asarray(parent.bit_generator.random_raw(4), dtype=np.uint64).tolist()
    key = sum(int(w) << (64 * i) for i, w in enumerate(words))
    return SecureGenerator(randomgen.ChaCha(key=key, counter=0, rounds=20), _mint=_MINT)


def is_secure(rng) -> bool:
    """Whether ``rng`` draws from a ChaCha20 stream this module keyed from OS entropy.

    Checked on the generator actually used: its class, its bit generator (the one it was made
    with, ChaCha with 20 rounds), not merely a label.
    """
    return (
        isinstance(rng, SecureGenerator)
        and getattr(rng, "_origin", None) is rng.bit_generator
        and type(rng.bit_generator) is randomgen.ChaCha
        and rng.bit_generator.state["state"]["rounds"] == 20
    )


def describe(rng) -> str:
    """The randomness source of ``rng`` as recorded in ledgers and releases (see :func:`is_secure`)."""
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
