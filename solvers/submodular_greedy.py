"""``submodular_greedy``: greedy-type algorithms on the exact MILPs of spec 6.4.

Solves the coverage, facility-location and k-coverage MILPs built by
:mod:`dpmodels.submodular.models` with one of

- ``greedy`` (matroid greedy, 1/2; 1 - 1/e for uniform matroids) or ``mitrovic`` (Mitrovic et al.'s
  private greedy, ``eps r``-DP) on coverage / facility location;
- ``k_greedy`` (Sakaue), ``alg3`` or ``alg4`` (Rafiey-Yoshida Algorithms 3 and 4, ``eps r``-DP) on
  k-coverage.

The set found is loaded as a complete MILP solution (selection, coverage / assignment variables,
and Martin's arc flows for graphic matroids), so the model's objective equals ``F(S)``.  The result
is feasible, not optimal: status ``feasible``, no bound.  Private runs report the accountant summary
in ``results.extra_info.privacy``.
"""

from __future__ import annotations

import numpy as np
from pyomo.common.config import In

from dpmodels.core.errors import ModelStructureError, PrivacyParameterError
from dpmodels.submodular.algorithms import greedy, k_greedy
from dpmodels.submodular.matroids import GraphicMatroid
from dpmodels.submodular.mechanism.greedy import mitrovic_private_greedy, private_k_greedy, private_k_greedy_sampled
from dpmodels.submodular.models import martin_values
from dpmodels.submodular.objectives import KCoverage

from .base import Option, StructureSolver, converged

__all__ = ["SubmodularGreedySolver", "milp_values"]

SET_ALGORITHMS = ("greedy", "mitrovic")
K_ALGORITHMS = ("k_greedy", "alg3", "alg4")
PRIVATE = ("mitrovic", "alg3", "alg4")


def milp_values(marker, solution) -> dict[str, np.ndarray]:
    """Every MILP variable at the set (or k-vector) ``solution``, in the marker's layout order."""
    F, M = marker.data.function, marker.data.matroid
    formulation = marker.formulation
    if formulation == "submodular.kcoverage_milp":
        x = np.asarray(solution, dtype=np.int64)
        support = x != 0
        values = {
            "s": np.array([float(x[e] == i) for e, i in marker.layout["s"]]),
            "u": support.astype(float),
            "z": _covered(F.rows[np.flatnonzero(support) * F.k + x[support] - 1], marker.layout["z"]),
        }
    else:
        support = np.asarray(solution, bool)
        values = {"s": support.astype(float)}
        if formulation == "submodular.coverage_milp":
            values["z"] = _covered(F.by_element[np.flatnonzero(support)], marker.layout["z"])
        else:
            values["a"] = _assignment(F, support, marker.layout["a"])
    if isinstance(M, GraphicMatroid):
        values["polytope.z"] = martin_values(M, support)
    return values


def _covered(rows, users) -> np.ndarray:
    hit = np.zeros(rows.shape[1], bool)
    hit[rows.indices] = True
    return hit[np.asarray(users, dtype=np.int64)].astype(float)


def _assignment(F, S, pairs) -> np.ndarray:
    """``a_ij = 1`` for the open site of largest benefit for customer ``j`` (lowest index on ties)."""
    c = F.benefit.tocsc()
    best = {}
    for j in range(F.n_customers):
        idx = c.indices[c.indptr[j] : c.indptr[j + 1]]
        val = c.data[c.indptr[j] : c.indptr[j + 1]]
        open_ = S[idx]
        if open_.any():
            order = np.lexsort((idx[open_], -val[open_]))
            best[j] = int(idx[open_][order[0]])
    return np.array([float(best.get(j) == i) for i, j in pairs])


class SubmodularGreedySolver(StructureSolver):
    """Greedy, Mitrovic's private greedy, k-greedy and Algorithms 3/4 on the exact MILPs.

    For the private algorithms only the chosen set (or k-vector) is a private output.  The reported
    objective ``F_D(S)`` is an evaluation diagnostic computed on the private data: it is
    not covered by the privacy accounting and must not be released."""

    formulations = frozenset({"submodular.coverage_milp", "submodular.facility_milp", "submodular.kcoverage_milp"})
    integer_only = False
    exact = False
    guarantee = (
        "approximation: greedy 1/2 (1 - 1/e on uniform matroids), k-greedy 1/2; the private algorithms "
        "are eps r-DP mechanisms with the papers' expected-value guarantees; no bound"
    )
    options = (
        Option(
            "algorithm",
            None,
            "greedy or mitrovic (coverage, facility); k_greedy, alg3 or alg4 (k-coverage); default the non-private one",
            In((None, *SET_ALGORITHMS, *K_ALGORITHMS)),
        ),
        Option("epsilon", None, "input epsilon (finite, > 0) of the private algorithms"),
        Option("seed", None, "seed of the mechanism streams (None: secure; a seed: reproducible, not private)"),
        Option("gamma", 0.1, "failure probability of Alg. 4"),
    )
    algorithm = "greedy-type maximization (matroid greedy, Mitrovic, Sakaue, Rafiey-Yoshida Alg. 3/4)"

    def check(self, marker, options) -> None:
        _result_algorithm(marker, options)

    @classmethod
    def run(cls, payload, options, controls):
        """Run the chosen algorithm on a :class:`~dpmodels.submodular.models.SubmodularPayload`
        (the default algorithm follows the function: k_greedy for a k-coverage function, else greedy);
        returns its :class:`GreedyResult`."""
        function, matroid = payload.function, payload.matroid
        k_data = isinstance(function, KCoverage)
        algorithm = _chosen(k_data, options.algorithm, "a k-coverage function" if k_data else "a set function")
        epsilon, seed = options.epsilon, options.seed
        if algorithm in PRIVATE and epsilon is None:
            raise PrivacyParameterError("epsilon", f"{algorithm} is private and needs epsilon")
        if algorithm == "greedy":
            return greedy(function, matroid)
        if algorithm == "k_greedy":
            return k_greedy(function, matroid)
        if algorithm == "mitrovic":
            return mitrovic_private_greedy(function, matroid, epsilon, seed=seed)
        if algorithm == "alg3":
            return private_k_greedy(function, matroid, epsilon, seed=seed)
        return private_k_greedy_sampled(function, matroid, epsilon, gamma=options.gamma, seed=seed)

    def to_solution(self, marker, result, options):
        info = {"calls": result.calls, "algorithm_name": _result_algorithm(marker, options)}
        if result.accountant is not None:
            info["privacy"] = result.accountant.summary()
        return converged(result.value, milp_values(marker, result.S), exact=False, info=info)


def _chosen(k_model: bool, algorithm: str | None, what: str) -> str:
    """The algorithm that runs (default: the non-private one); a set algorithm on the k-coverage
    model, or a k-algorithm on a set model, is refused."""
    chosen = algorithm or ("k_greedy" if k_model else "greedy")
    if (chosen in K_ALGORITHMS) != k_model:
        allowed = K_ALGORITHMS if k_model else SET_ALGORITHMS
        raise ModelStructureError(f"{chosen} does not solve {what}; use one of {allowed}")
    return chosen


def _result_algorithm(marker, options) -> str:
    k_model = marker.formulation == "submodular.kcoverage_milp"
    return _chosen(k_model, options.algorithm, marker.formulation)


#: The solvers this module registers (read without importing it: see :mod:`dpmodels.solvers.registry`).
PLUGINS = {
    "submodular_greedy": ("SubmodularGreedySolver", "greedy / Mitrovic / k-greedy / Alg. 3-4 on MILPs (dpmodels)"),
}
