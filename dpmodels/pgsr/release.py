"""PGSR releases on a user's data: records or counts CSVs -> privately released group-size counts.

:func:`release` measures through a :class:`~dpmodels.core.session.PrivacySession` (secure
randomness, exact discrete Laplace noise charged in epsilon, or with ``noise="discrete-gaussian"``
the exact discrete Gaussian charged in zCDP rho; the budget checked before anything is drawn) and
post-processes the noisy values only, with the public hierarchy, ``N``, ``G`` and ``z_max``, each
value weighed by its level's noise variance (:func:`dpmodels.pgsr.weights.measured_weights`: levels
measured alike give the paper's unweighted objectives; ``level_shares`` or the chain's level-wise
sensitivities make them differ).
A private session refuses data whose ``N`` was read off the data rather than declared, and data
built with ``overflow="error"``: both make the release depend on one group with certainty.
:func:`release_facts` states the release's privacy unit, neighbours, declared facts, invariants
and bounding rules for its manifest, from declared inputs only; the memory a release needs is
estimated from declared sizes in :mod:`dpmodels.pgsr.footprint`.
``dpmodels release pgsr`` (``commands.py``) wraps them for files: the released counts CSV and the
JSON ledger.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pandas as pd

from dpmodels.core.errors import DataValidationError
from dpmodels.core.facts import ReleaseFacts
from dpmodels.core.hierarchy import Hierarchy
from dpmodels.core.noise import as_epsilon
from dpmodels.core.session import PrivacySession

from .bounding import CLAMP, LEAVE_OUT_EMPTY, LEAVE_OUT_REGIONS, overflow_rule, validate_overflow
from .data import GroupSizeData
from .footprint import estimate_release_bytes
from .mechanism import GAUSSIAN_WORDS, NOISES, level_split, measure
from .postprocessing import MECHANISMS, postprocess
from .sensitivity import NEIGHBOURS, level_l2_sensitivity, level_sensitivity, validate_z_max
from .weights import RULE, measured_weights, weighting_record

__all__ = [
    "release",
    "measure_release",
    "release_frame",
    "release_facts",
    "require_declared",
    "estimate_release_bytes",
    "DEFAULT_MECHANISM",
]

DEFAULT_MECHANISM = "M_H^dp"

#: How to declare N, quoted by every refusal of a data-derived N.
HOW_TO_DECLARE_N = (
    "declare N, the largest group size, from public knowledge: GroupSizeData.from_records(..., n_sizes=N), "
    "from_groups(..., n_sizes=N), from_leaf_counts(..., N=N) or dpmodels.instances.pgsr.from_csv(..., N=N) "
    "in Python, --N on the command line (groups larger than N are counted in the size-N bin)"
)


def release(
    session: PrivacySession,
    mechanism: str,
    epsilon,
    *,
    noise: str = "discrete-laplace",
    level_shares=None,
    **options,
):
    """Spend ``epsilon`` of ``session`` on mechanism ``mechanism``; returns its post-processed release.

    Only the measurement runs inside the session; the post-processing sees the noisy values, each
    weighed by its level's variance (``info["weights"]`` of the result says how).
    In a private session the data's ``N`` must have been declared and its
    overflow rule must be ``"top"`` (:func:`require_declared`); both are checked before the
    session is asked for anything.

    Parameters
    ----------
    session
        The session holding the :class:`GroupSizeData` and the budget.
    mechanism
        A name of :data:`dpmodels.pgsr.postprocessing.MECHANISMS`.
    epsilon
        The budget of this release (all of it goes to the measurement, ``epsilon / L`` per level);
        with ``noise="discrete-gaussian"`` the zCDP ``rho`` charged as such (``rho / L`` per level).
    noise
        ``"discrete-laplace"`` (pure DP) or ``"discrete-gaussian"`` (zCDP).
    level_shares
        The budget's split over the levels, one positive share per level, root first (None: even);
        see :func:`measure_release`.
    options
        The post-processing's options (``domains``, ``solver``, ...).
    """
    if mechanism not in MECHANISMS:
        raise DataValidationError("mechanism", f"unknown {mechanism!r}; choose from {list(MECHANISMS)}")
    spec = MECHANISMS[mechanism]
    spec.check_options(options)
    label = f"PGSR {mechanism} ({spec.kind})"
    noisy = measure_release(session, spec.kind, epsilon, label=label, noise=noise, level_shares=level_shares)
    result = postprocess(mechanism, noisy, **options)
    result.info["weights"] = weighting_record(noisy)
    return result


def measure_release(
    session: PrivacySession,
    kind: str,
    epsilon,
    label: str | None = None,
    *,
    noise: str = "discrete-laplace",
    level_shares=None,
):
    """Spend ``epsilon`` of ``session`` on the noisy measurement alone; returns its :class:`NoisyGroupSizes`,
    weighted by its levels' variances (:func:`~dpmodels.pgsr.weights.measured_weights`).

    :func:`release` is this followed by :func:`~dpmodels.pgsr.postprocessing.postprocess`; run
    apart (``dpmodels measure pgsr``, then ``dpmodels postprocess pgsr``) with the same generator,
    the two steps give the same release.

    Parameters
    ----------
    session
        The session holding the :class:`GroupSizeData` and the budget.
    kind
        ``"counts"``, ``"cumulative"`` or ``"chain"``.
    epsilon
        The budget of the measurement (``epsilon / L`` per level), or the zCDP ``rho`` of a discrete
        Gaussian measurement, charged to the session as a rho request (``rho / L`` per level).
    label
        The charge's label (default: ``"PGSR measurement (<kind>)"``).
    noise
        ``"discrete-laplace"`` (pure DP) or ``"discrete-gaussian"`` (zCDP).
    level_shares
        One positive share per level, root first: level ``l`` gets ``budget * share_l / sum(shares)``
        (exact fractions; checked before the session is charged).  None: ``budget / L`` per level.
    """
    if noise not in NOISES:
        raise DataValidationError("noise", f"must be one of {NOISES}, got {noise!r}")
    # Read for its declared facts only (how N and the overflow rule were set, the hierarchy's levels),
    # never its values.
    data = session._data
    require_declared(data, session.private)
    unit = "rho" if noise == "discrete-gaussian" else "epsilon"
    if level_shares is not None:
        level_split(as_epsilon(epsilon, unit), data.hierarchy.n_levels, level_shares, unit)
    label = label or f"PGSR measurement ({kind})"
    if noise == "discrete-gaussian":
        noisy = session.run(label, _measurement(kind, noise, level_shares), rho=epsilon)
    else:
        noisy = session.run(label, _measurement(kind, level_shares=level_shares), epsilon)
    return measured_weights(noisy)


def require_declared(data: GroupSizeData, private: bool) -> None:
    """Refuse, in a private session, data whose public facts came from the data itself.

    Parameters
    ----------
    data
        The data to release.  Its ``N`` is released exactly (the size rows ``1..N``, the ledger's
        cell counts), so it must be declared (``data.N_declared``): an ``N`` equal to the largest
        group in the data tells whether one person's unit is that large, with certainty.  Its
        overflow rule must be ``"top"``: ``"error"`` would have refused a neighbour with a group
        above ``N``, so that the release itself happening reveals that no group is.
    private
        Whether the session is private (:attr:`PrivacySession.private`); a session declared
        ``not_private=True`` is an experiment, which may use a data-derived ``N`` (its ledger says
        NOT private).
    """
    if not private:
        return
    if not isinstance(data, GroupSizeData):
        raise DataValidationError("data", f"a PGSR release needs GroupSizeData, got {type(data).__name__}")
    if not data.N_declared:
        raise DataValidationError(
            "N", f"was read from the data (its largest group), which a release discloses; {HOW_TO_DECLARE_N}"
        )
    if data.overflow != "top":
        raise DataValidationError(
            "overflow",
            "'error' refuses data with a group larger than N, so whether a release happens depends on one group; "
            "build the data with overflow='top' (the default; --overflow top on the command line)",
        )


def _measurement(kind: str, noise: str = "discrete-laplace", level_shares=None):
    if noise == "discrete-gaussian":

        def run_gaussian(data: GroupSizeData, rho, rng):
            return measure(data, None, kind, rng, noise=noise, rho=rho, level_shares=level_shares)

        return run_gaussian

    def run(data: GroupSizeData, epsilon, rng):
        return measure(data, epsilon, kind, rng, level_shares=level_shares)

    return run


def release_facts(
    source: GroupSizeData | Hierarchy,
    mechanism: str = DEFAULT_MECHANISM,
    *,
    N: int | None = None,
    z_max: int | None = None,
    overflow: str | None = None,
    calibration: str = "sound",
    noise: str = "discrete-laplace",
    rho=None,
    level_shares=None,
) -> ReleaseFacts:
    """What a PGSR release states about itself: unit, neighbours, declared facts, invariant G, rules.

    Everything is derived from the declared inputs and the options (the hierarchy's shape, ``N``,
    ``z_max``, the overflow rule, the mechanism); the data's values are never read.

    Parameters
    ----------
    source
        The declared :class:`~dpmodels.core.hierarchy.Hierarchy` (then give ``N``, and ``z_max``
        and ``overflow`` if not the defaults 1 and ``"top"``), or a :class:`GroupSizeData`, whose
        declared facts (hierarchy, ``N`` if declared, ``z_max``, overflow rule) are used; an
        undeclared ``N`` is stated as read from the data, NOT private.
    mechanism
        A name of :data:`dpmodels.pgsr.postprocessing.MECHANISMS`.
    N, z_max, overflow
        The declared facts, with a hierarchy only.
    calibration
        The chain's calibration (``"sound"``, or the paper's ``"paper"``, which costs more than
        the budget and says so).
    noise
        ``"discrete-laplace"`` (pure DP: the L1 sensitivities) or ``"discrete-gaussian"`` (zCDP:
        the squared L2 sensitivities, the split ``rho / L`` and, given ``rho``, each level's exact
        ``sigma^2``).
    rho
        The release's zCDP budget, with the discrete Gaussian.
    level_shares
        The budget's split over the levels (None: even), stated with each level's share.
    """
    hierarchy, declared_n, z_max, overflow = _declared_facts(source, N, z_max, overflow)
    if mechanism not in MECHANISMS:
        raise DataValidationError("mechanism", f"unknown {mechanism!r}; choose from {list(MECHANISMS)}")
    spec = MECHANISMS[mechanism]
    sizes = [int(r) for r in hierarchy.level_sizes()]
    declared = {
        "N": declared_n,
        "z_max": z_max,
        "levels": hierarchy.n_levels,
        "regions_per_level": sizes,
        "overflow": overflow,
        "mechanism": mechanism,
        "measurement": spec.kind,
        "calibration": calibration,
        "sensitivity_per_level": [level_sensitivity(spec.kind, r, z_max) for r in sizes],
        "budget_per_level": "epsilon / L (levels compose sequentially, regions of a level in parallel)",
        "noise": "exact discrete Laplace (double geometric), int64",
    }
    if noise == "discrete-gaussian":
        del declared["sensitivity_per_level"]  # the L1 ones calibrate the Laplace only
        declared.update(_gaussian_facts(spec.kind, sizes, z_max, rho, level_shares))
    elif noise != "discrete-laplace":
        raise DataValidationError("noise", f"must be one of {NOISES}, got {noise!r}")
    if level_shares is not None:
        declared.update(_share_facts(noise, len(sizes), level_shares))
    if declared_n is None:
        del declared["N"]
    return ReleaseFacts(
        privacy_unit="one person: one record (user, unit, region, quantity), adding its quantity to one unit's size",
        neighbours=NEIGHBOURS,
        declared=declared,
        invariants={
            "G": "the number of groups (units of size >= 1 in leaves of the hierarchy), released exactly: the "
            "root's released counts sum to G. Unprotected by design, as in the paper (erratum A1)"
        },
        bounding=(CLAMP, LEAVE_OUT_REGIONS, LEAVE_OUT_EMPTY, overflow_rule(overflow)),
        post_processing=f"{mechanism}: {spec.description}; it reads only the noisy values and the public "
        f"hierarchy, N and G; weights: {RULE}, one variance per level (levels measured alike: unweighted)",
        flavor="zCDP" if noise == "discrete-gaussian" else "pure DP",
        notes=_notes(declared_n, overflow, spec.kind, calibration),
    )


def _share_facts(noise: str, n_levels: int, level_shares) -> dict:
    """The statements of a budget split by declared shares: the shares and each level's fraction."""
    unit = "rho" if noise == "discrete-gaussian" else "epsilon"
    fractions = level_split(Fraction(1), n_levels, level_shares, unit)
    return {
        "level_shares": [str(share) for share in fractions],
        "budget_per_level": f"{unit} x level_shares (exact fractions of the total, root first; levels compose "
        "sequentially, regions of a level in parallel)",
    }


