"""The noisy-measurement format: measurement and post-processing are two steps with a file between them.

A *measurement set* is a long, tidy table of noisy values plus the public facts they were measured
under.  ``dpmodels measure <family>`` writes one, ``dpmodels postprocess <family>`` reads one, and
so can any other tool: a value drawn with OpenDP, Tumult Analytics or by hand is welcome, as long
as its row says how it was drawn.

The table (``.csv`` or ``.parquet``, chosen by the suffix), one row per noisy value:

==============  ========================================================================
column          meaning
==============  ========================================================================
``node``        the region or geocode measured (a label of the declared hierarchy)
``query``       what was measured there (PGSR: ``counts``, ``cumulative`` or ``chain``)
``cell``        the cell of the query (PGSR: the group size ``1..N``)
``value``       the noisy value
``mechanism``   how the noise was drawn (one of :data:`MECHANISMS`)
``scale``       the mechanism's parameter (Laplace scale ``b``, Gaussian ``sigma^2``), as text
``variance``    the noise variance, > 0 (post-processing uses it; never the truth)
``budget_unit`` ``epsilon`` or ``rho`` (zCDP)
``budget``      the budget this value's measurement spent, as text (an exact fraction)
==============  ========================================================================

The facts (``<table stem>.facts.json`` beside the table, or any path given): a JSON object with
``format`` (:data:`FORMAT`), ``family``, ``public`` (the declared facts the post-processing may
use: for PGSR the hierarchy as ``region, parent`` pairs, ``N``, ``G``, ``z_max``, ``kind``) and
``source`` (who drew the noise, in words; the manifest of a post-processing repeats it).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd

from .errors import DataValidationError
from .tables import read_table, source_name, write_table

__all__ = [
    "FORMAT",
    "COLUMNS",
    "MECHANISMS",
    "MeasurementSet",
    "read_measurements",
    "write_measurements",
    "facts_path",
]

#: The format's name and version, written in every facts file.
FORMAT = "dpmodels-measurements/1"

#: The table's columns, in order.
COLUMNS = ("node", "query", "cell", "value", "mechanism", "scale", "variance", "budget_unit", "budget")

#: Mechanisms a row may name (what drew the noise).
MECHANISMS = ("discrete-laplace", "laplace", "discrete-gaussian", "gaussian", "none")


@dataclass
class MeasurementSet:
    """A table of noisy values and the public facts they were measured under.

    Parameters
    ----------
    table : pandas.DataFrame
        One row per noisy value, with the columns of :data:`COLUMNS`.
    family : str
        The family whose post-processing reads it (``"pgsr"``, ``"topdown"``).
    public : dict
        The declared public facts (hierarchy, sizes, invariants...).
    source : str
        Who drew the noise, in words.
    """

    table: pd.DataFrame
    family: str
    public: dict
    source: str = "unknown"
    extra: dict = field(default_factory=dict)

    def __post_init__(self):
        self.table = check_table(self.table, "table")

    def facts(self) -> dict:
        """The facts file's JSON object."""
        return {"format": FORMAT, "family": self.family, "source": self.source, "public": self.public} | self.extra

    def to_frame(self) -> pd.DataFrame:
        """The table, indexed by ``node, query, cell``."""
        return self.table.set_index(["node", "query", "cell"])


def facts_path(table_path, given=None) -> Path:
    """The facts file of a table: ``given``, or ``<table stem>.facts.json`` beside it.

    Parameters
    ----------
    table_path : str or Path
        The table's file.
    given : str or Path, optional
        A path chosen by the user.
    """
    path = Path(table_path)
    return Path(given) if given else path.with_name(path.stem + ".facts.json")


def write_measurements(measurements: MeasurementSet, path, facts=None) -> tuple[Path, Path]:
    """Write the table (CSV or Parquet by the suffix) and its facts JSON.

    Parameters
    ----------
    measurements : MeasurementSet
        What to write.
    path : str or Path
        The table's file.
    facts : str or Path, optional
        The facts file (default: beside the table, :func:`facts_path`).

    Returns
    -------
    tuple of Path
        The table's and the facts' paths.
    """
    where = facts_path(path, facts)
    write_table(measurements.table, path)
    where.write_text(json.dumps(measurements.facts(), indent=2) + "\n")
    return Path(path), where


