"""``KEY=VALUE`` settings of the command line (``--set scale=0.1 --set N=20``), typed."""

from __future__ import annotations

from .errors import DataValidationError

__all__ = ["parse_settings"]


def parse_settings(pairs: list[str], field: str = "--set") -> dict:
    """``["N=20", "scale=0.1", "mode=tight"]`` -> ``{"N": 20, "scale": 0.1, "mode": "tight"}``.

    Values become ints, else floats, else stay text; a pair without ``=`` is refused naming ``field``.
    """
    out = {}
    for pair in pairs:
        if "=" not in pair:
            raise DataValidationError(field, f"expects KEY=VALUE, got {pair!r}")
        key, value = pair.split("=", 1)
        for cast in (int, float):
            try:
                out[key] = cast(value)
                break
            except ValueError:
                continue
        else:
            out[key] = value
    return out
