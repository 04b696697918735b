"""Pyomo solver plugins of dpmodels, found by convention.

Every module of ``solvers/`` that declares ``PLUGINS = {name: (class name, description)}`` is a
plugin (see :mod:`dpmodels.solvers.registry`).  Importing this package registers each declared
name with Pyomo's new solver factory (``pyomo.contrib.solver.common.factory.SolverFactory``)
and the legacy ``pyomo.environ.SolverFactory``, without importing the plugins or their
families: a plugin module is imported the first time Pyomo builds that solver.
``import dpmodels`` imports this package; so does the ``pyomo.command`` entry point.
"""

from __future__ import annotations

from .registry import REGISTERED, declared_plugins, load_plugin, load_plugins, register, register_declared

__all__ = ["REGISTERED", "register", "declared_plugins", "load_plugin", "load_plugins", "register_declared"]

register_declared()
