"""PGSR post-processing: what each named mechanism does with its noisy values (spec 3, 4.2-4.6).

A post-processing sees only the :class:`~dpmodels.pgsr.data.NoisyGroupSizes` (noisy values plus
the public hierarchy, N and G), never the truth, so it cannot weaken the measurement's privacy
(Lemma 3).  :data:`MECHANISMS` names each mechanism's measured vectors (its ``kind``, drawn by
:func:`dpmodels.pgsr.mechanism.measure`) and its post-processing, one ``post_*`` function
returning a :class:`Release`; :func:`postprocess` runs one by name.  The table of measurements
and post-processings is in :mod:`dpmodels.pgsr.mechanism`.
"""

from __future__ import annotations

import functools
import inspect
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from dpmodels.core.errors import DataValidationError
from dpmodels.core.facade import solve
from dpmodels.core.hierarchy import Hierarchy
from dpmodels.core.marker import get_marker
from dpmodels.core.tables import region_frame

from .algorithms.relaxation import relaxed_values
from .data import NoisyGroupSizes
from .domains import resolve_domains
from .models import build_cumulative_qip, build_hierarchical_qip, released_counts

__all__ = ["Release", "MechanismSpec", "MECHANISMS", "mechanism_spec", "postprocess"]


@dataclass
class Release:
    """What a post-processing returns: released counts n in (regions, sizes) layout.

    Parameters
    ----------
    counts : numpy.ndarray
        The released counts (int64; NaN when the solver returned no solution).
    status : str
        ``"optimal"``, ``"feasible"`` or the solver's solution status.
    objective : float or None
        The post-processing's objective at the release.
    seconds : float
        The post-processing's wall time.
    solver : str
        The solver or algorithm that produced it.
    info : dict
        Its other facts (termination, bound, widenings...).
    hierarchy : Hierarchy, optional
        The public hierarchy the rows follow (set by every ``post_*`` function).
    """

    counts: np.ndarray
    status: str
    objective: float | None
    seconds: float
    solver: str
    info: dict = field(default_factory=dict)
    hierarchy: Hierarchy | None = None

    def to_frame(self) -> pd.DataFrame:
        """The released counts as a table: indexed by region, a ``level`` column, sizes ``1..N``."""
        if self.hierarchy is None:
            raise DataValidationError("hierarchy", "this release was built without its hierarchy: no labels")
        return region_frame(self.counts, self.hierarchy.names, self.hierarchy.level)


def _timed(func: Callable) -> Callable:
    """Record the post-processing wall time in ``Release.seconds`` and the rows' hierarchy."""

    @functools.wraps(func)
    def wrapper(noisy: NoisyGroupSizes, **options) -> Release:
        tick = time.perf_counter()
        release = func(noisy, **options)
        release.seconds = time.perf_counter() - tick
        release.hierarchy = noisy.hierarchy
        return release

    return wrapper


def _fingerprinted(solver: str) -> bool:
    """Whether a model solved by ``solver`` needs its fingerprint: only structure plugins read it.
    A backend (clarabel, highs, scip) never does, and hashing the model took about a third of
    M_H^r's and M_c^r's post-processing with clarabel (1.0 of 3.2 s and 2.3 of 5.9 s, profiled,
    13,500 cells)."""
    from dpmodels.core.capabilities import BACKENDS, canonical

    return canonical(solver) not in BACKENDS


def _model_release(model, solver: str, rounding: str, time_limit: float | None) -> Release:
    results = solve(model, solver, time_limit=time_limit)
    status = results.solution_status.name
    if results.solution_loader.get_number_of_solutions() == 0:
        shape = get_marker(model).data.noisy.values.shape
        return Release(
            np.full(shape, np.nan), status, None, 0.0, solver, {"termination": results.termination_condition.name}
        )
    counts = released_counts(model, rounding)
    if rounding == "none":
        counts = np.round(counts)  # integer solutions within the MIP tolerance
    return Release(
        counts.astype(np.int64) if np.isfinite(counts).all() else counts,
        status,
        results.incumbent_objective,
        0.0,
        solver,
        {"termination": results.termination_condition.name, "bound": results.objective_bound},
    )


