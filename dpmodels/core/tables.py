"""A user's tables, in and out: read by their labels, never by row position.

Every family reads a user's table through :func:`read_table`, which takes a pandas DataFrame
already in memory, a CSV file or a Parquet file (chosen by the suffix) and refuses every problem
naming the file or the field before any work.  Tables whose rows stand for declared labels (the
regions of a hierarchy, the sizes ``1..N``) are put in the declared order by
:func:`align_rows` and :func:`align_sizes`, which refuse missing, extra and duplicate labels
naming them: a table sorted another way (what ``pivot_table`` returns) gives the same answer,
never a silently permuted one.  :func:`write_table` writes CSV or Parquet by the suffix.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from .errors import DataValidationError

__all__ = [
    "read_table",
    "align_rows",
    "align_sizes",
    "write_table",
    "TABLE_SUFFIXES",
    "table_format",
    "source_name",
    "source_stem",
    "region_matrix",
    "region_frame",
]

#: File suffixes a table may have, and the format each means.
TABLE_SUFFIXES = {".csv": "csv", ".parquet": "parquet", ".pq": "parquet"}


def table_format(path, field: str | None = None) -> str:
    """``"csv"`` or ``"parquet"`` by the suffix of ``path``; any other suffix is refused.

    Parameters
    ----------
    path : str or Path
        A table file's name.
    field : str, optional
        The option or parameter named in the error (default: the path).
    """
    suffix = Path(path).suffix.lower()
    if suffix not in TABLE_SUFFIXES:
        raise DataValidationError(
            field or str(path), f"a table file must end in {', '.join(TABLE_SUFFIXES)}, got {suffix or 'no suffix'!r}"
        )
    return TABLE_SUFFIXES[suffix]


def source_name(source, field: str) -> str:
    """How errors call a table: its path, or ``field`` for a table in memory.

    Parameters
    ----------
    source : pandas.DataFrame or str or Path
        The table or its file.
    field : str
        The parameter's name.
    """
    return str(source) if isinstance(source, str | Path) else field


def source_stem(source, default: str) -> str:
    """A label for a table: its file's name without the suffix, or ``default`` for a table in memory.

    Parameters
    ----------
    source : pandas.DataFrame or str or Path
        The table or its file.
    default : str
        The label of a table in memory.
    """
    return Path(source).stem if isinstance(source, str | Path) else default


def read_table(
    source, columns: Iterable[str] = (), *, nonblank: Iterable[str] = (), field: str = "table", **csv_options
) -> pd.DataFrame:
    """A user's table with the ``columns`` and no blank ``nonblank`` value, from memory, CSV or Parquet.

    A CSV is read as UTF-8 text with a header; its columns are text unless ``csv_options`` says
    otherwise (passed to :func:`pandas.read_csv`).  A DataFrame or a Parquet file is read the same
    way: the columns a CSV would read as text become text (a missing value becomes ``""``, as an
    empty CSV cell; a float column of whole numbers is written as integers, ``12`` not ``12.0``),
    the others keep their types, and labels held in the index (``region`` as the
    index, say) count as columns.

    Parameters
    ----------
    source : pandas.DataFrame or str or Path
        The table, or its file (``.csv``, ``.parquet``/``.pq``).
    columns : iterable of str
        Columns the table must have.
    nonblank : iterable of str
        Columns with no blank value.
    field : str
        What an in-memory table is called in errors (a file is called by its path).
    **csv_options
        Options of :func:`pandas.read_csv` (default ``dtype=str, keep_default_na=False``).

    Returns
    -------
    pandas.DataFrame
        A new frame with a fresh ``RangeIndex``; the source is never modified.
    """
    options = {"dtype": str, "keep_default_na": False, "encoding": "utf-8-sig"} | csv_options
    columns = list(columns)
    if isinstance(source, pd.DataFrame):
        name, frame = field, _as_read(_labels_as_columns(source, columns), options)
    elif isinstance(source, str | Path):
        name = str(source)
        frame = _read_csv(source, options) if table_format(source) == "csv" else _read_parquet(source, options, columns)
    else:
        kind = type(source).__name__
        raise DataValidationError(field, f"must be a pandas DataFrame or a .csv/.parquet path, got {kind}")
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise DataValidationError(name, f"missing columns {missing} (has {list(frame.columns)})")
    if frame.empty:
        raise DataValidationError(name, "has a header but no rows")
    for column in nonblank:
        blank = np.flatnonzero(frame[column].astype(str).str.strip().to_numpy() == "")
        if blank.size:
            raise DataValidationError(name, f"column {column!r} is empty on data row {blank[0] + 1}")
    return frame


def _read_csv(path, options: dict) -> pd.DataFrame:
    try:
        return pd.read_csv(path, **options)
    except (FileNotFoundError, IsADirectoryError) as err:
        raise DataValidationError(str(path), "file not found") from err
    except UnicodeDecodeError as err:
        raise DataValidationError(str(path), f"is not UTF-8 text ({err.reason} at byte {err.start})") from err
    except pd.errors.EmptyDataError as err:
        raise DataValidationError(str(path), "is empty (expected a header row and data rows)") from err
    except pd.errors.ParserError as err:
        raise DataValidationError(str(path), f"is not a readable CSV: {err}") from err


def _read_parquet(path, options: dict, columns: Sequence[str] = ()) -> pd.DataFrame:
    """A Parquet file as :func:`read_table` reads a DataFrame: an index named like a wanted column
    (pandas stores ``region`` as the index of ``to_frame()``) is that column."""
    if not Path(path).is_file():
        raise DataValidationError(str(path), "file not found")
    try:
        frame = pd.read_parquet(path)
    except ImportError as err:
        raise DataValidationError(str(path), "reading Parquet needs pyarrow (pip install pyarrow)") from err
    except Exception as err:  # pyarrow's errors have no common public base
        raise DataValidationError(str(path), f"is not a readable Parquet file: {err}") from err
    return _as_read(_labels_as_columns(frame, columns), options)


def _labels_as_columns(frame: pd.DataFrame, columns: Sequence[str]) -> pd.DataFrame:
    """Index levels named like wanted columns become columns (a frame indexed by ``region``)."""
    named = [n for n in frame.index.names if n is not None and n not in frame.columns]
    if named and any(n in columns for n in named):
        return frame.reset_index(level=named)
    return frame


def _as_read(frame: pd.DataFrame, options: dict) -> pd.DataFrame:
    """The frame as :func:`pandas.read_csv` with ``options`` would give it: text columns as text."""
    frame = frame.reset_index(drop=True).copy()
    frame.columns = [str(c) for c in frame.columns]
    dtype = options.get("dtype")
    text = list(frame.columns) if dtype is str else [c for c, t in (dtype or {}).items() if t is str and c in frame]
    blank = not options.get("keep_default_na", True)
    for column in text:
        missing = frame[column].isna()
        values = _integral_floats(frame[column]).astype(object).map(lambda v: v if isinstance(v, str) else str(v))
        frame[column] = values.where(~missing, "" if blank else np.nan)
    return frame


def _integral_floats(column: pd.Series) -> pd.Series:
    """A float column whose values are all whole numbers as integers (a column of integer labels that
    pandas made float because of a missing value, or Parquet stored as double): its text is then
    ``12``, as in a CSV, not ``12.0``, which would name no declared label."""
    if not pd.api.types.is_float_dtype(column):
        return column
    finite = column.dropna()
    if finite.empty or not np.isfinite(finite).all() or (finite % 1 != 0).any():
        return column
    return column.astype("Int64")


def align_rows(table, labels: Sequence, field: str, *, column: str | None = None) -> pd.DataFrame:
    """The rows of ``table`` in the order of the declared ``labels``, matched by label.

    Parameters
    ----------
    table : pandas.DataFrame or pandas.Series
        Rows labelled by the index, or by ``column`` when given (it is then dropped).
    labels : sequence
        The declared labels, in the order wanted (compared as text).
    field : str
        The parameter named in errors.
    column : str, optional
        The column holding the labels (default: the index).

    Returns
    -------
    pandas.DataFrame
        The table re-ordered, indexed by the declared labels.

    Raises
    ------
    DataValidationError
        When a label is missing, not declared, or given twice (each named, a few at most).
    """
    frame = table.to_frame() if isinstance(table, pd.Series) else table
    keys = frame[column] if column is not None else frame.index.to_series()
    if column is not None:
        frame = frame.drop(columns=[column])
    keys = pd.Index(keys.astype(str).to_numpy())
    wanted = pd.Index([str(x) for x in labels])
    twice = keys[keys.duplicated()].unique()
    if len(twice):
        raise DataValidationError(field, f"label(s) given twice: {_some(twice)}")
    extra, missing = keys.difference(wanted, sort=False), wanted.difference(keys, sort=False)
    if len(missing) or len(extra):
        parts = ([f"missing {_some(missing)}"] if len(missing) else []) + (
            [f"not declared {_some(extra)}"] if len(extra) else []
        )
        raise DataValidationError(field, f"its labels differ from the declared ones: {'; '.join(parts)}")
    frame = frame.set_axis(keys, axis=0)
    return frame.loc[wanted]


def align_sizes(frame: pd.DataFrame, field: str, n_sizes: int | None = None) -> pd.DataFrame:
    """The columns of ``frame`` labelled by sizes ``1..N`` (ints or their text), in size order.

    Parameters
    ----------
    frame : pandas.DataFrame
        Columns labelled by sizes, in any order.
    field : str
        The parameter named in errors.
    n_sizes : int, optional
        The declared ``N`` (default: the number of columns).

    Returns
    -------
    pandas.DataFrame
        The columns ``1..N`` in order, labelled by ints.
    """
    sizes = []
    for label in frame.columns:
        text = str(label).strip()
        if not text.isdigit() or int(text) < 1:
            raise DataValidationError(field, f"column {label!r} is not a group size (an integer >= 1)")
        sizes.append(int(text))
    n = len(sizes) if n_sizes is None else n_sizes
    frame = frame.set_axis(sizes, axis=1)
    twice = sorted({s for s in sizes if sizes.count(s) > 1})
    if twice:
        raise DataValidationError(field, f"size column(s) given twice: {twice}")
    missing, extra = sorted(set(range(1, n + 1)) - set(sizes)), sorted(set(sizes) - set(range(1, n + 1)))
    if missing or extra:
        raise DataValidationError(field, f"size columns must be 1..{n}: missing {missing}, not declared {extra}")
    return frame[list(range(1, n + 1))]


def region_matrix(values, names: Sequence[str], levels: Sequence[int], field: str) -> np.ndarray:
    """A (regions x sizes) matrix from an array in declared order, or from a labelled table.

    A DataFrame is matched by its labels: regions by the index (or a ``region`` column), sizes
    by the column labels ``1..N`` in any order; a ``level`` column, as :func:`region_frame`
    writes it, must agree with the declared levels and is then set aside.  An array is taken
    as it is: rows in the declared order.

    Parameters
    ----------
    values : array_like or pandas.DataFrame
        The matrix or the table.
    names : sequence of str
        The declared regions, in the order wanted.
    levels : sequence of int
        Each declared region's level (to check a ``level`` column).
    field : str
        The parameter named in errors.
    """
    if not isinstance(values, pd.DataFrame):
        return np.asarray(values)
    frame = align_rows(values, names, field, column="region" if "region" in values.columns else None)
    if "level" in frame.columns:
        given = pd.to_numeric(frame.pop("level"), errors="coerce").to_numpy()
        wrong = np.flatnonzero(given != np.asarray(levels))
        if wrong.size:
            raise DataValidationError(
                field, f"column 'level' of region {names[wrong[0]]!r} is {given[wrong[0]]}, declared {levels[wrong[0]]}"
            )
    return align_sizes(frame, field).to_numpy()


def region_frame(values: np.ndarray, names: Sequence[str], levels: Sequence[int]) -> pd.DataFrame:
    """A (regions x sizes) matrix as a table: indexed by ``region``, a ``level`` column, sizes ``1..N``.

    Parameters
    ----------
    values : numpy.ndarray
        The matrix, rows in the order of ``names``.
    names : sequence of str
        The regions.
    levels : sequence of int
        Each region's level.
    """
    frame = pd.DataFrame(
        values, index=pd.Index(list(names), name="region"), columns=pd.RangeIndex(1, values.shape[1] + 1, name="size")
    )
    frame.insert(0, "level", np.asarray(levels))
    return frame


def _some(labels, limit: int = 5) -> str:
    shown = [str(x) for x in list(labels)[:limit]]
    more = len(labels) - len(shown)
    return ", ".join(repr(x) for x in shown) + (f" and {more} more" if more > 0 else "")


def write_table(frame: pd.DataFrame, path, *, index: bool = False) -> None:
    """Write ``frame`` as CSV or Parquet, chosen by the suffix of ``path``.

    Parameters
    ----------
    frame : pandas.DataFrame
        The table.
    path : str or Path
        ``.csv``, or ``.parquet``/``.pq`` (needs pyarrow).
    index : bool
        Whether to write the index as columns.
    """
    if table_format(path) == "csv":
        frame.to_csv(path, index=index)
    else:
        frame.to_parquet(path, index=index)
