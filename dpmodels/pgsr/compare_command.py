"""``dpmodels compare pgsr``: its runner (the command, its options and defaults are declared in :mod:`.commands`).

The comparison draws the paper's geometric noise (the exact discrete Laplace, budgets ``--epsilon``)
by default, or with ``--noise discrete-gaussian`` the exact discrete Gaussian under zCDP (budgets
``--rho``, each split evenly over the levels; the rows then state each level's ``sigma^2``).  The
budget's unit is checked as a release checks it (:func:`dpmodels.core.release.check_budget_unit`).
A comparison is an experiment on synthetic or user data: ``--seed`` fixes its noise.  ``--table7``
is the paper's layout, its numbers beside ours, with the paper's noise only.

Imported when the command runs (``dpmodels --help`` reads only :mod:`.commands`); it imports the
algorithms lazily.
"""

from __future__ import annotations

import logging

from dpmodels.core.errors import DataValidationError
from dpmodels.core.runner import Result
from dpmodels.core.settings import parse_settings

__all__ = ["compare_budgets", "run_compare"]

log = logging.getLogger("dpmodels")


def _mechanism_options(args, mechanisms) -> dict[str, dict]:
    """Each mechanism's post-processing options from the command line, only those it takes."""
    from .postprocessing import MECHANISMS

    options = {}
    for name in mechanisms:
        if name not in MECHANISMS:
            raise DataValidationError("--mechanisms", f"unknown {name!r}; choose from {list(MECHANISMS)}")
        solver = (args.qp_solver or _default_qp_solver(name, args.table7)) if name.endswith("^r") else args.qip_solver
        if solver == "pgsr_relax" and (name != "M_H^r" or args.time_limit is not None):
            raise DataValidationError(
                "--qp-solver", "pgsr_relax solves Model 1-R only (M_H^r), and takes no --time-limit; choose clarabel"
            )
        given = {"domains": args.domains, "solver": solver, "time_limit": args.time_limit}
        options[name] = {k: v for k, v in given.items() if k in MECHANISMS[name].options}
    return options


def _default_qp_solver(mechanism: str, table7: bool) -> str:
    """Clarabel on the Pyomo relaxations; with --table7, M_H^r on the plain data (``pgsr_relax``),
    which takes about a second at census scale where the Pyomo model and Clarabel took minutes."""
    return "pgsr_relax" if table7 and mechanism == "M_H^r" else "clarabel"


def _load(args, instance: str, settings: dict):
    import dpmodels.instances as instances
    from dpmodels.instances.pgsr import from_csv

    own = args.csv_counts or args.csv_records
    if own and not args.csv_hierarchy:
        raise DataValidationError("--csv-counts/--csv-records", "need --csv-hierarchy (the region,parent CSV)")
    if args.csv_hierarchy:
        if not own:
            raise DataValidationError("--csv-hierarchy", "needs --csv-counts or --csv-records")
        return from_csv(args.csv_hierarchy, counts=args.csv_counts, records=args.csv_records)
    defaults = settings if args.instance == instance else None
    return instances.from_settings(args.instance, parse_settings(args.set), defaults)


def compare_budgets(args) -> tuple[str, list]:
    """The budgets' unit and values: ``("rho", --rho)`` under a zCDP ``--noise``, else ``("epsilon",
    --epsilon or the defaults)``; a budget in the other unit is refused as a release refuses it.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed ``compare pgsr`` arguments.
    """
    from dpmodels.core.release import check_budget_unit

    from .compare import DEFAULT_EPSILONS

    gaussian = args.noise == "discrete-gaussian"
    check_budget_unit(args, "rho" if gaussian else "epsilon")
    if gaussian and args.calibration != "sound":
        raise DataValidationError(
            "--calibration", "paper is the paper's Laplace scale of the chain; the discrete Gaussian takes sound"
        )
    if gaussian:
        return "rho", list(args.rho)
    return "epsilon", list(args.epsilon or DEFAULT_EPSILONS)


