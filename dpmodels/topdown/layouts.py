"""Person-record layouts of TopDown: value labels, or the Census Bureau's microdata codes (PPMF / MDF).

``labels`` is the project's own layout: ``geocode`` (15 digits) and one column per attribute of
:func:`~dpmodels.topdown.data.pl94_schema` holding its value labels.  ``ppmf`` is the layout of
the 2020 Census Privacy-Protected Microdata File and of the Microdata Detail File it comes from:
numeric codes read as text (leading zeros kept), one column each, other columns ignored.

========================  =====================================================================
``TABBLKST`` (2 digits)   state FIPS; ``TABBLKCOU`` (3) county; ``TABTRACTCE`` (6) tract;
                          ``TABBLKGRPCE`` (1) block group, the first digit of ``TABBLK`` (4),
                          the block.  The geocode is state + county + tract + block.
``RTYPE``, ``GQTYPE``     ``hhgq``: RTYPE 3 (housing unit) with GQTYPE 000 is a household; RTYPE 5
                          (group quarters) with a GQTYPE of :data:`GQTYPE_CODES` is its group,
                          grouped by the first digit as the Census's PL94 recode does (1xx
                          correctional ... 6xx military; 7xx, 8xx, 9xx other noninstitutional)
``QAGE`` (1-3 digits)     ``votingage``: 0-17 under 18, 18-115 18 or over
``CENHISP`` (1)           ``hispanic``: 1 not hispanic, 2 hispanic
``CENRACE`` (2)           ``cenrace``: 01-63, the Census order of the 63 race combinations
                          (:func:`cenrace_codes`, matched to the schema's labels by race names)
========================  =====================================================================

A code that is not digits of its width (or a TABBLKGRPCE that is not the first digit of TABBLK) is
malformed: the file is refused, naming the column and the data row.  A well-formed code outside
the declared domain (CENRACE 64, QAGE 116, RTYPE 4, RTYPE 3 with a GQTYPE other than 000, a cenrace
beyond the declared ``races``) gives no value of the schema, and the person is left out by the
stated rule of :data:`~dpmodels.topdown.data.BOUNDING_RULES`, as in the label layout; the file is
never refused for it.

``ppmf-pl94`` is the layout of the 2020 redistricting (PL 94-171) PPMF and MDF: the same geography,
``RTYPE``, ``GQTYPE_PL`` (1 digit: 0 household with RTYPE 3; 1-7 the group of the PL94 recode with
RTYPE 5), ``VOTING_AGE`` (1 under 18, 2 18 or over), ``CENHISP`` and ``CENRACE``; every code of the
schema's values, so it is read and written without loss.

Codes are text.  A column typed as numbers (a Parquet int column, a DataFrame's int column) kept no
leading zeros; its codes are zero-padded to the column's width (CENRACE 1 is 01), the stated rule
for numeric-typed codes.

The released microdata are written back in the same columns (:func:`write_ppmf`).  A release knows
the categories only, so it writes, as the Census's 2018 End-to-End MDF did for this schema, QAGE 17
for a person under 18 and 18 for one of 18 or over, and the first GQTYPE code of the person's group
(000, 101, 201, 301, 401, 501, 601, 701): category codes, not ages or facility types.
"""

from __future__ import annotations

import itertools
from functools import cache

import numpy as np
import pandas as pd

from dpmodels.core.errors import DataValidationError
from dpmodels.core.tables import read_table, source_name, table_format

from .data import pl94_schema

__all__ = [
    "LAYOUTS",
    "PPMF_COLUMNS",
    "GQTYPE_CODES",
    "WRITTEN_QAGE",
    "CENSUS_RACE_ORDER",
    "cenrace_codes",
    "PL94_COLUMNS",
    "read_ppmf",
    "read_ppmf_pl94",
    "write_ppmf",
    "value_table",
    "values_help",
    "values_markdown",
    "PPMF_NOTE",
    "PL94_NOTE",
]

#: The layouts of person records ``from_csv`` and ``dpmodels release topdown --layout`` read.
LAYOUTS = ("labels", "ppmf", "ppmf-pl94")
#: The geography columns of the PPMF and their widths in digits.
GEOGRAPHY = {"TABBLKST": 2, "TABBLKCOU": 3, "TABTRACTCE": 6, "TABBLKGRPCE": 1, "TABBLK": 4}
#: Every column of the PPMF layout (read and written) and its width in digits (QAGE: 1 to 3).
WIDTHS = {**GEOGRAPHY, "RTYPE": 1, "GQTYPE": 3, "QAGE": (1, 3), "CENHISP": 1, "CENRACE": 2}
PPMF_COLUMNS = tuple(WIDTHS)
#: The redistricting (PL 94-171) layout's columns and widths: GQTYPE_PL and VOTING_AGE for GQTYPE and QAGE.
PL94_WIDTHS = {**GEOGRAPHY, "RTYPE": 1, "GQTYPE_PL": 1, "VOTING_AGE": 1, "CENHISP": 1, "CENRACE": 2}
PL94_COLUMNS = tuple(PL94_WIDTHS)


