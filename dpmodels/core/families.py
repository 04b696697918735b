"""The families of dpmodels, found by convention: the one list everything else reads.

A family is a folder ``dpmodels/<name>/`` with an ``__init__.py`` and a ``models.py`` (its
Pyomo builders, which register its formulations on import).  By the same convention it has
``commands.py`` (what the ``dpmodels`` command shows, a :class:`~dpmodels.core.commands.Family`
named ``FAMILY``), an instances module ``instances/<name>.py`` and plugins ``solvers/*.py``.
The command line, the instance registry, the formulation registry, the documentation and the
tests all loop over :func:`family_names`; nothing lists the families by hand.

Finding them reads the file system only (no family is imported), so ``dpmodels --help`` and
the Pyomo entry point stay fast.
"""

from __future__ import annotations

import importlib
from functools import cache
from pathlib import Path
from types import ModuleType

__all__ = ["PACKAGE_DIR", "family_names", "family_module", "import_families", "FAMILY_MARKER"]

#: The installed ``dpmodels`` package folder (a checkout's ``dpmodels/`` in an editable install).
PACKAGE_DIR = Path(__file__).resolve().parent.parent

#: The file whose presence makes a subpackage of ``dpmodels`` a family.
FAMILY_MARKER = "models.py"

#: Subpackages of ``dpmodels`` that are not families whatever they contain.
_NOT_FAMILIES = frozenset({"core", "solvers", "instances"})


@cache
def family_names() -> tuple[str, ...]:
    """The families' package names, sorted: every ``dpmodels/<name>/`` with ``__init__.py`` and
    ``models.py``.

    Returns
    -------
    tuple of str
        E.g. ``("facility", "metricdp", "pgsr", "submodular", "topdown")``.
    """
    found = (
        folder.name
        for folder in PACKAGE_DIR.iterdir()
        if folder.is_dir()
        and folder.name not in _NOT_FAMILIES
        and not folder.name.startswith(("_", "."))
        and (folder / "__init__.py").is_file()
        and (folder / FAMILY_MARKER).is_file()
    )
    return tuple(sorted(found))


def family_module(name: str, part: str = "") -> ModuleType:
    """Import ``dpmodels.<name>`` (or its module ``part``, e.g. ``"models"``, ``"commands"``).

    Parameters
    ----------
    name : str
        A family's package name, one of :func:`family_names`.
    part : str, optional
        A module of the family; empty for the package itself.

    Raises
    ------
    KeyError
        ``name`` is not a family.
    """
    if name not in family_names():
        raise KeyError(f"no family {name!r}; the families are {', '.join(family_names())}")
    return importlib.import_module(f"dpmodels.{name}" + (f".{part}" if part else ""))


def import_families(part: str = "models", *, optional: bool = False) -> list[ModuleType]:
    """Import module ``part`` of every family (``"models"`` registers their formulations).

    Parameters
    ----------
    part : str
        The module each family has by convention (``models``, ``commands``...).
    optional : bool
        Skip families without that module instead of failing.
    """
    modules = []
    for name in family_names():
        if optional and not (PACKAGE_DIR / name / f"{part}.py").is_file():
            continue
        modules.append(family_module(name, part))
    return modules
