"""Render the JSON file a bench command wrote (``dpmodels bench <family> --json FILE``) as Markdown.

A bench's JSON is a mapping of parts to either a list of records (one row per run: a table) or a
mapping of scalars (one run: a two-column table), nested parts rendered under their own title; a
bench of one part may write its list of records alone (titled by the file's name).
Nothing is computed here: every number shown is a value of the file, only rounded for reading.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

__all__ = ["format_value", "render_measurements", "render_part"]


def format_value(value) -> str:
    """A JSON value as a table cell: floats to 3 significant digits (integral ones in full).

    Parameters
    ----------
    value : object
        A JSON scalar, or a list of them (joined by " / ").
    """
    if isinstance(value, bool) or value is None:
        return "" if value is None else str(value).lower()
    if isinstance(value, float):
        if not math.isfinite(value):
            return str(value)
        if value.is_integer() and abs(value) < 1e15:
            return f"{int(value):,}"
        return f"{value:,.1f}" if abs(value) >= 1000 else f"{value:.3g}"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, list):
        return " / ".join(format_value(v) for v in value)
    if isinstance(value, dict):
        return ", ".join(f"{k}: {format_value(v)}" for k, v in value.items())
    return _text(str(value))


def _text(text: str, limit: int = 200) -> str:
    """A string as one cell: its last non-empty line (an error's message), at most ``limit`` long."""
    lines = [line.strip() for line in text.splitlines() if line.strip()] or [""]
    line = lines[-1] if len(lines) > 1 else lines[0]
    line = line if len(line) <= limit else line[: limit - 3] + "..."
    return line.replace("|", "\\|")


def _is_records(value) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, dict) for v in value)


def _row(cells) -> str:
    return "| " + " | ".join(cells) + " |"


def _records_table(records: list[dict]) -> list[str]:
    columns = list(dict.fromkeys(key for record in records for key in record))
    lines = [_row(_text(c) for c in columns), _row(["---"] * len(columns))]
    lines += [_row(format_value(record.get(c)) for c in columns) for record in records]
    return lines


def render_part(title: str, value, level: int = 3) -> str:
    """One part of a bench's JSON as a Markdown section: a heading and its table(s).

    Parameters
    ----------
    title : str
        The part's name (its key in the file).
    value : list or dict or scalar
        Its content.
    level : int
        Markdown heading level of the title.
    """
    lines = [f"{'#' * level} {title}", ""]
    if _is_records(value):
        return "\n".join(lines + _records_table(value)) + "\n"
    if not isinstance(value, dict):
        return "\n".join(lines + [format_value(value)]) + "\n"
    nested = {k: v for k, v in value.items() if _is_records(v) or isinstance(v, dict)}
    scalars = {k: v for k, v in value.items() if k not in nested}
    if scalars:
        lines += [_row(["quantity", "value"]), _row(["---", "---"])]
        lines += [_row([_text(str(k)), format_value(v)]) for k, v in scalars.items()]
        lines.append("")
    parts = [render_part(f"{title}: {k}", v, min(level + 1, 6)) for k, v in nested.items()]
    return "\n".join(lines) + "\n" + "\n".join(parts)


def render_measurements(path: Path, level: int = 3) -> str:
    """Every part of the JSON file ``path`` as Markdown tables, in the file's order.

    Parameters
    ----------
    path : Path
        A file written by a bench command's ``--json``.
    level : int
        Markdown heading level of each part.

    Raises
    ------
    FileNotFoundError
        No such file (the page names one that no command wrote).
    ValueError
        The file is neither a JSON object of parts nor a list of records.
    """
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    if _is_records(data):  # a bench of one part writes its records alone
        data = {Path(path).stem: data}
    if not isinstance(data, dict):
        raise ValueError(f"{path}: a bench's JSON is an object of parts or a list of records, got {data!r:.60}")
    return "\n".join(render_part(title, value, level) for title, value in data.items())
