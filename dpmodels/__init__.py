"""dpmodels: optimization problems of differential privacy as algebraic Pyomo models.

Build a model with a family's ``build_*`` function, solve it with any backend
(``highs``, ``scip``, ``clarabel``, a structure plugin such as ``pgsr_dp``) through
:func:`solve`, and compare formulations and solvers with :func:`compare`.
:func:`solvers_for` says which registered solvers can solve a model, exactly or not;
:func:`formulations` lists every registered model shape with its problem class.

Importing ``dpmodels`` registers every plugin with Pyomo's solver factories (each plugin is
imported the first time Pyomo builds it) and nothing else: the names below, the families
(``dpmodels.pgsr``, ...) and ``dpmodels.instances`` are imported on first use, so the
package and the ``dpmodels`` command start in well under a second.
"""

from __future__ import annotations

from .core.lazy import lazy_exports

__version__ = "0.1.0"

#: Public name -> the module that defines it (imported on first access).
_LAZY = {
    "Hierarchy": "dpmodels.core.hierarchy",
    "capabilities": "dpmodels.core.capabilities",
    "solvers_for": "dpmodels.core.capabilities",
    "compare": "dpmodels.core.facade",
    "get_solver": "dpmodels.core.facade",
    "solve": "dpmodels.core.facade",
    "solver_names": "dpmodels.core.facade",
    "formulations": "dpmodels.core.formulations",
    "relax_integer_vars": "dpmodels.core.relax",
}

__all__ = [*sorted(_LAZY), "__version__"]

__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())


from . import solvers as _solvers  # noqa: E402,F401,I001  (registers the plugins with Pyomo, lazily)
