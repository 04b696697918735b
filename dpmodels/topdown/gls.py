"""The GLS (best linear unbiased) estimate of every region's histogram from TopDown's measurements.

Beside TopDown's non-negative L2 fit and rounding, the same noisy answers support the
generalised least-squares estimate of the whole tree at once (:mod:`dpmodels.core.tree_gls`:
Hay et al. 2010; the idea of the Census's full-information GLS, MITRE's SEA BLUE and Google's
BlueDown).  It uses every query set at every region, weighted by its variance, the public
structural zeros, the invariant totals and the grouped child totals (:class:`~dpmodels.topdown.knowledge.ChildGroup`);
it is unbiased and has the smallest variance of any
linear unbiased estimate, with exact variances for confidence intervals.  It is **not** a
release of histograms: its cells are real numbers, possibly negative or fractional (rounding or
clipping them would bias them), and it does not use the inequality facts (group-quarters flows,
edits).  It is post-processing of the noisy answers and the declared facts only.

* :func:`gls_problem` - the :class:`~dpmodels.core.tree_gls.TreeGLSProblem` of a measurement;
* :func:`gls_estimate` - its estimate and variances (:class:`~dpmodels.core.tree_gls.GLSResult`);
* :func:`gls_from_set` - the same from a measurement file (:mod:`dpmodels.topdown.measurements`).

The Pyomo model of the same problem is :func:`dpmodels.topdown.gls_model.build_gls` (solved in
closed form by the ``topdown_gls`` plugin, or by any QP solver).
"""

from __future__ import annotations

import numpy as np

from dpmodels.core.errors import DataValidationError
from dpmodels.core.hierarchy import Hierarchy
from dpmodels.core.measurements import MeasurementSet
from dpmodels.core.tree_gls import GLSQuery, GLSResult, TreeGLSProblem, solve_tree_gls

from .data import Schema
from .knowledge import PublicKnowledge
from .mechanism import Measurements

__all__ = ["gls_problem", "gls_estimate", "gls_from_set"]


def gls_problem(
    measurements: Measurements, knowledge: PublicKnowledge, schema: Schema, geography: Hierarchy
) -> TreeGLSProblem:
    """The tree GLS problem of TopDown's noisy answers and public knowledge.

    Every query set of the strategy becomes a :class:`~dpmodels.core.tree_gls.GLSQuery` (a region
    that lacks it counts as unmeasured by it), each region's answers matched by the query set's
    name; the invariant totals, the structural zeros and the grouped child totals (the sum of a group's
    region totals is its public total) are exact facts.  Group-quarters facts and edits (inequalities)
    are not used.

    Parameters
    ----------
    measurements : Measurements
        The noisy answers, ``by_node`` in the geography's order.
    knowledge : PublicKnowledge
        The invariant totals, structural zeros and grouped child totals.
    schema : Schema
        The histogram's attributes.
    geography : Hierarchy
        The regions.
    """
    knowledge.check(geography)
    if len(measurements.by_node) != geography.n_regions:
        raise DataValidationError(
            "measurements", f"need answers for {geography.n_regions} regions, got {len(measurements.by_node)}"
        )
    queries = tuple(_query(measurements, q.name, q.matrix, geography) for q in measurements.strategy.queries)
    totals = {i: float(t) for i, t in enumerate(knowledge.invariant_totals)}
    zeros = np.asarray(knowledge.structural_zeros, dtype=np.int64)
    index = geography.index
    groups = tuple((tuple(index[r] for r in g.regions), float(g.total)) for g in knowledge.child_groups)
    return TreeGLSProblem(geography, schema.size, queries, totals, zeros, groups)


def _query(measurements: Measurements, name: str, matrix, geography: Hierarchy) -> GLSQuery:
    """One query set's answers at every region (``inf`` variance where a region has none)."""
    rows = matrix.shape[0]
    values = np.zeros((geography.n_regions, rows))
    variances = np.full(geography.n_regions, np.inf)
    for region, answers in enumerate(measurements.by_node):
        found = [a for a in answers if a.query == name]
        if len(found) > 1:
            raise DataValidationError("measurements", f"{name!r} is measured twice at {geography.names[region]!r}")
        if found:
            if len(found[0].values) != rows:
                raise DataValidationError(
                    "measurements", f"{name!r} at {geography.names[region]!r} needs {rows} answers"
                )
            values[region], variances[region] = found[0].values, found[0].variance
    return GLSQuery(name, matrix, values, variances)


def gls_estimate(
    measurements: Measurements, knowledge: PublicKnowledge, schema: Schema, geography: Hierarchy
) -> GLSResult:
    """The GLS estimate of every region's histogram, with the variance of every cell and total.

    Parameters
    ----------
    measurements : Measurements
        The noisy answers (:func:`~dpmodels.topdown.mechanism.measure`, or a measurement file's).
    knowledge : PublicKnowledge
        The invariant totals, structural zeros and grouped child totals.
    schema : Schema
        The histogram's attributes.
    geography : Hierarchy
        The regions.

    Returns
    -------
    GLSResult
        ``estimate`` (regions x cells, real-valued), ``variance``, ``total_variance``, ``intervals()``.
    """
    return solve_tree_gls(gls_problem(measurements, knowledge, schema, geography))


def gls_from_set(found: MeasurementSet) -> GLSResult:
    """The GLS estimate of a TopDown measurement file (any tool's noise, its stated variances).

    Parameters
    ----------
    found : MeasurementSet
        A TopDown set (:func:`dpmodels.core.measurements.read_measurements`).
    """
    from .measurements import measurements_from_set

    measurements, inputs = measurements_from_set(found)
    return gls_estimate(measurements, inputs.knowledge, inputs.schema, inputs.geography)
