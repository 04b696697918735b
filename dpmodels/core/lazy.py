"""Lazy package exports (PEP 562): a package lists its public names and the modules that
define them, and each module is imported the first time one of its names is read.

This keeps ``import dpmodels`` and the ``dpmodels`` command fast (numpy, pandas, scipy,
Pyomo's modelling layer and numba are imported only by what uses them) while ``from
dpmodels.core import PrivacySession`` and ``dpmodels.solve`` read as usual.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from types import ModuleType

__all__ = ["lazy_exports"]


def lazy_exports(package: str, exports: Mapping[str, str], namespace: dict) -> tuple[Callable, Callable]:
    """``__getattr__`` and ``__dir__`` for a package whose ``exports`` are imported on first use.

    Parameters
    ----------
    package : str
        The package's ``__name__`` (named in the error for an unknown attribute).
    exports : mapping of str to str
        Public name -> absolute name of the module that defines it.
    namespace : dict
        The package's ``globals()``: a name read once is stored there, so the next read is
        an ordinary attribute lookup.

    Returns
    -------
    tuple
        ``(__getattr__, __dir__)`` to assign at the package's module level.
    """

    def __getattr__(name: str):
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    def __dir__():
        return sorted({*namespace, *exports})

    _keep_exports(package, exports)
    return __getattr__, __dir__


def _keep_exports(package: str, exports: Mapping[str, str]) -> None:
    """Let an exported name keep its meaning when a submodule has the same name.

    Importing ``<package>.release`` makes the import system bind the submodule as the package's
    attribute ``release``; with eager imports the package's ``from .release import release``
    came after and won, but a lazy package would then hand out the module for
    ``from <package> import release``.  The package's class is swapped for one that ignores that
    binding for exported names (the submodule stays importable by its full name).
    """
    module = sys.modules.get(package)
    if module is None:
        return

    class LazyPackage(type(module)):
        def __setattr__(self, name, value):
            if name in exports and isinstance(value, ModuleType) and value.__name__ == f"{package}.{name}":
                return
            super().__setattr__(name, value)

    LazyPackage.__qualname__ = "LazyPackage"
    module.__class__ = LazyPackage
