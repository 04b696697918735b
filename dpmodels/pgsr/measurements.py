"""PGSR measurements as files: :class:`NoisyGroupSizes` to and from the noisy-measurement format.

The format is :mod:`dpmodels.core.measurements`: one row per (region, size) with its noisy value,
the mechanism that drew it and its variance, plus the public facts (the hierarchy, ``N``, ``G``,
``z_max`` and the measured ``kind``).  :func:`measurement_set` writes what :func:`measure` drew;
:func:`noisy_from_measurements` reads any set, also one whose noise another tool drew (OpenDP's
Laplace, a Gaussian), aligning the rows by their labels: the post-processing then sees the noisy
values and the declared facts only.

Every value weighs by its own row's variance: the post-processings fit ``sum w (x - noisy)^2`` with
``w = 1 / variance`` (relative to the smallest, :mod:`dpmodels.pgsr.weights`), and a set whose rows
all state one variance gives no weights, the paper's objectives exactly.  Each level's noise sets its
truncated domains (:mod:`dpmodels.pgsr.domains`) through a noise scale, the widest of its rows': the
recorded scale of a discrete Laplace, the domain scale of a discrete Gaussian's recorded ``sigma^2``
(:func:`~dpmodels.pgsr.domains.gaussian_domain_scale`), else the Laplace scale of the same variance,
``sqrt(variance / 2)``.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pandas as pd

from dpmodels.core.errors import DataValidationError
from dpmodels.core.gaussian import discrete_gaussian_variance
from dpmodels.core.hierarchy import Hierarchy
from dpmodels.core.measurements import MeasurementSet
from dpmodels.core.noise import double_geometric_variance
from dpmodels.core.tables import region_matrix

from .data import NoisyGroupSizes
from .domains import gaussian_domain_scale
from .sensitivity import NEIGHBOURS, level_sensitivity
from .weights import RULE, inverse_variance_weights

__all__ = ["measurement_set", "measurement_facts", "noisy_from_measurements"]


def measurement_facts(hierarchy: Hierarchy, N: int, G: int, kind: str = "counts", z_max: int = 1) -> dict:
    """The public facts of a PGSR measurement set, for a set drawn by another tool.

    Parameters
    ----------
    hierarchy : Hierarchy
        The declared hierarchy.
    N : int
        The declared largest group size (cells ``1..N``).
    G : int
        The public number of groups.
    kind : str
        What was measured: ``"counts"``, ``"cumulative"`` or ``"chain"``.
    z_max : int
        The declared bound on one person's quantity.
    """
    pairs = [
        [name, None if p < 0 else hierarchy.names[p]] for name, p in zip(hierarchy.names, hierarchy.parent, strict=True)
    ]
    return {"hierarchy": pairs, "N": int(N), "G": int(G), "kind": kind, "z_max": int(z_max)}


def measurement_set(noisy: NoisyGroupSizes, source: str) -> MeasurementSet:
    """The rows of a measurement drawn by :func:`dpmodels.pgsr.mechanism.measure` (discrete Laplace, or the
    discrete Gaussian under zCDP).

    Parameters
    ----------
    noisy : NoisyGroupSizes
        The noisy values with their level scales.
    source : str
        Who drew the noise, in words (the session's randomness).
    """
    if noisy.level_scales is None:
        raise DataValidationError("noisy", "has no noise scales: not a measurement of dpmodels.pgsr.measure")
    h, z_max = noisy.hierarchy, int(noisy.info.get("z_max", 1))
    gaussian = noisy.info.get("noise") == "discrete-gaussian"
    sizes = h.level_sizes()
    per_row = []
    for region in range(h.n_regions):
        level = int(h.level[region])
        per_row.append(
            _gaussian_row(noisy, level) if gaussian else _laplace_row(noisy, level, int(sizes[level - 1]), z_max)
        )
    scale, variance, budget = (np.repeat(np.array(col, dtype=object), noisy.N) for col in zip(*per_row, strict=True))
    table = pd.DataFrame(
        {
            "node": np.repeat(np.array(h.names, dtype=object), noisy.N),
            "query": noisy.kind,
            "cell": np.tile(np.arange(1, noisy.N + 1), h.n_regions),
            "value": noisy.values.ravel(),
            "mechanism": "discrete-gaussian" if gaussian else "discrete-laplace",
            "scale": scale,
            "variance": variance.astype(np.float64),
            "budget_unit": "rho" if gaussian else "epsilon",
            "budget": budget,
        }
    )
    public = measurement_facts(h, noisy.N, noisy.G, noisy.kind, z_max)
    extra = {"neighbours": NEIGHBOURS, "calibration": noisy.info.get("calibration", "sound")}
    return MeasurementSet(table, "pgsr", public, source, extra)


def _laplace_row(noisy: NoisyGroupSizes, level: int, n_regions: int, z_max: int) -> tuple[str, float, str]:
    """A discrete Laplace level's scale, variance and epsilon (sensitivity / scale, what it spent)."""
    scale = Fraction(noisy.level_scales[level - 1])
    spent = level_sensitivity(noisy.kind, n_regions, z_max) / scale
    return str(scale), double_geometric_variance(scale), str(spent)


def _gaussian_row(noisy: NoisyGroupSizes, level: int) -> tuple[str, float, str]:
    """A discrete Gaussian level's sigma^2, variance and rho (its share of the budget, even by default)."""
    sigma2 = Fraction(noisy.info["sigma2_per_level"][level - 1])
    if "rho_per_level" in noisy.info:
        rho_level = Fraction(noisy.info["rho_per_level"][level - 1])
    else:
        rho_level = Fraction(noisy.info["rho"]) / noisy.hierarchy.n_levels
    return str(sigma2), discrete_gaussian_variance(sigma2), str(rho_level)


def noisy_from_measurements(measurements: MeasurementSet) -> NoisyGroupSizes:
    """The :class:`NoisyGroupSizes` of a measurement set, rows matched by region and size labels.

    The values are weighted by their rows' variances (``1 / variance``, relative to the smallest;
    none when every row states the same variance), and ``info["weighting"]`` says so.

    Parameters
    ----------
    measurements : MeasurementSet
        A PGSR set (:func:`dpmodels.core.measurements.read_measurements`).
    """
    public = measurements.public
    for key in ("hierarchy", "N", "G", "kind"):
        if key not in public:
            raise DataValidationError("facts", f"public facts need {key!r} (hierarchy, N, G, kind, z_max)")
    hierarchy = Hierarchy.from_parent_table([tuple(pair) for pair in public["hierarchy"]])
    kind, n_sizes = public["kind"], int(public["N"])
    table = measurements.table
    other = sorted(set(table["query"]) - {kind})
    if other:
        raise DataValidationError("measurements", f"query {other[0]!r} is not the declared kind {kind!r}")
    wide = _wide(table, "value", n_sizes)
    values = region_matrix(wide, hierarchy.names, hierarchy.level, "measurements")
    scales = _level_scales(hierarchy, table)
    variances = region_matrix(_wide(table, "variance", n_sizes), hierarchy.names, hierarchy.level, "measurements")
    weights = inverse_variance_weights(variances)
    info = {"source": measurements.source, "z_max": int(public.get("z_max", 1)), "budget": _budget(hierarchy, table)}
    if weights is not None:
        info["weighting"] = RULE + ", from the variance column of the measurement rows"
    return NoisyGroupSizes(hierarchy, values, int(public["G"]), kind, scales, info=info, weights=weights)


def _wide(table: pd.DataFrame, column: str, n_sizes: int) -> pd.DataFrame:
    cells = pd.to_numeric(table["cell"], errors="coerce")
    bad = np.flatnonzero(~cells.between(1, n_sizes).to_numpy() | (cells % 1 != 0).to_numpy())
    if bad.size:
        raise DataValidationError(
            "measurements",
            f"column 'cell' on data row {bad[0] + 1} is not a size 1..{n_sizes}: {table['cell'][bad[0]]!r}",
        )
    wide = table.assign(cell=cells.astype(int)).pivot(index="node", columns="cell", values=column)
    if wide.isna().any().any():
        node, cell = wide.stack(future_stack=True).loc[lambda s: s.isna()].index[0]
        raise DataValidationError("measurements", f"no value for node {node!r}, cell {cell}")
    return wide.reindex(columns=range(1, n_sizes + 1))


def _level_scales(hierarchy: Hierarchy, table: pd.DataFrame) -> tuple[Fraction, ...]:
    """One noise scale per level, for the truncated domains: the widest of the level's rows (the
    noisiest value of a level sets how far from it the truth may lie)."""
    level_of = dict(zip(hierarchy.names, hierarchy.level, strict=True))
    levels = table["node"].map(level_of)
    scales = []
    for level in range(1, hierarchy.n_levels + 1):
        noises = table.loc[levels == level, ["mechanism", "scale", "variance"]].drop_duplicates()
        scales.append(max(_domain_scale(*row) for row in noises.itertuples(index=False)))
    return tuple(scales)


def _domain_scale(mechanism: str, scale: str, variance: float) -> Fraction:
    """The scale that sizes the truncated domain of one noise: a discrete Laplace's recorded scale, a
    discrete Gaussian's domain scale at its recorded sigma^2 (as :func:`measure` sets them), else the
    Laplace scale of the same variance."""
    if mechanism == "discrete-laplace":
        return Fraction(scale)
    if mechanism == "discrete-gaussian":
        return gaussian_domain_scale(Fraction(scale))
    return _laplace_scale(float(variance))


def _laplace_scale(variance: float) -> Fraction:
    """The Laplace scale of the same variance, ``sqrt(variance / 2)``, as a short fraction."""
    return Fraction(math.sqrt(variance / 2)).limit_denominator(10**6)


def _budget(hierarchy: Hierarchy, table: pd.DataFrame) -> dict:
    """What the set says it spent, per unit: the levels add up, the regions of a level are disjoint
    (parallel composition), so each level counts its largest per-row budget."""
    levels = table["node"].map(dict(zip(hierarchy.names, hierarchy.level, strict=True)))
    spent = {}
    for (unit, _), rows in table.groupby([table["budget_unit"], levels]):
        spent[unit] = spent.get(unit, Fraction(0)) + max(Fraction(b) for b in rows["budget"].unique())
    return {unit: str(total) for unit, total in spent.items()}