def _codes(*spans: tuple[int, int]) -> tuple[str, ...]:
    return tuple(f"{code:03d}" for first, last in spans for code in range(first, last + 1))


#: ``hhgq`` value -> its GQTYPE codes (household: RTYPE 3; the others: RTYPE 5), keyed by the names of
#: :data:`~dpmodels.topdown.data.GQ_TYPES`; the groups of the Census's PL94 recode (GQTYPE_PL 0..7).
GQTYPE_CODES = {
    "household": ("000",),
    "correctional": _codes((101, 106)),
    "juvenile": _codes((201, 203)),
    "nursing": _codes((301, 301)),
    "other institutional": _codes((401, 405)),
    "college housing": _codes((501, 502)),
    "military": _codes((601, 602)),
    "other noninstitutional": _codes((701, 706), (801, 802), (900, 904)),
}
HOUSING_UNIT, GROUP_QUARTERS = "3", "5"
#: ``votingage`` value -> the QAGE range it reads, and the QAGE :func:`write_ppmf` writes for it.
QAGE_RANGES = {"under 18": (0, 17), "18 or over": (18, 115)}
WRITTEN_QAGE = {"under 18": "17", "18 or over": "18"}
#: ``votingage`` value -> VOTING_AGE, and ``hhgq`` value -> GQTYPE_PL (the PL94 recode's group digit).
VOTING_AGE_CODES = {"under 18": "1", "18 or over": "2"}
GQTYPE_PL_CODES = {label: str(digit) for digit, label in enumerate(GQTYPE_CODES)}
#: ``hispanic`` value -> CENHISP.
CENHISP_CODES = {"not hispanic": "1", "hispanic": "2"}
#: The six race categories in the Census order of CENRACE (White, Black or African American, American
#: Indian and Alaska Native, Asian, Native Hawaiian and Other Pacific Islander, Some Other Race), each
#: by the name the schema's cenrace labels use.
CENSUS_RACE_ORDER = ("White", "Black", "AIAN", "Asian", "NHPI", "Other")

#: What a PPMF release states in its manifest.
PPMF_NOTE = (
    "persons were read in the Census PPMF layout (TABBLKST, TABBLKCOU, TABTRACTCE, TABBLKGRPCE, TABBLK, RTYPE, "
    "GQTYPE, QAGE, CENHISP, CENRACE): RTYPE 3 with GQTYPE 000 is a household, RTYPE 5 with a GQTYPE of a group "
    "its group; QAGE 0-17 under 18, 18-115 18 or over; CENRACE 01-63 in the Census order; a well-formed code "
    "outside these is a value outside the schema (the bounding rule). The released microdata are written in the "
    "same columns with category codes: QAGE 17 (under 18) or 18 (18 or over) and the first GQTYPE of the group "
    "(000, 101, 201, 301, 401, 501, 601, 701), as the Census's 2018 End-to-End MDF"
)


#: What a release of persons read in the redistricting layout states in its manifest.
PL94_NOTE = (
    "persons were read in the Census 2020 redistricting PPMF layout (TABBLKST, TABBLKCOU, TABTRACTCE, TABBLKGRPCE, "
    "TABBLK, RTYPE, GQTYPE_PL, VOTING_AGE, CENHISP, CENRACE): RTYPE 3 with GQTYPE_PL 0 is a household, RTYPE 5 with "
    "GQTYPE_PL 1-7 its group; VOTING_AGE 1 under 18, 2 18 or over; CENRACE 01-63 in the Census order; codes typed "
    "as numbers are zero-padded to their width; a well-formed code outside these is a value outside the schema (the "
    "bounding rule). The released microdata are written in the same columns"
)


@cache
def cenrace_codes() -> dict[str, str]:
    """CENRACE code (``"01"`` .. ``"63"``) -> the label of :func:`pl94_schema`'s ``cenrace``.

    The Census numbers the 63 nonempty sets of :data:`CENSUS_RACE_ORDER` by size, then in
    lexicographic order of that order (01 White alone ... 07 White and Black ... 63 all six); the
    schema orders its labels otherwise, so each code is matched to the label naming the same races.
    """
    combos = [c for k in range(1, 7) for c in itertools.combinations(CENSUS_RACE_ORDER, k)]
    labels = {frozenset(label.split("+")): label for label in pl94_schema(63).attribute("cenrace").values}
    return {f"{n:02d}": labels[frozenset(races)] for n, races in enumerate(combos, start=1)}


