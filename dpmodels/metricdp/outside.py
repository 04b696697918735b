"""Where a metric-DP release puts a record outside the public domain: the declared fallback location.

Whether a release happens must not depend on one person, so a record naming no location of the
domain (a label the points file does not list, a cell index outside the grid) is not refused: it
is perturbed as if it were at the *fallback* location, which is computed from public inputs only
(:func:`domain_centre`) or declared by the user.  Its output then has the fallback's law, and
is exactly as private as an in-domain record with respect to the fallback.
"""

from __future__ import annotations

import numpy as np

from dpmodels.core.errors import DataValidationError

from .data import MDPInstance

__all__ = ["domain_centre", "fallback_location", "label_of", "outside_rule"]


def domain_centre(instance: MDPInstance) -> int:
    """The location minimising the largest distance ``d`` to every other location (ties: the lowest index).

    Parameters
    ----------
    instance
        The public domain; only its metric ``d`` is read.
    """
    return int(np.argmin(instance.d_rr.max(axis=1)))


def fallback_location(instance: MDPInstance, outside=None) -> int:
    """The location a record outside the domain is perturbed as if it were at.

    Parameters
    ----------
    instance
        The public domain.
    outside
        ``None`` for :func:`domain_centre` (computed from the public metric only), or a location
        the user declares: an index ``0..N-1`` or, on a domain with labels (a points file), a
        label.  Anything else is refused naming ``outside``: it is a public declaration, not data.
    """
    if outside is None:
        return domain_centre(instance)
    labels = instance.info.get("labels")
    if isinstance(outside, str) and labels is not None and outside in labels:
        return labels.index(outside)
    if isinstance(outside, str) and labels is None and outside.strip().isdigit():
        outside = int(outside)
    if isinstance(outside, int | np.integer) and not isinstance(outside, bool) and 0 <= outside < instance.N:
        return int(outside)
    where = f"a label of the {instance.N} locations" if labels is not None else f"a cell index 0..{instance.N - 1}"
    raise DataValidationError("outside", f"must be a location of the public domain ({where}), got {outside!r}")


def label_of(instance: MDPInstance, location: int) -> str:
    """The name of ``location``: its label on a points file's domain, else its cell index.

    Parameters
    ----------
    instance
        The public domain.
    location
        A location index ``0..N-1``.
    """
    labels = instance.info.get("labels")
    return str(labels[location]) if labels is not None else str(location)


def outside_rule(instance: MDPInstance, fallback: int) -> str:
    """The rule for records outside the domain, in words (for the ledger and the manifest).

    Parameters
    ----------
    instance
        The public domain.
    fallback
        The fallback location's index (:func:`fallback_location`).
    """
    return (
        "a record naming no location of the public domain (an unknown label, a cell index outside "
        f"0..{instance.N - 1}) is perturbed as if it were at the fallback location {label_of(instance, fallback)!r}: "
        "its output has the fallback's law, so it is exactly as private as an in-domain record with respect to "
        "the fallback; how many records this rule touched is not released"
    )
