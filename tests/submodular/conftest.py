"""Fixture: one small matroid of each kind."""

import pytest
from submodular_cases import KINDS, make


@pytest.fixture(params=KINDS)
def matroid(request):
    return make(request.param)
