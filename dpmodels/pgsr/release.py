"""PGSR releases on a user's data: records or counts CSVs -> privately released group-size counts.

:func:`release` measures through a :class:`~dpmodels.core.session.PrivacySession` (secure
randomness, exact discrete Laplace noise, the budget checked before anything is drawn) and
post-processes the noisy values only, with the public hierarchy, ``N``, ``G`` and ``z_max``.
``dpmodels release pgsr`` (``commands.py``) wraps it for files: the released counts CSV and the JSON ledger.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from dpmodels.core.errors import DataValidationError
from dpmodels.core.session import PrivacySession

from .data import GroupSizeData
from .mechanism import MECHANISMS, measure, postprocess

__all__ = ["release", "release_frame", "DEFAULT_MECHANISM"]

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
