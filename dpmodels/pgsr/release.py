"""PGSR releases on a user's data: records or counts CSVs -> privately released group-size counts.

:func:`release` measures through a :class:`~dpmodels.core.session.PrivacySession` (secure
randomness, exact discrete Laplace noise, the budget checked before anything is drawn) and
post-processes the noisy values only, with the public hierarchy, ``N``, ``G`` and ``z_max``.
``dpmodels release pgsr`` wraps it for files: the released counts CSV and the JSON ledger.
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd

from dpmodels.core.errors import DataValidationError
from dpmodels.core.release import add_common_arguments, finish, open_session
from dpmodels.core.session import PrivacySession

from .data import GroupSizeData
from .mechanism import MECHANISMS, measure, postprocess

__all__ = ["release", "release_frame", "add_parser"]

DEFAULT_MECHANISM = "M_H^dp"


def release(session: PrivacySession, mechanism: str, epsilon, **options):
    """Spend ``epsilon`` of ``session`` on mechanism ``mechanism``; returns its post-processed release.

    Only the measurement runs inside the session; the post-processing sees the noisy values.
    """
    if mechanism not in MECHANISMS:
        raise DataValidationError("mechanism", f"unknown {mechanism!r}; choose from {list(MECHANISMS)}")
    spec = MECHANISMS[mechanism]
    spec.check_options(options)
    noisy = session.run(f"PGSR {mechanism} ({spec.kind})", _measurement(spec.kind), epsilon)
    return postprocess(mechanism, noisy, **options)


def _measurement(kind: str):
    def run(data: GroupSizeData, epsilon, rng):
        return measure(data, epsilon, kind, rng)

    return run


def release_frame(hierarchy, counts: np.ndarray) -> pd.DataFrame:
    """Released counts in long format: ``region, level, size, count`` for every region and size."""
    regions, sizes = np.meshgrid(np.arange(counts.shape[0]), np.arange(counts.shape[1]), indexing="ij")
    return pd.DataFrame(
        {
            "region": np.asarray(hierarchy.names)[regions.ravel()],
            "level": np.asarray(hierarchy.level)[regions.ravel()],
            "size": sizes.ravel() + 1,
            "count": np.asarray(counts).ravel(),
        }
    )


# ---------------------------------------------------------------------- command line
def add_parser(release_sub) -> None:
    """Register ``dpmodels release pgsr``."""
    p = release_sub.add_parser(
        "pgsr",
        help="release group-size counts of a region hierarchy (records or counts CSVs)",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("--hierarchy", required=True, help="region,parent CSV (the root's parent empty)")
    data = p.add_mutually_exclusive_group(required=True)
    data.add_argument("--records", help="user,unit,region,quantity CSV (one row per person)")
    data.add_argument("--counts", help="region,size,count CSV of the leaves (or wide: region + one column per size)")
    p.add_argument("--N", type=int, help="largest group size (default: the largest in the data)")
    p.add_argument("--z-max", type=int, default=1, help="declared public bound on one person's quantity")
    p.add_argument("--mechanism", default=DEFAULT_MECHANISM, choices=list(MECHANISMS), help="mechanism")
    add_common_arguments(p)
    p.set_defaults(run=_run)


def _run(args) -> int:
    from dpmodels.instances.pgsr import from_csv

    if args.N is not None and args.N < 1:
        raise DataValidationError("--N", f"must be >= 1, got {args.N}")
    data = from_csv(args.hierarchy, counts=args.counts, records=args.records, N=args.N, z_max=args.z_max)
    session, out, ledger = open_session(args, data, data.name)
    result = release(session, args.mechanism, session.epsilon)
    if not np.isfinite(result.counts).all():
        raise DataValidationError("--mechanism", f"{args.mechanism} returned no solution ({result.status})")
    release_frame(data.hierarchy, result.counts).to_csv(out, index=False)
    return finish(session, [out], ledger)
