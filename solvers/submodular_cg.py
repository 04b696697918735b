"""``submodular_cg`` and ``submodular_private_cg``: the multilinear-relaxation model solved by
continuous greedy (non-private) or by the private Algorithms 1 / 2 (spec 3.1-3.3, 6.1).

Both solve models built by :func:`dpmodels.submodular.models.build_multilinear_relaxation`
(``max f(y)`` over ``P(M)``).  With ``rounding="none"`` the fractional ``x_T`` is loaded into ``y``
and the objective is ``f(x_T)``; with ``rounding="swap"`` (default) or ``"pipage"`` the rounded base
is loaded and the objective is ``F(S)`` (``E[F(S)] >= f(x_T)``, A5).  The result is feasible, not
optimal (``1 - 1/e`` guarantee), so the status is ``feasible`` and no bound is reported.
Directions of the non-private solver: the matroid greedy (``direction="greedy"``) or the Pyomo LP
over the base polytope solved by HiGHS (``"highs"``).  The private solver reports its accountant
summary in ``results.extra_info.privacy``.
"""

from __future__ import annotations

from pyomo.common.config import ConfigValue, In
from pyomo.contrib.solver.common.config import SolverConfig
from pyomo.contrib.solver.common.results import TerminationCondition

from dpmodels.core.errors import ModelStructureError, PrivacyParameterError
from dpmodels.submodular.algorithms import continuous_greedy
from dpmodels.submodular.mechanism import improved_private_continuous_greedy, private_continuous_greedy

from .base import StructureSolution, StructureSolver

__all__ = ["ContinuousGreedySolver", "PrivateContinuousGreedySolver"]


def _optional_int(value):
    return None if value is None else int(value)


class _CGConfig(SolverConfig):
    def __init__(self, description=None, doc=None, implicit=False, implicit_domain=None, visibility=0):
        super().__init__(
            description=description, doc=doc, implicit=implicit, implicit_domain=implicit_domain, visibility=visibility
        )
        self.T = self.declare("T", ConfigValue(default=None, domain=_optional_int, description="steps (default r)"))
        self.rounding = self.declare(
            "rounding", ConfigValue(default="swap", domain=In(["swap", "pipage", "none"]), description="rounding")
        )
        self.seed = self.declare(
            "seed",
            ConfigValue(
                default=None,
                description="seed of the run's rng streams (None: secure; a seed: reproducible, not private)",
            ),
        )
        self.gradient_mode = self.declare(
            "gradient_mode", ConfigValue(default="auto", description="auto, closed_form, exact_enum or sampled")
        )
        self.samples = self.declare(
            "samples", ConfigValue(default=None, domain=_optional_int, description="m of the sampled gradient")
        )


class CGConfig(_CGConfig):
    def __init__(self, **kwds):
        super().__init__(**kwds)
        self.direction = self.declare(
            "direction", ConfigValue(default="greedy", domain=In(["greedy", "highs"]), description="direction oracle")
        )


class PrivateCGConfig(_CGConfig):
    def __init__(self, **kwds):
        super().__init__(**kwds)
        self.epsilon = self.declare(
            "epsilon", ConfigValue(default=None, description="the paper's input epsilon (finite, > 0)")
        )
        self.algorithm = self.declare(
            "algorithm", ConfigValue(default="alg1", domain=In(["alg1", "alg2"]), description="Algorithm 1 or 2")
        )
        self.cover = self.declare(
            "cover", ConfigValue(default="bases", domain=In(["bases", "grid"]), description="cover backend (A1)")
        )
        self.q = self.declare("q", ConfigValue(default=None, domain=_optional_int, description="grid resolution"))


def _solution(res, rounded: bool) -> StructureSolution:
    if rounded:
        values, objective = res.S.astype(float), res.rounded_value
    else:
        values, objective = res.x, res.value
    info = {"x": res.x.tolist(), "calls": res.calls, "true relaxed value (diagnostic)": res.value}
    return StructureSolution(
        {"y": values}, objective, TerminationCondition.convergenceCriteriaSatisfied, exact=False, info=info
    )


class ContinuousGreedySolver(StructureSolver):
    """Non-private continuous greedy on the multilinear relaxation."""

    CONFIG = CGConfig()
    formulations = frozenset({"submodular.multilinear"})
    integer_only = False
    algorithm = "continuous greedy (LP directions) + swap rounding, 1 - 1/e - O(r^2/T) (spec 3.6)"

    @staticmethod
    def solve_data(function, matroid, **options):
        return continuous_greedy(function, matroid, **options)

    def _solve_marker(self, marker, config) -> StructureSolution:
        res = self.solve_data(
            marker.data["function"],
            marker.data["matroid"],
            T=config.T,
            direction=config.direction,
            gradient_mode=config.gradient_mode,
            samples=config.samples,
            rounding=config.rounding,
            seed=config.seed,
        )
        return _solution(res, config.rounding != "none")


class PrivateContinuousGreedySolver(StructureSolver):
    """Algorithm 1 (or 2) on the multilinear relaxation; the privacy summary is in ``extra_info``.

    Only the point ``x_T`` and the rounded set ``S`` are private outputs.  The reported objective
    (``F_D(S)`` or ``f_D(x_T)``) and ``extra_info["true relaxed value (diagnostic)"]`` are evaluation
    diagnostics computed on the private data: they are not covered by the privacy accounting and
    must not be released."""

    CONFIG = PrivateCGConfig()
    formulations = frozenset({"submodular.multilinear"})
    integer_only = False
    algorithm = "private continuous greedy (Rafiey-Yoshida Alg. 1 / 2) + swap rounding"

    @staticmethod
    def solve_data(function, matroid, epsilon, algorithm: str = "alg1", **options):
        run = private_continuous_greedy if algorithm == "alg1" else improved_private_continuous_greedy
        return run(function, matroid, epsilon, **options)

    def _solve_marker(self, marker, config) -> StructureSolution:
        if config.rounding == "pipage":
            raise ModelStructureError("submodular_private_cg rounds by swap rounding (or none); pipage is not offered")
        if config.epsilon is None:
            raise PrivacyParameterError(
                "epsilon", "submodular_private_cg needs a finite epsilon > 0 (submodular_cg is the non-private limit)"
            )
        eps = config.epsilon
        res = self.solve_data(
            marker.data["function"],
            marker.data["matroid"],
            eps,
            config.algorithm,
            T=config.T,
            cover=config.cover,
            q=config.q,
            gradient_mode=config.gradient_mode,
            samples=config.samples,
            rounding=config.rounding,
            seed=config.seed,
        )
        sol = _solution(res, config.rounding != "none")
        sol.info["privacy"] = res.accountant.summary()
        return sol