def _gaussian_facts(kind: str, sizes: list[int], z_max: int, rho, level_shares=None) -> dict:
    """The zCDP statements of a discrete Gaussian release: squared L2 sensitivities, the rho split, sigma^2."""
    squared = [level_l2_sensitivity(kind, r, z_max) for r in sizes]
    facts = {
        "l2_sensitivity_squared_per_level": squared,
        "budget_per_level": "rho / L, exact fractions (zCDP: the levels' rhos add, regions of a level in parallel)",
        "noise": f"{GAUSSIAN_WORDS}, int64: sigma^2 per level = "
        + ("Delta_2^2 L / (2 rho)" if level_shares is None else "Delta_2^2 / (2 rho_level)"),
    }
    if rho is not None:
        split = level_split(as_epsilon(rho, "rho"), len(sizes), level_shares, "rho")
        facts["rho_per_level"] = [str(r) for r in split]
        facts["sigma2_per_level"] = [str(Fraction(d) / (2 * r)) for d, r in zip(squared, split, strict=True)]
    return facts


def _declared_facts(source, N, z_max, overflow) -> tuple[Hierarchy, int | None, int, str]:
    if isinstance(source, GroupSizeData):
        if (N, z_max, overflow) != (None, None, None):
            raise DataValidationError(
                "N/z_max/overflow", "come from the data's declaration; pass them with a hierarchy"
            )
        return source.hierarchy, source.N if source.N_declared else None, source.z_max, source.overflow
    if not isinstance(source, Hierarchy):
        raise DataValidationError("source", f"must be a Hierarchy or GroupSizeData, got {type(source).__name__}")
    if N is None or isinstance(N, bool) or not isinstance(N, int | np.integer) or N < 1:
        raise DataValidationError("N", f"must be declared as an integer >= 1 with a hierarchy, got {N!r}")
    z_max = validate_z_max(1 if z_max is None else z_max)
    return source, int(N), z_max, validate_overflow("top" if overflow is None else overflow)


