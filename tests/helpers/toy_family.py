"""A toy sixth family, as a contributor would add it: a folder under ``dpmodels/`` with a builder,
an instances module and a plugin module, and nothing else edited.

``add_toy_family(root)`` writes its files into a copy of the project at ``root``.  The family
projects noisy counts onto the counts that sum to a public total (a QP); its plugin solves the
QP in closed form (the Euclidean projection onto a scaled simplex), so the contract tests can
check it against an independent backend on the same model.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

FAMILY = "toy"
FORMULATION = "toy.projection_qp"
PLUGIN = "toy_projection"
INSTANCE = "toy/tiny"

FILES = {
    "dpmodels/toy/__init__.py": '''
        """Toy family: noisy counts projected onto the counts with a public total.

        data.py: ToyCounts; models.py: build_projection_qp; commands.py: FAMILY.
        """

        from dpmodels.core.lazy import lazy_exports

        _EXPORTS = {"ToyCounts": "dpmodels.toy.data", "build_projection_qp": "dpmodels.toy.models"}
        __all__ = list(_EXPORTS)
        __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
    ''',
    "dpmodels/toy/data.py": '''
        """The toy family's data."""

        from dataclasses import dataclass


        @dataclass(frozen=True)
        class ToyCounts:
            """Noisy counts and their public total.

            Parameters
            ----------
            noisy : tuple of float
                The noisy counts.
            total : float
                The public total the released counts must sum to.
            """

            noisy: tuple
            total: float
    ''',
    "dpmodels/toy/models.py": '''
        """The toy family's Pyomo builder."""

        import pyomo.environ as pyo

        from dpmodels.core.formulations import register_formulation
        from dpmodels.core.marker import attach_marker

        from .data import ToyCounts


        @register_formulation(
            "toy.projection_qp", payload=ToyCounts, integer=False, objective="quadratic",
            doc="toy: nonnegative least squares with a public total",
        )
        def build_projection_qp(data: ToyCounts) -> pyo.ConcreteModel:
            """The closest nonnegative counts to ``data.noisy`` that sum to ``data.total``.

            Parameters
            ----------
            data : ToyCounts
                The noisy counts and the public total.
            """
            m = pyo.ConcreteModel("toy projection")
            m.I = pyo.RangeSet(0, len(data.noisy) - 1)
            m.x = pyo.Var(m.I, domain=pyo.NonNegativeReals)
            m.total = pyo.Constraint(expr=sum(m.x[i] for i in m.I) == data.total)
            m.objective = pyo.Objective(expr=sum((m.x[i] - data.noisy[i]) ** 2 for i in m.I))
            attach_marker(m, "toy.projection_qp", data, {"relax": True}, {"x": list(range(len(data.noisy)))})
            return m
    ''',
    "dpmodels/toy/commands.py": '''
        """What the toy family shows the dpmodels command."""

        from dpmodels.core.commands import Command, Family


        def _arguments(parser):
            parser.add_argument("--solver", default="toy_projection", help="the solver of the projection")


        def _run(args):
            import dpmodels
            from dpmodels import instances

            result = dpmodels.solve(instances.load("toy/tiny"), args.solver)
            print(f"toy objective {result.incumbent_objective:.6f}")
            return 0


        FAMILY = Family(
            name="toy",
            package="dpmodels.toy",
            summary="a toy family",
            compare=Command("toy comparison", _arguments, _run),
            bench=Command("toy bench", _arguments, _run),
        )
    ''',
    "instances/toy.py": '''
        """The toy family's instances."""

        from dpmodels.core.formulations import register_example
        from dpmodels.toy.data import ToyCounts
        from dpmodels.toy.models import build_projection_qp

        from .registry import register_instance


        @register_instance("toy/tiny", "four noisy counts, public total 10")
        def tiny():
            return build_projection_qp(ToyCounts((4.5, -1.0, 3.0, 6.0), 10.0))


        @register_example("toy.projection_qp")
        def example():
            return tiny()
    ''',
    "solvers/toy_projection.py": '''
        """toy_projection: the toy QP in closed form (Euclidean projection onto a scaled simplex)."""

        import numpy as np

        from .base import StructureSolver, converged


        class ToyProjectionSolver(StructureSolver):
            """Projects the noisy counts onto {x >= 0, sum x = total} by sorting."""

            formulations = frozenset({"toy.projection_qp"})
            integer_only = False
            algorithm = "sort-based projection onto the scaled simplex"

            @classmethod
            def run(cls, payload, options, controls):
                y, total = np.asarray(payload.noisy, dtype=float), payload.total
                u = np.sort(y)[::-1]
                cumulative = np.cumsum(u) - total
                k = np.nonzero(u - cumulative / np.arange(1, len(u) + 1) > 0)[0][-1]
                return np.maximum(y - cumulative[k] / (k + 1), 0.0)

            def to_solution(self, marker, result, options):
                objective = float(((result - np.asarray(marker.data.noisy)) ** 2).sum())
                return converged(objective, {"x": result}, bound=objective)


        PLUGINS = {"toy_projection": ("ToyProjectionSolver", "toy projection in closed form (dpmodels)")}
    ''',
}


def add_toy_family(root: Path) -> list[Path]:
    """Write the toy family's files under the project copy ``root``; returns the paths written."""
    written = []
    for relative, text in FILES.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip())
        written.append(path)
    return written
