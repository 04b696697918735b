"""A budget database: one privacy budget per declared dataset, charged in one transaction per release.

Every ``dpmodels release`` used to open a fresh session: three runs of ``release pgsr --epsilon 1``
on the same file gave three releases whose ledgers each said "spent 1 of 1".  A
:class:`BudgetDatabase` keeps the budget between runs and between processes:

* it is an SQLite file in WAL mode (the standard library; readers never wait for a writer);
* a dataset is keyed by the **name the user declares** (``budget init --dataset census-2020``), not
  by a file's hash: a corrected data file is the same population, so it draws on the same budget
  (the SHA-256 of every input is recorded with each charge instead);
* :meth:`BudgetDatabase.charge` checks what remains and records the charge in one ``BEGIN
  IMMEDIATE`` transaction, so concurrent processes cannot overspend (SQLite serialises writers);
* a charge is committed **before** any noise is drawn, so a crash after it loses the budget,
  never the record of it; :meth:`complete` and :meth:`fail` later add the outcome (status
  ``released`` with the outputs' hashes, or ``failed``); a charge that stays ``charged`` was
  interrupted;
* charges are append-only (SQLite triggers refuse deleting a charge or editing its cost).

Budgets are exact fractions (stored as text such as ``"1/3"``) in one of three units:

* ``epsilon``: pure DP (with an optional ``delta`` for approximate DP);
* ``rho``: zCDP; a pure ``eps`` request costs ``eps^2/2`` (exact); ``budget show`` also gives the
  ``(eps, delta)`` it implies at a declared delta (Canonne-Kamath-Steinke, :mod:`.zcdp`);
* ``epsilon_per_km``: metric DP (local, per record): requests of that unit only.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import closing, contextmanager
from datetime import UTC, datetime
from fractions import Fraction
from pathlib import Path

from .budget_records import UNITS, BudgetExceededError, BudgetRequest, Charge, DatasetBudget, amount_words
from .errors import DataValidationError, PrivacyParameterError
from .noise import as_epsilon, exact

__all__ = [
    "UNITS",
    "BudgetExceededError",
    "BudgetRequest",
    "Charge",
    "DatasetBudget",
    "BudgetDatabase",
]

SCHEMA_VERSION = 1
_BUSY_SECONDS = 120.0

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS datasets (
    name TEXT PRIMARY KEY, unit TEXT NOT NULL, budget TEXT NOT NULL, delta TEXT NOT NULL,
    created TEXT NOT NULL, note TEXT NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS charges (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    dataset TEXT NOT NULL REFERENCES datasets(name),
    time TEXT NOT NULL, label TEXT NOT NULL, command TEXT NOT NULL,
    cost TEXT NOT NULL, delta TEXT NOT NULL, requested TEXT NOT NULL,
    status TEXT NOT NULL, inputs TEXT NOT NULL, outputs TEXT NOT NULL,
    manifest TEXT NOT NULL DEFAULT '', note TEXT NOT NULL DEFAULT ''
);
CREATE TRIGGER IF NOT EXISTS charges_append_only BEFORE DELETE ON charges
BEGIN SELECT RAISE(ABORT, 'charges are append-only'); END;
CREATE TRIGGER IF NOT EXISTS charges_cost_fixed BEFORE UPDATE OF dataset, cost, delta, requested, time ON charges
BEGIN SELECT RAISE(ABORT, 'a charge''s cost is fixed once recorded'); END;
CREATE TRIGGER IF NOT EXISTS datasets_fixed BEFORE UPDATE ON datasets
BEGIN SELECT RAISE(ABORT, 'a dataset''s budget is fixed once declared'); END;
"""


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