def _notes(declared_n, overflow: str, kind: str, calibration: str) -> tuple[str, ...]:
    notes = [
        "The guarantee covers neighbours that keep G: removing the only record of a unit (or the only member "
        "with a positive quantity) changes G, which is released exactly, and is not covered.",
        "How many records the bounding rules clamped or left out is never released.",
        "N, z_max and the hierarchy are public; so are the noise scales in the ledger.",
    ]
    if declared_n is None:
        notes.append("N was read from the data (its largest group): this output is NOT private.")
    if overflow == "error":
        notes.append("overflow='error' refuses data with a group larger than N: this output is NOT private.")
    if kind == "chain" and calibration == "paper":
        notes.append("The paper's chain calibration L/eps costs eps * z_max * sum |R_l| / L, more than eps.")
    return tuple(notes)


def release_frame(hierarchy, counts: np.ndarray) -> pd.DataFrame:
    """Released counts in long format: ``region, level, size, count`` for every region and size.

    Parameters
    ----------
    hierarchy
        The public hierarchy (rows of ``counts`` in its order).
    counts
        Released counts, regions x sizes.  The region column is categorical (one copy of each name,
        small codes per row), so the frame costs about 20 bytes per cell.
    """
    counts = np.asarray(counts)
    n_regions, n_sizes = counts.shape
    codes = np.repeat(np.arange(n_regions, dtype=np.int32), n_sizes)
    return pd.DataFrame(
        {
            "region": pd.Categorical.from_codes(codes, categories=pd.Index(hierarchy.names, dtype=object)),
            "level": np.repeat(np.asarray(hierarchy.level, dtype=np.int32), n_sizes),
            "size": np.tile(np.arange(1, n_sizes + 1, dtype=np.int64), n_regions),
            "count": counts.ravel(),
        }
    )
