"""The structured interior point of the perturbation LP: block-angular by outputs (issue 15).

* ``driver``: :func:`structured_ipm` (the iterations, certified bounds every iteration, the presolve
  of implied pairs) and :func:`warm_up` (compiles the kernels before any clock starts)
* ``linalg``: the Newton systems, one sparse N x N block per output: dense or banded
* ``band``: the compiled (numba) kernels of the banded blocks
* ``step``: one Mehrotra predictor-corrector step with Gondzio correctors
* ``recovery``: an interior iterate purified into a near-vertex mechanism (the upper bounds)

The ``mdp_ipm`` plugin (``solvers/mdp_ipm.py``) runs :func:`structured_ipm` on the Pyomo model of
:func:`~dpmodels.metricdp.models.build_full_lp`.
"""

from .band import band_cholesky, band_inverse_sum, band_solve
from .driver import IPMResult, dual_bound, essential_pairs, structured_ipm, warm_up
from .linalg import BandSystem, DenseSystem, NumericalBreakdown, Rows, band_order, newton_system
from .recovery import PURIFY_BELOW, purify
from .step import mehrotra_step, start

__all__ = [
    "structured_ipm",
    "IPMResult",
    "warm_up",
    "essential_pairs",
    "dual_bound",
    "NumericalBreakdown",
    "Rows",
    "DenseSystem",
    "BandSystem",
    "band_order",
    "newton_system",
    "band_cholesky",
    "band_inverse_sum",
    "band_solve",
    "purify",
    "PURIFY_BELOW",
    "mehrotra_step",
    "start",
]
