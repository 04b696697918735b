"""The constraint-triple convention of TopDown's implied constraints, and its validators.

Constraints are triples ``(coefficients, op, rhs)`` with ``op`` one of ``"<="``, ``">="``,
``"=="``, meaning ``coefficients . x  op  rhs`` (spec 1.3).  Every method of the subpackage
reads and writes them, and validates its integer inputs with :func:`int_array`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from dpmodels.core.errors import DataValidationError

__all__ = ["OPS", "satisfies", "check_op", "int_array", "bool_array"]

#: The comparison operators of a constraint triple.
OPS = ("<=", ">=", "==")


def int_array(value, field: str, shape=None, nonneg: bool = True) -> np.ndarray:
    """``value`` as an int64 array, refused (naming ``field``) unless it holds integers.

    Parameters
    ----------
    value : array_like
        Numbers or booleans; floats must be integral.
    field : str
        The name the error gives for ``value``.
    shape : tuple of int, optional
        The shape ``value`` must have.
    nonneg : bool, default True
        Refuse negative entries.

    Returns
    -------
    numpy.ndarray
        The int64 array.
    """
    arr = np.asarray(value)
    if arr.dtype == bool:
        arr = arr.astype(np.int64)
    if not np.issubdtype(arr.dtype, np.number):
        raise DataValidationError(field, f"must be numeric, got dtype {arr.dtype}")
    if shape is not None and arr.shape != tuple(shape):
        raise DataValidationError(field, f"must have shape {tuple(shape)}, got {arr.shape}")
    if not np.all(np.isfinite(arr)) or not np.array_equal(arr, np.round(arr)):
        raise DataValidationError(field, "must contain integers")
    arr = np.round(arr).astype(np.int64)
    if nonneg and (arr < 0).any():
        raise DataValidationError(field, f"must be non-negative, found {arr.min()}")
    return arr


def bool_array(value, field: str, shape) -> np.ndarray:
    """``value`` as a boolean array of ``shape``, refused (naming ``field``) unless it holds 0/1.

    Parameters
    ----------
    value : array_like
        Booleans or 0/1 numbers.
    field : str
        The name the error gives for ``value``.
    shape : tuple of int
        The shape ``value`` must have.
    """
    arr = np.asarray(value)
    if arr.shape != tuple(shape):
        raise DataValidationError(field, f"must have shape {tuple(shape)}, got {arr.shape}")
    if arr.dtype != bool and not np.isin(arr, (0, 1)).all():
        raise DataValidationError(field, "must be boolean (0/1)")
    return arr.astype(bool)


def check_op(op: str, field: str) -> None:
    """Refuse a comparison operator outside :data:`OPS`, naming ``field``.

    Parameters
    ----------
    op : str
        The operator of a constraint triple.
    field : str
        The name the error gives for the constraint.
    """
    if op not in OPS:
        raise DataValidationError(field, f"op must be one of {OPS}, got {op!r}")


def satisfies(constraints: Sequence[tuple], x, tol: float = 1e-9) -> bool:
    """Whether the vector ``x`` satisfies every ``(coefficients, op, rhs)`` constraint.

    Parameters
    ----------
    constraints : sequence of tuple
        Triples ``(coefficients, op, rhs)``.
    x : array_like
        The point, flattened in the constraints' order.
    tol : float, default 1e-9
        Absolute slack allowed on every row.

    Returns
    -------
    bool
    """
    x = np.asarray(x, dtype=float).ravel()
    for j, (coef, op, rhs) in enumerate(constraints):
        check_op(op, f"constraints[{j}]")
        lhs = float(np.asarray(coef, dtype=float).ravel() @ x)
        if (
            (op == "<=" and lhs > rhs + tol)
            or (op == ">=" and lhs < rhs - tol)
            or (op == "==" and abs(lhs - rhs) > tol)
        ):
            return False
    return True
