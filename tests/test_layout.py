"""The installed layout: everything under the dpmodels namespace, nothing a working directory can shadow."""

import subprocess
import sys
from pathlib import Path

import pytest


def run_python(code: str, cwd) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True)


def test_a_solvers_or_instances_module_in_the_working_directory_cannot_shadow_the_package(tmp_path):
    for name in ("solvers", "instances"):
        (tmp_path / f"{name}.py").write_text(f"raise RuntimeError('the stray {name}.py was imported')\n")
    code = "import dpmodels; from dpmodels import instances; print(dpmodels.solver_names(), instances.available())"
    proc = run_python(code, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "pgsr_dp" in proc.stdout and "mdp_ipm" in proc.stdout and "pgsr/running-example" in proc.stdout


def test_nothing_installs_under_a_generic_top_level_name(tmp_path):
    code = (
        "import importlib.util, dpmodels.solvers, dpmodels.instances; "
        "print([n for n in ('solvers', 'instances') if importlib.util.find_spec(n) is not None])"
    )
    proc = run_python(code, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


def test_pyomo_help_lists_the_plugins_through_the_entry_point():
    """README: `pyomo help --solvers` lists the plugins after installation (pyomo.command entry point)."""
    import shutil
    import subprocess

    pyomo = shutil.which("pyomo")
    if pyomo is None:
        pytest.skip("the pyomo script is not on PATH")
    proc = subprocess.run([pyomo, "help", "--solvers"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert all(name in proc.stdout for name in ("pgsr_dp", "mdp_ipm", "topdown_flow", "facility_tree_dp"))


def test_housekeeping_a_user_checks():
    """One version source (the metadata reads dpmodels.__version__), py.typed beside the package, and the
    LICENSE the metadata names, a CITATION.cff of the same version and a changelog at the top level."""
    import importlib.metadata

    import dpmodels

    root = Path(dpmodels.__file__).resolve().parents[1]
    assert importlib.metadata.version("dpmodels") == dpmodels.__version__
    assert (Path(dpmodels.__file__).parent / "py.typed").is_file()
    assert "BSD 3-Clause License" in (root / "LICENSE").read_text()
    assert f"version: {dpmodels.__version__}" in (root / "CITATION.cff").read_text()
    assert "## [Unreleased]" in (root / "CHANGELOG.md").read_text()
