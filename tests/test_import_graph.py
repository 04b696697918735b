"""The installed package's import graph (lazy imports included): no cycle, the core stands alone,
plugins are adapters that import no other plugin, and no family imports the plugins."""

import pytest
from import_graph import cycles, import_graph, modules

from dpmodels.core.families import family_names
from dpmodels.solvers import declared_plugins

#: Whatever families exist (found by convention): a new family is covered without editing this test.
FAMILIES = family_names()


@pytest.fixture(scope="module")
def graph():
    return import_graph()


def test_the_graph_reads_every_module(graph):
    assert set(graph) == set(modules())
    assert graph.has_edge("dpmodels", "dpmodels.solvers")  # import dpmodels registers the plugins
    assert any(t.startswith("dpmodels.pgsr") for t in graph.successors("dpmodels.solvers.pgsr_dp"))  # adapters
    assert len(FAMILIES) >= 5 and all(any(m.startswith(f"dpmodels.{f}.") for m in graph) for f in FAMILIES)


def test_no_import_cycle(graph):
    assert cycles(graph) == []


def test_the_core_imports_no_family_no_plugin_and_no_instance(graph):
    outside = ("dpmodels.solvers", "dpmodels.instances", *(f"dpmodels.{f}" for f in FAMILIES))
    for module in graph:
        if module.startswith("dpmodels.core"):
            bad = [t for t in graph.successors(module) if t.startswith(outside) or t in ("dpmodels", "dpmodels.cli")]
            assert not bad, f"{module} imports {bad}"


def plugins(graph) -> set[str]:
    """The modules of ``dpmodels.solvers`` that declare plugins: all but the shared machinery and ``_private`` ones."""
    machinery = {"dpmodels.solvers.base", "dpmodels.solvers.results", "dpmodels.solvers.registry"}
    return {
        m
        for m in graph
        if m.startswith("dpmodels.solvers.") and not m.rpartition(".")[2].startswith("_") and m not in machinery
    }


def test_every_plugin_module_declares_its_plugins(graph):
    """The package registers what the modules declare (read without importing them), nothing else."""
    declared = {f"dpmodels.solvers.{module}" for module, _cls, _doc in declared_plugins().values()}
    assert declared == plugins(graph)


def test_the_solvers_package_imports_no_plugin(graph):
    """``import dpmodels.solvers`` (the Pyomo entry point) registers stand-ins; plugins load on first use."""
    assert set(graph.successors("dpmodels.solvers")) == {"dpmodels.solvers.registry"}


def test_no_plugin_imports_another_plugin(graph):
    found = plugins(graph)
    for module in sorted(found):
        bad = sorted(t for t in graph.successors(module) if t in found)
        assert not bad, f"{module} imports the plugins {bad}; share helpers through solvers/base.py or a _module"


def test_no_family_imports_the_plugins(graph):
    for module in sorted(graph):
        if module.startswith(tuple(f"dpmodels.{f}" for f in FAMILIES)):
            bad = sorted(
                t for t in graph.successors(module) if t == "dpmodels.solvers" or t.startswith("dpmodels.solvers.")
            )
            assert not bad, f"{module} imports {bad}; algorithms live in their family, plugins adapt them"


def test_no_module_imports_another_modules_private_name():
    """Shared helpers are public names: ``from .x import _y`` across modules is a helper that
    should be public (or live where it is used)."""
    import ast

    found = []
    for name, path in modules().items():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith("dpmodels")):
                private = [a.name for a in node.names if a.name.startswith("_") and not a.name.startswith("__")]
                if private:
                    found.append(f"{name}: from {'.' * node.level}{node.module or ''} import {', '.join(private)}")
    assert found == []
