"""Named instances and instance generators.

``instances.load("pgsr/running-example")`` returns a fixed built-in instance;
``instances.generate("pgsr/census-like", seed=0, scale=0.01)`` draws a synthetic one.
``instances.available()`` lists both kinds with a one-line description.
"""

from __future__ import annotations

import inspect

from dpmodels.core.errors import DataValidationError

from .registry import REGISTRY, RegistryEntry, data_path, register_generator, register_instance

__all__ = [
    "load",
    "from_settings",
    "generate",
    "available",
    "example",
    "register_instance",
    "register_generator",
    "data_path",
]


def available(kind: str | None = None) -> dict[str, str]:
    """Names (optionally only ``"instance"`` or ``"generator"``) with their descriptions."""
    _load_families()
    return {e.name: f"[{e.kind}] {e.description}" for e in REGISTRY.values() if kind in (None, e.kind)}


def _entry(name: str) -> RegistryEntry:
    _load_families()
    if name not in REGISTRY:
        raise DataValidationError("instance", f"unknown name {name!r}; available: {sorted(REGISTRY)}")
    return REGISTRY[name]


def load(name: str, **options):
    """A named built-in instance, or a generator's draw (``seed`` 0 unless given; options checked)."""
    entry = _entry(name)
    if entry.kind == "generator":
        return generate(name, seed=options.pop("seed", 0), **options)
    return entry.factory(**options)


def is_generator(name: str) -> bool:
    """Whether ``name`` is a generator (it takes options) rather than a fixed instance."""
    return _entry(name).kind == "generator"


def from_settings(name: str, settings: dict, defaults: dict | None = None, **generator_only):
    """What ``--instance NAME --set KEY=VALUE ...`` names on the command line: a generator's draw with
    ``defaults`` under the user's ``settings`` (plus ``generator_only`` options), or a fixed
    instance, which takes no settings."""
    if is_generator(name):
        return load(name, **{**(defaults or {}), **settings, **generator_only})
    if settings:
        raise DataValidationError("--set", f"{name!r} is a fixed instance; --set does not apply")
    return load(name)


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
    for key, value in shape.items():
        _check_type(name, key, params[key], value)
    return entry.factory(seed=seed, **shape)


#: What an option's default (or simple annotation) says its values must be; nothing is coerced.
_KINDS = {
    bool: ("true or false", lambda v: isinstance(v, bool)),
    int: ("an integer", lambda v: isinstance(v, int) and not isinstance(v, bool)),
    float: ("a number", lambda v: isinstance(v, int | float) and not isinstance(v, bool)),
    str: ("text", lambda v: isinstance(v, str)),
}
_ANNOTATIONS = {"int": int, "float": float, "bool": bool, "str": str}


def _check_type(generator: str, key: str, param: inspect.Parameter, value) -> None:
    kind = type(param.default) if param.default not in (None, inspect.Parameter.empty) else None
    if kind not in _KINDS:
        kind = _ANNOTATIONS.get(str(param.annotation).replace(" | None", ""))
    if kind is None or (value is None and param.default is None):
        return
    words, ok = _KINDS[kind]
    if not ok(value):
        raise DataValidationError(key, f"option of {generator!r} must be {words}, got {value!r}")


def example(formulation: str):
    """A tiny freshly built model of a registered formulation (every formulation has one;
    the contract tests solve each with every registered solver)."""
    from dpmodels.core.formulations import example_model

    _load_families()
    return example_model(formulation)


def _load_families() -> None:
    """Import ``instances/<family>.py`` of every family that has one (they register on import)."""
    import importlib
    from pathlib import Path

    from dpmodels.core.families import family_names

    here = Path(__file__).resolve().parent
    for name in family_names():
        if (here / f"{name}.py").is_file():
            importlib.import_module(f"{__name__}.{name}")
