"""Shared fixtures: the paper's running example and the spec's derived fixtures F1/F2."""

import logging

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

import dpmodels  # noqa: F401  (registers the plugins)
from dpmodels import instances

settings.register_profile("ci", deadline=None, suppress_health_check=[HealthCheck.too_slow], print_blob=True)
settings.register_profile("dev", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("ci")


@pytest.fixture(scope="session")
def running_example():
    return instances.load("pgsr/running-example")


@pytest.fixture(scope="session")
def f1_noisy():
    """Spec 4.8 F1: Table 5's size-1 noise, other sizes noise-free (rows US, GA, NY)."""
    return np.array([[2, 1, 2, 0, 0], [3, 0, 1, 0, 0], [0, 1, 1, 0, 0]], dtype=float)


@pytest.fixture(scope="session")
def f2_noisy():
    """Spec 4.8 F2: noise everywhere, with negative entries (rows US, GA, NY)."""
    return np.array([[2, 1, 4, 0, -2], [3, -1, 2, 1, 0], [0, 2, 1, -1, 1]], dtype=float)


@pytest.fixture(autouse=True)
def _restore_the_dpmodels_logger():
    """A command run in a test configures the ``dpmodels`` logger (its stderr handler, no propagation);
    restore it after each test, so that ``caplog`` sees dpmodels' records whatever ran before in
    the same process (with pytest-xdist, which tests share a worker is not fixed)."""
    logger = logging.getLogger("dpmodels")
    state = (list(logger.handlers), logger.propagate, logger.level)
    for name, child in list(logging.Logger.manager.loggerDict.items()):  # a logging.config call made by a
        if name.startswith("dpmodels") and isinstance(child, logging.Logger):  # library in this process
            child.disabled = False  # disables every logger that existed then
    yield
    logger.handlers[:] = state[0]
    logger.propagate, logger.level = state[1], state[2]
