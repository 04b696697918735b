"""``mdp_benders``: the metric-DP perturbation LP solved by Benders decomposition (spec 6).

``SolverFactory('mdp_benders').solve(full_model, partition="k-m-DV", blocks=6)`` decomposes
the model built by :func:`~dpmodels.metricdp.models.build_full_lp` over a record partition:
a persistent HiGHS master over the boundary records, one subproblem per block, multi-cut,
the subproblem solves of an iteration through ``executor``, and a primal recovery near the
master's point (``recovery``).  The incumbent (best upper bound, repaired to an exactly eps-mDP
mechanism and re-audited) is loaded into the model; the last lower bound is the
``objective_bound``; the per-iteration history is ``results.extra_info.history``.

``blocks`` defaults to ``default_blocks(N)`` = ``min(25, max(1, N // 20))``: the paper's 25 blocks
for its 500 records (about 20 records a block), fewer for smaller models (one block, no
decomposition, below 40 records).  A given ``blocks`` above the number of records is refused.
"""

from __future__ import annotations

from pyomo.common.config import In, NonNegativeFloat, PositiveInt

from dpmodels.core.errors import SolverOptionError
from dpmodels.metricdp.benders import benders
from dpmodels.metricdp.partition import partition as make_partition

from ._adapters import exact_instance, mdp_solution
from .base import Option, StructureSolver

__all__ = ["MDPBendersSolver", "default_blocks"]

#: The paper's partition size (25 blocks on its 500-record grid) and records per block.
PAPER_BLOCKS, RECORDS_PER_BLOCK = 25, 20


def default_blocks(n_records: int) -> int:
    """``min(25, max(1, N // 20))``: the paper's ratio (25 blocks for 500 records), at most 25."""
    return min(PAPER_BLOCKS, max(1, n_records // RECORDS_PER_BLOCK))


def _optional_positive_int(value):
    return None if value is None else PositiveInt(value)


class MDPBendersSolver(StructureSolver):
    """Benders decomposition of ``build_full_lp`` models (exact ones: no slack, no z_min)."""

    formulations = frozenset({"mdp.full_lp"})
    integer_only = False
    exact = False
    guarantee = (
        "certified relative gap (default 1e-3): an exactly eps-mDP incumbent and a weak-duality bound "
        "(optimal when an iteration at the master's point adds no cut and the certified bounds agree to 1e-9)"
    )
    options = (
        Option("partition", "k-m-DV", "partitioner name (k-m-DV, k-m-rec, k-m-adj, BSC) or one label per record"),
        Option(
            "blocks",
            None,
            "M, the blocks of a named partitioner (None: min(25, max(1, N // 20)); at most N)",
            _optional_positive_int,
        ),
        Option("seed", 0, "seed of the k-means partitioners (public data only)"),
        Option("gap", 1e-3, "certified gap to stop at (relative or absolute: gap_type)", NonNegativeFloat),
        Option("gap_type", "relative", "relative or absolute", In(["relative", "absolute"])),
        Option("max_iter", 500, "iteration limit", PositiveInt),
        Option(
            "init_cuts",
            "lazy",
            "Property-3.2 rows in the master: lazy (added when violated), all, two-hop or none",
            In(["lazy", "all", "two-hop", "none"]),
        ),
        Option("stabilize", 0.5, "in-out weight of the master's point in the separation point (1: plain Kelley)"),
        Option(
            "recovery",
            "segment",
            "primal recovery: segment (search between the master's point and the uniform rows for an exactly mDP "
            "incumbent, its cuts added) or none (only the separation point's mechanism)",
            In(["segment", "none"]),
        ),
        Option("executor", None, "for the subproblem solves"),
    )
    honours_time_limit = True
    iteration_log = True
    algorithm = "multi-cut Benders over a record partition, persistent HiGHS master (spec 6.8)"

    def check(self, marker, options) -> None:
        exact_instance(marker, self.name)
        self._blocks(marker.data.instance.N, options)

    @classmethod
    def _blocks(cls, n_records: int, options) -> int:
        """The blocks to partition into: the default for ``n_records``, or the given number if it fits."""
        if options.blocks is None:
            return default_blocks(n_records)
        if options.blocks > n_records:
            raise SolverOptionError(
                cls._label(),
                f"blocks={options.blocks} exceeds the model's {n_records} records; give blocks <= {n_records}, "
                f"or leave it unset for the default min(25, max(1, N // 20)) = {default_blocks(n_records)}",
            )
        return options.blocks

    @classmethod
    def run(cls, payload, options, controls):
        instance = payload.instance
        part = make_partition(instance, options.partition, cls._blocks(instance.N, options), options.seed)
        keywords = cls.keywords(options, drop=("partition", "blocks", "seed"))
        return benders(instance, part, **keywords, time_limit=controls.time_limit, progress=controls.tee)

    def to_solution(self, marker, result, options):
        extra = dict(result.info, first_feasible=result.first_feasible)
        return mdp_solution(marker.data.instance, result, extra=extra)


#: The solvers this module registers (read without importing it: see :mod:`dpmodels.solvers.registry`).
PLUGINS = {
    "mdp_benders": ("MDPBendersSolver", "metric-DP perturbation LP by Benders decomposition (dpmodels)"),
}
