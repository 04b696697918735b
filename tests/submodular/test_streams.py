"""Where a private run's randomness comes from: secure by default, a seed reproducible and labelled.

Before, ``_streams(None, ...)`` spawned numpy PCG64 streams from fresh OS entropy (not a
cryptographic generator) and nothing recorded the source; a secure generator passed as the seed
was reduced to 63 bits of a PCG64 seed.
"""

import math
from fractions import Fraction

import numpy as np
import pytest

from dpmodels import instances
from dpmodels.core.errors import PrivacyParameterError
from dpmodels.core.randomness import SECURE_SOURCE, SEEDED_SOURCE, is_secure, secure_generator
from dpmodels.submodular.accounting import PrivacyAccountant
from dpmodels.submodular.mechanism import continuous as continuous_mechanisms
from dpmodels.submodular.mechanism import greedy as greedy_mechanisms
from dpmodels.submodular.mechanism.randomness import streams

NAMES = ("em", "gradient", "rounding")


@pytest.fixture(scope="module")
def cases():
    trap = instances.load("submodular/trap")
    ex2 = instances.load("submodular/k-coverage-example")
    set_fm, k_fm = (trap.function, trap.matroid), (ex2.function, ex2.matroid)
    return {
        "alg1": lambda **kw: continuous_mechanisms.private_continuous_greedy(*set_fm, 0.5, T=3, **kw),
        "alg2": lambda **kw: continuous_mechanisms.improved_private_continuous_greedy(
            *set_fm, 0.5, T=2, sample_size=6, **kw
        ),
        "mitrovic": lambda **kw: greedy_mechanisms.mitrovic_private_greedy(*set_fm, 0.5, **kw),
        "alg3": lambda **kw: greedy_mechanisms.private_k_greedy(*k_fm, 0.5, **kw),
        "alg4": lambda **kw: greedy_mechanisms.private_k_greedy_sampled(*k_fm, 0.5, **kw),
    }


def test_no_seed_gives_independent_secure_streams():
    rngs = streams(None, NAMES)
    assert all(is_secure(r) for r in rngs.values())
    words = [tuple(r.bit_generator.random_raw(4).tolist()) for r in rngs.values()]
    assert len(set(words)) == len(NAMES)  # independently keyed


def test_a_secure_parent_keys_secure_streams_and_is_their_only_source():
    first = secure_generator()
    saved = first.bit_generator.state

    def parent():  # a secure generator at the same point of the same keystream
        twin = secure_generator()
        twin.bit_generator.state = saved
        return twin

    a, b = streams(parent(), NAMES), streams(parent(), NAMES)
    assert all(is_secure(r) for r in a.values())
    assert [r.integers(2**62) for r in a.values()] == [r.integers(2**62) for r in b.values()]
    assert len({r.integers(2**62) for r in streams(parent(), NAMES).values()}) == len(NAMES)


def test_a_seed_keeps_the_reproducible_seedsequence_streams():
    """The same streams as before the change (SeedSequence(seed).spawn), so seeded tests keep their draws."""
    old = [np.random.default_rng(s) for s in np.random.SeedSequence(7).spawn(3)]
    new = streams(7, NAMES)
    assert [r.integers(2**62) for r in old] == [r.integers(2**62) for r in new.values()]
    assert not any(is_secure(r) for r in new.values())
    g1, g2 = np.random.default_rng(3), np.random.default_rng(3)
    assert streams(g1, NAMES)["em"].integers(2**62) == streams(g2, NAMES)["em"].integers(2**62)
    with pytest.raises(PrivacyParameterError, match="seed"):
        streams(np.random.RandomState(0), NAMES)


@pytest.mark.parametrize("name", ["alg1", "alg2", "mitrovic", "alg3", "alg4"])
def test_private_runs_are_secure_by_default_and_say_so(cases, name, monkeypatch):
    """No seed: the mechanism's draws come from a secure generator and the accountant records it."""
    seen: list = []
    for module, attr in (
        (continuous_mechanisms, "em_choice"),
        (continuous_mechanisms, "_sample_base"),
        (greedy_mechanisms, "em_choice"),
    ):
        original = getattr(module, attr)
        monkeypatch.setattr(module, attr, lambda *a, _o=original: seen.append(is_secure(a[-1])) or _o(*a))
    res = cases[name]()
    assert seen and all(seen)
    assert res.accountant.randomness == SECURE_SOURCE
    assert cases[name](seed=3).accountant.randomness == SEEDED_SOURCE


@pytest.mark.parametrize("name", ["alg1", "alg2", "mitrovic", "alg3", "alg4"])
def test_seeded_runs_are_reproducible(cases, name):
    assert cases[name](seed=11).release == cases[name](seed=11).release
    assert cases[name](seed=11).accountant.summary()["randomness"] == SEEDED_SOURCE


def test_a_seeded_run_marks_a_shared_accountant_for_good(cases):
    acc = PrivacyAccountant()
    cases["mitrovic"](accountant=acc)
    assert acc.randomness == SECURE_SOURCE
    cases["mitrovic"](accountant=acc, seed=1)
    cases["mitrovic"](accountant=acc)
    assert acc.randomness == SEEDED_SOURCE


def test_the_accountant_sums_exactly():
    """Mitrovic at eps = 0.1 on rank 3: 3/10 exactly.  Its float is rounded up (the nearest float,
    0.3, is below 3/10): a privacy loss shown as a float never reads below the exact one."""
    inst = instances.generate("submodular/coverage", seed=1, n=12, users=30, rank=3)
    res = greedy_mechanisms.mitrovic_private_greedy(inst.function, inst.matroid, 0.1, seed=0)
    assert res.accountant.basic_exact() == (Fraction(3, 10), 0)
    shown = res.accountant.basic()[0]
    assert Fraction(0.3) < Fraction(3, 10) <= Fraction(shown) and shown == math.nextafter(0.3, 1)  # just above
    assert res.release.epsilon == 0.3
    third = greedy_mechanisms.mitrovic_private_greedy(inst.function, inst.matroid, Fraction(1, 3), seed=0)
    assert third.accountant.basic_exact()[0] == 1  # a Fraction epsilon stays exact
