"""Reading a user's CSV files: every problem refused with the file's name, before any work."""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd

from dpmodels.core.errors import DataValidationError

__all__ = ["read_user_csv"]


def read_user_csv(path, columns: Iterable[str] = (), *, nonblank: Iterable[str] = (), **read_options) -> pd.DataFrame:
    """A readable UTF-8 CSV with a header, at least one row, the ``columns`` and no blank ``nonblank`` value.

    Columns are read as text unless ``read_options`` says otherwise (passed to ``pandas.read_csv``).
    """
    options = {"dtype": str, "keep_default_na": False, "encoding": "utf-8-sig"} | read_options
    try:
        frame = pd.read_csv(path, **options)
    except (FileNotFoundError, IsADirectoryError) as err:
        raise DataValidationError(str(path), "file not found") from err
    except UnicodeDecodeError as err:
        raise DataValidationError(str(path), f"is not UTF-8 text ({err.reason} at byte {err.start})") from err
    except pd.errors.EmptyDataError as err:
        raise DataValidationError(str(path), "is empty (expected a header row and data rows)") from err
    except pd.errors.ParserError as err:
        raise DataValidationError(str(path), f"is not a readable CSV: {err}") from err
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise DataValidationError(str(path), f"missing columns {missing} (has {list(frame.columns)})")
    if frame.empty:
        raise DataValidationError(str(path), "has a header but no rows")
    for column in nonblank:
        blank = frame.index[frame[column].astype(str).str.strip() == ""]
        if len(blank):
            raise DataValidationError(str(path), f"column {column!r} is empty on data row {blank[0] + 1}")
    return frame
