"""The formulation registry: every model dpmodels builds is registered here once.

A formulation is a named Pyomo model shape (``"pgsr.hierarchical_qip"``): its builder, the
typed payload its structure marker carries (a dataclass: what a structure plugin reads), and
its problem class (integer or continuous variables; linear, quadratic or polynomial
objective; the constraints are always linear).  Builders register themselves with
:func:`register_formulation`; ``import dpmodels`` imports every family, so the registry is
complete once the package is imported.  Plugins and the solver query
(:func:`dpmodels.core.capabilities.solvers_for`) read it; nothing else keeps a list.

:func:`model_class` reads the problem class off a model itself (integer variables present,
objective degree), so it also answers for a relaxed or a user-built model.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

import pyomo.environ as pyo

__all__ = [
    "OBJECTIVES",
    "Formulation",
    "register_formulation",
    "get_formulation",
    "formulations",
    "model_class",
    "problem_class",
    "register_example",
    "example_model",
]

#: Objective kinds a formulation may declare, in increasing generality.
OBJECTIVES = ("linear", "quadratic", "polynomial")


@dataclass(frozen=True)
class Formulation:
    """One registered model shape.

    ``integer``: the model has integer variables unless built relaxed (``relax=True``, where the
    builder offers it, gives the continuous relaxation).
    """

    name: str
    builder: Callable
    payload: type
    integer: bool
    objective: str
    doc: str = ""

    @property
    def family(self) -> str:
        return self.name.split(".", 1)[0]

    @property
    def linear(self) -> bool:
        return self.objective == "linear"

    @property
    def quadratic(self) -> bool:
        return self.objective == "quadratic"

    def problem_class(self, relaxed: bool = False) -> str:
        """``LP``, ``MILP``, ``QP``, ``MIQP``, ``NLP`` or ``MINLP`` of the built model."""
        return problem_class(self.integer and not relaxed, self.objective)


_REGISTRY: dict[str, Formulation] = {}


def register_formulation(
    name: str, *, payload: type, integer: bool, objective: str, doc: str = ""
) -> Callable[[Callable], Callable]:
    """Decorator of a builder: register it as formulation ``name`` with its payload type.

    The payload must be a dataclass (the marker's typed data); ``objective`` one of
    :data:`OBJECTIVES`.  Registering a name twice with a different builder is an error.
    """
    if not dataclasses.is_dataclass(payload):
        raise TypeError(f"formulation {name!r}: payload {payload!r} is not a dataclass")
    if objective not in OBJECTIVES:
        raise ValueError(f"formulation {name!r}: objective must be one of {OBJECTIVES}, got {objective!r}")
    if "." not in name:
        raise ValueError(f"formulation {name!r}: names are '<family>.<model>'")

    def decorate(builder: Callable) -> Callable:
        known = _REGISTRY.get(name)
        if known is not None and known.builder.__qualname__ != builder.__qualname__:
            raise ValueError(f"formulation {name!r} is already registered by {known.builder.__qualname__}")
        summary = doc or (builder.__doc__ or "").strip().split("\n")[0]
        _REGISTRY[name] = Formulation(name, builder, payload, bool(integer), objective, summary)
        builder.formulation = name
        return builder

    return decorate


def _load_families() -> None:
    """Import every family's ``models`` (their builders register the formulations)."""
    from .families import import_families

    import_families("models")


def get_formulation(name: str) -> Formulation:
    """The registered formulation ``name``; an unknown name lists the known ones."""
    if name not in _REGISTRY:
        _load_families()
    try:
        return _REGISTRY[name]
    except KeyError:
        raise KeyError(f"no formulation {name!r}; registered: {sorted(_REGISTRY)}") from None


def formulations(family: str | None = None) -> list[Formulation]:
    """Every registered formulation (of one ``family``), sorted by name (every family loaded)."""
    _load_families()
    return [f for name, f in sorted(_REGISTRY.items()) if family is None or f.family == family]


_EXAMPLES: dict[str, Callable[[], object]] = {}


def register_example(name: str) -> Callable[[Callable], Callable]:
    """Decorator: ``fn()`` builds a tiny model of formulation ``name`` (the instances package
    registers one per formulation; the contract tests solve each with every solver)."""

    def decorate(fn: Callable) -> Callable:
        _EXAMPLES[name] = fn
        return fn

    return decorate


def example_model(name: str):
    """A freshly built tiny model of formulation ``name``."""
    if name not in _EXAMPLES:
        raise KeyError(f"formulation {name!r} has no example; add one with @register_example in instances/<family>.py")
    return _EXAMPLES[name]()


def problem_class(integer: bool, objective: str) -> str:
    base = {"linear": "LP", "quadratic": "QP", "polynomial": "NLP"}[objective]
    return ("MI" + base) if integer else base


def model_class(model) -> str:
    """The problem class of ``model`` as built or edited: integer variables among the active
    constraints' and objective's variables, and the active objective's polynomial degree
    (a constraint of degree above 1 makes it ``NLP``)."""
    integer = any(
        not v.is_continuous() and not v.fixed for v in model.component_data_objects(pyo.Var, descend_into=True)
    )
    objective = "linear"
    for obj in model.component_data_objects(pyo.Objective, active=True, descend_into=True):
        degree = obj.expr.polynomial_degree()
        objective = _kind(degree)
    for con in model.component_data_objects(pyo.Constraint, active=True, descend_into=True):
        if con.body.polynomial_degree() not in (0, 1):
            objective = "polynomial"
            break
    return problem_class(integer, objective)


def _kind(degree) -> str:
    if degree is None or degree > 2:
        return "polynomial"
    return "quadratic" if degree == 2 else "linear"
