"""The installed package's import graph (lazy imports included): no cycle, the core stands alone,
plugins are adapters that import no other plugin, and no family imports the plugins."""

import pytest
from import_graph import cycles, import_graph, modules

FAMILIES = ("pgsr", "topdown", "metricdp", "submodular", "facility")


@pytest.fixture(scope="module")
def graph():
    return import_graph()


def test_the_graph_reads_every_module(graph):
    assert set(graph) == set(modules())
    assert graph.has_edge("dpmodels", "dpmodels.solvers")  # import dpmodels registers the plugins
    assert graph.has_edge("dpmodels.solvers.pgsr_dp", "dpmodels.pgsr.dp")  # plugins adapt families


def test_no_import_cycle(graph):
    assert cycles(graph) == []


def test_the_core_imports_no_family_no_plugin_and_no_instance(graph):
    outside = ("dpmodels.solvers", "dpmodels.instances", *(f"dpmodels.{f}" for f in FAMILIES))
    for module in graph:
        if module.startswith("dpmodels.core"):
            bad = [t for t in graph.successors(module) if t.startswith(outside) or t in ("dpmodels", "dpmodels.cli")]
            assert not bad, f"{module} imports {bad}"


def plugins(graph) -> set[str]:
    """The modules of ``dpmodels.solvers`` that register a plugin: all but ``base`` and ``_private`` ones."""
    return {
        m
        for m in graph
        if m.startswith("dpmodels.solvers.")
        and not m.rpartition(".")[2].startswith("_")
        and m != "dpmodels.solvers.base"
    }


def test_the_plugins_are_the_modules_the_package_registers(graph):
    assert set(graph.successors("dpmodels.solvers")) == plugins(graph)


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
