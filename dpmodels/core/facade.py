"""The façade users call: ``solve`` one model with any backend, ``compare`` a grid.

Backends are looked up by name in Pyomo's new solver factory, which holds Pyomo's own
interfaces (``highs``, ``scip_direct``, ``gurobi_direct`` ...) and every dpmodels plugin
(``clarabel``, ``pgsr_dp`` ...).  Short aliases (``scip``, ``gurobi``) are accepted.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence

import pandas as pd
from pyomo.contrib.solver.common.factory import SolverFactory
from pyomo.contrib.solver.common.results import Results

from .capabilities import SOLVER_ALIASES, canonical, capabilities, check_can_solve, solvers_for
from .errors import ModelStructureError, SolverOptionError, SolverUnavailableError

__all__ = ["SOLVER_ALIASES", "solver_names", "get_solver", "solve", "compare", "solvers_for"]


def solver_names() -> list[str]:
    """Every backend name ``solve`` accepts (aliases included; ``import dpmodels`` registers the plugins)."""

    return sorted(set(SolverFactory._cls) | set(SOLVER_ALIASES))


def get_solver(name: str):
    """A new-API solver object for ``name`` (alias or factory name), checked available."""

    key = canonical(name)
    if key not in SolverFactory._cls:
        raise SolverUnavailableError(f"solver {name!r} is not registered; known: {solver_names()}")
    solver = SolverFactory(key)
    if not solver.available():
        raise SolverUnavailableError(f"solver {name!r} ({key}) is registered but not available: {solver.available()}")
    return solver


def solve(
    model,
    solver: str = "highs",
    *,
    time_limit: float | None = None,
    tee: bool = False,
    load_solutions: bool = True,
    raise_on_nonoptimal: bool = False,
    options: dict | None = None,
    **solver_options,
) -> Results:
    """Solve ``model`` with backend ``solver`` and return Pyomo's ``Results``.

    By default a solver that stops without an optimum does not raise: read
    ``results.termination_condition`` and ``results.solution_status`` (``optimal`` only for a
    proven optimum).  Values are loaded into the model when a solution exists.  A backend that
    cannot handle the model's problem class (e.g. HiGHS on an integer QP) is refused before it
    runs, naming the solvers that can (:func:`solvers_for`).  A structure plugin whose
    algorithm cannot stop early refuses ``time_limit``.  Backend options go in ``options`` (or
    as keywords when their names do not clash).
    """
    opt = get_solver(solver)
    check_can_solve(solver, model)
    kwargs = {"tee": tee, "raise_exception_on_nonoptimal_result": raise_on_nonoptimal, "load_solutions": False}
    if time_limit is not None:
        kwargs["time_limit"] = time_limit
    merged = {**(options or {}), **solver_options}
    if merged:
        kwargs["solver_options"] = merged
    results = opt.solve(model, **kwargs)
    if load_solutions and results.solution_loader.get_number_of_solutions() > 0:
        results.solution_loader.load_vars()
        results.solution_loader.load_import_suffixes()  # duals into a model's dual suffix, as Pyomo does
    return results


def compare(
    models: Mapping[str, object],
    solvers: Sequence[str] | None = None,
    *,
    evaluate: Callable[[object], Mapping] | None = None,
    time_limit: float | None = None,
    progress: bool = False,
) -> pd.DataFrame:
    """Solve every model (or model factory) with every solver; one row per pair.

    Each pair solves its own clone, so solutions never leak between solvers.  Columns:
    formulation, solver, termination, solution, objective, bound, seconds, message, and
    whatever ``evaluate(solved_model)`` returns when a solution was loaded.  A pair the
    solver cannot take (wrong formulation, integer model on a continuous solver ...; asked of
    :func:`solvers_for`'s capability registry) gets a ``refused`` row with the reason instead
    of an exception.  ``time_limit`` goes to the solvers that honour one; the others (exact
    polynomial algorithms) run without it, and the row says so.  ``solvers=None`` runs, for each
    model, every installed solver that can take it (:func:`solvers_for`).
    """
    from tqdm import tqdm  # the text bar everywhere (tqdm.auto warns in notebooks without ipywidgets)

    rows = []
    pairs = [(f, s) for f in models for s in (solvers or _able(models[f]))]
    for formulation, solver in tqdm(pairs, disable=not progress, desc="compare"):
        source = models[formulation]
        model = source() if callable(source) else source.clone()
        rows.append(_compare_row(formulation, solver, model, evaluate, time_limit))
    return pd.DataFrame(rows)


def _able(source) -> list[str]:
    model = source() if callable(source) else source
    return [match.solver for match in solvers_for(model)]


def _compare_row(formulation, solver, model, evaluate, time_limit) -> dict:
    row = {
        "formulation": formulation,
        "solver": solver,
        "termination": "",
        "solution": "none",
        "objective": None,
        "bound": None,
        "seconds": None,
        "message": "",
    }
    caps = capabilities(solver)
    limit = time_limit
    if time_limit is not None and caps is not None and not caps.time_limit:
        limit, row["message"] = None, "no time limit (its algorithm cannot stop early)"
    tick = time.perf_counter()
    try:
        results = solve(model, solver, time_limit=limit)
    except (ModelStructureError, SolverUnavailableError, SolverOptionError) as err:
        row.update(termination="refused", message=str(err))
        return row
    except Exception as err:  # a backend that cannot handle the model class (e.g. MIQP on highs)
        row.update(termination="error", message=f"{type(err).__name__}: {err}".strip())
        return row
    finally:
        row["seconds"] = time.perf_counter() - tick
    row.update(
        termination=results.termination_condition.name,
        solution=results.solution_status.name,
        objective=results.incumbent_objective,
        bound=results.objective_bound,
    )
    if evaluate is not None and results.solution_loader.get_number_of_solutions() > 0:
        row.update(evaluate(model))
    return row
