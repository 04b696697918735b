"""Plugins found by convention, registered with Pyomo without importing them.

A plugin is a module of ``solvers/`` that declares, at module level, the literal

    PLUGINS = {"pgsr_dp": ("PGSRDPSolver", "PGSR Model 1 by the M_H^dp dynamic program (dpmodels)")}

(solver name: its class in the module, and the one-line description Pyomo shows).
:func:`declared_plugins` reads those literals from the source files without importing them,
and :func:`register_declared` registers a small stand-in class for each name with Pyomo's
solver factories, new and legacy.  The stand-in imports its plugin (and so its family) the
first time Pyomo builds the solver, then registers the real class in its place: ``import
dpmodels`` and every ``pyomo`` command stay fast, and no list of plugins is kept by hand.
"""

from __future__ import annotations

import ast
import importlib
from functools import cache
from pathlib import Path

from pyomo.contrib.solver.common.factory import SolverFactory
from pyomo.opt.base.solvers import LegacySolverFactory

__all__ = ["REGISTERED", "register", "declared_plugins", "register_declared", "load_plugin", "load_plugins"]

#: Solver name -> the real plugin class, for every plugin loaded (or registered by hand) so far.
REGISTERED: dict[str, type] = {}

PLUGIN_DIR = Path(__file__).resolve().parent

#: Modules of ``solvers/`` that are shared machinery, not plugins.
_NOT_PLUGINS = frozenset({"__init__", "base", "results", "registry"})


def register(name: str, cls: type, doc: str) -> type:
    """Register the plugin class ``cls`` under ``name`` in the new and the legacy factory.

    The legacy class maps a converged but not proven-optimal run to the legacy ``feasible``.
    A stand-in registered by :func:`register_declared` is replaced; a real class already
    registered under ``name`` is kept.

    Parameters
    ----------
    name : str
        The solver's name in ``SolverFactory``.
    cls : type
        A :class:`~dpmodels.solvers.base.StructureSolver` subclass (or any ``SolverBase``).
    doc : str
        One line for ``pyomo help --solvers``.

    Returns
    -------
    type
        The class registered under ``name``.
    """
    from .results import LegacyStructureWrapper

    current = SolverFactory._cls.get(name)
    if current is None or _is_stand_in(current):
        legacy = type(f"Legacy{cls.__name__}", (LegacyStructureWrapper, cls), {"__module__": cls.__module__})
        SolverFactory.register(name, doc=doc)(cls, legacy)
    REGISTERED[name] = SolverFactory._cls[name]
    return REGISTERED[name]


@cache
def declared_plugins() -> dict[str, tuple[str, str, str]]:
    """Every plugin declared in ``solvers/*.py``: name -> (module, class name, description).

    Read from the files' ``PLUGINS`` literals; nothing is imported.

    Raises
    ------
    ValueError
        Two modules declare the same name, or a ``PLUGINS`` is not a literal of that shape.
    """
    found: dict[str, tuple[str, str, str]] = {}
    for path in sorted(PLUGIN_DIR.glob("*.py")):
        if path.stem in _NOT_PLUGINS or path.stem.startswith("_"):
            continue
        for name, (class_name, doc) in _plugins_literal(path).items():
            if name in found:
                raise ValueError(f"solver {name!r} is declared by {found[name][0]} and by {path.stem}")
            found[name] = (path.stem, class_name, doc)
    return found


def _plugins_literal(path: Path) -> dict:
    text = path.read_text()
    if "PLUGINS" not in text:
        return {}
    for node in ast.parse(text, str(path)).body:
        if isinstance(node, ast.Assign | ast.AnnAssign) and _assigns(node, "PLUGINS"):
            value = ast.literal_eval(node.value)
            if not isinstance(value, dict) or not all(
                isinstance(k, str) and isinstance(v, tuple) and len(v) == 2 for k, v in value.items()
            ):
                raise ValueError(f"{path.name}: PLUGINS must be {{name: (class name, description)}}")
            return value
    return {}


def _assigns(node, target: str) -> bool:
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    return any(isinstance(t, ast.Name) and t.id == target for t in targets)


def load_plugin(name: str) -> type:
    """Import the plugin declared as ``name``, register its real class, and return it."""
    if name in REGISTERED:
        return REGISTERED[name]
    module, class_name, doc = declared_plugins()[name]
    cls = getattr(importlib.import_module(f"{__package__}.{module}"), class_name)
    return register(name, cls, doc)


def load_plugins() -> dict[str, type]:
    """Import every declared plugin; returns name -> real class (hand-registered ones included)."""
    for name in declared_plugins():
        load_plugin(name)
    return dict(REGISTERED)


def register_declared() -> None:
    """Register a stand-in for every declared plugin that is not registered yet (imports none)."""
    for name, (_module, _class_name, doc) in declared_plugins().items():
        if name not in SolverFactory._cls:
            SolverFactory._cls[name] = _stand_in(name, legacy=False)
            SolverFactory._doc[name] = doc
            LegacySolverFactory.register(name, f"{doc} (new interface)")(_stand_in(name, legacy=True))


def _is_stand_in(cls) -> bool:
    return getattr(cls, "_dpmodels_stand_in", False)


def _stand_in(name: str, *, legacy: bool) -> type:
    """A class whose construction loads the plugin and builds the real (legacy) solver."""

    def __new__(cls, **kwds):
        real = load_plugin(name)
        target = LegacySolverFactory._cls[name] if legacy else real
        return target(**kwds)

    def load(cls) -> type:
        return load_plugin(name)

    namespace = {
        "__new__": __new__,
        "load_plugin": classmethod(load),
        "_dpmodels_stand_in": True,
        "name": name,
        "__doc__": f"Stand-in for the dpmodels plugin {name!r}: imports it on first use.",
    }
    return type(f"LazyPlugin_{name}", (), namespace)