def run_compare(args, instance: str, settings: dict, qp_max_cells: int) -> Result:
    """Run ``compare pgsr`` (with ``--table7``: the paper's layout on both shapes).

    Parameters
    ----------
    args : argparse.Namespace
        The parsed command.
    instance, settings : str, dict
        The built-in instance and its default generator settings (``--set`` overrides them).
    qp_max_cells : int
        ``--table7``'s default largest shape for the Pyomo QP/QIP mechanisms.
    """
    from .compare import DEFAULT_MECHANISMS, compare_mechanisms, format_table7, plot_comparison, table7

    if args.table7:
        return _run_table7(args, instance, qp_max_cells)
    for flag in ("shapes", "qp_max_cells"):
        if getattr(args, flag) is not None:
            raise DataValidationError(f"--{flag.replace('_', '-')}", "only applies with --table7")
    unit, budgets = compare_budgets(args)
    mechanisms = args.mechanisms or list(DEFAULT_MECHANISMS)
    options = _mechanism_options(args, mechanisms)
    data = _load(args, instance, settings)
    runs_per_budget = args.runs or 5
    title = f"instance: {data.name}  {data.hierarchy.describe()}  N = {data.N}  G = {data.G:,}"
    if unit == "rho":
        title += "  noise: exact discrete Gaussian (zCDP), rho / L per level"
    runs = compare_mechanisms(
        data,
        budgets if unit == "epsilon" else None,
        runs_per_budget,
        mechanisms,
        args.seed,
        options,
        args.calibration,
        executor=args.executor,
        progress=args.progress,
        noise=args.noise,
        rhos=budgets if unit == "rho" else None,
    )
    legend = (
        f"\nmean over {runs_per_budget} runs per {unit}; L1 errors summed over the regions of each level; "
        "#CV = consistency violations; seconds = post-processing time"
    )
    figure = lambda path: plot_comparison(runs, path, title=data.name)  # noqa: E731
    return Result(runs, [title, legend, format_table7(table7(runs))], figure=figure)


def _table7_data(args, instance: str) -> dict:
    """The --table7 shapes with their defaults under ``--set`` (``KEY`` for every shape,
    ``census.KEY`` / ``taxi.KEY`` for one)."""
    import dpmodels.instances as instances

    from .table7 import TABLE7_SHAPES

    given = {"--instance": args.instance != instance, "--csv-hierarchy": args.csv_hierarchy}
    given |= {"--csv-counts": args.csv_counts, "--csv-records": args.csv_records}
    for flag, used in given.items():
        if used:
            raise DataValidationError(
                flag, "does not apply with --table7 (it runs the census-like and taxi-like shapes)"
            )
    names = args.shapes or list(TABLE7_SHAPES)
    settings = {name: {} for name in names}
    for key, value in parse_settings(args.set).items():
        shape, dot, option = key.rpartition(".")
        if dot and shape not in TABLE7_SHAPES:
            raise DataValidationError("--set", f"{key!r}: a prefix must name a shape, one of {list(TABLE7_SHAPES)}")
        for name in [shape] if dot else names:
            if name in settings:
                settings[name][option] = value
    return {
        n: instances.from_settings(TABLE7_SHAPES[n].instance, settings[n], TABLE7_SHAPES[n].defaults) for n in names
    }


def _run_table7(args, instance: str, qp_max_cells: int) -> Result:
    import time

    from .compare import DEFAULT_MECHANISMS
    from .table7 import TABLE7_SHAPES, compare_shapes, consistency_failures, plot_figures, report

    tick = time.perf_counter()
    if args.noise != "discrete-laplace":
        raise DataValidationError(
            "--noise", "--table7 sets the paper's numbers beside ours, drawn as the paper drew them (discrete Laplace)"
        )
    _, epsilons = compare_budgets(args)
    mechanisms = args.mechanisms or list(DEFAULT_MECHANISMS)
    options = _mechanism_options(args, mechanisms)  # names checked before any data is drawn
    datasets = _table7_data(args, instance)
    max_cells = qp_max_cells if args.qp_max_cells is None else args.qp_max_cells
    shapes = []
    for name, data in datasets.items():
        cells = data.hierarchy.n_regions * data.N
        label = TABLE7_SHAPES[name].label
        shapes.append(f"{label}: {data.name}  {data.hierarchy.describe()}  N = {data.N:,}  G = {data.G:,}")
        shapes.append(f"    {cells:,} cells")
    runs = compare_shapes(
        datasets,
        epsilons,
        args.runs or 1,
        mechanisms,
        qp_max_cells=max_cells or None,
        options=options,
        seed=args.seed,
        calibration=args.calibration,
        executor=args.executor,
        progress=args.progress,
    )
    log.info("wall time: %.0f s", time.perf_counter() - tick)
    failed = len(consistency_failures(runs)) > 0
    text = report(runs, args.calibration, max_cells or None)
    return Result(runs, ["\n".join(shapes), text], figure=lambda path: plot_figures(runs, path), exit_code=int(failed))
