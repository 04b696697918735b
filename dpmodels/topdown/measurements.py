"""TopDown measurements as files: :class:`Measurements` to and from the noisy-measurement format.

The format is :mod:`dpmodels.core.measurements`: one row per noisy answer, ``node`` the region,
``query`` the query set's name (``detailed``, or a marginal such as ``hhgq`` or
``votingage x hispanic x cenrace``: the attributes it keeps, joined by `` x ``), ``cell`` the
answer's row in that query (0-based: the marginal's cells in C order of its attributes, as
:func:`~dpmodels.topdown.queries.marginal` builds them).  The public facts are the schema (every
attribute with its values, in order), the geography (``region, parent`` pairs), the query sets
with their budget shares, and the public knowledge (the invariant populations by region, down to
``total_level``).  The TopDown post-processing weighs each query set at each node by its own
variance, so noise drawn by another tool (another scale, a Gaussian) is welcome; the variance must
be one per (node, query set), as in the driver.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pandas as pd

from dpmodels.core.errors import DataValidationError
from dpmodels.core.hierarchy import Hierarchy
from dpmodels.core.measurements import MeasurementSet

from .data import Attribute, Schema
from .knowledge import ChildGroup, PublicKnowledge
from .mechanism import Measurements, NodeMeasurement, Strategy
from .queries import QuerySet, identity, marginal

__all__ = ["measurement_set", "measurements_from_set", "public_facts", "PublicInputs"]

DETAILED = "detailed"


def _attributes_of(query: QuerySet, schema: Schema) -> list[str]:
    """The attributes a query set keeps (by its name), checked against its matrix."""
    attributes = list(schema.names) if query.name == DETAILED else query.name.split(" x ")
    if not set(attributes) <= set(schema.names) or not _same(_matrix(schema, attributes), query.matrix):
        raise DataValidationError(
            "strategy", f"query set {query.name!r} is not a marginal named by its attributes: it cannot be written"
        )
    return attributes


def _matrix(schema: Schema, attributes: list[str]):
    return identity(schema) if list(attributes) == list(schema.names) else marginal(schema, attributes)


def _same(a, b) -> bool:
    return a.shape == b.shape and (a != b).nnz == 0


def public_facts(schema: Schema, geography: Hierarchy, knowledge: PublicKnowledge, strategy: Strategy) -> dict:
    """The declared facts a TopDown post-processing reads, as JSON-ready values.

    Parameters
    ----------
    schema, geography, knowledge, strategy
        The release's public parts (the invariant totals and the grouped child totals are written,
        the groups as ``child_groups``: a list of ``{"regions": [...], "total": n}``; group-quarters
        facts, structural zeros and edits are not in the format yet and are refused).
    """
    if knowledge.gq is not None or len(knowledge.structural_zeros) or knowledge.edits:
        raise DataValidationError("knowledge", "group-quarters facts, zeros and edits are not in the format yet")
    if strategy.per_level:
        raise DataValidationError("strategy", "per-level query shares are not in the format yet")
    parents = [
        [name, None if p < 0 else geography.names[p]] for name, p in zip(geography.names, geography.parent, strict=True)
    ]
    invariant = geography.names[: len(knowledge.invariant_totals)]
    return {
        "schema": [{"name": a.name, "values": list(a.values)} for a in schema.attributes],
        "geography": parents,
        "strategy": [
            {"name": q.name, "attributes": _attributes_of(q, schema), "share": str(s)}
            for q, s in zip(strategy.queries, strategy.shares, strict=True)
        ],
        "total_level": knowledge.total_level,
        "invariant_totals": dict(zip(invariant, (int(t) for t in knowledge.invariant_totals), strict=True)),
    } | _groups_out(knowledge)


def _groups_out(knowledge: PublicKnowledge) -> dict:
    groups = [{"regions": list(g.regions), "total": int(g.total)} for g in knowledge.child_groups]
    return {"child_groups": groups} if groups else {}


def _groups_in(public: dict) -> tuple[ChildGroup, ...]:
    """The facts' ``child_groups`` (absent: none), each a mapping of its ``regions`` and ``total``."""
    declared = public.get("child_groups", [])
    if not isinstance(declared, list):
        raise DataValidationError("facts", f"child_groups must be a list, got {type(declared).__name__}")
    groups = []
    for k, group in enumerate(declared):
        if not isinstance(group, dict) or set(group) != {"regions", "total"}:
            raise DataValidationError("facts", f"child_groups[{k}] must be {{'regions': [...], 'total': n}}")
        if not isinstance(group["regions"], list) or isinstance(group["total"], bool | str):
            raise DataValidationError("facts", f"child_groups[{k}]: regions a list of names, total a count")
        groups.append(ChildGroup(tuple(group["regions"]), group["total"]))
    return tuple(groups)


