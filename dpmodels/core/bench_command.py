"""``dpmodels bench noise``: the command's declaration, light to import (the measurements,
with numpy, pandas and the samplers, are in :mod:`dpmodels.core.bench`, imported to run)."""

from __future__ import annotations

from . import options as std
from .commands import positive_float, positive_int
from .runner import experiment

__all__ = ["COMMAND"]


def _arguments(p) -> None:
    p.add_argument(
        "--cells",
        type=positive_int,
        help="values per draw (default: the census shape, 1,000 cells in each of 1 + 52 + 3,144 nodes)",
    )
    p.add_argument(
        "--scale", type=positive_float, default=6.0, help="discrete Laplace scale (2L/eps at L = 3, eps = 1)"
    )
    p.add_argument(
        "--opendp-cells", type=positive_int, default=320_000, help="OpenDP timed on this many values, scaled"
    )
    p.add_argument("--em-candidates", type=positive_int, default=2000, help="exponential mechanism: candidates")
    p.add_argument("--em-draws", type=positive_int, default=101, help="exponential mechanism: draws timed per shape")


def _run(args):
    from .bench import CENSUS_CELLS, run_bench

    cells = args.cells or CENSUS_CELLS
    return run_bench(cells, args.scale, args.runs, args.opendp_cells, args.em_candidates, args.em_draws)


#: ``dpmodels bench noise`` (registered by the command line beside the families' benches).
COMMAND = experiment(
    "exact vs floating-point noise samplers on the census shape (3.2 million values)",
    _run,
    options=(std.runs(3, "runs per sampler"),),
    arguments=_arguments,
    table="the samplers' timings, one row per sampler",
    json_help="the tables",
)
