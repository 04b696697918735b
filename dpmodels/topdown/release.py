"""TopDown releases on a user's data: person records -> private microdata and per-level histograms.

:func:`release` measures through a :class:`~dpmodels.core.session.PrivacySession` (secure
randomness, exact double-geometric noise, every scale checked before anything is drawn)
and post-processes the noisy answers with the public knowledge only: the schema, the
geography and the invariant totals.  Floating-point Laplace (``noise="laplace"`` of
:func:`~dpmodels.topdown.mechanism.measure`) stays a research option of ``compare``: it
leaks through its low bits, so a release refuses it.  ``dpmodels release topdown`` wraps
:func:`release` for files: the released microdata CSV, the per-level histograms CSV and
the JSON ledger.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import scipy.sparse as sp

from dpmodels.core.errors import DataValidationError, PrivacyParameterError
from dpmodels.core.executors import resolve_executor
from dpmodels.core.hierarchy import Hierarchy
from dpmodels.core.session import PrivacySession

from .data import PublicKnowledge, Schema, TopDownData
from .driver import TopDownResult, topdown
from .mechanism import Strategy, measure
from .solve import NodeOptions

__all__ = ["RELEASE_NOISE", "HARD_CHECKS", "PublicParts", "release", "histogram_frame"]

RELEASE_NOISE = "geometric"  # the exact double-geometric sampler; the only noise a release draws
#: The hard public constraints of a release (edits and GQ facts may be relaxed by a logged fallback).
HARD_CHECKS = ("negative cells", "invariant totals off", "structural zeros off", "inconsistent parents")


@dataclass(frozen=True)
class PublicParts:
    """What the post-processing may see besides the measurements: nothing drawn from the records."""

    schema: Schema
    geography: Hierarchy
    knowledge: PublicKnowledge


def release(
    session: PrivacySession,
    epsilon,
    strategy: Strategy | None = None,
    level_shares=None,
    options: NodeOptions | None = None,
    executor=None,
    progress: bool = False,
    noise: str = RELEASE_NOISE,
) -> TopDownResult:
    """Spend ``epsilon`` of ``session`` on one TopDown measurement; returns the post-processed release.

    Only the measurement runs inside the session (noise from ``session.rng``); the driver
    then sees the noisy answers and :class:`PublicParts`.  The options, the executor and
    the noise are checked before anything is drawn.
    """
    if noise != RELEASE_NOISE:
        raise PrivacyParameterError(
            "noise",
            f"a release draws exact double-geometric noise ({RELEASE_NOISE!r}); {noise!r} is refused "
            "(floating-point Laplace leaks through its low bits: research comparisons only)",
        )
    if options is not None and not isinstance(options, NodeOptions):
        raise DataValidationError("options", f"must be a NodeOptions, got {type(options).__name__}")
    with resolve_executor(executor) as pool:  # a bad executor is refused here, before the draw
        measured, public = session.run("TopDown measurement", _measurement(strategy, level_shares), epsilon)
        return topdown(
            measured, public.knowledge, public.schema, public.geography, options, executor=pool, progress=progress
        )


def _measurement(strategy: Strategy | None, level_shares):
    """The session's mechanism: exact noisy answers, and the public parts for the post-processing."""

    def run(data: TopDownData, epsilon, rng):
        measured = measure(data, epsilon, strategy, level_shares, RELEASE_NOISE, rng=rng)
        return (measured, PublicParts(data.schema, data.geography, data.knowledge)), measured.ledger

    return run


def histogram_frame(schema: Schema, result: TopDownResult) -> pd.DataFrame:
    """Released histograms of every region in long format: ``region, level, <attributes>, count``.

    Cells with count 0 are left out (the schema has thousands of cells); ``level`` is 1 at
    the root (the nation) and grows to the blocks.
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
