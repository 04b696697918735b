"""Privacy parameters as users type them, and the label of the randomness actually used.

Regression tests of the issue-22 audit: ``--epsilon 1e400`` / ``1e-400`` crashed with exit 1,
``1_0`` read as 10, and ``SecureGenerator(PCG64(0))`` was labelled ChaCha20.
"""

from fractions import Fraction

import numpy as np
import pytest
import randomgen
from hypothesis import given
from hypothesis import strategies as st

from dpmodels.core.errors import PrivacyParameterError
from dpmodels.core.noise import as_epsilon, parse_number
from dpmodels.core.randomness import (
    SECURE_SOURCE,
    SEEDED_SOURCE,
    SecureGenerator,
    derive_secure,
    describe,
    is_secure,
    secure_generator,
)


@pytest.mark.parametrize(
    ("text", "value"),
    [("1", 1), ("0.5", Fraction(1, 2)), ("1e-3", Fraction(1, 1000)), ("1/3", Fraction(1, 3)), (".25", Fraction(1, 4))],
)
def test_budgets_read_exactly_as_typed(text, value):
    assert as_epsilon(text) == value


@pytest.mark.parametrize("text", ["1_0", "inf", "nan", "0x10", "1,5", "1 0", "", "1e", "e3", "1/0.5"])
def test_text_outside_the_number_grammar_is_refused(text):
    with pytest.raises(PrivacyParameterError, match="epsilon"):
        as_epsilon(text)


@pytest.mark.parametrize(("text", "word"), [("1e400", "too large"), ("1e-400", "too small"), ("0", "> 0")])
def test_budgets_outside_the_float_range_are_refused_naming_the_problem(text, word):
    with pytest.raises(PrivacyParameterError, match=word):
        as_epsilon(text)


@given(st.fractions(min_value=Fraction(1, 10**6), max_value=10**6))
def test_a_ratio_round_trips(value):
    assert parse_number(f"{value.numerator}/{value.denominator}", "x") == value


def test_only_this_module_mints_secure_generators():
    with pytest.raises(TypeError):
        SecureGenerator(np.random.PCG64(0))
    with pytest.raises(TypeError):
        SecureGenerator(randomgen.ChaCha(key=12345, counter=0, rounds=20))  # a known key is not secure
    assert describe(np.random.Generator(randomgen.ChaCha(key=1, counter=0, rounds=20))) == SEEDED_SOURCE


def test_secure_label_follows_the_generator():
    parent = secure_generator()
    child = derive_secure(parent)
    assert is_secure(parent) and is_secure(child) and describe(child) == SECURE_SOURCE
    assert child.bit_generator.random_raw() != parent.bit_generator.random_raw()
    with pytest.raises(PrivacyParameterError, match="parent"):
        derive_secure(np.random.default_rng(0))