def measurement_set(measured: Measurements, public: dict, source: str) -> MeasurementSet:
    """The rows of a measurement drawn by :func:`dpmodels.topdown.mechanism.measure`.

    Parameters
    ----------
    measured : Measurements
        The noisy answers, with the ledger's scales.
    public : dict
        Its public facts (:func:`public_facts`).
    source : str
        Who drew the noise, in words.
    """
    names_of = {"geometric": "discrete-laplace", "laplace": "laplace", "discrete-gaussian": "discrete-gaussian"}
    mechanism = names_of[measured.mechanism]
    gaussian = mechanism == "discrete-gaussian"
    level_budgets = measured.info["level_rhos"] if gaussian else measured.level_epsilons
    names = [pair[0] for pair in public["geography"]]
    level_of = _levels(public["geography"])
    shares = dict(zip([q.name for q in measured.strategy.queries], measured.strategy.shares, strict=True))
    scales = {entry.group: entry.scale for entry in measured.ledger.entries}  # exact, recorded before the draws
    parts = []
    for region, answers in enumerate(measured.by_node):
        level = level_of[names[region]]
        for answer in answers:
            spent = level_budgets[level - 1] * shares[answer.query]
            parts.append(
                pd.DataFrame(
                    {
                        "node": names[region],
                        "query": answer.query,
                        "cell": np.arange(len(answer.values)),
                        "value": answer.values,
                        "mechanism": mechanism,
                        "scale": str(scales[f"level {level} / {answer.query}"]),
                        "variance": answer.variance,
                        "budget_unit": "rho" if gaussian else "epsilon",
                        "budget": str(spent),
                    }
                )
            )
    table = pd.concat(parts, ignore_index=True)
    return MeasurementSet(table, "topdown", public, source, {"neighbours": measured.info.get("neighbours", "")})


def _levels(pairs) -> dict[str, int]:
    parent = {name: p for name, p in pairs}
    level = {}
    for name in parent:
        depth, node = 1, name
        while parent[node] is not None:
            node, depth = parent[node], depth + 1
        level[name] = depth
    return level


class PublicInputs:
    """What a TopDown post-processing takes besides the noisy answers: schema, geography, knowledge."""

    def __init__(self, public: dict):
        for key in ("schema", "geography", "strategy", "total_level", "invariant_totals"):
            if key not in public:
                raise DataValidationError("facts", f"public facts need {key!r}")
        self.schema = Schema(tuple(Attribute(a["name"], tuple(a["values"])) for a in public["schema"]))
        self.geography = Hierarchy.from_parent_table([tuple(pair) for pair in public["geography"]])
        queries = [QuerySet(q["name"], _matrix(self.schema, q["attributes"])) for q in public["strategy"]]
        self.strategy = Strategy(tuple(queries), tuple(Fraction(q["share"]) for q in public["strategy"]))
        totals = public["invariant_totals"]
        names = self.geography.names[: len(totals)]
        missing = [n for n in names if n not in totals]
        if missing or len(totals) != len(names):
            raise DataValidationError(
                "facts", f"invariant_totals must name the first {len(names)} regions: {missing[:3]}"
            )
        self.knowledge = PublicKnowledge(
            np.array([totals[n] for n in names]), int(public["total_level"]), child_groups=_groups_in(public)
        )
        self.knowledge.check(self.geography)


def measurements_from_set(found: MeasurementSet) -> tuple[Measurements, PublicInputs]:
    """The driver's :class:`Measurements` of a set, rows matched by node, query and cell labels.

    Parameters
    ----------
    found : MeasurementSet
        A TopDown set (:func:`dpmodels.core.measurements.read_measurements`).
    """
    inputs = PublicInputs(found.public)
    table = found.table.assign(cell=pd.to_numeric(found.table["cell"], errors="coerce"))
    by_key = dict(tuple(table.groupby(["node", "query"], sort=False)))
    geo, queries = inputs.geography, inputs.strategy.queries
    extra = set(by_key) - {(n, q.name) for n in geo.names for q in queries}
    if extra:
        raise DataValidationError("measurements", f"node and query not declared: {sorted(extra)[:3]}")
    by_node = [[_answer(by_key, name, q) for q in queries] for name in geo.names]
    spent = _level_budgets(table, geo)
    pure = set(spent) == {"epsilon"}
    epsilons = spent["epsilon"] if pure else (math.inf,) * geo.n_levels  # no pure-DP epsilon otherwise
    info = {"source": found.source, "budget": {unit: str(sum(levels)) for unit, levels in spent.items()}}
    return Measurements(inputs.strategy, by_node, None, epsilons, "measured elsewhere", info), inputs


def _answer(by_key: dict, node: str, query: QuerySet) -> NodeMeasurement:
    rows = by_key.get((node, query.name))
    n = query.matrix.shape[0]
    if rows is None:
        raise DataValidationError("measurements", f"no answers of {query.name!r} at node {node!r}")
    cells = rows["cell"].to_numpy()
    if len(rows) != n or not np.array_equal(np.sort(cells), np.arange(n)):
        raise DataValidationError("measurements", f"{query.name!r} at node {node!r} needs cells 0..{n - 1} once each")
    variances = rows["variance"].unique()
    if len(variances) != 1:
        raise DataValidationError("measurements", f"{query.name!r} at node {node!r} has {len(variances)} variances")
    values = np.empty(n)
    values[cells.astype(np.int64)] = rows["value"].to_numpy()
    return NodeMeasurement(query.name, values, float(variances[0]))


def _level_budgets(table: pd.DataFrame, geo: Hierarchy) -> dict[str, tuple[Fraction, ...]]:
    """Per budget unit and level, what the set says it spent (query sets add up; nodes of a level are
    disjoint, so a level counts each query set's largest per-row budget)."""
    level = table["node"].map(dict(zip(geo.names, geo.level, strict=True)))
    spent: dict[str, list[Fraction]] = {}
    for (unit, lv, _query), rows in table.groupby([table["budget_unit"], level, table["query"]]):
        levels = spent.setdefault(unit, [Fraction(0)] * geo.n_levels)
        levels[int(lv) - 1] += max(Fraction(b) for b in rows["budget"].unique())
    return {unit: tuple(levels) for unit, levels in spent.items()}
