"""The public-constraint checks of a TopDown release: every count a hard constraint allows to be
off (it must be 0), read from the sparse released histograms."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from dpmodels.core.hierarchy import Hierarchy

from .child_checks import leaves_breaking_gq
from .data import PublicKnowledge
from .production import production_checks

__all__ = ["check_release"]


def check_release(result, knowledge: PublicKnowledge, edits: bool) -> dict:
    """Count violations of every public constraint on the released histograms (read sparse: the
    release of a large state does not fit in memory as a dense regions x cells array).

    Parameters
    ----------
    result : TopDownResult
        The release (:func:`dpmodels.topdown.driver.topdown`): its geography, histograms and log.
    knowledge : PublicKnowledge
        The declared public facts the release must meet.
    edits : bool
        Whether the edits were imposed (and are counted).
    """
    geo = result.geography
    counts = sp.csr_array(result.node_counts, dtype=np.int64)
    invariant = knowledge.invariant_totals  # the first regions, in hierarchy order
    totals = np.asarray(counts.sum(axis=1)).ravel()
    out = {
        "negative cells": int((counts.data < 0).sum()),
        "invariant totals off": int((totals[: len(invariant)] != invariant).sum()),
        "structural zeros off": int(counts[:, np.asarray(knowledge.structural_zeros, dtype=np.int64)].sum()),
        "inconsistent parents": _inconsistent_parents(counts, geo),
    }
    out["failsafe parents"] = int(result.log.loc[result.log["failsafe"].astype(bool), "node"].nunique())
    out.update(production_checks(counts, knowledge, geo))  # group totals and occupancy caps, when declared
    leaves = counts[geo.leaves]
    if knowledge.gq is not None:
        out["leaves breaking GQ facts"] = leaves_breaking_gq(leaves, knowledge, geo)
    if edits:
        out["edit violations"] = int(sum((~e.holds(leaves)).sum() for e in knowledge.edits))
    return out


def _inconsistent_parents(counts: sp.csr_array, geo: Hierarchy) -> int:
    """How many internal regions differ from the sum of their children in some cell."""
    internal = geo.internal
    kids = np.flatnonzero(np.asarray(geo.parent) >= 0)  # every region but the root, under its parent
    owner = np.searchsorted(internal, np.asarray(geo.parent)[kids])
    ones = np.ones(len(kids), dtype=np.int64)
    children_sum = sp.csr_array((ones, (owner, kids)), shape=(len(internal), geo.n_regions))
    residual = sp.csr_array(counts[internal] - children_sum @ counts)
    residual.eliminate_zeros()
    return int((np.diff(residual.indptr) > 0).sum())
