"""Task functions for the Dask cluster tests: in a helper module so that worker processes import them
(``tests/helpers`` is on ``sys.path``, which spawned workers copy)."""

from __future__ import annotations

import os

import numpy as np


def worker_pid(_item) -> int:
    """The id of the process that ran the task."""
    return os.getpid()


def with_shared(item: int, shared: np.ndarray) -> tuple[int, int, float]:
    """The process, the identity of the ``shared`` object it was given, and a value read from it."""
    return os.getpid(), id(shared), float(shared[item])
