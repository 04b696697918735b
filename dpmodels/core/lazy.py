"""Lazy package exports (PEP 562): a package lists its public names and the modules that
define them, and each module is imported the first time one of its names is read.

This keeps ``import dpmodels`` and the ``dpmodels`` command fast (numpy, pandas, scipy,
Pyomo's modelling layer and numba are imported only by what uses them) while ``from
dpmodels.core import PrivacySession`` and ``dpmodels.solve`` read as usual.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping

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

    return __getattr__, __dir__
