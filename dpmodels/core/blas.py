"""BLAS on one thread where the caller's own threads (or processes) already use the cores.

OpenBLAS starts a thread per core for every call above a small size.  Where the caller runs several
such calls at once (the IPM's numba threads, TopDown's worker processes) or makes thousands of calls
on small matrices, those threads compete for the same cores (measured: the IPM's band solves at 13
GFMA/s with two levels of threads against 40 with one BLAS thread per caller thread; TopDown's
state preset on two worker processes slower than serially while its LAPACK LUs ran on two threads
each).
"""

from __future__ import annotations

from contextlib import contextmanager
from functools import cache

__all__ = ["single_threaded_blas"]


@cache
def _blas_controller():
    """The loaded BLAS libraries, found once (a fresh look costs about 1 ms)."""
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


@contextmanager
def single_threaded_blas():
    """BLAS limited to one thread inside the ``with`` block (about 10 microseconds to enter)."""
    with _blas_controller().limit(limits=1, user_api="blas"):
        yield