# ---------------------------------------------------------------------- reading
def read_ppmf(source, field: str = "persons") -> pd.DataFrame:
    """Person records in the PPMF layout -> the same records in the label layout.

    Parameters
    ----------
    source : pandas.DataFrame or str or Path
        The records, or a ``.csv`` / ``.parquet`` file (:func:`~dpmodels.core.tables.read_table`);
        the columns of :data:`PPMF_COLUMNS` as text, any others ignored.
    field : str
        What an in-memory table is called in errors.

    Returns
    -------
    pandas.DataFrame
        ``geocode, hhgq, votingage, hispanic, cenrace`` in the order of the rows.  A code outside the
        domain gives a value that no schema has (``"CENRACE 64"``), which the bounding rule leaves out.

    Raises
    ------
    DataValidationError
        A missing column, a blank value, a code that is not digits of its width, or a TABBLKGRPCE
        that is not the first digit of TABBLK, naming the column and the data row.
    """
    frame = _read_codes(source, WIDTHS, field)
    return _labelled(frame, _hhgq(frame["RTYPE"], frame["GQTYPE"]), _votingage(frame["QAGE"]))


def read_ppmf_pl94(source, field: str = "persons") -> pd.DataFrame:
    """Person records in the 2020 redistricting layout (:data:`PL94_COLUMNS`) -> the label layout.

    As :func:`read_ppmf`, with ``GQTYPE_PL`` (0 with RTYPE 3: household; 1-7 with RTYPE 5: the group)
    and ``VOTING_AGE`` (1 under 18, 2 18 or over) in place of GQTYPE and QAGE.

    Parameters
    ----------
    source : pandas.DataFrame or str or Path
        The records, or a ``.csv`` / ``.parquet`` file; other columns are ignored.
    field : str
        What an in-memory table is called in errors.
    """
    frame = _read_codes(source, PL94_WIDTHS, field)
    pairs = {(HOUSING_UNIT if d == "0" else GROUP_QUARTERS, d): label for label, d in GQTYPE_PL_CODES.items()}
    keys = zip(frame["RTYPE"], frame["GQTYPE_PL"], strict=True)
    hhgq = pd.Series([pairs.get(k) for k in keys], index=frame.index, dtype=object)
    hhgq = hhgq.where(hhgq.notna(), "RTYPE " + frame["RTYPE"] + " GQTYPE_PL " + frame["GQTYPE_PL"])
    votingage = _lookup(frame["VOTING_AGE"], {c: v for v, c in VOTING_AGE_CODES.items()}, "VOTING_AGE")
    return _labelled(frame, hhgq, votingage)


def _read_codes(source, widths: dict, field: str) -> pd.DataFrame:
    """The code columns as text of their widths (numeric-typed columns zero-padded), the block group checked."""
    where = source_name(source, field)
    frame = read_table(source, widths, nonblank=widths, field=field)
    for column in _numeric_typed(source, widths):
        if not isinstance(widths[column], tuple):
            frame[column] = frame[column].str.zfill(widths[column])
    for column, width in widths.items():
        _check_width(frame[column], column, width, where)
    bad = np.flatnonzero((frame["TABBLKGRPCE"] != frame["TABBLK"].str[0]).to_numpy())
    if len(bad):
        row = bad[0]
        raise DataValidationError(
            where,
            f"column 'TABBLKGRPCE' on data row {row + 1} is {frame['TABBLKGRPCE'].iloc[row]!r}, but the block group "
            f"is the first digit of TABBLK {frame['TABBLK'].iloc[row]!r}",
        )
    return frame


def _numeric_typed(source, columns) -> list[str]:
    """The ``columns`` a DataFrame or Parquet file types as numbers (a CSV is read as text: none)."""
    if isinstance(source, pd.DataFrame):
        frame = source.reset_index()
        return [c for c in columns if c in frame and frame[c].dtype.kind in "iuf"]
    if table_format(source) != "parquet":
        return []
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = pq.read_schema(source)
    return [c for c in columns if c in schema.names and pa.types.is_integer(schema.field(c).type)]


