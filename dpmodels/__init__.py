"""dpmodels: optimization problems of differential privacy as algebraic Pyomo models.

Build a model with a family's ``build_*`` function, solve it with any backend
(``highs``, ``scip``, ``clarabel``, a structure plugin such as ``pgsr_dp``) through
:func:`solve`, and compare formulations and solvers with :func:`compare`.
:func:`solvers_for` says which registered solvers can solve a model, exactly or not;
:func:`formulations` lists every registered model shape with its problem class.
Importing ``dpmodels`` registers every plugin with Pyomo's solver factories.
"""

from .core import Hierarchy, compare, get_solver, relax_integer_vars, solve, solver_names
from .core.capabilities import capabilities, solvers_for
from .core.formulations import formulations

__all__ = [
    "Hierarchy",
    "capabilities",
    "compare",
    "formulations",
    "get_solver",
    "relax_integer_vars",
    "solve",
    "solver_names",
    "solvers_for",
    "__version__",
]

__version__ = "0.1.0"

# Every family's builders register their formulations on import; the plugins register with Pyomo.
from . import solvers as _solvers  # noqa: E402,F401,I001  (registers the plugins with Pyomo)
from .facility import models as _facility_models  # noqa: E402,F401
from .metricdp import models as _metricdp_models  # noqa: E402,F401
from .pgsr import models as _pgsr_models  # noqa: E402,F401
from .submodular import models as _submodular_models  # noqa: E402,F401
from .topdown import models as _topdown_models  # noqa: E402,F401
