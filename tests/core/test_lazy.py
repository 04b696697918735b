"""Lazy package exports (:mod:`dpmodels.core.lazy`): a name is imported on first use, and an exported
name keeps its meaning when a submodule of the same name is imported first (``release`` in
``release.py``: the import system binds the submodule as the package's attribute)."""

from __future__ import annotations

import importlib
import sys
import textwrap

import pytest

PACKAGE = """
from dpmodels.core.lazy import lazy_exports

_EXPORTS = {"release": "{name}.release", "helper": "{name}.tools"}
__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
"""


@pytest.fixture
def package(tmp_path, monkeypatch):
    """A throwaway package: ``release`` defined in ``release.py``, ``helper`` in ``tools.py``, and
    ``user.py`` importing ``release`` from its submodule (as a sibling module would)."""
    name = f"lazy_pkg_{tmp_path.name.replace('-', '_')}"
    folder = tmp_path / name
    folder.mkdir()
    (folder / "__init__.py").write_text(PACKAGE.replace("{name}", name))
    (folder / "release.py").write_text("def release():\n    return 'released'\n")
    (folder / "tools.py").write_text("def helper():\n    return 'helped'\n")
    (folder / "user.py").write_text(textwrap.dedent("from .release import release  # noqa: F401\n"))
    monkeypatch.syspath_prepend(str(tmp_path))
    yield name
    for module in [m for m in sys.modules if m == name or m.startswith(f"{name}.")]:
        del sys.modules[module]


def test_names_are_imported_on_first_use(package):
    pkg = importlib.import_module(package)
    assert f"{package}.tools" not in sys.modules
    assert pkg.helper is sys.modules[f"{package}.tools"].helper
    assert sorted(pkg.__all__) == ["helper", "release"] and {"helper", "release"} <= set(dir(pkg))
    with pytest.raises(AttributeError, match="no attribute 'missing'"):
        pkg.missing  # noqa: B018


@pytest.mark.parametrize("first", ["submodule", "sibling", "name"])
def test_an_exported_name_wins_over_its_submodule(package, first):
    """However the submodule was first imported, the package's ``release`` is the function."""
    if first == "submodule":
        importlib.import_module(f"{package}.release")
    elif first == "sibling":
        importlib.import_module(f"{package}.user")
    pkg = importlib.import_module(package)
    if first == "name":
        assert callable(pkg.release)  # read through the package before anything imports the module
    defined = importlib.import_module(f"{package}.release").release
    assert callable(defined) and defined() == "released"
    assert pkg.release is defined
    namespace: dict = {}
    exec(f"from {package} import release", namespace)
    assert namespace["release"] is defined
    assert sys.modules[f"{package}.release"].__name__ == f"{package}.release"  # still importable
