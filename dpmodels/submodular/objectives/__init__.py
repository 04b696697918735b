"""The objectives of the family (spec 1.1-1.3, 1.6, 9.1): set functions and k-submodular functions
with declared, data-independent sensitivities, the checks of those declarations, and the
multilinear extension.

* :mod:`.set_functions` -- weighted coverage, facility location, decomposable sums and validated
  callables (:class:`~dpmodels.submodular.data.SetFunction`).
* :mod:`.k_submodular` -- k-coverage, separable sums and the paper's Examples 5.1 and 5.2
  (:class:`~dpmodels.submodular.data.KSubmodularFunction`).
* :mod:`.checks` -- counterexamples to monotonicity and (k-)submodularity, and the sensitivity check.
* :mod:`.extension` -- the multilinear extension ``f(x) = E[F(X)]``, its gradient (closed form,
  enumeration or sampled) and its Pyomo expression.
"""

from .checks import (
    EXHAUSTIVE_CHECK_MAX,
    Violation,
    check_sensitivity,
    k_submodularity_violations,
    submodularity_violations,
)
from .extension import (
    ENUM_MAX,
    SampledGradient,
    coverage_gradient,
    coverage_value,
    facility_gradient,
    facility_value,
    gradient,
    has_closed_form,
    multilinear,
    pyomo_multilinear,
)
from .k_submodular import KCoverage, SeparableSum, ad_slots, facility_variant
from .set_functions import CallableFunction, DecomposableSum, FacilityLocation, WeightedCoverage

__all__ = [
    "WeightedCoverage",
    "FacilityLocation",
    "DecomposableSum",
    "CallableFunction",
    "KCoverage",
    "SeparableSum",
    "ad_slots",
    "facility_variant",
    "Violation",
    "submodularity_violations",
    "k_submodularity_violations",
    "check_sensitivity",
    "EXHAUSTIVE_CHECK_MAX",
    "multilinear",
    "gradient",
    "has_closed_form",
    "SampledGradient",
    "coverage_value",
    "coverage_gradient",
    "facility_value",
    "facility_gradient",
    "pyomo_multilinear",
    "ENUM_MAX",
]
