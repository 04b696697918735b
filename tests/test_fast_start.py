"""Fast start, checked by what a fresh process imports (times live in ``dpmodels bench startup``).

``import dpmodels``, the Pyomo entry point (``dpmodels.solvers``) and ``dpmodels --help`` import
no family algorithm and none of the heavy libraries (pandas, scipy, numba, matplotlib); the
plugins are registered with both Pyomo factories as stand-ins that load on first use, and a
stand-in builds the real solver.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from dpmodels.core.families import family_names

HEAVY = ("pandas", "scipy", "numba", "matplotlib", "networkx", "dask")


def _modules_after(code: str) -> set[str]:
    """The modules a fresh interpreter has imported after running ``code``."""
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return set(json.loads(proc.stdout.strip().splitlines()[-1]))


def _family_algorithms(modules: set[str]) -> list[str]:
    """Family modules other than the package itself and its command declaration."""
    allowed = {f"dpmodels.{f}" for f in family_names()} | {f"dpmodels.{f}.commands" for f in family_names()}
    prefixes = tuple(f"dpmodels.{f}." for f in family_names())
    return sorted(m for m in modules if m.startswith(prefixes) and m not in allowed)


@pytest.mark.parametrize(
    "code",
    [
        "import dpmodels",
        "import dpmodels.solvers",  # what the pyomo.command entry point loads
        "from dpmodels.cli import main\ntry:\n    main(['--help'])\nexcept SystemExit:\n    pass",
        "from dpmodels.cli import main\ntry:\n    main(['compare', '--help'])\nexcept SystemExit:\n    pass",
    ],
    ids=["import dpmodels", "entry point", "dpmodels --help", "dpmodels compare --help"],
)
def test_starting_imports_no_family_algorithm_and_no_heavy_library(code):
    modules = _modules_after(code)
    assert _family_algorithms(modules) == []
    assert sorted(m for m in modules if m.split(".")[0] in HEAVY) == []


def test_a_stand_in_builds_the_real_plugin_in_both_pyomo_apis():
    code = (
        "import dpmodels, pyomo.environ as pyo\n"
        "from pyomo.contrib.solver.common.factory import SolverFactory\n"
        "import sys\n"
        "before = 'dpmodels.pgsr' in sys.modules\n"
        "new, legacy = SolverFactory('pgsr_dp'), pyo.SolverFactory('pgsr_dp')\n"
        "print(before, type(new).__name__, type(legacy).__name__, 'dpmodels.pgsr' in sys.modules)\n"
        "print(type(SolverFactory('pgsr_dp')).__name__, SolverFactory._cls['pgsr_dp'].__name__)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    first, second = proc.stdout.split("\n")[:2]
    assert first == "False PGSRDPSolver LegacyPGSRDPSolver True"
    assert second == "PGSRDPSolver PGSRDPSolver"  # the real class replaced the stand-in


def test_every_declared_plugin_loads_and_declares_capabilities():
    from dpmodels.core.capabilities import capabilities
    from dpmodels.solvers import declared_plugins, load_plugins

    loaded = load_plugins()
    assert set(declared_plugins()) <= set(loaded)
    for name in declared_plugins():
        assert capabilities(name) is not None, name