def _labelled(frame: pd.DataFrame, hhgq: pd.Series, votingage: pd.Series) -> pd.DataFrame:
    geocode = frame["TABBLKST"] + frame["TABBLKCOU"] + frame["TABTRACTCE"] + frame["TABBLK"]
    hispanic = _lookup(frame["CENHISP"], {code: label for label, code in CENHISP_CODES.items()}, "CENHISP")
    cenrace = _lookup(frame["CENRACE"], cenrace_codes(), "CENRACE")
    columns = {"geocode": geocode, "hhgq": hhgq, "votingage": votingage, "hispanic": hispanic, "cenrace": cenrace}
    return pd.DataFrame(columns).astype(str)  # text, as the label layout reads


def _check_width(codes: pd.Series, column: str, width, where: str) -> None:
    low, high = width if isinstance(width, tuple) else (width, width)
    bad = np.flatnonzero(~codes.str.fullmatch(f"[0-9]{{{low},{high}}}").to_numpy(dtype=bool))
    if len(bad):
        digits = f"{low} to {high} digits" if low != high else f"{low} digit{'s' * (low > 1)}"
        raise DataValidationError(
            where, f"column {column!r} on data row {bad[0] + 1} must be {digits}, got {codes.iloc[bad[0]]!r}"
        )


def _lookup(codes: pd.Series, table: dict[str, str], column: str) -> pd.Series:
    """Each code's value, or ``"COLUMN code"`` (no schema's value) for a code outside ``table``."""
    values = codes.map(table)
    return values.where(values.notna(), column + " " + codes)


def _hhgq(rtype: pd.Series, gqtype: pd.Series) -> pd.Series:
    groups = {label: codes for label, codes in GQTYPE_CODES.items() if label != "household"}
    table = {(GROUP_QUARTERS, code): label for label, codes in groups.items() for code in codes}
    table[(HOUSING_UNIT, "000")] = "household"
    values = pd.Series([table.get(pair) for pair in zip(rtype, gqtype, strict=True)], index=rtype.index, dtype=object)
    return values.where(values.notna(), "RTYPE " + rtype + " GQTYPE " + gqtype)


def _votingage(qage: pd.Series) -> pd.Series:
    age = qage.astype(np.int64)
    values = pd.Series(None, index=qage.index, dtype=object)
    for label, (low, high) in QAGE_RANGES.items():
        values[(age >= low) & (age <= high)] = label
    return values.where(values.notna(), "QAGE " + qage)


# ---------------------------------------------------------------------- writing
def write_ppmf(records: pd.DataFrame, layout: str = "ppmf") -> pd.DataFrame:
    """Microdata in the label layout (as :func:`~dpmodels.topdown.data.microdata` gives) -> PPMF columns.

    QAGE is written as 17 for ``under 18`` and 18 for ``18 or over``, GQTYPE as the first code of
    the group (000 for households, RTYPE 3; 101, 201, ... 701 with RTYPE 5): the categories a release
    knows, in the codes of the Census's 2018 End-to-End MDF.  :func:`read_ppmf` reads them back
    as the same values.

    Parameters
    ----------
    records : pandas.DataFrame
        ``geocode`` (15 digits) and the ``hhgq``, ``votingage``, ``hispanic``, ``cenrace`` labels.
    layout : str
        ``"ppmf"`` (:data:`PPMF_COLUMNS`) or ``"ppmf-pl94"`` (:data:`PL94_COLUMNS`: GQTYPE_PL and
        VOTING_AGE, the codes of the categories themselves, read back without loss).

    Returns
    -------
    pandas.DataFrame
        The columns of the layout, as text.
    """
    if layout not in ("ppmf", "ppmf-pl94"):
        raise DataValidationError("layout", f"must be 'ppmf' or 'ppmf-pl94', got {layout!r}")
    frame = read_table(records, ["geocode", *_ATTRIBUTES], nonblank=["geocode"], field="records")
    geocode = frame["geocode"]
    bad = np.flatnonzero(~geocode.str.fullmatch("[0-9]{15}").to_numpy(dtype=bool))
    if len(bad):
        raise DataValidationError("records", f"geocode on row {bad[0] + 1} is not 15 digits: {geocode.iloc[bad[0]]!r}")
    gqtype = _written(frame["hhgq"], {label: codes[0] for label, codes in GQTYPE_CODES.items()}, "hhgq")
    out = {
        "TABBLKST": geocode.str[:2],
        "TABBLKCOU": geocode.str[2:5],
        "TABTRACTCE": geocode.str[5:11],
        "TABBLKGRPCE": geocode.str[11],
        "TABBLK": geocode.str[11:15],
        "RTYPE": gqtype.map(lambda code: HOUSING_UNIT if code == "000" else GROUP_QUARTERS),
        "GQTYPE": gqtype,
        "QAGE": _written(frame["votingage"], WRITTEN_QAGE, "votingage"),
        "CENHISP": _written(frame["hispanic"], CENHISP_CODES, "hispanic"),
        "CENRACE": _written(frame["cenrace"], {label: code for code, label in cenrace_codes().items()}, "cenrace"),
    }
    if layout == "ppmf-pl94":
        out["GQTYPE_PL"] = frame["hhgq"].map(GQTYPE_PL_CODES)
        out["VOTING_AGE"] = frame["votingage"].map(VOTING_AGE_CODES)
    return pd.DataFrame(out, columns=list(PPMF_COLUMNS if layout == "ppmf" else PL94_COLUMNS))


