"""``dpmodels budget init`` and ``dpmodels budget show``: the budget database from the command line.

``init`` declares a dataset's total budget (pure ``--epsilon`` with an optional ``--delta``,
zCDP ``--rho``, or metric DP ``--epsilon-per-km``); ``show`` prints what each dataset spent and
has left, and every charge with its time, command, input hashes, outputs and status (``--json``
for the whole record).  Releases charge it with ``--budget-db FILE --dataset NAME``.
"""

from __future__ import annotations

import argparse
import json

from .budget import UNITS, BudgetDatabase, DatasetBudget
from .budget_records import amount_words
from .commands import Command
from .errors import DataValidationError
from .zcdp import epsilon_of_rho

__all__ = ["INIT", "SHOW"]


def _init_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--db", required=True, metavar="FILE", help="the budget database (created if missing)")
    p.add_argument("--dataset", required=True, help="the declared name releases will charge (--dataset)")
    unit = p.add_mutually_exclusive_group(required=True)
    unit.add_argument("--epsilon", help="total pure-DP budget, e.g. 1, 0.5 or 1/3")
    unit.add_argument("--rho", help="total zCDP budget (pure-DP releases cost eps^2/2 of it)")
    unit.add_argument("--epsilon-per-km", help="total metric-DP budget per km (dpmodels release mdp)")
    p.add_argument("--delta", default="0", help="total delta, with --epsilon (approximate DP)")
    p.add_argument("--note", default="", help="free text kept with the dataset")


def _run_init(args) -> int:
    unit, amount = next((u, getattr(args, u)) for u in UNITS if getattr(args, u) is not None)
    if args.delta not in ("0", None) and unit != "epsilon":
        raise DataValidationError("--delta", "goes with --epsilon")
    budget = BudgetDatabase(args.db).init(args.dataset, unit, amount, args.delta, args.note)
    print(f"dataset {budget.name!r}: {amount_words(budget.budget, budget.unit, budget.delta)} in {args.db}")
    return 0


def _show_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--db", required=True, metavar="FILE", help="the budget database")
    p.add_argument("--dataset", help="one dataset (default: every dataset)")
    p.add_argument("--delta", default="1e-10", help="with a rho budget: the delta at which to state its epsilon")
    p.add_argument("--json", action="store_true", help="print the whole record as JSON")


def _run_show(args) -> int:
    db = BudgetDatabase(args.db)
    names = [args.dataset] if args.dataset else db.datasets()
    budgets = [db.dataset(name) for name in names]
    if args.json:
        print(json.dumps([b.to_dict() for b in budgets], indent=2))
        return 0
    if not budgets:
        print(f"{args.db}: no datasets declared (dpmodels budget init)")
    for budget in budgets:
        _print_budget(budget, args.delta)
    return 0


def _print_budget(budget: DatasetBudget, delta: str) -> None:
    print(
        f"dataset {budget.name!r} (declared {budget.created}): {amount_words(budget.budget, budget.unit, budget.delta)}"
    )
    print(f"  spent     {amount_words(budget.spent, budget.unit, budget.spent_delta)}")
    print(f"  remaining {amount_words(budget.remaining, budget.unit, budget.remaining_delta)}")
    if budget.unit == "rho":
        eps = epsilon_of_rho(budget.spent, delta) if budget.spent else 0
        print(f"  spent so far is ({float(eps):.6g}, {delta})-DP (Canonne-Kamath-Steinke, rounded up)")
    for c in budget.charges:
        print(f"  #{c.id} {c.time} {c.status:8s} {budget.unit} {c.cost} (~{float(c.cost):.6g})  {c.label}")
        if c.command:
            print(f"      command: {c.command}")
        for flag, record in c.inputs.items():
            print(f"      input  {flag} {record.get('path', '')} sha256 {record.get('sha256', '')}")
        for flag, record in c.outputs.items():
            path, digest = (
                (record.get("path", ""), record.get("sha256", "")) if isinstance(record, dict) else (record, "")
            )
            print(f"      output {flag} {path}" + (f" sha256 {digest}" if digest else " (not written)"))
        if c.note:
            print(f"      note: {c.note}")


INIT = Command("declare a dataset's total privacy budget in a budget database", _init_arguments, _run_init)
SHOW = Command("what each dataset spent and has left, and every charge", _show_arguments, _run_show)
