"""Which solver can solve which model, exactly or not: the capability registry and its query.

Two kinds of solver answer here.  *Backends* (HiGHS, SCIP, Gurobi through Pyomo's own
interfaces, and Clarabel through ours) solve problem classes: LP, MILP, QP, MIQP.  *Structure
plugins* solve registered formulations with a paper's algorithm; each declares its
capabilities once on its class (``capabilities()``: formulations, exact or not, options, time
limit / tee / duals), and this module reads them from Pyomo's solver factory without
importing the plugins.  :func:`solvers_for` answers "which solvers can solve this model?", and
``dpmodels.solve`` / ``dpmodels.compare`` use it to refuse a backend that cannot handle a
model's class before calling it (HiGHS on an integer QP returned ``unknown`` silently).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pyomo.contrib.solver.common.factory import SolverFactory

from .errors import ModelStructureError, SolverUnavailableError
from .formulations import get_formulation, model_class
from .marker import get_marker

__all__ = ["Option", "Capabilities", "BACKENDS", "SOLVER_ALIASES", "capabilities", "solvers_for", "check_can_solve"]

SOLVER_ALIASES = {"scip": "scip_direct", "gurobi": "gurobi_direct"}


@dataclass(frozen=True)
class Option:
    """One declared solver option: name, default, description and Pyomo config domain (a
    callable that returns the checked value or raises ``ValueError``).  A plugin's tuple of
    these is its Pyomo config, its ``solve_data`` keywords and its command-line flags."""

    name: str
    default: Any = None
    doc: str = ""
    domain: Any = None

    def parse(self, value):
        """``value`` through the domain (the value itself without one)."""
        return value if self.domain is None else self.domain(value)


@dataclass(frozen=True)
class Capabilities:
    """What one solver declares.

    ``problem_classes``: the classes a backend solves (empty for a structure plugin, which
    solves ``formulations``).  ``exact``: a converged run is a proven optimum of the model
    (within the solver's documented tolerances); ``guarantee`` says what the result is in words.
    ``options``: the plugin's declared options (name -> :class:`Option`).
    """

    name: str
    kind: str
    exact: bool
    guarantee: str
    problem_classes: frozenset[str] = frozenset()
    formulations: frozenset[str] = frozenset()
    integer_only: bool = False
    relaxed_only: bool = False
    time_limit: bool = True
    tee: bool = True
    duals: bool = False
    options: dict[str, Option] = field(default_factory=dict)


def _backend(name, classes, guarantee, duals=True) -> Capabilities:
    return Capabilities(name, "backend", True, guarantee, frozenset(classes), duals=duals)


#: Pyomo's own backends (and our Clarabel interface, a general QP backend).
BACKENDS: dict[str, Capabilities] = {
    "highs": _backend(
        "highs",
        {"LP", "MILP", "QP"},
        "optimal for LP and convex QP; MILP optimal within HiGHS's mip_rel_gap (default 1e-4); no integer QPs",
    ),
    "scip_direct": _backend(
        "scip_direct", {"LP", "MILP", "QP", "MIQP"}, "global optimum within SCIP's gap limits (default 0)", False
    ),
    "gurobi_direct": _backend(
        "gurobi_direct", {"LP", "MILP", "QP", "MIQP"}, "optimal within Gurobi's MIPGap (default 1e-4)"
    ),
    "clarabel": _backend("clarabel", {"LP", "QP"}, "interior point: optimal to Clarabel's tolerances (1e-8)", False),
}


def canonical(name: str) -> str:
    return SOLVER_ALIASES.get(name, name)


def capabilities(name: str) -> Capabilities | None:
    """The declared capabilities of solver ``name`` (alias or factory name); None if it declares none."""
    key = canonical(name)
    if key in BACKENDS:
        return BACKENDS[key]
    cls = SolverFactory._cls.get(key)
    load = getattr(cls, "load_plugin", None)  # a plugin registered but not imported yet
    if callable(load):
        cls = load()
    declare = getattr(cls, "capabilities", None)
    return declare() if callable(declare) else None


@dataclass(frozen=True)
class Match:
    """One answer of :func:`solvers_for`."""

    solver: str
    exact: bool
    guarantee: str
    available: bool


def solvers_for(model, *, exact: bool | None = None, available_only: bool = True) -> list[Match]:
    """Every registered solver that accepts ``model`` (``exact=True``: only those returning a
    proven optimum; ``False``: only the heuristics and mechanisms), exact ones first.

    A backend accepts a model of a problem class it declares; a structure plugin accepts an
    unedited dpmodels model of a formulation it declares (relaxed models only if it solves
    them).  ``available_only`` drops solvers whose library is not installed (e.g. Gurobi).
    """
    found = []
    problem = declared_class(model)  # once: on an unmarked model it walks every constraint
    for name in sorted(set(SolverFactory._cls) | set(BACKENDS)):
        caps = capabilities(name)
        if caps is None or why_not(caps, model, problem) is not None:
            continue
        if exact is not None and caps.exact != exact:
            continue
        available = _available(name)
        if available or not available_only:
            found.append(Match(name, caps.exact, caps.guarantee, available))
    return sorted(found, key=lambda m: (not m.exact, m.solver))


def why_not(caps: Capabilities, model, problem: str | None = None) -> str | None:
    """Why the solver of ``caps`` cannot take ``model`` (of class ``problem`` when already known),
    or None if it can."""
    marker = get_marker(model)
    if caps.kind == "backend":
        cls = problem or declared_class(model)
        if cls not in caps.problem_classes:
            return f"{caps.name} does not solve {cls} models; it solves {sorted(caps.problem_classes)}"
        return None
    if marker is None:
        return f"{caps.name} solves models built by dpmodels builders only"
    if marker.formulation not in caps.formulations:
        return f"{caps.name} does not solve formulation {marker.formulation!r}"
    if caps.integer_only and marker.options.get("relax", False):
        return f"{caps.name} returns integer optima; this model is a continuous relaxation"
    if caps.relaxed_only and not marker.options.get("relax", False):
        return f"{caps.name} returns the continuous relaxation's optimum; this model has integer variables"
    return None


def declared_class(model) -> str:
    """The problem class from the model's marker (registered formulation, relaxed or not) when
    it has one, else read off the model (see :func:`~dpmodels.core.formulations.model_class`)."""
    marker = get_marker(model)
    if marker is not None:
        try:
            form = get_formulation(marker.formulation)
        except KeyError:
            return model_class(model)
        return form.problem_class(relaxed=bool(marker.options.get("relax", False)))
    return model_class(model)


def check_can_solve(name: str, model) -> None:
    """Refuse, before any work, a backend that cannot handle ``model``'s problem class."""
    caps = capabilities(name)
    if caps is None or caps.kind != "backend":
        return  # plugins check their own models; undeclared solvers are called as they are
    reason = why_not(caps, model)
    if reason is not None:
        others = ", ".join(m.solver for m in solvers_for(model)) or "none installed"
        raise ModelStructureError(f"{reason}. Solvers that can: {others}")


def _available(name: str) -> bool:
    key = canonical(name)
    if key not in SolverFactory._cls:
        return False
    try:
        return bool(SolverFactory(key).available())
    except (SolverUnavailableError, ImportError, OSError):
        return False