_ATTRIBUTES = ("hhgq", "votingage", "hispanic", "cenrace")


def _written(labels: pd.Series, table: dict[str, str], column: str) -> pd.Series:
    codes = labels.map(table)
    bad = np.flatnonzero(codes.isna().to_numpy())
    if len(bad):
        raise DataValidationError("records", f"{column} on row {bad[0] + 1} has no PPMF code: {labels.iloc[bad[0]]!r}")
    return codes.astype(object)


# ---------------------------------------------------------------------- the table of values
def value_table() -> list[tuple[str, int, str, str]]:
    """``(attribute, position, label, PPMF codes)`` for every value of the full schema, in schema order.

    ``position`` counts from 1 in the attribute's order: ``races=N`` keeps the cenrace values 1..N.
    """
    cenrace = {label: code for code, label in cenrace_codes().items()}
    ppmf = {
        "hhgq": lambda v: (
            (
                f"RTYPE {HOUSING_UNIT}, GQTYPE 000"
                if v == "household"
                else f"RTYPE {GROUP_QUARTERS}, GQTYPE {_spans(GQTYPE_CODES[v])}"
            )
            + f" (ppmf-pl94: GQTYPE_PL {GQTYPE_PL_CODES[v]})"
        ),
        "votingage": lambda v: "QAGE {}-{}".format(*QAGE_RANGES[v]) + f" (ppmf-pl94: VOTING_AGE {VOTING_AGE_CODES[v]})",
        "hispanic": lambda v: f"CENHISP {CENHISP_CODES[v]}",
        "cenrace": lambda v: f"CENRACE {cenrace[v]}",
    }
    return [
        (a.name, k, value, ppmf[a.name](value))
        for a in pl94_schema(63).attributes
        for k, value in enumerate(a.values, start=1)
    ]


def _spans(codes: tuple[str, ...]) -> str:
    """``101, 102, 103`` -> ``101-103`` (runs of consecutive codes)."""
    numbers = [int(c) for c in codes]
    runs, start = [], numbers[0]
    for prev, cur in itertools.pairwise([*numbers, None]):
        if cur is None or cur != prev + 1:
            runs.append(f"{start:03d}" if start == prev else f"{start:03d}-{prev:03d}")
            start = cur
    return ", ".join(runs)


def values_help() -> str:
    """The accepted values of every attribute in both layouts, for ``dpmodels release topdown --help``."""
    lines = [
        "accepted values of --persons, by attribute: the value (--layout labels) and its codes (--layout ppmf).",
        "  ppmf geography: TABBLKST (2 digits), TABBLKCOU (3), TABTRACTCE (6), TABBLK (4), TABBLKGRPCE (1, the",
        "  first digit of TABBLK); codes are text, leading zeros kept. A person with another well-formed value is",
        "  left out (counted nowhere); a malformed value refuses the file. --races N keeps cenrace 1..N.",
        "  ppmf microdata written: the same columns, QAGE 17 (under 18) or 18 (18 or over), GQTYPE 000, 101, ..., 701.",
        "  ppmf-pl94 (the 2020 redistricting PPMF): GQTYPE_PL and VOTING_AGE for GQTYPE and QAGE, read and written",
        "  as they are; codes typed as numbers (Parquet, DataFrame) are zero-padded to their width.",
    ]
    current = None
    for attribute, k, label, codes in value_table():
        if attribute != current:
            lines.append(f"  {attribute}:")
            current = attribute
        lines.append(f"    {k:2d}  {label:34s} {codes}")
    return "\n".join(lines)


def values_markdown() -> str:
    """The table of values of ``docs/families/topdown.md`` ("Input layouts")."""
    rows = ["| attribute | # | value (`labels`) | codes (`ppmf`) |", "| --- | --- | --- | --- |"]
    rows += [f"| `{a}` | {k} | `{label}` | {codes} |" for a, k, label, codes in value_table()]
    return "\n".join(rows)
