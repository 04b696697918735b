"""``submodular_cg`` and ``submodular_private_cg``: the multilinear-relaxation model solved by
continuous greedy (non-private) or by the private Algorithms 1 / 2 (spec 3.1-3.3, 6.1).

Both solve models built by :func:`dpmodels.submodular.models.build_multilinear_relaxation`
(``max f(y)`` over ``P(M)``).  With ``rounding="none"`` the fractional ``x_T`` is loaded into ``y``
and the objective is ``f(x_T)``; with ``rounding="swap"`` (default) or ``"pipage"`` the rounded base
is loaded (with Martin's arc flows for a graphic matroid) and the objective is ``F(S)``
(``E[F(S)] >= f(x_T)``, A5).  The result is feasible, not optimal (``1 - 1/e`` guarantee), so the
status is ``feasible`` and no bound is reported.  Directions of the non-private solver: the matroid
greedy (``direction="greedy"``) or the Pyomo LP over the base polytope solved by HiGHS
(``"highs"``).  The private solver reports its accountant summary in ``results.extra_info.privacy``.
"""

from __future__ import annotations

from pyomo.common.config import In

from dpmodels.core.errors import PrivacyParameterError
from dpmodels.submodular.algorithms import continuous_greedy
from dpmodels.submodular.matroids import GraphicMatroid
from dpmodels.submodular.mechanism.continuous import improved_private_continuous_greedy, private_continuous_greedy
from dpmodels.submodular.models import martin_values

from .base import Option, StructureSolution, StructureSolver, converged

__all__ = ["ContinuousGreedySolver", "PrivateContinuousGreedySolver"]


def _optional_int(value):
    return None if value is None else int(value)


#: Options both continuous-greedy plugins take (``rounding`` differs: the private one has no pipage).
_COMMON = (
    Option("T", None, "steps (default r, the matroid's rank)", _optional_int),
    Option("seed", None, "seed of the run's rng streams (None: secure; a seed: reproducible, not private)"),
    Option("gradient_mode", "auto", "auto, closed_form, exact_enum or sampled"),
    Option("samples", None, "m of the sampled gradient", _optional_int),
)


def _solution(marker, res, rounded: bool) -> StructureSolution:
    if rounded:
        values, objective = {"y": res.S.astype(float)}, res.rounded_value
        M = marker.data.matroid
        if isinstance(M, GraphicMatroid):
            values["polytope.z"] = martin_values(M, res.S)
    else:
        values, objective = {"y": res.x}, res.value
    info = {"x": res.x.tolist(), "calls": res.calls, "true relaxed value (diagnostic)": res.value}
    return converged(objective, values, exact=False, info=info)


class ContinuousGreedySolver(StructureSolver):
    """Non-private continuous greedy on the multilinear relaxation."""

    formulations = frozenset({"submodular.multilinear"})
    integer_only = False
    exact = False
    guarantee = "approximation: E[F(S)] >= (1 - 1/e - O(r^2/T)) OPT (swap rounding); no bound"
    options = (
        *_COMMON,
        Option("rounding", "swap", "swap, pipage or none (load the fractional x_T)", In(["swap", "pipage", "none"])),
        Option(
            "direction", "greedy", "direction oracle: the matroid greedy or the LP by HiGHS", In(["greedy", "highs"])
        ),
    )
    algorithm = "continuous greedy (LP directions) + swap rounding, 1 - 1/e - O(r^2/T) (spec 3.6)"

    @classmethod
    def run(cls, payload, options, controls):
        return continuous_greedy(payload.function, payload.matroid, **cls.keywords(options))

    def to_solution(self, marker, result, options):
        return _solution(marker, result, options.rounding != "none")


class PrivateContinuousGreedySolver(StructureSolver):
    """Algorithm 1 (or 2) on the multilinear relaxation; the privacy summary is in ``extra_info``.

    Only the point ``x_T`` and the rounded set ``S`` are private outputs.  The reported objective
    (``F_D(S)`` or ``f_D(x_T)``) and ``extra_info["true relaxed value (diagnostic)"]`` are evaluation
    diagnostics computed on the private data: they are not covered by the privacy accounting and
    must not be released."""

    formulations = frozenset({"submodular.multilinear"})
    integer_only = False
    exact = False
    guarantee = "eps-DP mechanism: a random feasible point with the paper's expected-value guarantee; no bound"
    options = (
        *_COMMON,
        Option("rounding", "swap", "swap or none (pipage is not offered privately)", In(["swap", "none"])),
        Option("epsilon", None, "the paper's input epsilon (finite, > 0); required"),
        Option("algorithm", "alg1", "Algorithm 1 or 2", In(["alg1", "alg2"])),
        Option("cover", "bases", "cover backend (A1)", In(["bases", "grid"])),
        Option("q", None, "grid resolution", _optional_int),
    )
    algorithm = "private continuous greedy (Rafiey-Yoshida Alg. 1 / 2) + swap rounding"

    @classmethod
    def run(cls, payload, options, controls):
        if options.epsilon is None:
            raise PrivacyParameterError(
                "epsilon", "submodular_private_cg needs a finite epsilon > 0 (submodular_cg is the non-private limit)"
            )
        mechanism = private_continuous_greedy if options.algorithm == "alg1" else improved_private_continuous_greedy
        keywords = cls.keywords(options, drop=("epsilon", "algorithm"))
        return mechanism(payload.function, payload.matroid, options.epsilon, **keywords)

    def to_solution(self, marker, result, options):
        sol = _solution(marker, result, options.rounding != "none")
        sol.info["privacy"] = result.accountant.summary()
        return sol


#: The solvers this module registers (read without importing it: see :mod:`dpmodels.solvers.registry`).
PLUGINS = {
    "submodular_cg": ("ContinuousGreedySolver", "multilinear relaxation by continuous greedy (dpmodels)"),
    "submodular_private_cg": ("PrivateContinuousGreedySolver", "private continuous greedy, Alg. 1/2 (dpmodels)"),
}
