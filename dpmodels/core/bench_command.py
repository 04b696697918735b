"""``dpmodels bench noise``: the command's declaration, light to import (the measurements,
with numpy, pandas and the samplers, are in :mod:`dpmodels.core.bench`, imported to run)."""

from __future__ import annotations

from .commands import Command, add_outputs, positive_float, positive_int

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
    p.add_argument("--repeats", type=positive_int, default=3, help="runs per sampler")
    p.add_argument(
        "--opendp-cells", type=positive_int, default=320_000, help="OpenDP timed on this many values, scaled"
    )
    p.add_argument("--em-candidates", type=positive_int, default=2000, help="exponential mechanism: candidates")
    p.add_argument("--em-draws", type=positive_int, default=101, help="exponential mechanism: draws timed per shape")
    add_outputs(p, json="the tables")


def _run(args) -> int:
    from .bench import CENSUS_CELLS, run_bench

    run_bench(
        args.cells or CENSUS_CELLS,
        args.scale,
        args.repeats,
        args.opendp_cells,
        args.json,
        args.em_candidates,
        args.em_draws,
    )
    return 0


#: ``dpmodels bench noise`` (registered by the command line beside the families' benches).
COMMAND = Command("exact vs floating-point noise samplers on the census shape (3.2 million values)", _arguments, _run)
