"""Implied constraints of TopDown (spec 1.3, 3.9-3.10, 4.3-4.4): can a node histogram be extended
to integer leaf histograms that satisfy every leaf's public facts?

Deciding that is NP-complete in general (Theorems 1-2), so the toolkit offers the structures for
which it is easy, each with the witness its proof gives, and exact oracles for tests:

* :mod:`.constraints` -- the constraint triples ``(coefficients, op, rhs)`` and :func:`satisfies`.
* :mod:`.two_level` -- Theorem 3 (max-flow extendability, the complete Hall set) and Lemma 1 with
  its Allocate procedure.
* :mod:`.group_quarters` -- the network-flow (GQ) setting of Theorems 4-7: ExtendToLeaves, the
  LP projection onto type totals, and the check that a node histogram satisfies the flows.
* :mod:`.fme` -- Fourier-Motzkin projection of a small linear system (spec 3.9(a)).
* :mod:`.exact` -- the exact MILP decision of Problem 2 and Theorem 1's 3-SAT construction.
"""

from .constraints import satisfies
from .exact import ExtensionResult, SatReduction, extension_milp, sat_reduction
from .fme import Projection, fme_project
from .group_quarters import extend_to_leaves, flows_hold, type_total_ranges
from .two_level import Lemma1Set, MaxFlowCheck, allocate, hall_constraints, lemma1_bounds, maxflow_extension

__all__ = [
    "satisfies",
    "MaxFlowCheck",
    "maxflow_extension",
    "hall_constraints",
    "Lemma1Set",
    "lemma1_bounds",
    "allocate",
    "extend_to_leaves",
    "type_total_ranges",
    "flows_hold",
    "Projection",
    "fme_project",
    "ExtensionResult",
    "extension_milp",
    "SatReduction",
    "sat_reduction",
]
