"""Continuous relaxations through Pyomo's own transformation, never hand-edited copies."""

from __future__ import annotations

import pyomo.environ as pyo

from .marker import get_marker, refresh_marker

__all__ = ["relax_integer_vars"]


def relax_integer_vars(model, *, clone: bool = True):
    """The continuous relaxation of ``model`` (integer domains -> reals, bounds kept).

    Applies Pyomo's ``core.relax_integer_vars`` transformation, to a clone by default.  If
    the model carries a dpmodels structure marker, the marker records ``relax=True`` so
    that structure plugins which return integer optima refuse the relaxed model.
    """
    target = model.clone() if clone else model
    pyo.TransformationFactory("core.relax_integer_vars").apply_to(target)
    if get_marker(target) is not None:
        refresh_marker(target, relax=True)
    return target
