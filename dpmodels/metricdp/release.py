"""Metric-DP releases: each user's secret location replaced by one draw of an optimal, audited mechanism.

Metric DP is a *local* mechanism.  From public inputs only (the candidate locations and their
metric ``d``, the prior, ``eps`` per km, the neighbour radius ``eta``) :func:`optimal_mechanism`
solves the perturbation LP (:func:`~dpmodels.metricdp.models.build_full_lp`) with ``mdp_ipm`` to
a certified gap (or with ``highs``, whose bound is not certified), repairs the incumbent to an
exactly eps-mDP matrix (:func:`~dpmodels.metricdp.privacy_audit.repair`) and proves every ratio
(:func:`~dpmodels.metricdp.privacy_audit.require_exact_mdp`).  :func:`release` then replaces each
record by an output drawn exactly from its row (:func:`~dpmodels.metricdp.mechanism.sample_outputs`,
the core's exact proportional sampler) with the generator it is given: the secure one
(:func:`dpmodels.core.randomness.release_rng`) on real data.  The records are read by the draw
only; nothing else computed from them is reported.

**The guarantee is per record, not a session budget**: for any two locations ``x, x'`` and
every output ``o``, ``Pr[o | x] <= exp(eps D(x, x')) Pr[o | x']``, where ``D`` is the shortest
path through neighbouring locations (``d <= eta``): ``D = d`` between neighbours and ``D >= d``
otherwise (on a grid, between cells more than ``eta`` apart, ``D`` can exceed the straight-line
``d``).  That is eps*d-indistinguishability of each record (geo-indistinguishability).  Each
record is perturbed once, independently; records of different users do not compose, a user
with several records would (the command refuses a user on two rows).  The neighbour graph of
the domain must be connected: records in different components would be distinguishable, so
such a domain is refused.

**A record outside the domain** (a label the points file does not list, a cell index outside
the grid) is not refused, since whether a release happens must not depend on one person: it is
perturbed as if it were at the declared *fallback* location (:func:`fallback_location`: the
domain's centre by default, or a location the user names), so its output is exactly as private
as an in-domain record's with respect to the fallback.  How many records the rule touched is
never reported.  A seeded generator is refused unless the caller declares ``not_private=True``.
:func:`release_facts` states all of this from the public inputs for the release's manifest.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from dpmodels.core.accounting import PrivacyLedger
from dpmodels.core.errors import DataValidationError, PrivacyParameterError
from dpmodels.core.facts import ReleaseFacts
from dpmodels.core.randomness import is_secure

from .data import MDPInstance
from .mechanism import SOLVERS, Mechanism, given_mechanism, optimal_mechanism, perturb
from .outside import domain_centre, fallback_location, label_of, outside_rule
from .privacy_audit import audit, require_exact_mdp

__all__ = [
    "GUARANTEE",
    "MDPRelease",
    "domain_centre",
    "fallback_location",
    "release",
    "release_facts",
]

GUARANTEE = (
    "per record (local metric DP), not a session budget: Pr[o | x] <= exp(eps D(x, x')) Pr[o | x'] for every "
    "output o and locations x, x', with D the shortest path through neighbouring locations (d <= eta): "
    "D = d between neighbours, D >= d otherwise"
)


@dataclass(frozen=True, eq=False)
class MDPRelease:
    """The released outputs and the ledger of one metric-DP release.

    ``outputs[i]`` is the output index (``0..K-1``) drawn for record ``i``; ``released[i]`` the
    location (record index of the domain) that output is; ``private`` whether the draws came from
    the secure generator and the output was not declared not private.  ``ledger`` is the core
    :class:`~dpmodels.core.accounting.PrivacyLedger` (one charge: ``eps`` per km, every record in
    one parallel group); :meth:`to_dict` is the JSON ledger written beside the release.

    Parameters
    ----------
    outputs : numpy.ndarray
        The output index drawn for each record.
    released : numpy.ndarray
        The location each output is.
    mechanism : Mechanism
        The perturbation matrix used.
    audit : dict
        Its exact audit (:func:`~dpmodels.metricdp.privacy_audit.audit`).
    ledger : PrivacyLedger
        The release's charge.
    instance : MDPInstance
        The public domain.
    name : str
        The dataset's name.
    private : bool
        Whether the output is private.
    fallback : int
        The fallback location of records outside the domain.
    """

    outputs: np.ndarray
    released: np.ndarray
    mechanism: Mechanism
    audit: dict
    ledger: PrivacyLedger
    instance: MDPInstance
    name: str
    private: bool
    fallback: int = 0

    def to_frame(self, users=None) -> pd.DataFrame:
        """The released locations, one row per record: indexed by ``user`` (when the users are given,
        in record order) or ``record``; ``released`` is the location's label when the domain has
        labels, else its index.

        Parameters
        ----------
        users : sequence of str, optional
            The users, one per record (as :func:`dpmodels.instances.metricdp.records_from_csv` gives them).
        """
        labels = self.instance.info.get("labels")
        released = [labels[i] for i in self.released] if labels else list(self.released)
        index = pd.RangeIndex(len(released), name="record") if users is None else pd.Index(list(users), name="user")
        return pd.DataFrame({"released": released}, index=index)

    def to_dict(self) -> dict:
        inst, graph = self.instance, self.instance.graph
        info = inst.info
        return {
            "dataset": self.name,
            "mechanism": "metric-DP perturbation matrix, optimal for the public prior and loss (local)",
            "guarantee": GUARANTEE,
            "epsilon_per_km": inst.epsilon,
            "eta_km": inst.eta,
            "composition": "none across records: each record is perturbed once, independently (its own guarantee)",
            "domain": {
                "name": inst.name,
                "locations": inst.N,
                "outputs": inst.K,
                "neighbouring pairs": graph.n_pairs // 2,
                "components": int(graph.components.max()) + 1 if inst.N else 0,
                "metric": info.get("metric", "the instance's distances d (km)"),
                "prior": info.get("prior", _prior_words(inst.prior)),
            },
            "outside the domain": outside_rule(inst, self.fallback),
            "optimisation": self.mechanism.as_dict(),
            "audit": self.audit,
            "records released": int(len(self.outputs)),
            "randomness": self.ledger.randomness,
            "private": self.private,
            "charges": self.ledger.to_frame().to_dict(orient="records"),
        }

    def write_ledger(self, path) -> Path:
        path = Path(path)
        path.write_text(json.dumps(self.to_dict(), indent=2, default=str) + "\n")
        return path


# ---------------------------------------------------------------------- the release
def release(
    instance: MDPInstance,
    records,
    rng,
    *,
    not_private: bool = False,
    outside=None,
    mechanism: Mechanism | np.ndarray | None = None,
    users=None,
    solver: str = "mdp_ipm",
    gap: float = 1e-3,
    time_limit: float | None = None,
    name: str = "records",
) -> MDPRelease:
    """Replace each record (a location index of ``instance``) by an output of the optimal mechanism.

    Everything is checked, the mechanism solved and audited, and the ledger charged before the
    first output is drawn.  See the module docstring for the guarantee.

    Parameters
    ----------
    instance
        The public domain (locations, metric, prior, ``eps`` per km, ``eta``).
    records
        One integer location index per user.  An index outside ``0..N-1`` (e.g.
        :data:`dpmodels.instances.metricdp.OUTSIDE`) is perturbed as if it were at the fallback
        location (``outside``), never refused; non-integer records are malformed and refused.
    rng
        A numpy Generator: :func:`dpmodels.core.randomness.release_rng` (secure).  A generator
        that is not secure (a seed) is refused unless ``not_private=True``.
    not_private
        Declares the output an experiment, not private: only then may ``rng`` be seeded, and the
        ledger says NOT private (also with a secure generator, as a declared session does).
    outside
        The fallback location of records outside the domain (:func:`fallback_location`: the
        domain's centre by default, or a declared index or label).
    mechanism
        A precomputed :class:`Mechanism` or matrix (it must pass the exact audit), else
        :func:`optimal_mechanism` with ``solver``, ``gap`` and ``time_limit``.
    users
        The users' names, one per record (checked for length only).
    solver, gap, time_limit
        The perturbation LP's solve (public inputs only).
    name
        The dataset's name in the ledger.
    """
    _check_generator(rng, not_private)
    fallback = fallback_location(instance, outside)
    records = _bound_records(instance, records, users, fallback)
    _check_connected(instance)
    if mechanism is None:
        mech = optimal_mechanism(instance, solver, gap, time_limit)
    elif isinstance(mechanism, Mechanism):
        mech = mechanism
    else:
        mech = given_mechanism(instance, mechanism)
    z = require_exact_mdp(instance, mech.z, "mechanism")
    report = {key: _plain(value) for key, value in audit(instance, z).items()}
    outputs, ledger = perturb(instance, z, records, rng)
    locations = np.asarray(instance.info.get("outputs", np.arange(instance.K)))
    private = is_secure(rng) and not not_private  # a declared experiment is not private, whatever its generator
    return MDPRelease(outputs, locations[outputs], mech, report, ledger, instance, name, private, fallback)


def _check_generator(rng, not_private: bool) -> None:
    """A numpy Generator, secure unless the output is declared not private."""
    if not isinstance(rng, np.random.Generator):
        raise DataValidationError(
            "rng", "must be a numpy Generator from dpmodels.core.randomness.release_rng (secure unless declared)"
        )
    if not is_secure(rng) and not not_private:
        raise PrivacyParameterError(
            "rng",
            "is not the secure generator (a seeded one?): its output would not be private. Use "
            "dpmodels.core.randomness.release_rng(), or declare not_private=True for an experiment "
            "(the ledger then says NOT private)",
        )


def _bound_records(instance: MDPInstance, records, users, fallback: int) -> np.ndarray:
    """Record indices in ``0..N-1``: one outside is replaced by ``fallback`` (the stated rule, no refusal).

    Malformed input is refused: no records, non-integer records, a users list of another length.
    """
    values = np.atleast_1d(np.asarray(records))
    if values.size == 0:
        raise DataValidationError("records", "there are no records to release")
    if values.ndim != 1 or values.dtype.kind not in "iu":
        raise DataValidationError("records", f"must be a vector of integer location indices (0..{instance.N - 1})")
    if users is not None and len(users) != values.size:
        raise DataValidationError("users", f"must name the {values.size} records, got {len(users)} names")
    inside = (values >= 0) & (values < instance.N)
    return np.where(inside, values, fallback).astype(np.intp)


def _check_connected(instance: MDPInstance) -> None:
    components = int(instance.graph.components.max()) + 1
    if components > 1:
        raise DataValidationError(
            "eta",
            f"the public locations fall into {components} groups with no neighbours (d <= eta = {instance.eta:g}) "
            "between them: a record's group would be revealed; raise eta",
        )


# ---------------------------------------------------------------------- the manifest's family part
def release_facts(instance: MDPInstance, *, outside=None, solver: str = "mdp_ipm", gap: float = 1e-3) -> ReleaseFacts:
    """What a metric-DP release states, from the public domain and the options only (no record is read).

    Parameters
    ----------
    instance
        The public domain: locations, metric, prior, ``eps`` per km and ``eta``.
    outside
        The declared fallback location of records outside the domain (None: the domain's centre),
        as :func:`fallback_location` takes it.
    solver, gap
        How the perturbation matrix is solved (public: the matrix depends on no record).
    """
    if solver not in SOLVERS:
        raise DataValidationError("solver", f"must be one of {list(SOLVERS)}, got {solver!r}")
    fallback = fallback_location(instance, outside)
    how = "declared" if outside is not None else "the domain's centre (least largest distance d, lowest index on ties)"
    declared = {
        "domain": instance.name,
        "locations": int(instance.N),
        "outputs": int(instance.K),
        "epsilon_per_km": float(instance.epsilon),
        "eta_km": float(instance.eta),
        "metric": instance.info.get("metric", "the instance's distances d (km)"),
        "prior": instance.info.get("prior", _prior_words(instance.prior)),
        "fallback location": label_of(instance, fallback),
        "fallback rule": how,
        "solver": solver,
        "gap": float(gap) if solver == "mdp_ipm" else "not certified (highs)",
    }
    return ReleaseFacts(
        privacy_unit="one user: the secret location of one row of the records file (each perturbed once, locally)",
        neighbours=GUARANTEE,
        declared=declared,
        invariants={},
        bounding=(
            outside_rule(instance, fallback),
            "a user on two rows is refused (user is the key: two records of one user would compose); so are a "
            "blank record and, on a generated grid, a record that is not an integer (malformed input)",
        ),
        post_processing="each released location is the label of the output drawn for its record; the perturbation "
        "matrix is computed from the public domain only and audited exactly",
        flavor="metric DP (local)",
        notes=(
            "no composition across records: each record is perturbed once, independently, under its own guarantee",
            "the outputs are drawn once per distinct location among the records (one exact draw per record), so the "
            "running time of the draws grows with the number of distinct locations the records name",
        ),
    )


def _prior_words(prior: np.ndarray) -> str:
    return "uniform" if np.all(prior == prior[0]) else "the instance's (public)"


def _plain(value):
    """numpy scalars as Python ones (the JSON ledger)."""
    return value.item() if isinstance(value, np.generic) else value
