"""The TopDown driver (Algorithm 1, spec 4.1): root solve, then level by level to the leaves.

Every parent of a level depends only on its own already-fixed histogram, so the solves of a
level run through the ``executor`` argument (serial, process pool, Dask).  Shortcuts: a
single child inherits its parent; a zero parent has zero children; only cells where the
parent is positive get variables.  The result holds every node's histogram, the leaf
histograms (from which microdata follow), a solve log and per-level times, and the checks
of every public constraint on the output.

:func:`node_problem` rebuilds, for inspection, the :class:`~dpmodels.topdown.node_data.NodeProblem`
of one of these solves from the noisy measurements and the public knowledge.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import scipy.sparse as sp

from dpmodels.core.errors import DataValidationError
from dpmodels.core.executors import map_tasks, resolve_executor
from dpmodels.core.hierarchy import Hierarchy

from .data import PublicKnowledge, Schema, TopDownData, microdata
from .interleaved import check_options, solve_passes
from .mechanism import Measurements, Strategy, measure
from .node_data import ChildSpec, NodeProblem, WeightedQuery
from .production import production_rows
from .queries import is_identity, kron_query
from .release_checks import check_release
from .released import ReleasedLevels
from .solve import NodeOptions, NodeSolution
from .specs import LevelSpecs
from .wire import ship, unship

__all__ = ["TopDownResult", "histogram_frame", "topdown", "run_topdown", "free_marginal", "node_problem"]


@dataclass
class TopDownResult:
    """Released histograms of every region (rows in hierarchy order) and how they were made.

    In ``log`` and ``level_seconds``, ``level`` is the level of the histograms a solve
    released: 1 for the root solve, l + 1 for the solve of the children of a level-l node.

    Parameters
    ----------
    geography : Hierarchy
        The geography tree.
    node_counts : scipy.sparse.csr_matrix
        Regions x cells: the released histograms.
    log : pandas.DataFrame
        One row per solve.
    level_seconds : dict
        Wall time per released level.
    checks : dict, optional
        Violations of every public constraint on the release.
    """

    geography: Hierarchy
    node_counts: sp.csr_matrix
    log: pd.DataFrame
    level_seconds: dict[int, float]
    checks: dict = field(default_factory=dict)

    @property
    def leaf_counts(self) -> sp.csr_matrix:
        return self.node_counts[self.geography.leaves]

    def to_frame(self, schema: Schema) -> pd.DataFrame:
        """The released histograms, indexed by ``region`` and the attributes: ``level`` and ``count``
        of every nonzero cell (:func:`dpmodels.topdown.release.histogram_frame`, with its labels as
        the index).

        Parameters
        ----------
        schema : Schema
            The histogram's attributes.
        """
        return histogram_frame(schema, self).set_index(["region", *schema.names])

    def records(self, schema: Schema) -> pd.DataFrame:
        """The released microdata: one row per person, leaf geocode plus attribute labels."""
        return microdata(schema, self.geography, self.leaf_counts)

    def summary(self) -> pd.DataFrame:
        """Per level: nodes solved, how each rounding was obtained, failsafes, seconds."""
        log = self.log
        if log.empty:
            return pd.DataFrame()
        l1 = log[log.stage == "L1"].groupby(["node", "level"]).tail(1)  # how each rounding was finally obtained
        out = log.groupby("level").agg(nodes=("node", "nunique"))
        for method in ("lp-integral", "mip", "flow", "already integral", "failsafe", "one child", "zero parent"):
            out[method] = l1[l1.method == method].groupby("level")["node"].nunique()
        out["seconds"] = pd.Series(self.level_seconds)
        return out.fillna(0)


def histogram_frame(schema: Schema, result: TopDownResult) -> pd.DataFrame:
    """Released histograms of every region in long format: ``region, level, <attributes>, count``.

    Cells with count 0 are left out (the schema has thousands of cells); ``level`` is 1 at
    the root (the nation) and grows to the blocks.

    Parameters
    ----------
    schema : Schema
        The histogram's attributes.
    result : TopDownResult
        The release.
    """
    counts = sp.coo_matrix(result.node_counts)
    keep = counts.data != 0
    rows, cells, values = counts.row[keep], counts.col[keep], counts.data[keep]
    order = np.lexsort((cells, rows))
    rows, cells, values = rows[order], cells[order], values[order]
    geo = result.geography
    frame = schema.cells_frame().iloc[cells].reset_index(drop=True)
    frame.insert(0, "region", np.asarray(geo.names)[rows])
    frame.insert(1, "level", np.asarray(geo.level)[rows])
    frame["count"] = values.astype(np.int64)
    return frame


def free_marginal(schema: Schema, knowledge: PublicKnowledge) -> sp.csr_matrix:
    """The marginal over the attributes no implied constraint touches (spec 3.8): every
    attribute along which the GQ type of a cell does not vary."""
    if knowledge.gq is None:
        return sp.identity(schema.size, format="csr")
    types = knowledge.gq.cell_type.reshape(schema.shape)
    keep = {a.name: "keep" for k, a in enumerate(schema.attributes) if np.all(types == np.take(types, [0], axis=k))}
    return kron_query(schema, keep)


def _identity_flags(measurements: Measurements, n_cells: int) -> dict[str, bool]:
    out = {}
    for q in measurements.strategy.queries:
        a = q.matrix.tocsr()
        out[q.name] = a.shape == (n_cells, n_cells) and a.nnz == n_cells and (a.diagonal() == 1).all()
    return out


def _spec_builder(options, measurements, knowledge, geography, mats, identity, level: int):
    """``build(kids, cells)``: the children's specs of one parent at ``level`` (the children's level), built
    for all children at once (:class:`~dpmodels.topdown.specs.LevelSpecs`), or child by child as before
    issue 25 with ``options.assembly == "previous"`` (:mod:`.previous`)."""
    if options.assembly == "previous":
        from .previous import previous_child_spec

        def build(kids, cells):
            return [previous_child_spec(c, cells, measurements, identity, mats, geography, knowledge) for c in kids]

        return build
    return LevelSpecs(measurements, knowledge, geography, mats, identity, level).specs


def topdown(
    measurements: Measurements,
    knowledge: PublicKnowledge,
    schema: Schema,
    geography: Hierarchy,
    options: NodeOptions | None = None,
    executor=None,
    progress: bool = False,
) -> TopDownResult:
    """Post-process the noisy measurements into integer histograms for every region.

    Parameters
    ----------
    measurements : Measurements
        The noisy answers (:func:`~dpmodels.topdown.mechanism.measure`).
    knowledge : PublicKnowledge
        What every solve must respect.
    schema : Schema
        The histogram's attributes.
    geography : Hierarchy
        The geography tree.
    options : NodeOptions, optional
        Backends and modelling choices of the node solves.
    executor : str or Executor, optional
        Where the solves of a level run (``dpmodels.core.executors``).
    progress : bool, default False
        Show a progress bar.

    Returns
    -------
    TopDownResult
    """
    knowledge.check(geography)  # public totals only for the invariant regions
    options = options or NodeOptions()
    options = check_options(options, measurements.strategy.queries)  # production passes (interleaved.py)
    extra = production_rows(knowledge, geography)  # production rows: group totals, occupancy caps
    mats = {q.name: q.matrix.tocsr() for q in measurements.strategy.queries}
    identity = _identity_flags(measurements, schema.size)
    marg = free_marginal(schema, knowledge)
    zeros = np.zeros(schema.size, dtype=bool)
    zeros[np.asarray(knowledge.structural_zeros, dtype=np.int64)] = True
    common = {
        "cell_type": None if knowledge.gq is None else knowledge.gq.cell_type,
        "edits": knowledge.edits,
        "free_marginal": marg,
    }
    released = ReleasedLevels(geography, schema.size)  # filled level by level, kept sparse
    logs: list[dict] = []
    seconds: dict[int, float] = {}
    tick = time.perf_counter()
    active = np.flatnonzero(~zeros)
    root = NodeProblem(
        active,
        _spec_builder(options, measurements, knowledge, geography, mats, identity, 1)([0], active),
        root_total=knowledge.root_total,
        rows=extra.for_solve([0], active) if extra else (),
        **common,
    )
    sol = solve_passes(root, options)
    released.put([0], active, sol.values[:1])
    released.finish(1)
    logs += _log_rows(sol, geography, 0, len(active), produced=1)
    seconds[1] = time.perf_counter() - tick
    with resolve_executor(executor) as pool:  # one pool for every level
        for level in range(1, geography.n_levels):
            tick = time.perf_counter()
            parents = np.arange(*geography.level_slice(level).indices(geography.n_regions))
            tasks, solved_by = [], []
            build = _spec_builder(options, measurements, knowledge, geography, mats, identity, level + 1)
            for p in parents:
                kids = geography.children(p)
                parent = released.row(p)
                cells = np.flatnonzero(parent > 0)
                if len(kids) == 1:  # the single child has the same leaves: it is its parent
                    released.put(kids, cells, parent[cells][None, :])
                    logs.append(_shortcut_row(geography, p, 1, "one child"))
                    continue
                if len(cells) == 0:
                    logs.append(_shortcut_row(geography, p, len(kids), "zero parent"))
                    continue
                specs = build(kids, cells)
                rows = extra.for_solve(kids, cells) if extra else ()
                tasks.append(ship(NodeProblem(cells, specs, parent=parent[cells], rows=rows, **common)))
                solved_by.append((p, kids, cells))
            shared = (common, options)  # public, the same for every task: sent once per Dask worker (wire.py)
            desc = f"level {level + 1}"
            results = map_tasks(_solve_task, tasks, executor=pool, shared=shared, progress=progress, desc=desc)
            for (p, kids, cells), sol in zip(solved_by, results, strict=True):
                released.put(kids, cells, sol.values)
                logs += _log_rows(sol, geography, p, len(cells), produced=level + 1)
            released.finish(level + 1)
            seconds[level + 1] = time.perf_counter() - tick
    result = TopDownResult(geography, released.matrix(), pd.DataFrame(logs), seconds)
    result.checks = check_release(result, knowledge, options.edits)
    return result


def _solve_task(problem: NodeProblem, shared: tuple) -> NodeSolution:
    """One parent's solve: its own data shipped in ``problem``, the run's public context and options in ``shared``."""
    common, options = shared
    return solve_passes(unship(problem, common), options)


def _log_rows(sol: NodeSolution, geography: Hierarchy, node: int, cells: int, produced: int) -> list[dict]:
    base = {
        "node": geography.names[node],
        "level": produced,
        "cells": cells,
        "children": len(sol.values),
        "failsafe": sol.failsafe,
    }
    return [dict(base, **rec) for rec in sol.log]


def _shortcut_row(geography: Hierarchy, node: int, children: int, method: str) -> dict:
    return {
        "node": geography.names[node],
        "level": int(geography.level[node]) + 1,
        "children": children,
        "cells": 0,
        "failsafe": False,
        "stage": "L1",
        "edits": False,
        "method": method,
        "status": "shortcut",
        "seconds": 0.0,
    }


def run_topdown(
    data: TopDownData,
    epsilon,
    strategy: Strategy | None = None,
    level_shares=None,
    options=None,
    noise: str = "geometric",
    seed=None,
    executor=None,
    progress: bool = False,
    *,
    rho=None,
):
    """TopDown end to end: measure everything once, then post-process level by level.

    Returns ``(result, measurements)``; the post-processing sees only the measurements and
    the public knowledge, never ``data.leaf_counts``.  ``seed=None`` draws from the secure
    generator; a seed is for experiments (the ledger says the output is not private).

    Parameters
    ----------
    data : TopDownData
        The person histograms and the public knowledge.
    epsilon : float or Fraction
        The total budget (None with the discrete Gaussian, whose budget is ``rho``).
    strategy : Strategy, optional
        The query sets (default :func:`~dpmodels.topdown.mechanism.default_strategy`).
    level_shares : sequence, optional
        Per-level budget shares (default uniform).
    options : NodeOptions, optional
        The node solves' choices.
    noise : {"geometric", "laplace", "discrete-gaussian"}, default "geometric"
        The noise; ``"discrete-gaussian"`` (zCDP) takes ``rho``, the total zCDP budget.
    seed : int, optional
        None draws from the secure generator; a seed is for experiments (not private).
    executor : str or Executor, optional
        Where the solves of a level run.
    progress : bool, default False
        Show a progress bar.
    """
    measurements = measure(data, epsilon, strategy, level_shares, noise, rng=seed, rho=rho)
    options = options or NodeOptions()
    result = topdown(measurements, data.knowledge, data.schema, data.geography, options, executor, progress)
    return result, measurements


# ---------------------------------------------------------------------- one solve, for inspection
def node_problem(
    data: TopDownData, measurements: Measurements, node: int | None = None, parent: np.ndarray | None = None
) -> NodeProblem:
    """The :class:`NodeProblem` TopDown solves: the root solve for ``node=None`` (its total is
    public), else the solve of the children of region ``node`` given its released ``parent``
    histogram (a full-length vector over the schema's cells), as the driver builds it.  Only
    noisy answers and public knowledge go in.

    Parameters
    ----------
    data : TopDownData
        The data (only its public parts are read).
    measurements : Measurements
        The noisy answers.
    node : int, optional
        The region whose children are solved (None: the root solve).
    parent : numpy.ndarray, optional
        The region's released histogram (over all cells).
    """
    geo, kn, schema = data.geography, data.knowledge, data.schema
    kn.check(geo)  # public totals only for the invariant regions
    zeros = np.zeros(schema.size, dtype=bool)
    zeros[np.asarray(kn.structural_zeros, dtype=np.int64)] = True
    mats = {q.name: q.matrix.tocsr() for q in measurements.strategy.queries}
    common = {
        "cell_type": None if kn.gq is None else kn.gq.cell_type,
        "edits": kn.edits,
        "free_marginal": free_marginal(schema, kn),
    }

    def spec(r: int, cells: np.ndarray) -> ChildSpec:
        queries = []
        for meas in measurements.by_node[r]:
            sub = mats[meas.query][:, cells]
            rows = np.flatnonzero(np.diff(sub.indptr) > 0)
            ident = is_identity(mats[meas.query], schema.size)
            queries.append(WeightedQuery(meas.query, sub[rows], meas.values[rows], 1.0 / meas.variance, ident))
        return ChildSpec(r, queries, kn.invariant_total(geo, r), kn.flow_data(geo, r))

    extra = production_rows(kn, geo)
    if node is None:
        cells = np.flatnonzero(~zeros)
        rows = extra.for_solve([0], cells) if extra else ()
        return NodeProblem(cells, [spec(0, cells)], root_total=kn.root_total, rows=rows, **common)
    if parent is None:
        raise DataValidationError("parent", "a child solve needs the released histogram of its parent")
    parent = np.asarray(parent).ravel()
    if len(parent) != schema.size:
        raise DataValidationError("parent", f"needs one count per cell ({schema.size}), got {len(parent)}")
    kids = geo.children(node)
    if len(kids) == 0:
        raise DataValidationError("node", f"{geo.names[node]!r} is a leaf: it has no children to solve")
    cells = np.flatnonzero(parent > 0)
    rows = extra.for_solve(kids, cells) if extra else ()
    return NodeProblem(cells, [spec(int(c), cells) for c in kids], parent=parent[cells], rows=rows, **common)