@_timed
def post_hierarchical_qip(noisy, solver="scip", domains="truncated", time_limit=None) -> Release:
    """M_H: Model 1 solved as a QIP."""
    model = build_hierarchical_qip(noisy, domains=domains, on_infeasible="widen", fingerprint=_fingerprinted(solver))
    return _model_release(model, solver, "none", time_limit)


@_timed
def post_hierarchical_relaxed(noisy, solver="clarabel", domains="truncated", time_limit=None) -> Release:
    """M_H^r: Model 1-R, then every entry rounded half up (may break consistency).

    ``solver="pgsr_relax"`` solves Model 1-R on the plain data by demand functions (no Pyomo
    model: about a second on the census shape, where the model alone takes minutes and GBs).
    """
    if solver == "pgsr_relax":
        return _plain_relaxed_release(noisy, domains, time_limit)
    model = build_hierarchical_qip(
        noisy, relax=True, domains=domains, on_infeasible="widen", fingerprint=_fingerprinted(solver)
    )
    return _model_release(model, solver, "half_up", time_limit)


def _plain_relaxed_release(noisy, domains, time_limit) -> Release:
    if time_limit is not None:
        raise DataValidationError("time_limit", "pgsr_relax is a finite algorithm with nothing to stop; leave it unset")
    dom = resolve_domains(noisy, domains, None, "widen")
    relaxed = relaxed_values(noisy, dom)
    objective = noisy.squared_error(relaxed)
    counts = np.floor(relaxed + 0.5).astype(np.int64)
    return Release(counts, "optimal", objective, 0.0, "pgsr_relax", {"domain_widenings": dom.widenings})


@_timed
def post_hierarchical_dp(noisy, domains="truncated", method="windows") -> Release:
    """M_H^dp: the exact optimum of Model 1 on ``domains``.

    ``method="windows"`` (default) certifies it from windows around the relaxation, at a cost that
    does not grow with the domain (:mod:`.algorithms.window`); ``"tables"`` is the paper's TableMerge DP.
    """
    sol = _hierarchical_solver(method)(noisy, domains, on_infeasible="widen")
    return Release(sol.counts, "optimal", sol.objective, 0.0, "pgsr_dp", sol.info)


def _hierarchical_solver(method: str):
    """The exact Model 1 solver called ``method`` (see :func:`post_hierarchical_dp`)."""
    from .algorithms.hierarchical import solve_hierarchical
    from .algorithms.window import solve_exact

    solvers = {"windows": solve_exact, "tables": solve_hierarchical}
    if method not in solvers:
        raise DataValidationError("method", f"must be one of {sorted(solvers)}, got {method!r}")
    return solvers[method]


@_timed
def post_hierarchical_dp_op(noisy, domains="truncated", subsolver="highs") -> Release:
    """M_dp^OP: the same DP with one Model 4 solve per table entry."""
    from .algorithms.op import solve_hierarchical_op

    sol = solve_hierarchical_op(noisy, domains, on_infeasible="widen", subsolver=subsolver)
    return Release(sol.counts, "optimal", sol.objective, 0.0, "pgsr_dp_op", sol.info)


@_timed
def post_cumulative_qip(noisy, solver="scip", domains="truncated", time_limit=None) -> Release:
    """M_c: Model 2 solved as a QIP."""
    model = build_cumulative_qip(noisy, domains=domains, on_infeasible="widen", fingerprint=_fingerprinted(solver))
    return _model_release(model, solver, "none", time_limit)


@_timed
def post_cumulative_relaxed(noisy, solver="clarabel", domains="truncated", time_limit=None) -> Release:
    """M_c^r: Model 2-R, rounded half up, then de-cumulated."""
    model = build_cumulative_qip(
        noisy, relax=True, domains=domains, on_infeasible="widen", fingerprint=_fingerprinted(solver)
    )
    return _model_release(model, solver, "half_up", time_limit)


