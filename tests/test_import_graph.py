"""The installed package's import graph (lazy imports included): no cycle, and the core stands alone."""

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
