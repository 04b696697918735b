"""What a family states about one release: the privacy unit, the declared public facts, the rules.

A release's manifest (:mod:`dpmodels.core.manifest`) is written for a reviewer who does not read
the code.  Most of it is generic (budget, sampler, versions, hashes); the family-specific part is
a :class:`ReleaseFacts`, built by each family's ``release_facts`` from the *declared* inputs and
the options, never from the records, except for the ``invariants``: quantities a family releases
exactly by design (PGSR's number of groups ``G``, TopDown's invariant totals), listed so that the
manifest says plainly what is not protected.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["ReleaseFacts", "FLAVORS"]

#: The privacy flavours a release can state (the OpenDP deployments registry's ``dp_flavor``).
FLAVORS = ("pure DP", "approximate DP", "zCDP", "metric DP (local)")


@dataclass(frozen=True)
class ReleaseFacts:
    """The family-specific statements of a release's manifest.

    Parameters
    ----------
    privacy_unit
        Whom the guarantee protects, e.g. ``"one person (one record of the records file)"``.
    neighbours
        The neighbour relation the budget refers to, in words.
    declared
        Public facts the user declared (name -> JSON-able value): ``N``, ``z_max``, the number of
        blocks of the geography, a domain's size.  Nothing in it is derived from the records.
    invariants
        Quantities released exactly by design (name -> description): unprotected, and said so.
    bounding
        The contribution-bounding rules applied to the records before measuring (clamping,
        truncation), each a sentence.  How many records a rule touched is never released.
    post_processing
        What happens to the noisy measurements (it reads nothing but them and the public facts).
    flavor
        One of :data:`FLAVORS`.
    notes
        Caveats a reviewer should know: side channels, assumptions of the guarantee.
    """

    privacy_unit: str
    neighbours: str
    declared: dict = field(default_factory=dict)
    invariants: dict = field(default_factory=dict)
    bounding: tuple[str, ...] = ()
    post_processing: str = ""
    flavor: str = "pure DP"
    notes: tuple[str, ...] = ()

    def __post_init__(self):
        if self.flavor not in FLAVORS:
            raise ValueError(f"flavor must be one of {FLAVORS}, got {self.flavor!r}")
        object.__setattr__(self, "bounding", tuple(self.bounding))
        object.__setattr__(self, "notes", tuple(self.notes))

    def to_dict(self) -> dict:
        """The manifest's family part, in the OpenDP deployments registry's field names where they fit."""
        return {
            "privacy_unit": {"unit": self.privacy_unit, "neighbour_relation": self.neighbours},
            "dp_flavor": self.flavor,
            "unprotected_quantities": {
                "invariants": dict(self.invariants),
                "declared_public_facts": dict(self.declared),
            },
            "contribution_bounding": list(self.bounding),
            "post_processing": self.post_processing,
            "notes": list(self.notes),
        }