class BudgetDatabase:
    """The budgets of declared datasets in one SQLite file (see the module docstring).

    Parameters
    ----------
    path
        The database file. :meth:`init` creates it; every other method needs it to exist.
    """

    def __init__(self, path):
        self.path = Path(path)

    # ------------------------------------------------------------------ connections
    @contextmanager
    def _connect(self, create: bool = False) -> Iterator[sqlite3.Connection]:
        if not create and not self.path.is_file():
            raise DataValidationError(
                "--budget-db", f"{self.path} does not exist; create it with `dpmodels budget init --db {self.path} ...`"
            )
        if not self.path.parent.is_dir():
            raise DataValidationError("--budget-db", f"the folder {self.path.parent} does not exist")
        try:
            conn = sqlite3.connect(self.path, timeout=_BUSY_SECONDS, isolation_level=None)
        except sqlite3.Error as err:
            raise DataValidationError("--budget-db", f"{self.path}: {err}") from err
        with closing(conn):
            try:
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA foreign_keys=ON")
                conn.execute("PRAGMA synchronous=FULL")
                if create:
                    conn.executescript(_SCHEMA)
                    conn.execute("INSERT OR IGNORE INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
                self._check_schema(conn)
            except sqlite3.DatabaseError as err:
                raise _database_error(self.path, err) from err
            yield conn

    def _check_schema(self, conn) -> None:
        row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        if row is None or int(row[0]) != SCHEMA_VERSION:
            raise DataValidationError(
                "--budget-db", f"{self.path} has schema {row and row[0]}, this dpmodels reads {SCHEMA_VERSION}"
            )

    @contextmanager
    def _transaction(self, conn) -> Iterator[None]:
        conn.execute("BEGIN IMMEDIATE")  # the write lock: check and charge see no other writer
        try:
            yield
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    # ------------------------------------------------------------------ datasets
    def init(self, dataset: str, unit: str, budget, delta=0, note: str = "") -> DatasetBudget:
        """Declare ``dataset`` with a total ``budget`` in ``unit`` (and a ``delta`` for approximate DP).

        Parameters
        ----------
        dataset
            The declared name releases will charge (``--dataset``).
        unit
            ``"epsilon"``, ``"rho"`` or ``"epsilon_per_km"``.
        budget
            The total, exact (``"1"``, ``"0.5"``, ``"1/3"``).
        delta
            The total delta (``epsilon`` budgets only).
        note
            Free text recorded with the dataset.
        """
        name = _dataset_name(dataset)
        if unit not in UNITS:
            raise DataValidationError("unit", f"must be one of {sorted(UNITS)}, got {unit!r}")
        total = as_epsilon(budget, f"--{unit.replace('_', '-')}")
        dlt = exact(delta, "--delta")
        if not 0 <= dlt < 1 or (dlt and unit != "epsilon"):
            raise PrivacyParameterError("--delta", f"must be in [0, 1), and only with --epsilon; got {delta!r}")
        with self._connect(create=True) as conn, self._transaction(conn):
            if conn.execute("SELECT 1 FROM datasets WHERE name = ?", (name,)).fetchone():
                raise DataValidationError("--dataset", f"{name!r} already has a budget in {self.path}")
            conn.execute(
                "INSERT INTO datasets VALUES (?, ?, ?, ?, ?, ?)", (name, unit, str(total), str(dlt), _now(), note)
            )
        return self.dataset(name)

    def datasets(self) -> list[str]:
        """The declared dataset names, in the order they were declared."""
        with self._connect() as conn:
            return [row[0] for row in conn.execute("SELECT name FROM datasets ORDER BY rowid")]

    def dataset(self, name: str) -> DatasetBudget:
        """``name``'s budget and every charge, in order."""
        with self._connect() as conn:
            return self._read(conn, _dataset_name(name))

    def _read(self, conn, name: str) -> DatasetBudget:
        row = conn.execute("SELECT unit, budget, delta, created FROM datasets WHERE name = ?", (name,)).fetchone()
        if row is None:
            known = [r[0] for r in conn.execute("SELECT name FROM datasets ORDER BY rowid")]
            raise DataValidationError(
                "--dataset", f"{name!r} has no budget in {self.path} (declared: {known}); see `dpmodels budget init`"
            )
        unit, budget, delta, created = row
        charges = [_charge(r) for r in conn.execute("SELECT * FROM charges WHERE dataset = ? ORDER BY id", (name,))]
        return DatasetBudget(name, unit, Fraction(budget), Fraction(delta), created, charges)

    # ------------------------------------------------------------------ charges
    def charge(
        self, dataset: str, request: BudgetRequest, label: str, command: str = "", inputs=None, outputs=None
    ) -> Charge:
        """Check ``request`` against what remains of ``dataset`` and record it, in one transaction.

        Raises :class:`BudgetExceededError` (recording nothing) when it does not fit.  The charge
        is committed before this returns: draw noise only afterwards.

        Parameters
        ----------
        dataset
            The declared dataset name.
        request
            What the release asks for.
        label
            What runs (mechanism, options), for ``budget show``.
        command
            The command line, for the record.
        inputs
            Input files: name -> ``{"path", "sha256", "bytes"}``.
        outputs
            Output paths the release will write: name -> path.
        """
        name = _dataset_name(dataset)
        with self._connect() as conn, self._transaction(conn):
            budget = self._read(conn, name)
            cost = request.cost_in(budget.unit)
            if cost > budget.remaining or request.delta > budget.remaining_delta:
                raise BudgetExceededError(
                    "--epsilon" if request.unit != "rho" else "--rho",
                    f"{label!r} asks for {amount_words(cost, budget.unit, request.delta)} but {name!r} has "
                    f"{amount_words(budget.remaining, budget.unit, budget.remaining_delta)} left of "
                    f"{amount_words(budget.budget, budget.unit, budget.delta)} in {self.path}; "
                    "nothing was drawn or written",
                )
            cursor = conn.execute(
                "INSERT INTO charges (dataset, time, label, command, cost, delta, requested, status, inputs, outputs)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, 'charged', ?, ?)",
                (
                    name,
                    _now(),
                    label,
                    command,
                    str(cost),
                    str(request.delta),
                    json.dumps(request.to_dict()),
                    json.dumps(inputs or {}),
                    json.dumps({k: str(v) for k, v in (outputs or {}).items()}),
                ),
            )
            row = conn.execute("SELECT * FROM charges WHERE id = ?", (cursor.lastrowid,)).fetchone()
        return _charge(row)

    def record_excess(self, dataset: str, request: BudgetRequest, label: str, command: str = "") -> int:
        """Record spend beyond what was granted (a mechanism that overspent: a bug, charged anyway,
        even past the budget, so that the database never understates what was spent)."""
        name = _dataset_name(dataset)
        with self._connect() as conn, self._transaction(conn):
            cost = request.cost_in(self._read(conn, name).unit)
            cursor = conn.execute(
                "INSERT INTO charges (dataset, time, label, command, cost, delta, requested, status, inputs, outputs)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, 'withheld', '{}', '{}')",
                (name, _now(), label, command, str(cost), str(request.delta), json.dumps(request.to_dict())),
            )
            return cursor.lastrowid

    def complete(self, charge_id: int, outputs: dict, manifest: str = "") -> None:
        """Record that charge ``charge_id``'s release was written: its outputs (name -> path and
        SHA-256) and manifest."""
        self._finish(charge_id, "released", outputs=json.dumps(outputs), manifest=str(manifest))

    def fail(self, charge_id: int, reason: str) -> None:
        """Record that charge ``charge_id``'s release failed after the charge (the budget stays spent)."""
        self._finish(charge_id, "failed", note=reason[:2000])

    def _finish(self, charge_id: int, status: str, **columns) -> None:
        sets = ", ".join(f"{column} = ?" for column in ["status", *columns])
        with self._connect() as conn, self._transaction(conn):
            conn.execute(f"UPDATE charges SET {sets} WHERE id = ?", (status, *columns.values(), charge_id))


def _database_error(path: Path, err: sqlite3.DatabaseError) -> DataValidationError:
    if "locked" in str(err) or "busy" in str(err):
        return DataValidationError("--budget-db", f"{path} stayed locked by another process for {_BUSY_SECONDS:g} s")
    return DataValidationError("--budget-db", f"{path} is not a dpmodels budget database ({err})")


def _dataset_name(name) -> str:
    text = str(name or "").strip()
    if not text or len(text) > 200 or any(ch in text for ch in "\n\r\t"):
        raise DataValidationError("--dataset", f"must be a declared name of 1-200 characters on one line, got {name!r}")
    return text


def _charge(row) -> Charge:
    cid, dataset, when, label, command, cost, delta, requested, status, inputs, outputs, manifest, note = row
    return Charge(
        cid,
        dataset,
        when,
        label,
        command,
        Fraction(cost),
        Fraction(delta),
        json.loads(requested),
        status,
        json.loads(inputs),
        json.loads(outputs),
        manifest,
        note,
    )