def read_measurements(source, facts=None, family: str | None = None) -> MeasurementSet:
    """Read a measurement set: the table from memory, CSV or Parquet, and its facts.

    Parameters
    ----------
    source : pandas.DataFrame or str or Path
        The table or its file.
    facts : dict or str or Path, optional
        The facts object or its JSON file (default: beside the table file).
    family : str, optional
        The family expected; a set measured for another one is refused.
    """
    if facts is None and not isinstance(source, str | Path):
        raise DataValidationError("facts", "a table in memory needs its facts (a dict or a JSON file)")
    document = facts if isinstance(facts, dict) else _read_facts(facts_path(source, facts))
    for key in ("format", "family", "public"):
        if key not in document:
            raise DataValidationError("facts", f"missing {key!r} (a facts file has format, family, public, source)")
    if document["format"] != FORMAT:
        raise DataValidationError("facts", f"format {document['format']!r} is not {FORMAT!r}")
    if family is not None and document["family"] != family:
        raise DataValidationError("facts", f"measured for family {document['family']!r}, not {family!r}")
    table = read_table(source, COLUMNS, nonblank=("node", "query", "cell", "mechanism"), field="measurements")
    table = check_table(table, source_name(source, "measurements"))
    extra = {k: v for k, v in document.items() if k not in ("format", "family", "public", "source")}
    return MeasurementSet(table, document["family"], document["public"], document.get("source", "unknown"), extra)


def _read_facts(path: Path) -> dict:
    if not path.is_file():
        raise DataValidationError(str(path), "facts file not found (give --facts, or write it beside the table)")
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise DataValidationError(str(path), f"is not a JSON object: {err}") from err
    if not isinstance(document, dict):
        raise DataValidationError(str(path), "is not a JSON object")
    return document


def check_table(table: pd.DataFrame, where: str) -> pd.DataFrame:
    """The table with typed columns; any malformed row is refused naming the column and the row.

    Parameters
    ----------
    table : pandas.DataFrame
        The rows, columns :data:`COLUMNS` (extra columns are kept as they are).
    where : str
        The file or field named in errors.
    """
    missing = [c for c in COLUMNS if c not in table.columns]
    if missing:
        raise DataValidationError(where, f"missing columns {missing} (has {list(table.columns)})")
    out = table.copy()
    for column in ("node", "query", "mechanism", "budget_unit", "cell"):
        out[column] = out[column].astype(str).str.strip()
    for column in ("value", "variance"):
        out[column] = _numbers(out[column], column, where)
    _refuse_rows(np.flatnonzero(out["variance"].to_numpy() <= 0), where, "variance", "must be > 0")
    unknown = ~out["mechanism"].isin(MECHANISMS).to_numpy()
    _refuse_rows(np.flatnonzero(unknown), where, "mechanism", f"is not one of {MECHANISMS}")
    unit = ~out["budget_unit"].isin(("epsilon", "rho")).to_numpy()
    _refuse_rows(np.flatnonzero(unit), where, "budget_unit", "is not epsilon or rho")
    out["budget"] = _fractions(out["budget"].astype(str).str.strip(), "budget", where)
    out["scale"] = _fractions(out["scale"].astype(str).str.strip(), "scale", where)
    out["cell"] = out["cell"].map(lambda c: str(int(c)) if c.isdigit() else c)  # "01" and "1" are one cell
    _check_variances(out, where)
    twice = out.duplicated(["node", "query", "cell"]).to_numpy()
    _refuse_rows(np.flatnonzero(twice), where, "node, query, cell", "measured twice (one row per value)")
    return out.reset_index(drop=True)


def _numbers(column: pd.Series, name: str, where: str) -> pd.Series:
    values = pd.to_numeric(column, errors="coerce").astype(np.float64)
    _refuse_rows(np.flatnonzero(~np.isfinite(values.to_numpy())), where, name, "is not a finite number")
    return values


def _fractions(column: pd.Series, name: str, where: str) -> pd.Series:
    """Each distinct text read once as an exact fraction >= 0 (written back in lowest terms)."""
    exact = {}
    for text in column.unique():
        try:
            frac = Fraction(text)
        except (ValueError, ZeroDivisionError):
            frac = None
        if frac is None or frac < 0:
            row = int(np.flatnonzero((column == text).to_numpy())[0])
            raise DataValidationError(where, f"column {name!r} on data row {row + 1} is not a number >= 0: {text!r}")
        exact[text] = str(frac)
    return column.map(exact)


def _check_variances(table: pd.DataFrame, where: str) -> None:
    """A discrete Laplace or discrete Gaussian row's variance must be its scale's (within 1e-9,
    relative): a scale that disagrees would size the truncated domains for another noise."""
    from .gaussian import discrete_gaussian_variance
    from .noise import double_geometric_variance

    laws = {"discrete-laplace": double_geometric_variance, "discrete-gaussian": discrete_gaussian_variance}
    for (mechanism, scale), rows in table.groupby(["mechanism", "scale"]):
        if mechanism not in laws or Fraction(scale) <= 0:
            continue
        expected = laws[mechanism](Fraction(scale))
        wrong = np.flatnonzero(np.abs(rows["variance"].to_numpy() - expected) > 1e-9 * expected)
        if wrong.size:
            row = int(rows.index[wrong[0]])
            raise DataValidationError(
                where,
                f"column 'variance' on data row {row + 1} is not the {mechanism} variance of scale {scale} "
                f"({expected:.12g})",
            )


def _refuse_rows(rows: np.ndarray, where: str, column: str, problem: str) -> None:
    if rows.size:
        raise DataValidationError(where, f"column {column!r} on data row {rows[0] + 1} {problem}")
