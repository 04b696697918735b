"""dpmodels: optimization problems of differential privacy as algebraic Pyomo models.

Build a model with a family's ``build_*`` function, solve it with any backend
(``highs``, ``scip``, ``clarabel``, a structure plugin such as ``pgsr_dp``) through
:func:`solve`, and compare formulations and solvers with :func:`compare`.
Importing ``dpmodels`` registers every plugin with Pyomo's solver factories.
"""

from .core import Hierarchy, compare, get_solver, relax_integer_vars, solve, solver_names

__all__ = ["Hierarchy", "compare", "get_solver", "relax_integer_vars", "solve", "solver_names", "__version__"]

__version__ = "0.1.0"

# Every family's builders register their formulations on import; the plugins register with Pyomo.
from .facility import models as _facility_models  # noqa: E402,F401
from .metricdp import models as _metricdp_models  # noqa: E402,F401
from .pgsr import models as _pgsr_models  # noqa: E402,F401
from .submodular import models as _submodular_models  # noqa: E402,F401
from .topdown import models as _topdown_models  # noqa: E402,F401

from . import solvers as _solvers  # noqa: E402,F401,I001  (registers the plugins with Pyomo)
