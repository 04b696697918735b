"""The structure marker: what a model was built from, so a plugin can solve it safely.

A builder attaches a :class:`StructureMarker` holding the formulation name, the data,
the build options, the layout of the variables (component name -> index keys in the
order of the data arrays) and a fingerprint of every component of the model.  A
structure plugin solves the *data* with its own algorithm and loads the values into the
model, so it must know the model was not edited after it was built: it recomputes the
fingerprint and refuses the model on any difference (an added or deactivated constraint,
a changed bound or domain, a fixed variable, a new objective ...).

The marker is a plain attribute of the model, so ``model.clone()`` copies it.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

import pyomo.environ as pyo
from pyomo.common.numeric_types import native_types

from .errors import ModelStructureError
from .formulations import get_formulation

__all__ = ["StructureMarker", "attach_marker", "get_marker", "model_fingerprint", "checked_marker"]

MARKER_ATTRIBUTE = "_dpmodels_structure"


@dataclass
class StructureMarker:
    """Formulation name, typed payload (the registered dataclass), build options, variable
    layout and component fingerprint."""

    formulation: str
    data: Any
    options: dict = field(default_factory=dict)
    layout: dict[str, list] = field(default_factory=dict)
    fingerprint: str = ""


def attach_marker(
    model, formulation: str, data, options: dict | None = None, layout=None, fingerprint: bool = True
) -> StructureMarker:
    """Attach a marker to a freshly built ``model`` and fingerprint it.

    ``fingerprint=False`` skips the (build-sized) hashing for models that only general
    solvers will see; structure plugins then refuse the model, since no fingerprint matches.
    """
    _check_payload(formulation, data)
    marker = StructureMarker(formulation, data, dict(options or {}), dict(layout or {}))
    marker.fingerprint = model_fingerprint(model) if fingerprint else "(not fingerprinted)"
    setattr(model, MARKER_ATTRIBUTE, marker)
    return marker


def _check_payload(formulation: str, data) -> None:
    """The payload must be the registered formulation's dataclass (plugins read it by attribute)."""
    expected = get_formulation(formulation).payload
    if not isinstance(data, expected):
        raise TypeError(f"formulation {formulation!r} carries a {expected.__name__}, got {type(data).__name__}")


def get_marker(model) -> StructureMarker | None:
    return getattr(model, MARKER_ATTRIBUTE, None)


def refresh_marker(model, **option_updates) -> StructureMarker:
    """Record a sanctioned edit (e.g. :func:`relax_integer_vars`) in the marker."""
    marker = get_marker(model)
    if marker is None:
        raise ModelStructureError(f"model {model.name!r} has no dpmodels structure marker")
    marker.options.update(option_updates)
    marker.fingerprint = model_fingerprint(model)
    return marker


def checked_marker(model, solver: str, formulations) -> StructureMarker:
    """The model's marker after checking it is present, supported and unedited."""
    marker = get_marker(model)
    if marker is None:
        raise ModelStructureError(
            f"{solver} solves models built by dpmodels builders only; model {model.name!r} has no "
            "structure marker (build it with a dpmodels build_* function, or use a general solver)"
        )
    if marker.formulation not in formulations:
        raise ModelStructureError(
            f"{solver} does not solve formulation {marker.formulation!r}; it solves {sorted(formulations)}"
        )
    if model_fingerprint(model) != marker.fingerprint:
        raise ModelStructureError(
            f"model {model.name!r} was edited after it was built (its components no longer match the "
            f"fingerprint of formulation {marker.formulation!r}); {solver} would solve the original "
            "data, not the edited model. Rebuild the model, or solve the edited model with a general "
            "solver such as highs or scip"
        )
    return marker


#: Components a user adds without changing the problem: import/export suffixes (duals,
#: reduced costs) and reporting expressions.  An expression that a constraint or the
#: objective uses is still hashed, through their expression trees.
_NOT_EDITS = (pyo.Suffix, pyo.Expression)


def model_fingerprint(model) -> str:
    """SHA-256 over every component that defines the problem: names, activity, variable
    domains/bounds/fixing, parameter values, and the full trees of constraint and objective
    expressions.  Suffixes and named expressions are not part of it (see ``_NOT_EDITS``)."""
    h = hashlib.sha256()
    for comp in model.component_objects(descend_into=True, sort=True):
        if comp.ctype in _NOT_EDITS:
            continue
        size = len(comp) if comp.is_indexed() else 1
        h.update(f"C|{comp.ctype.__name__}|{comp.name}|{comp.active}|{size}\n".encode())
    position: dict[int, int] = {}
    for v in model.component_data_objects(pyo.Var, descend_into=True, sort=True):
        position[id(v)] = len(position)
        fixed = f"={v.value!r}" if v.fixed else ""
        h.update(f"V|{v.domain}|{v.lb!r}|{v.ub!r}|{v.fixed}{fixed}\n".encode())
    for p in model.component_data_objects(pyo.Param, descend_into=True, sort=True):
        h.update(f"P|{p.value!r}\n".encode())
    walk = _ExpressionHasher(position, h)
    for c in model.component_data_objects(pyo.Constraint, active=True, descend_into=True, sort=True):
        h.update(b"K|")
        walk(c.lower)
        walk(c.body)
        walk(c.upper)
    for o in model.component_data_objects(pyo.Objective, active=True, descend_into=True, sort=True):
        h.update(f"O|{o.sense}|".encode())
        walk(o.expr)
    return h.hexdigest()


class _ExpressionHasher:
    """Feeds an expression tree to a hash: operator types, constants, variable positions.

    Walking ``args`` directly is about ten times faster than printing the expression.
    """

    def __init__(self, position: dict[int, int], h):
        self.position = position
        self.h = h

    def __call__(self, expr) -> None:
        tokens: list[str] = []
        stack = [expr]
        position = self.position
        while stack:
            node = stack.pop()
            if node is None or node.__class__ in native_types:
                tokens.append(repr(node))
            elif node.is_expression_type():
                tokens.append(f"{node.__class__.__name__}/{node.nargs()}")
                stack.extend(node.args)
            elif node.is_variable_type():
                pos = position.get(id(node))
                tokens.append(f"v{pos}" if pos is not None else f"v{node.name}")
            elif node.is_parameter_type() or node.is_numeric_type():
                tokens.append(f"p{pyo.value(node, exception=False)!r}")
            else:
                tokens.append(repr(node))
        self.h.update(("|".join(tokens) + "\n").encode())
