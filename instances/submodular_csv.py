"""The files of ``dpmodels release submodular``: a declared ground set and matroid, private coverage and weights.

Public means declared: the ground set, the matroid, the bound ``max_weight`` (``Delta``) and the
number of users come from the user's declarations, never from the private files.  Data outside a
declared bound is handled by a stated rule, never by refusing the release (whether a release
happens must not depend on one person):

* a weight outside ``[0, max_weight]`` is clamped to it;
* a coverage row naming an element outside the declared ground set is left out;
* a user of the coverage file without a weight row weighs 0 (counts for nothing).

How many rows a rule touched is never reported; the rules are stated in the release's manifest
(:func:`dpmodels.submodular.release.release_facts`).  Malformed input is refused, naming the file,
the column and the row (never quoting a private value): a missing column, a blank key, a weight
that is not a finite number, a user on two rows of the weights file, an element on two rows of
the ground set.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import scipy.sparse as sp

from dpmodels.core.errors import DataValidationError
from dpmodels.core.tables import read_table, source_name, source_stem
from dpmodels.submodular.data import SubmodularInstance
from dpmodels.submodular.matroids import PartitionMatroid, UniformMatroid
from dpmodels.submodular.objectives import WeightedCoverage

__all__ = ["from_csv", "from_frame"]


def from_csv(
    coverage,
    *,
    elements=None,
    partition=None,
    rank: int | None = None,
    capacity: int | None = None,
    weights=None,
    max_weight: float | None = None,
    n_users: int | None = None,
    name: str | None = None,
) -> SubmodularInstance:
    """Weighted coverage on a declared matroid from a user's CSV files (``dpmodels release submodular``).

    Parameters
    ----------
    coverage
        The private data: a CSV ``element,user``, one row per (element, user it covers).  A row
        naming an element outside the declared ground set is left out (a stated rule, see the
        module docstring); a repeated pair is one incidence.
    elements, rank
        The public ground set as a CSV with an ``element`` column, with the uniform matroid's
        ``rank`` (any ``rank`` elements).  Elements are numbered in label order, users too: the
        order of the rows never changes a release.
    partition, capacity
        Or the ground set and its parts as a CSV ``element,part``, at most ``capacity`` per part.
    weights, max_weight
        Optional private weights, a CSV ``user,weight`` with one row per user, and their declared
        public bound ``max_weight`` (the sensitivity ``Delta``).  Weights are clamped to
        ``[0, max_weight]``; a user of ``coverage`` without a row weighs 0; users listed only there
        cover nothing.  Without them every user weighs 1 and ``Delta = 1``.
    n_users
        The declared public number of users.  Under the family's replace-one neighbours it is the
        same in every dataset and sizes the public bound ``M_F`` the private algorithms are run
        by, so a release needs it declared: without it the users named in the files are counted
        and the function is marked ``public_record_count = False`` (an experiment only; a private
        release refuses it).  Files naming more users than declared are refused: replacing one
        user never changes how many users there are, so no dataset of ``n_users`` users (and no
        neighbour of one) names more, and the refusal does not depend on any one person.
    name
        The instance's name (default: from the coverage file's name).
    """
    labels, M = _declared_matroid(elements, partition, rank, capacity)
    index = {label: e for e, label in enumerate(labels)}
    pairs = read_table(coverage, ["element", "user"], nonblank=["element", "user"], field="coverage")
    element, user = pairs["element"].str.strip(), pairs["user"].str.strip()
    users = dict.fromkeys(sorted(set(user)))  # users in label order, whatever elements they name
    w = None
    if weights is not None or max_weight is not None:
        if weights is None or max_weight is None:
            raise DataValidationError("weights", "give the weights file and its declared bound max_weight together")
        w = _user_weights(weights, max_weight)
        users.update(dict.fromkeys(sorted(u for u in w if u not in users)))
    width = _user_count(n_users, len(users))
    known = element.isin(index).to_numpy()  # the rule: rows naming undeclared elements are left out
    code = {u: v for v, u in enumerate(users)}
    rows = element[known].map(index).to_numpy(dtype=np.int64)
    cols = user[known].map(code).to_numpy(dtype=np.int64)
    inc = sp.csc_matrix((np.ones(rows.size), (rows, cols)), shape=(len(labels), width))
    inc.data[:] = 1.0  # a repeated pair is one incidence
    weight_vector = None if w is None else np.array([w.get(u, 0.0) for u in users] + [0.0] * (width - len(users)))
    F = WeightedCoverage(inc, weight_vector, sensitivity=None if w is None else max_weight)
    F.public_record_count = n_users is not None
    return SubmodularInstance(F, M, name or f"coverage:{source_stem(coverage, 'frame')}", labels=tuple(labels))


def _user_count(n_users, named: int) -> int:
    """The declared number of users, or (undeclared: an experiment) the ``named`` users of the files."""
    if n_users is None:
        return max(named, 1)
    width = _positive_count(n_users, "n_users")
    if width < named:  # the count of named users is not quoted: it is computed from the private files
        raise DataValidationError(
            "n_users",
            f"the files name more users than the declared {width}: under replace-one neighbours every dataset "
            f"has exactly the declared number of users (those covering nothing may be left out of the files)",
        )
    return width


def _declared_matroid(elements, partition, rank, capacity) -> tuple[list[str], object]:
    """The public ground set (element labels in label order) and its uniform or partition matroid."""
    if (elements is None) == (partition is None):
        raise DataValidationError("elements", "declare the ground set with exactly one of elements or partition")
    if elements is not None:
        if capacity is not None:
            raise DataValidationError("capacity", "goes with a partition matroid (partition=...), not elements")
        frame = read_table(elements, ["element"], nonblank=["element"], field="elements")
        labels = sorted(_unique_labels(frame, "element", source_name(elements, "elements")))
        r = _positive_count(rank, "rank")
        if r > len(labels):
            raise DataValidationError("rank", f"must be at most the {len(labels)} declared elements, got {r}")
        return labels, UniformMatroid(len(labels), r)
    if rank is not None:
        raise DataValidationError("rank", "goes with a uniform matroid (elements=...); a partition takes capacity")
    frame = read_table(partition, ["element", "part"], nonblank=["element", "part"], field="partition")
    order = np.argsort(
        np.array(_unique_labels(frame, "element", source_name(partition, "partition")), dtype=str), kind="stable"
    )
    frame = frame.iloc[order]
    labels = frame["element"].str.strip().tolist()
    parts = sorted(set(frame["part"].str.strip()))
    part_index = {p: j for j, p in enumerate(parts)}
    cap = _positive_count(capacity, "capacity")
    block = frame["part"].str.strip().map(part_index).to_numpy(dtype=np.int64)
    return labels, PartitionMatroid(block, np.full(len(parts), cap))


def _unique_labels(frame: pd.DataFrame, column: str, path) -> list[str]:
    labels = frame[column].str.strip()
    repeated = np.flatnonzero(labels.duplicated().to_numpy())
    if repeated.size:
        row = int(repeated[0])
        first = int(np.flatnonzero((labels == labels.iloc[row]).to_numpy())[0])
        raise DataValidationError(
            str(path), f"column {column!r}: {labels.iloc[row]!r} on data rows {first + 1} and {row + 1}"
        )
    return labels.tolist()


def _positive_count(value, field: str) -> int:
    if value is None:
        raise DataValidationError(field, "is required")
    if isinstance(value, bool) or int(value) != value or int(value) < 1:
        raise DataValidationError(field, f"must be an integer >= 1, got {value!r}")
    return int(value)


def _user_weights(path, max_weight) -> dict[str, float]:
    """``user -> weight`` from a ``user,weight`` CSV, each weight clamped to ``[0, max_weight]``.

    A weight that is not a finite number is malformed and refused with its row (its text is not
    quoted: it is private); a user on two rows is a key violation, refused."""
    bound = float(max_weight)
    if not np.isfinite(bound) or bound <= 0:
        raise DataValidationError("max_weight", f"must be a finite number > 0, got {max_weight!r}")
    frame = read_table(path, ["user", "weight"], nonblank=["user", "weight"], field="weights")
    names = _unique_labels(frame, "user", source_name(path, "weights"))
    values = pd.to_numeric(frame["weight"].str.strip(), errors="coerce").to_numpy(dtype=np.float64)
    bad = np.flatnonzero(~np.isfinite(values))
    if bad.size:
        raise DataValidationError(
            str(path), f"column 'weight' needs finite numbers; data row {int(bad[0]) + 1} is not one"
        )
    return dict(zip(names, np.clip(values, 0.0, bound).tolist(), strict=True))


def from_frame(coverage, **declared) -> SubmodularInstance:
    """:func:`from_csv` for tables in memory: ``coverage`` and the declared ``elements``,
    ``partition`` or ``weights`` may be pandas DataFrames (or ``.csv``/``.parquet`` paths).

    Parameters
    ----------
    coverage
        The ``element,user`` table, as in :func:`from_csv`.
    **declared
        The other parameters of :func:`from_csv`.
    """
    return from_csv(coverage, **declared)
