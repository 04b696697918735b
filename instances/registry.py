"""The registry of named instances and generators (the family modules register into it)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path

__all__ = ["register_instance", "register_generator", "data_path", "REGISTRY"]


@dataclass(frozen=True)
class RegistryEntry:
    name: str
    kind: str  # "instance" or "generator"
    factory: Callable
    description: str


REGISTRY: dict[str, RegistryEntry] = {}


def register_instance(name: str, description: str):
    """Decorator: register a zero-argument function returning a fixed instance."""
    return _register(name, "instance", description)


def register_generator(name: str, description: str):
    """Decorator: register ``f(seed=..., **shape)`` returning a synthetic instance."""
    return _register(name, "generator", description)


def _register(name: str, kind: str, description: str):
    def decorator(func):
        REGISTRY[name] = RegistryEntry(name, kind, func, description)
        return func

    return decorator


def data_path(relative: str) -> Path:
    """Path of a data file shipped with the package (``instances/data/...``)."""
    return Path(str(files(__package__).joinpath("data", relative)))
