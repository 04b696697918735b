"""Work that cannot fit is refused before it starts: memory estimates against what the machine has.

A release sized by declared public facts (PGSR's ``N``, a geography's blocks) can ask for more
memory than exists; discovering that after minutes of work, deep in a compiled kernel that
ignores Ctrl-C, is the worst way to find out.  Families estimate their peak from the declared
sizes; :func:`require_memory` compares the estimate with the memory available now (or a limit
the user sets with ``DPMODELS_MEMORY_LIMIT``, in bytes or with a K/M/G/T suffix) and refuses
with both numbers.
"""

from __future__ import annotations

import os

from .errors import DataValidationError

__all__ = ["available_memory", "memory_limit", "require_memory", "format_bytes"]

_SUFFIXES = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


def available_memory() -> int | None:
    """Bytes of memory available to a new allocation now (``MemAvailable`` on Linux), or None if unknown."""
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def memory_limit() -> int | None:
    """The limit a release must fit in: ``DPMODELS_MEMORY_LIMIT`` if set, else :func:`available_memory`."""
    text = os.environ.get("DPMODELS_MEMORY_LIMIT", "").strip().upper().removesuffix("B")
    if not text:
        return available_memory()
    number, suffix = (text[:-1], text[-1]) if text[-1] in _SUFFIXES else (text, "")
    try:
        value = float(number) * _SUFFIXES[suffix]
    except ValueError:
        raise DataValidationError("DPMODELS_MEMORY_LIMIT", f"must be bytes, e.g. 8G or 500M, got {text!r}") from None
    if not value > 0:
        raise DataValidationError("DPMODELS_MEMORY_LIMIT", f"must be > 0, got {text!r}")
    return int(value)


def format_bytes(n: float) -> str:
    """``n`` bytes in the largest binary unit that keeps it above 1 (``1.5 GiB``)."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.3g} {unit}" if unit != "B" else f"{int(n)} B"
        n /= 1024
    return f"{n:.3g} TiB"  # pragma: no cover


def require_memory(estimate: float, what: str, field: str) -> None:
    """Refuse ``what`` (sized by option ``field``) when its estimated peak exceeds :func:`memory_limit`.

    Parameters
    ----------
    estimate
        Estimated peak bytes, from declared sizes only.
    what
        The work, in words (``"M_H^dp on 3 regions x N = 10,000,000 sizes"``).
    field
        The option that sized it, named in the error.
    """
    limit = memory_limit()
    if limit is not None and estimate > limit:
        raise DataValidationError(
            field,
            f"{what} needs about {format_bytes(estimate)} of memory, more than the {format_bytes(limit)} "
            "available (DPMODELS_MEMORY_LIMIT sets another limit); nothing was run or charged",
        )
