"""The options of a TopDown node solve: backends, modelling choices and the production's passes.

:class:`NodeOptions` is read by :func:`~dpmodels.topdown.solve.solve_node` (which re-exports it),
the interleaved passes (:mod:`.interleaved`, :mod:`.inner_passes`) and the driver; it checks each
field's own value, and :func:`~dpmodels.topdown.interleaved.check_options` checks the pass
declarations against the strategy's query sets.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpmodels.core.errors import DataValidationError

from .models import ROUNDING_OBJECTIVES

__all__ = ["NodeOptions", "L2_BACKENDS"]

#: The L2 backends a node solve accepts (``l2``).
L2_BACKENDS = ("auto", "clarabel", "highs", "topdown_tree_l2", "topdown_active_set_l2")


@dataclass(frozen=True)
class NodeOptions:
    """Backends and modelling choices of a node solve.

    Parameters
    ----------
    l2 : str, default "auto"
        The L2 backend: ``"auto"`` (closed form when the structure allows, else the exact active set
        with Clarabel where it does not apply or finish, :mod:`.l2_matrix`), ``"clarabel"``,
        ``"highs"``, ``"topdown_tree_l2"`` or ``"topdown_active_set_l2"`` (:mod:`.active_set`; on the
        matrix path it too falls back to Clarabel).
    l1 : str, default "highs"
        The rounding backend: ``"highs"`` (LP first) or ``"topdown_flow"``.
    weights : {"inverse_variance", "paper"}, default "inverse_variance"
        The L2 query weights.
    objective : {"l1", "paper", "queries"}, default "l1"
        The rounding objective: the cells' L1 distance to the L2 solution, the paper's ``-phi``, or
        the 2020 production's query rounder (:mod:`.query_rounder`; HiGHS only).
    edits : bool, default True
        Keep the linear edits.
    time_limit : float, optional
        Seconds per solve (default 600).
    path : {"compiled", "pyomo"}, default "compiled"
        Matrices straight to the solver, or through the Pyomo models.
    passes : tuple of tuple of str, optional
        The interleaved pass sequence of the 2020 production (:mod:`.interleaved`), coarse query sets
        first; the driver runs it, :func:`solve_node` solves one pass.  Empty: the 2019 single solve.
    l2_passes : tuple of tuple of str, optional
        The production's L2 passes within each pass (:mod:`.inner_passes`), coarse first: each
        minimises its own query sets' squared error, the earlier ones' answers held within
        ``l2_tolerance`` of their estimates.  Empty: one L2 solve per pass.
    rounder_passes : tuple of tuple of str, optional
        The production's rounder passes within each pass (:mod:`.inner_passes`; the query rounder,
        ``objective="queries"``, only): each rounds the L2 estimate judged by its own query sets, the
        earlier ones' rounded answers held exactly.  Empty: one rounding per pass.
    l2_tolerance : float, default 0.1
        How far an answer of an earlier L2 pass may move in a later one (the production's
        ``opt_tol_slack`` of its PL94 configuration).
    assembly : {"batched", "previous"}, default "batched"
        How the children's data, the matrix form and the checks are assembled: in numpy batches, or
        child by child and row by row as before issue 25 (:mod:`.previous`, kept so that
        ``dpmodels bench topdown`` can time both in one run).  ``"previous"`` also keeps the solves
        of before issue 25: the L2 in residual form (:func:`.compiled.l2_system`) factorised by
        Clarabel's faer, and the LP tried only where the TU certificate holds.  The same optima
        either way; Clarabel's answers differ within its tolerance, and with them some roundings.
    """

    l2: str = "auto"  # one of L2_BACKENDS
    l1: str = "highs"  # "highs" (LP-first protocol) or "topdown_flow"
    weights: str = "inverse_variance"
    objective: str = "l1"
    edits: bool = True
    time_limit: float | None = 600.0  # per solve; HiGHS's QP method can cycle on degenerate problems
    path: str = "compiled"  # "compiled": matrices straight to clarabel/highs; "pyomo": through the models
    passes: tuple[tuple[str, ...], ...] = ()  # interleaved passes (interleaved.py); () = the 2019 solve
    l2_passes: tuple[tuple[str, ...], ...] = ()  # L2 passes within each pass (inner_passes.py)
    rounder_passes: tuple[tuple[str, ...], ...] = ()  # rounder passes within each pass (inner_passes.py)
    l2_tolerance: float = 0.1  # an earlier L2 pass's answers move at most this much in the later ones
    assembly: str = "batched"  # "batched" or "previous" (previous.py: the pre-issue-25 assembly)

    def __post_init__(self):
        if self.path not in ("compiled", "pyomo"):
            raise DataValidationError("path", f"must be 'compiled' or 'pyomo', got {self.path!r}")
        if self.assembly not in ("batched", "previous"):
            raise DataValidationError("assembly", f"must be 'batched' or 'previous', got {self.assembly!r}")
        if self.objective not in ROUNDING_OBJECTIVES:
            raise DataValidationError("objective", f"must be one of {ROUNDING_OBJECTIVES}, got {self.objective!r}")
        if self.objective == "queries" and (self.l1 == "topdown_flow" or self.assembly == "previous"):
            raise DataValidationError(
                "objective",
                "the query rounder ('queries') is a MILP for HiGHS (l1='highs') in the batched assembly; "
                f"got l1={self.l1!r}, assembly={self.assembly!r}",
            )
        if self.rounder_passes and self.objective != "queries":
            raise DataValidationError(
                "rounder_passes",
                "rounder passes split the query rounder's penalties: they need objective='queries' "
                f"(--rounder queries), got {self.objective!r}",
            )
        tol = self.l2_tolerance
        if isinstance(tol, bool) or not isinstance(tol, int | float) or not np.isfinite(tol) or tol <= 0:
            raise DataValidationError("l2_tolerance", f"must be a positive finite number, got {tol!r}")
