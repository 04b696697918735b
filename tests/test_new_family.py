"""A sixth family is its folder, its instances module and its plugin: nothing else is edited.

In a scratch copy of the project, ``toy_family.add_toy_family`` writes a toy family (a builder,
an instance, a plugin and its command declaration).  The copy is built into a wheel and
installed into a fresh folder, and from that installation (never this checkout) the command
line, the instance and formulation registries, the plugin registry, the contract tests, the
import-graph tests and the documentation all pick the family up.  The same wheel imports every
family in a fresh process: a family missing from the packaging fails here, not for a user.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest
import toy_family

from dpmodels.core.families import family_names

ROOT = Path(__file__).resolve().parents[1]


def _project_files() -> list[str]:
    """The files of this checkout that a clone would have (tracked, or new and not ignored)."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    return [line for line in listed.stdout.splitlines() if (ROOT / line).is_file()]


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(project copy with the toy family, installation folder, environment, wheel path)."""
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("needs a git checkout of the project")
    project = tmp_path_factory.mktemp("scratch") / "project"
    for relative in _project_files():
        target = project / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / relative, target)
    toy_family.add_toy_family(project)
    wheels, target = project / "dist", project.parent / "installed"
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", wheels, project])
    (wheel,) = wheels.glob("dpmodels-*.whl")
    _run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "-q", "--target", target, wheel])
    # -S -P: no site processing and no current folder on the path, so this checkout (its editable
    # install, or its dpmodels/ folder) cannot shadow the wheel;
    # the dependencies come from the interpreter's site-packages, after the installation.
    env = {"PYTHONPATH": f"{target}:{sysconfig.get_paths()['purelib']}", "PATH": "/usr/bin:/bin", "MPLBACKEND": "Agg"}
    return project, target, env, wheel


def _run(argv, **kwargs) -> subprocess.CompletedProcess:
    proc = subprocess.run([str(a) for a in argv], capture_output=True, text=True, **kwargs)
    assert proc.returncode == 0, f"{argv}\nstdout:\n{proc.stdout[-3000:]}\nstderr:\n{proc.stderr[-3000:]}"
    return proc


def _python(env, *argv, cwd=None) -> str:
    return _run(
        [sys.executable, "-S", "-P", *argv], env=env, cwd=cwd or Path(env["PYTHONPATH"].split(":")[0]).parent
    ).stdout


def test_the_wheel_carries_every_family_and_the_toy_one(installed):
    _project, _target, _env, wheel = installed
    names = set(zipfile.ZipFile(wheel).namelist())
    for relative in toy_family.FILES:  # solvers/ and instances/ install inside the dpmodels namespace
        assert (relative if relative.startswith("dpmodels/") else f"dpmodels/{relative}") in names
    for family in family_names():
        assert f"dpmodels/{family}/models.py" in names
    assert "dpmodels/py.typed" in names and any(n.endswith("licenses/LICENSE") for n in names)


def test_every_family_imports_from_the_installed_wheel(installed):
    _project, target, env, _wheel = installed
    code = (
        "import importlib, dpmodels\n"
        "from dpmodels.core.families import family_names\n"
        "print(dpmodels.__file__)\n"
        "for name in family_names():\n"
        "    importlib.import_module(f'dpmodels.{name}.models')\n"
        "    print(name)\n"
    )
    lines = _python(env, "-c", code).split()
    assert lines[0].startswith(str(target)), "imported this checkout instead of the wheel"
    assert lines[1:] == sorted([*family_names(), toy_family.FAMILY])


def test_the_command_line_shows_the_toy_family(installed):
    _project, _target, env, _wheel = installed
    cli = ("-m", "dpmodels.cli")
    assert toy_family.FAMILY in _python(env, *cli, "compare", "--help")
    assert "toy objective" in _python(env, *cli, "compare", toy_family.FAMILY)
    assert toy_family.INSTANCE in _python(env, *cli, "instances")
    assert toy_family.PLUGIN in _python(env, *cli, "solvers")
    assert toy_family.FORMULATION in _python(env, *cli, "formulations")


def test_the_contract_and_import_graph_tests_cover_the_toy_family(installed):
    project, _target, env, _wheel = installed
    out = _python(
        env,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "-p",
        "no:nbmake",
        "-o",
        "addopts=--import-mode=importlib",
        "-k",
        "toy or graph",
        "tests/test_contract.py",
        "tests/test_import_graph.py",
        cwd=project,
    )
    summary = out.strip().splitlines()[-1]
    passed = int(summary.split(" passed")[0].split()[-1])
    # the toy formulation against every solver and the toy plugin against every formulation
    assert passed >= 20 and "failed" not in summary, out[-2000:]


def test_the_documentation_has_the_toy_family(installed):
    project, _target, env, _wheel = installed
    _python(env, "-m", "mkdocs", "build", "--strict", "-q", "-d", project / "site", cwd=project)
    pages = [p for p in (project / "site").rglob("*.html") if "build_projection_qp" in p.read_text()]
    assert pages, "no page documents the toy family's builder"
    for name in (*family_names(), toy_family.FAMILY):  # the whole site, built --strict, has every family
        assert (project / "site" / "reference" / name / "index.html").is_file(), name
        assert (project / "site" / "families" / name / "index.html").is_file(), name