@_timed
def post_cumulative_dp(noisy, domains="truncated") -> Release:
    """M_c^dp: Algorithm 2 (isotonic step, rounding, then the DP)."""
    from .algorithms.cumulative import solve_cumulative_dp

    sol = solve_cumulative_dp(noisy, domains)
    return Release(sol.counts, "feasible", sol.objective, 0.0, "pgsr_cdp", sol.info)


@_timed
def post_chain(noisy, domains="truncated") -> Release:
    """M_c^ch: the corrected Model 3 by the chain DP."""
    from .algorithms.chain import solve_chain

    sol = solve_chain(noisy, domains, on_infeasible="widen")
    return Release(sol.counts, "optimal", sol.objective, 0.0, "pgsr_chain", sol.info)


@_timed
def post_topdown(noisy) -> Release:
    """TopDown (the paper's baseline): simplex projections and largest-remainder roundings, top down."""
    from .algorithms.topdown_baseline import solve_topdown_baseline

    sol = solve_topdown_baseline(noisy)
    return Release(sol.counts, "feasible", sol.objective, 0.0, "topdown_baseline", sol.info)


@dataclass(frozen=True)
class MechanismSpec:
    """A named PGSR mechanism: the vectors it measures (``kind``) and its post-processing."""

    name: str
    kind: str
    post: Callable[..., Release]
    description: str

    @property
    def options(self) -> list[str]:
        """Keyword options its post-processing accepts."""
        return [p for p in inspect.signature(self.post).parameters if p != "noisy"]

    def check_options(self, options: dict) -> None:
        """Refuse options its post-processing does not take (the error names them and the valid ones)."""
        unknown = sorted(set(options) - set(self.options))
        if unknown:
            raise DataValidationError("options", f"{self.name} takes {self.options}, not {unknown}")


MECHANISMS: dict[str, MechanismSpec] = {
    m.name: m
    for m in [
        MechanismSpec("M_H", "counts", post_hierarchical_qip, "Model 1 QIP (exact, MIQP solver)"),
        MechanismSpec("M_H^r", "counts", post_hierarchical_relaxed, "Model 1-R QP + rounding"),
        MechanismSpec("M_H^dp", "counts", post_hierarchical_dp, "Model 1 by the TableMerge DP (exact)"),
        MechanismSpec(
            "M_dp^OP", "counts", post_hierarchical_dp_op, "Model 1 by the DP with sub-model solves (exact, slow)"
        ),
        MechanismSpec("M_c", "cumulative", post_cumulative_qip, "Model 2 QIP (exact, MIQP solver)"),
        MechanismSpec("M_c^r", "cumulative", post_cumulative_relaxed, "Model 2-R QP + rounding"),
        MechanismSpec("M_c^dp", "cumulative", post_cumulative_dp, "Algorithm 2: isotonic + rounding + DP"),
        MechanismSpec("M_c^ch", "chain", post_chain, "Model 3 by the chain DP (exact)"),
        MechanismSpec("TopDown", "counts", post_topdown, "TopDown baseline: per-level simplex projection + rounding"),
    ]
}


def postprocess(name: str, noisy: NoisyGroupSizes, **options) -> Release:
    """Run mechanism ``name``'s post-processing on noisy data only.

    Parameters
    ----------
    name : str
        A name of :data:`MECHANISMS` (``"M_H^dp"``, ``"M_c^ch"``...).
    noisy : NoisyGroupSizes
        The measured values; their ``kind`` must be the mechanism's.
    **options
        The post-processing's options (``solver``, ``domains``, ``time_limit``... as its
        ``post_*`` function takes them; :attr:`MechanismSpec.options`).

    Returns
    -------
    Release
        The released counts (regions x sizes), status, objective and seconds.
    """
    spec = mechanism_spec(name)
    noisy.require_kind(spec.kind, name)
    spec.check_options(options)
    return spec.post(noisy, **options)


def mechanism_spec(name: str) -> MechanismSpec:
    """The entry of :data:`MECHANISMS` called ``name``, else an error naming the field ``mechanism``.

    Parameters
    ----------
    name : str
        A mechanism's name.
    """
    if name not in MECHANISMS:
        raise DataValidationError("mechanism", f"unknown {name!r}; choose from {list(MECHANISMS)}")
    return MECHANISMS[name]
