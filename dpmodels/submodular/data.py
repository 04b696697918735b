"""The data of the private (k-)submodular family: sets as masks, the two oracle interfaces every
objective implements, and the instances that pair an objective with a matroid (spec 1.1-1.3, A15).

A :class:`SetFunction` is a monotone submodular ``F_D : 2^E -> R_+`` with ``F(empty) = 0`` (A15),
a *declared global* sensitivity ``Delta`` (A10) and an upper bound ``max_value`` (``M_F``); a
:class:`KSubmodularFunction` takes a vector ``s`` in ``{0..k}^E`` instead of a set.  Non-finite
values are refused at every call, and every call is counted in ``calls`` (A14: real oracle calls,
not the paper's "f-evaluations").  Sets are boolean masks over ``E = {0..n-1}`` (``as_mask``
converts index lists).  The objectives themselves, the checks of their declarations and the
multilinear extension are in :mod:`.objectives`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dpmodels.core.errors import DataValidationError, PrivacyParameterError

__all__ = [
    "as_mask",
    "positive_bound",
    "SetFunction",
    "KSubmodularFunction",
    "SubmodularInstance",
    "KSubmodularInstance",
]


def as_mask(S, n: int) -> np.ndarray:
    """A boolean mask of length ``n`` from a mask or an iterable of element indices.

    Parameters
    ----------
    S : array_like
        A boolean mask or element indices.
    n : int
        The size of the ground set.
    """
    if isinstance(S, np.ndarray) and S.dtype == bool:
        if S.shape != (n,):
            raise DataValidationError("S", f"mask of shape {S.shape}, expected ({n},)")
        return S
    idx = np.fromiter((int(e) for e in S), dtype=np.int64)
    if idx.size and (idx.min() < 0 or idx.max() >= n):
        raise DataValidationError("S", f"element indices must be in 0..{n - 1}, got {sorted(set(idx.tolist()))}")
    mask = np.zeros(n, dtype=bool)
    mask[idx] = True
    return mask


def positive_bound(value, field: str) -> float:
    """``value`` as a float, refused (naming ``field``) unless finite and positive.

    Parameters
    ----------
    value : float
        A declared bound (a sensitivity, a value bound).
    field : str
        The name the error gives for ``value``.
    """
    value = float(value)
    if not math.isfinite(value) or value <= 0:
        raise PrivacyParameterError(field, f"must be a finite positive number, got {value!r}")
    return value


class SetFunction:
    """Monotone submodular ``F`` on ``n`` elements with declared sensitivity and value bound.

    Parameters
    ----------
    n : int
        The size of the ground set ``E = {0..n-1}``.
    sensitivity : float
        The declared, data-independent bound ``Delta`` on one record's effect.
    max_value : float
        An upper bound ``M_F`` on ``F``.
    """

    n: int
    sensitivity: float
    max_value: float
    #: Is ``max_value`` a public (data-independent) bound?  Only then may private algorithms use it.
    #: Off by default: each built-in class whose ``max_value`` is public by construction opts in.
    public_max_value: bool = False
    #: Is the number of records (users, customers: the columns the data holds) a declared public
    #: fact?  The built-in classes take it as public (``M_F`` is sized by it), so a loader that counts
    #: the records of a private file sets this False, and a private release refuses the function.
    public_record_count: bool = True

    def __init__(self, n: int, sensitivity: float, max_value: float):
        if int(n) < 1:
            raise DataValidationError("n", f"the ground set must be non-empty, got {n}")
        self.n = int(n)
        self.sensitivity = positive_bound(sensitivity, "sensitivity")
        self.max_value = float(max_value)
        self.calls = 0

    def __call__(self, S) -> float:
        self.calls += 1
        value = float(self._value(as_mask(S, self.n)))
        if not math.isfinite(value):
            raise DataValidationError("F", f"F(S) must be a finite number, got {value!r} (spec 1.1: F maps into R_+)")
        return value

    def _value(self, mask: np.ndarray) -> float:
        raise NotImplementedError

    def marginal(self, S, e: int) -> float:
        """``F(S + e) - F(S)`` (two oracle calls)."""
        mask = as_mask(S, self.n).copy()
        mask[e] = False
        base = self(mask)
        mask[e] = True
        return self(mask) - base


class KSubmodularFunction:
    """Monotone k-submodular ``F : {0..k}^E -> R_+`` with ``F(0) = 0`` and declared sensitivity.

    Parameters
    ----------
    n : int
        The size of the ground set.
    k : int
        The number of types.
    sensitivity : float
        The declared, data-independent bound ``Delta``.
    max_value : float
        An upper bound on ``F``.
    """

    #: Is ``max_value`` a public (data-independent) bound?  Off unless a class opts in.
    public_max_value: bool = False
    #: Is the number of records a declared public fact (see :attr:`SetFunction.public_record_count`)?
    public_record_count: bool = True

    def __init__(self, n: int, k: int, sensitivity: float, max_value: float):
        if int(n) < 1 or int(k) < 1:
            raise DataValidationError("n, k", f"need n >= 1 and k >= 1, got n={n}, k={k}")
        self.n, self.k = int(n), int(k)
        self.sensitivity = positive_bound(sensitivity, "sensitivity")
        self.max_value = float(max_value)
        self.calls = 0

    def __call__(self, s) -> float:
        s = np.asarray(s, dtype=np.int64)
        if s.shape != (self.n,) or (s.size and (s.min() < 0 or s.max() > self.k)):
            raise DataValidationError("s", f"must be a length-{self.n} vector with entries in 0..{self.k}")
        self.calls += 1
        value = float(self._value(s))
        if not math.isfinite(value):
            raise DataValidationError("F", f"F(s) must be a finite number, got {value!r}")
        return value

    def _value(self, s: np.ndarray) -> float:
        raise NotImplementedError


# ----------------------------------------------------------------------------- instances


@dataclass
class SubmodularInstance:
    """A monotone submodular objective, a matroid on the same ground set, and optional neighbour.

    ``labels``: the public name of each element (a user's declared ground set), else ``None``.

    Parameters
    ----------
    function : SetFunction
        The objective.
    matroid : Matroid
        The constraint, on the same ground set.
    name : str, optional
        A label.
    neighbour : SetFunction, optional
        The objective on a neighbouring dataset (privacy tests).
    labels : tuple of str, optional
        The public name of each element.
    """

    function: SetFunction
    matroid: object
    name: str = ""
    neighbour: SetFunction | None = None
    labels: tuple[str, ...] | None = None

    def __post_init__(self):
        if self.matroid.n != self.function.n:
            raise DataValidationError(
                "matroid", f"ground set of {self.matroid.n} elements but the function has {self.function.n}"
            )
        if self.labels is not None and len(self.labels) != self.function.n:
            n = self.function.n
            raise DataValidationError("labels", f"need one label per element ({n}), got {len(self.labels)}")


@dataclass
class KSubmodularInstance:
    """A monotone k-submodular objective with a matroid on supports.

    Parameters
    ----------
    function : KSubmodularFunction
        The objective.
    matroid : Matroid
        The constraint on supports.
    name : str, optional
        A label.
    neighbour : KSubmodularFunction, optional
        The objective on a neighbouring dataset.
    """

    function: KSubmodularFunction
    matroid: object
    name: str = ""
    neighbour: KSubmodularFunction | None = None

    def __post_init__(self):
        if self.matroid.n != self.function.n:
            raise DataValidationError(
                "matroid", f"ground set of {self.matroid.n} elements but the function has {self.function.n}"
            )
