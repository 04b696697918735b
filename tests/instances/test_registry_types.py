"""Generator options are checked against their declared kinds: nothing is coerced."""

import pytest

from dpmodels import instances
from dpmodels.core.errors import DataValidationError


@pytest.mark.parametrize("value", [6.5, "6", True, None])
def test_an_integer_option_refuses_floats_text_and_booleans(value):
    with pytest.raises(DataValidationError, match="N: option of 'pgsr/random-tree' must be an integer"):
        instances.generate("pgsr/random-tree", N=value)


def test_a_float_option_takes_integers_and_the_right_kinds_pass():
    data = instances.generate("pgsr/census-like", scale=1, N=5)
    assert data.N == 5
