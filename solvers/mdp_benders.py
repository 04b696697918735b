"""``mdp_benders``: the metric-DP perturbation LP solved by Benders decomposition (spec 6).

``SolverFactory('mdp_benders').solve(full_model, partition="k-m-DV", blocks=25)`` decomposes
the model built by :func:`~dpmodels.metricdp.models.build_full_lp` over a record partition:
a persistent HiGHS master over the boundary records, one subproblem per block, multi-cut,
the subproblem solves of an iteration through ``executor``.  The incumbent (best upper
bound, repaired to an exactly eps-mDP mechanism and re-audited) is loaded into the model;
the last lower bound is the ``objective_bound``; the per-iteration history is
``results.extra_info.history``.
"""

from __future__ import annotations

from pyomo.common.config import ConfigValue, NonNegativeFloat, PositiveInt
from pyomo.contrib.solver.common.config import SolverConfig

from dpmodels.metricdp.benders import benders
from dpmodels.metricdp.partition import partition as make_partition

from ._adapters import exact_instance, mdp_solution
from .base import StructureSolution, StructureSolver

__all__ = ["BendersConfig", "MDPBendersSolver"]


class BendersConfig(SolverConfig):
    """SolverConfig plus the decomposition's options."""

    def __init__(self, description=None, doc=None, implicit=False, implicit_domain=None, visibility=0):
        super().__init__(
            description=description, doc=doc, implicit=implicit, implicit_domain=implicit_domain, visibility=visibility
        )
        self.partition = self.declare(
            "partition",
            ConfigValue(
                default="k-m-DV", description="partitioner name (k-m-DV, k-m-rec, k-m-adj, BSC) or one label per record"
            ),
        )
        self.blocks = self.declare("blocks", ConfigValue(default=25, domain=PositiveInt, description="M, the blocks"))
        self.seed = self.declare("seed", ConfigValue(default=0, description="seed of the k-means partitioners"))
        self.gap = self.declare("gap", ConfigValue(default=1e-3, domain=NonNegativeFloat, description="stopping gap"))
        self.gap_type = self.declare("gap_type", ConfigValue(default="relative", description="relative or absolute"))
        self.max_iter = self.declare("max_iter", ConfigValue(default=500, domain=PositiveInt))
        self.init_cuts = self.declare(
            "init_cuts",
            ConfigValue(
                default="lazy",
                description="Property-3.2 rows in the master: lazy (added when violated), all, two-hop or none",
            ),
        )
        self.stabilize = self.declare(
            "stabilize",
            ConfigValue(
                default=0.5, description="in-out weight of the master's point in the separation point (1: plain Kelley)"
            ),
        )
        self.executor = self.declare("executor", ConfigValue(default=None, description="for the subproblem solves"))


class MDPBendersSolver(StructureSolver):
    """Benders decomposition of ``build_full_lp`` models (exact ones: no slack, no z_min)."""

    CONFIG = BendersConfig()
    formulations = frozenset({"mdp.full_lp"})
    integer_only = False
    algorithm = "multi-cut Benders over a record partition, persistent HiGHS master (spec 6.8)"

    @staticmethod
    def solve_data(instance, partition="k-m-DV", blocks: int = 25, seed=0, **options):
        return benders(instance, make_partition(instance, partition, blocks, seed), **options)

    def _solve_marker(self, marker, config) -> StructureSolution:
        instance = exact_instance(marker, self.name)
        res = self.solve_data(
            instance,
            config.partition,
            config.blocks,
            config.seed,
            gap=config.gap,
            gap_type=config.gap_type,
            max_iter=config.max_iter,
            time_limit=config.time_limit,
            init_cuts=config.init_cuts,
            stabilize=config.stabilize,
            executor=config.executor,
        )
        return mdp_solution(instance, res, extra=dict(res.info, first_feasible=res.first_feasible))
