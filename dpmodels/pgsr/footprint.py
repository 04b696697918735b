"""How much memory a PGSR release needs, from its declared sizes only (regions per level, N, mechanism).

A release's arrays are regions x sizes (``R N`` cells): the true and noisy vectors, the domains,
the post-processing's windows or models, the released table.  ``dpmodels release pgsr --N
10000000`` on three regions ran for minutes past 14 GB before this estimate refused it up front
(:func:`dpmodels.core.resources.require_memory`).  The estimate reads declared facts only, so the
refusal says nothing about the records; what it leaves out depends on the data (the records file
itself, windows that widen because the noise misleads the relaxation, SCIP's search tree).

Peak resident memory above the imported and warmed process, measured on this project's machine
with ``resource.getrusage`` in a child (two-level hierarchies of 3 regions, and 271 regions in
1 / 6 / 264, 200 to 100,000 groups of sizes 1-4, eps = 1):

=========================  ===========================================  ================
mechanisms                 measured                                     per cell here
=========================  ===========================================  ================
M_H^dp, M_c^dp, M_c^ch,    104-225 bytes per cell (3e4 to 2.7e7 cells;   256 + 16 MiB
TopDown                    3.5 GiB at 271 x 100,000)
M_H^r, M_c^r (Clarabel)    2.9-3.1 KB and 4.1-4.6 KB per cell (3e3,      4 KiB, 6 KiB
                           3e4 cells: Pyomo models)
M_H, M_c (SCIP)            324 MB, 3.0 GB, 18 GB at 3e3, 9e3, 3e4 cells  64 KiB + 40 B x
                           (grows about as cells^2)                      cells
M_dp^OP                    32 MB at 300 cells (one sub-model at a time)  128 KiB
=========================  ===========================================  ================

The chain DP of M_c^ch also keeps two rolling tables as wide as the widest truncated chain domain
(at most ``2 delta + 1`` values of 8 bytes with ``delta = 3 ceil(2 lambda^2)``), and only while
all its tables hold at most ``algorithms.chain.TABLE_BUDGET`` entries (else it runs PAVA).
"""

from __future__ import annotations

from collections.abc import Sequence

from dpmodels.core.errors import DataValidationError
from dpmodels.core.hierarchy import Hierarchy
from dpmodels.core.noise import as_epsilon, truncation_delta

from .algorithms.chain import TABLE_BUDGET
from .domains import gaussian_domain_scale
from .sensitivity import level_l2_sensitivity, level_sensitivity, validate_z_max

__all__ = ["estimate_release_bytes", "FIXED_BYTES", "BYTES_PER_CELL"]

#: Memory of a release beyond its cells (reading the declared files, small tables).
FIXED_BYTES = 16 * 2**20
#: Bytes per cell (region x size) of each mechanism, an upper bound of the measured peaks above.
BYTES_PER_CELL = {
    "M_H^dp": 256,
    "M_c^dp": 256,
    "M_c^ch": 256,
    "TopDown": 256,
    "M_H^r": 4 * 2**10,
    "M_c^r": 6 * 2**10,
    "M_H": 64 * 2**10,
    "M_c": 64 * 2**10,
    "M_dp^OP": 128 * 2**10,
}
#: SCIP's quadratic models also grow with the square of the cells (bytes per cell squared).
_QUADRATIC = {"M_H": 40, "M_c": 40}


def estimate_release_bytes(
    hierarchy_or_sizes: Hierarchy | Sequence[int], N: int, mechanism: str, *, epsilon=None, z_max: int = 1, rho=None
) -> int:
    """An upper estimate of the peak memory (bytes) of releasing ``N`` sizes with ``mechanism``.

    Parameters
    ----------
    hierarchy_or_sizes
        The declared hierarchy, or its number of regions per level (root first).
    N
        The declared largest group size: every region releases sizes ``1..N``.
    mechanism
        A name of :data:`dpmodels.pgsr.postprocessing.MECHANISMS`.
    epsilon
        The release's budget; it bounds the chain DP's tables (M_c^ch) through the truncated
        domains.  None assumes the largest tables the chain DP would build.
    z_max
        The declared bound on one person's quantity (the chain's scale grows with it).
    rho
        Instead of ``epsilon``, the zCDP budget of a discrete Gaussian release (its domains follow
        :func:`dpmodels.pgsr.domains.gaussian_domain_scale`).
    """
    sizes = _level_sizes(hierarchy_or_sizes)
    if isinstance(N, bool) or not isinstance(N, int) or N < 1:
        raise DataValidationError("N", f"must be an integer >= 1, got {N!r}")
    if mechanism not in BYTES_PER_CELL:
        raise DataValidationError("mechanism", f"unknown {mechanism!r}; choose from {list(BYTES_PER_CELL)}")
    cells = sum(sizes) * N
    estimate = FIXED_BYTES + BYTES_PER_CELL[mechanism] * cells + _QUADRATIC.get(mechanism, 0) * cells**2
    if mechanism == "M_c^ch":
        estimate += 2 * 8 * _chain_table_width(sizes, epsilon, validate_z_max(z_max), rho)
    return int(estimate)


def _level_sizes(hierarchy_or_sizes) -> list[int]:
    if isinstance(hierarchy_or_sizes, Hierarchy):
        return [int(r) for r in hierarchy_or_sizes.level_sizes()]
    sizes = list(hierarchy_or_sizes)
    if not sizes or any(isinstance(r, bool) or not isinstance(r, int) or r < 1 for r in sizes):
        raise DataValidationError("hierarchy", f"needs regions per level as integers >= 1, got {sizes!r}")
    return sizes


def _chain_table_width(sizes: list[int], epsilon, z_max: int, rho=None) -> int:
    """The widest table the chain DP may hold: ``2 delta + 1`` for the largest level scale, at most
    ``TABLE_BUDGET`` (above it the DP gives way to PAVA, which keeps no tables)."""
    if rho is not None:
        sigma2 = max(level_l2_sensitivity("chain", r, z_max) for r in sizes) * len(sizes) / (2 * as_epsilon(rho, "rho"))
        return min(TABLE_BUDGET, 2 * truncation_delta(gaussian_domain_scale(sigma2)) + 1)
    if epsilon is None:
        return TABLE_BUDGET
    eps_level = as_epsilon(epsilon) / len(sizes)
    scale = max(level_sensitivity("chain", r, z_max) for r in sizes) / eps_level
    return min(TABLE_BUDGET, 2 * truncation_delta(scale) + 1)
