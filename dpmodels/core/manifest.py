"""The JSON manifest beside every release: what a reviewer reads to sign it, without the code.

Field names follow the OpenDP deployments registry where they fit (``privacy_unit`` with the
neighbour relation, ``privacy_parameters``, ``dp_flavor``, ``unprotected_quantities``,
``post_processing``, ``composition``); the rest records what the Census Bureau's release
certificate records: every option, the budget per query (and per level) as exact fractions, the
sampler and randomness source, dpmodels' version and git commit, the versions of its
dependencies, and the SHA-256 of every input and output.  :func:`read_manifest` reads one back
(checking its schema) and :func:`verify_outputs` recomputes the outputs' hashes.
"""

from __future__ import annotations

import functools
import importlib.metadata
import json
import platform
import subprocess
from datetime import UTC, datetime
from fractions import Fraction
from pathlib import Path

from .errors import DataValidationError
from .facts import ReleaseFacts
from .noise import float_up
from .staging import file_record
from .zcdp import epsilon_of_rho, rho_of_epsilon

__all__ = ["SCHEMA", "SCHEMA_VERSION", "build_manifest", "read_manifest", "verify_outputs", "software"]

SCHEMA = "dpmodels.release-manifest"
SCHEMA_VERSION = 1
#: Dependencies whose versions a manifest records.
DEPENDENCIES = ("numpy", "scipy", "pandas", "pyomo", "highspy", "numba", "randomgen", "networkx")
#: The deltas at which a manifest states the (eps, delta) a zCDP rho implies.
REPORTED_DELTAS = ("1e-10", "1e-6")


@functools.cache
def software() -> dict:
    """dpmodels' version and git commit (when run from a checkout), Python, the platform and the
    versions of :data:`DEPENDENCIES`."""
    deps = {}
    for name in DEPENDENCIES:
        deps[name] = _version(name)
    return {
        "dpmodels": _version("dpmodels"),
        "git_commit": _git_commit(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "dependencies": deps,
    }


def _version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def _git_commit() -> str | None:
    """The checkout's commit (with ``+dirty`` when files differ from it), or None outside a checkout."""
    root = Path(__file__).resolve().parents[2]
    if not (root / ".git").exists():
        return None
    try:
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5)
        dirty = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=5,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if head.returncode != 0:
        return None
    return head.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")


def privacy_parameters(unit: str, amount: Fraction, delta: Fraction, declared_delta: str | None = None) -> dict:
    """The budget of a release in its unit, exactly, with the equivalents a reviewer asks for: a rho's
    epsilon (rounded up) at :data:`REPORTED_DELTAS` and at the ``declared_delta`` of ``--delta``."""
    params = {"unit": unit, unit: str(amount), f"{unit}_float": float_up(amount), "delta": str(delta)}
    if unit == "epsilon" and delta == 0:
        params["rho_implied"] = str(rho_of_epsilon(amount))  # pure eps-DP is eps^2/2-zCDP
    if unit == "rho":
        params["epsilon_at_delta"] = {d: str(epsilon_of_rho(amount, d)) for d in REPORTED_DELTAS}
        if declared_delta is not None:
            eps = epsilon_of_rho(amount, declared_delta)
            params["epsilon_at_delta"][str(declared_delta)] = str(eps)
            params["declared_delta"] = str(declared_delta)
            params["epsilon_at_declared_delta"] = {"exact": str(eps), "float": float_up(eps)}
        params["conversion"] = "Canonne-Kamath-Steinke 2020 (Cor. 13), evaluated in 60 digits and rounded up"
    return params


def build_manifest(
    *,
    family: str,
    dataset: str,
    command: list[str],
    options: dict,
    facts: ReleaseFacts,
    request: dict,
    session: dict,
    sampler: str,
    inputs: dict,
    outputs: dict,
    budget_database: dict | None = None,
    details: dict | None = None,
) -> dict:
    """The manifest of one release (see the module docstring).

    Parameters
    ----------
    family
        The family's command name (``pgsr``, ``topdown``...).
    dataset
        The declared dataset name.
    command
        The command line's arguments.
    options
        Every option of the command, as given or defaulted.
    facts
        The family's :class:`~dpmodels.core.facts.ReleaseFacts`.
    request
        ``{"unit", "amount", "delta"}`` of this release (exact fractions), and optionally
        ``declared_delta``: with a rho, a delta at which to state the epsilon it implies.
    session
        The session's ledger (:meth:`PrivacySession.to_dict`), whose charges hold the budget per
        query and level.
    sampler
        The noise sampler, in words.
    inputs, outputs
        Option -> :func:`~dpmodels.core.staging.file_record` of every input and output (the
        manifest itself excepted).
    budget_database
        Where the budget lives when it persists: path, dataset, charge ids, budget and remaining.
    details
        Family details (mechanism, solver status, checks).
    """
    unit = request["unit"]
    return {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "family": family,
        "dataset": dataset,
        **facts.to_dict(),
        "privacy_parameters": privacy_parameters(
            unit, Fraction(request["amount"]), Fraction(request["delta"]), request.get("declared_delta")
        ),
        "composition": (
            "sequential (basic) with every other release charged to the same dataset; within this release, "
            "as the budget rows say (parallel within a group, sequential across groups)"
        ),
        "budget": {"charges": session.get("charges", []), "held_in": session.get("budget_held_in")},
        "budget_database": budget_database,
        "sampler": sampler,
        "randomness": session.get("randomness"),
        "private": bool(session.get("private")),
        "command": list(command),
        "options": options,
        "software": software(),
        "inputs": inputs,
        "outputs": outputs,
        "details": details or {},
    }


def read_manifest(path) -> dict:
    """A manifest read back, its schema and version checked.

    Parameters
    ----------
    path
        The manifest's JSON file.
    """
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as err:
        raise DataValidationError(str(path), f"is not a readable manifest: {err}") from err
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        raise DataValidationError(str(path), f"is not a {SCHEMA} document")
    if doc.get("schema_version") != SCHEMA_VERSION:
        raise DataValidationError(
            str(path), f"has schema version {doc.get('schema_version')}, expected {SCHEMA_VERSION}"
        )
    return doc


def verify_outputs(path) -> dict[str, str]:
    """Recompute every output's SHA-256 listed in the manifest at ``path``; returns the problems
    (option -> what is wrong), empty when the release is whole and unchanged.  An output is looked
    for at its recorded absolute path, then beside the manifest (a release folder that was moved)."""
    doc = read_manifest(path)
    problems = {}
    for flag, record in doc["outputs"].items():
        target = Path(record["path"])
        if not target.is_file():  # a release folder moved or copied as a whole: look beside the manifest
            target = Path(path).parent / target.name
        if not target.is_file():
            problems[flag] = f"{target} is missing"
        elif file_record(target)["sha256"] != record["sha256"]:
            problems[flag] = f"{target} differs from the released file"
    return problems


def options_of(args) -> dict:
    """The command's options as JSON-able values (private argparse attributes and callables left out)."""
    out = {}
    for key, value in sorted(vars(args).items()):
        if key.startswith("_") or callable(value):
            continue
        out[key] = value if isinstance(value, bool | int | float | str | type(None)) else str(value)
    return out
