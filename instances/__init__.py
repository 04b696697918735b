"""Named instances and instance generators.

``instances.load("pgsr/running-example")`` returns a fixed built-in instance;
``instances.generate("pgsr/census-like", seed=0, scale=0.01)`` draws a synthetic one.
``instances.available()`` lists both kinds with a one-line description.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path

from dpmodels.core.errors import DataValidationError

__all__ = ["load", "generate", "available", "register_instance", "register_generator", "data_path"]


@dataclass(frozen=True)
class _Entry:
    name: str
    kind: str  # "instance" or "generator"
    factory: Callable
    description: str


_REGISTRY: dict[str, _Entry] = {}


def register_instance(name: str, description: str):
    """Decorator: register a zero-argument function returning a fixed instance."""
    return _register(name, "instance", description)


def register_generator(name: str, description: str):
    """Decorator: register ``f(seed=..., **shape)`` returning a synthetic instance."""
    return _register(name, "generator", description)


def _register(name: str, kind: str, description: str):
    def decorator(func):
        _REGISTRY[name] = _Entry(name, kind, func, description)
        return func

    return decorator


def data_path(relative: str) -> Path:
    """Path of a data file shipped with the package (``instances/data/...``)."""
    return Path(str(files(__name__).joinpath("data", relative)))


def available(kind: str | None = None) -> dict[str, str]:
    """Names (optionally only ``"instance"`` or ``"generator"``) with their descriptions."""
    _load_families()
    return {e.name: f"[{e.kind}] {e.description}" for e in _REGISTRY.values() if kind in (None, e.kind)}


def _entry(name: str) -> _Entry:
    _load_families()
    if name not in _REGISTRY:
        raise DataValidationError("instance", f"unknown name {name!r}; available: {sorted(_REGISTRY)}")
    return _REGISTRY[name]


def load(name: str, **options):
    """A named built-in instance, or a generator's draw (``seed`` 0 unless given; options checked)."""
    entry = _entry(name)
    if entry.kind == "generator":
        return generate(name, seed=options.pop("seed", 0), **options)
    return entry.factory(**options)


def generate(name: str, seed=0, **shape):
    """A synthetic instance from generator ``name``; ``shape`` are its keyword knobs."""
    entry = _entry(name)
    if entry.kind != "generator":
        raise DataValidationError("instance", f"{name!r} is a fixed instance; use instances.load")
    params = inspect.signature(entry.factory).parameters
    unknown = sorted(set(shape) - set(params))
    if unknown:
        raise DataValidationError(
            "shape", f"{name!r} has no options {unknown}; it takes {sorted(set(params) - {'seed'})}"
        )
    return entry.factory(seed=seed, **shape)


def _load_families() -> None:
    from . import facility, metricdp, pgsr, submodular, topdown  # noqa: F401  (register on import)
