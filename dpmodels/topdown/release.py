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

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import scipy.sparse as sp

from dpmodels.core.errors import DataValidationError, PrivacyParameterError
from dpmodels.core.executors import resolve_executor
from dpmodels.core.hierarchy import Hierarchy
from dpmodels.core.release import add_common_arguments, finish, open_release
from dpmodels.core.session import PrivacySession

from .data import PublicKnowledge, Schema, TopDownData
from .driver import TopDownResult, topdown
from .mechanism import Strategy, measure
from .solve import NodeOptions

__all__ = ["RELEASE_NOISE", "PublicParts", "release", "histogram_frame", "add_parser"]

RELEASE_NOISE = "geometric"  # the exact double-geometric sampler; the only noise a release draws
OUTPUTS = {
    "--out-microdata": "where to write the released microdata CSV (geocode + attributes, one row per person)",
    "--out-histograms": "where to write the per-level histograms CSV (region, level, attributes, count; "
    "cells with count 0 are left out)",
}
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


# ---------------------------------------------------------------------- command line
def add_parser(release_sub) -> None:
    """Register ``dpmodels release topdown``."""
    from dpmodels.instances.topdown import LEVELS

    p = release_sub.add_parser(
        "topdown",
        help="release census microdata and histograms with TopDown (person records CSV)",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("--persons", required=True, help="person records: geocode (15 digits) + hhgq, votingage, ...")
    p.add_argument("--races", type=int, default=63, help="cenrace categories of the schema (1..63)")
    p.add_argument("--total-level", default="state", choices=list(LEVELS), help="deepest invariant population")
    p.add_argument(
        "--blocks",
        help="CSV with a geocode column: the public list of blocks, empty ones too "
        "(if omitted, the blocks that appear in --persons, which depend on the data)",
    )
    p.add_argument("--executor", default="serial", help="serial, process, dask, or a number of processes")
    add_common_arguments(p, OUTPUTS)
    p.set_defaults(run=_run)


def _run(args) -> int:
    from dpmodels.instances.topdown import from_csv

    data = from_csv(args.persons, races=args.races, total_level=args.total_level, blocks=args.blocks)
    session, outs, ledger = open_release(args, data, data.name, list(OUTPUTS))
    _refuse_overwriting_inputs({**outs, "--ledger": ledger}, args)
    if args.blocks is None:
        print(
            "dpmodels: note: the geography is the set of blocks in --persons (which blocks have persons "
            "depends on the data); give the public block list with --blocks",
            file=sys.stderr,
        )
    executor = int(args.executor) if args.executor.isdigit() else args.executor
    result = release(session, session.epsilon, executor=executor)
    frames = {
        "--out-microdata": result.records(data.schema),
        "--out-histograms": histogram_frame(data.schema, result),
    }
    for flag, frame in frames.items():
        frame.to_csv(outs[flag], index=False)
    _report(result.checks)
    return finish(session, list(outs.values()), ledger)


def _refuse_overwriting_inputs(outputs: dict[str, Path], args) -> None:
    """No output may replace an input file."""
    inputs = {Path(p).resolve(): flag for flag, p in (("--persons", args.persons), ("--blocks", args.blocks)) if p}
    for flag, path in outputs.items():
        if path.resolve() in inputs:
            raise DataValidationError(flag, f"{path} would overwrite the input {inputs[path.resolve()]}")


def _report(checks: dict) -> None:
    """Print the public-constraint checks; a broken hard constraint is a bug, said on stderr."""
    print("checks: " + ", ".join(f"{name} {count}" for name, count in checks.items()))
    broken = {name: checks[name] for name in HARD_CHECKS if checks.get(name)}
    if broken:
        print(f"dpmodels: warning: public constraints broken: {broken}", file=sys.stderr)
