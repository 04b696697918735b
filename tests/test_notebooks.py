"""The notebooks use only what the packages export, and every name they import exists.

nbmake runs the notebooks (the heaviest two in the slow tier, see ``notebooks/conftest.py``);
this cheap check reads every code cell and resolves each ``from dpmodels... import ...`` against
the installed package, so a moved or renamed export fails in the default tier too.
"""

from __future__ import annotations

import ast
import importlib
import json
from pathlib import Path

import pytest

from dpmodels.core.families import family_names

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))

#: Modules a notebook may import from: the package, the core, the families and their instances modules.
PUBLIC = {
    "dpmodels",
    "dpmodels.core",
    "dpmodels.instances",
    *(f"dpmodels.{f}" for f in family_names()),
    *(f"dpmodels.instances.{f}" for f in family_names()),
}


def _imports(notebook: Path) -> list[tuple[str, list[str]]]:
    found = []
    for cell in json.loads(notebook.read_text())["cells"]:
        if cell["cell_type"] != "code":
            continue
        source = "".join(cell["source"])
        lines = [line for line in source.splitlines() if not line.lstrip().startswith(("%", "!"))]
        for node in ast.walk(ast.parse("\n".join(lines))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("dpmodels"):
                found.append((node.module, [a.name for a in node.names]))
            elif isinstance(node, ast.Import):
                found += [(a.name, []) for a in node.names if a.name.startswith("dpmodels")]
    return found


def test_there_is_a_notebook_per_family():
    assert {p.stem for p in NOTEBOOKS} >= set(family_names())


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_a_notebook_imports_only_exported_names_that_exist(notebook):
    imports = _imports(notebook)
    assert imports, f"{notebook.name} imports nothing from dpmodels"
    for module, names in imports:
        assert module in PUBLIC, f"{notebook.name} imports the internal module {module}"
        loaded = importlib.import_module(module)
        for name in names:
            if f"{module}.{name}" in PUBLIC:  # a public subpackage, e.g. ``from dpmodels import instances``
                continue
            assert hasattr(loaded, name), f"{notebook.name}: {module} has no {name}"
            exported = getattr(loaded, "__all__", None)
            if not module.startswith("dpmodels.instances") and exported is not None:
                assert name in exported, f"{notebook.name}: {name} is not among {module}'s exports"
