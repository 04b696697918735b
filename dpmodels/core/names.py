"""Names a family module declares, read only when a command needs them, so that the command line is
built without importing the families' algorithms (``dpmodels --help`` stays fast): :class:`Names`,
the argparse type :func:`one_of` that checks a value against them, and :class:`LazyHelp`, a help
text computed when shown.  Re-exported by :mod:`dpmodels.core.options`.

This module imports the standard library only.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable
from typing import Any

__all__ = ["Names", "one_of", "LazyHelp"]


class Names:
    """Names a family module declares (``METHODS``, ``PARTITIONERS``...), read on first use.

    The command line is built without importing the family's algorithms (``dpmodels --help``
    stays fast); the module is imported when a value is checked or the help is shown.

    Parameters
    ----------
    module : str
        The absolute module name, e.g. ``"dpmodels.metricdp.compare"``.
    attribute : str
        A mapping or sequence of names in it.
    """

    def __init__(self, module: str, attribute: str):
        self.module, self.attribute = module, attribute

    def __call__(self) -> list[str]:
        return list(getattr(importlib.import_module(self.module), self.attribute))


def one_of(names: Names, what: str) -> Callable[[str], str]:
    """An argparse type accepting one of ``names()``: checked at parse time (exit code 2) with
    argparse's own message for a bad choice.

    Parameters
    ----------
    names : Names
        The allowed values.
    what : str
        What a value is (``"method"``), for the message and the help's metavar.
    """

    def parse(text: str) -> str:
        allowed = names()
        if text not in allowed:
            choices = ", ".join(repr(name) for name in allowed)
            raise argparse.ArgumentTypeError(f"invalid choice: {text!r} (choose from {choices})")
        return text

    parse.__name__ = what
    return parse


class LazyHelp:
    """A help text computed when argparse shows it (e.g. one that lists :class:`Names`).

    Parameters
    ----------
    make : callable
        Returns the text.
    """

    def __init__(self, make: Callable[[], str]):
        self._make = make

    def __str__(self) -> str:
        return self._make().replace("%", "%%")

    def __mod__(self, params: Any) -> str:
        return str(self) % params

    def __contains__(self, part: str) -> bool:
        return part in str(self)

    def __add__(self, other: str) -> str:
        return str(self) + other

    def strip(self) -> str:
        return str(self).strip()
