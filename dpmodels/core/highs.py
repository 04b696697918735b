"""HiGHS models that keep our standard output for results.

HiGHS writes its banner ("Running HiGHS 1.x ...: Copyright ...") straight to the process's
file descriptor 1 -- below Python's ``sys.stdout``, so neither ``contextlib.redirect_stdout``
nor the model's ``output_flag`` stops it -- the first time a ``highspy.Highs`` is created in a
process (measured with highspy 1.16: later ones print nothing).  ``dpmodels compare mdp``
printed it in the middle of its table.  :func:`new_highs` creates that first object once per
process with file descriptor 1 pointed at ``/dev/null``, then returns a model whose output is
off unless the caller asks for HiGHS's log.  Every ``highspy.Highs`` that dpmodels creates
comes from here; Pyomo's own ``highs`` interface captures HiGHS's output itself (and shows it
under ``tee``).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import sys
import threading

__all__ = ["new_highs", "banner_swallowed"]

_LOCK = threading.Lock()
_SWALLOWED = False


def new_highs(log: bool = False):
    """A new ``highspy.Highs`` whose output is on only when ``log`` is true.

    Parameters
    ----------
    log : bool
        Let HiGHS print its log (the caller asked for the solver's output, e.g. ``tee``).

    Returns
    -------
    highspy.Highs
        The model; HiGHS's once-per-process banner has already gone to ``/dev/null``.
    """
    import highspy

    _swallow_banner(highspy)
    h = highspy.Highs()
    h.setOptionValue("output_flag", bool(log))
    return h


def banner_swallowed() -> bool:
    """Whether this process already created (and silenced) its first ``highspy.Highs``."""
    return _SWALLOWED


def _swallow_banner(highspy) -> None:
    """Create the process's first ``highspy.Highs`` with file descriptor 1 on ``/dev/null``.

    A thread printing during those few milliseconds loses its output; this happens once."""
    global _SWALLOWED
    with _LOCK:
        if _SWALLOWED:
            return
        with _fd1_to_devnull():
            highspy.Highs()
        _SWALLOWED = True


@contextlib.contextmanager
def _fd1_to_devnull():
    """File descriptor 1 on ``/dev/null`` for the block (a no-op if it cannot be duplicated)."""
    try:
        sys.stdout.flush()
    except (AttributeError, ValueError, OSError):
        pass
    try:
        saved = os.dup(1)
    except OSError:  # no descriptor 1 (a daemon): nothing can reach our stdout anyway
        yield
        return
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 1)
        yield
    finally:
        _flush_c_stdio()
        os.dup2(saved, 1)
        os.close(saved)
        os.close(null)


def _flush_c_stdio() -> None:
    """Flush C's stdio buffers, so nothing written inside the block reaches the restored descriptor."""
    with contextlib.suppress(OSError, AttributeError, TypeError):
        ctypes.CDLL(None).fflush(None)
