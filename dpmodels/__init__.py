"""dpmodels: optimization problems of differential privacy as algebraic Pyomo models.

Build a model with a family's ``build_*`` function, solve it with any backend
(``highs``, ``scip``, ``clarabel``, a structure plugin such as ``pgsr_dp``) through
:func:`solve`, and compare formulations and solvers with :func:`compare`.
Importing ``dpmodels`` registers every plugin with Pyomo's solver factories.
"""

from .core import Hierarchy, compare, get_solver, relax_integer_vars, solve, solver_names

__all__ = ["Hierarchy", "compare", "get_solver", "relax_integer_vars", "solve", "solver_names", "__version__"]

__version__ = "0.1.0"

from . import solvers as _solvers  # noqa: E402,F401  (registers the plugins with Pyomo)
