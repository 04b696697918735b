"""The import graph of the installed package, read from the source (AST), lazy imports included."""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = {
    "dpmodels": ROOT / "dpmodels",
    "dpmodels.solvers": ROOT / "solvers",
    "dpmodels.instances": ROOT / "instances",
}


def modules() -> dict[str, Path]:
    """Every installed module name and its file."""
    out = {}
    for package, folder in PACKAGES.items():
        for path in folder.rglob("*.py"):
            parts = path.relative_to(folder).with_suffix("").parts
            name = ".".join((package, *parts))
            out[name.removesuffix(".__init__")] = path
    return out


def _target(name: str, known: dict) -> str | None:
    """The module an import of ``name`` loads, or None outside the package."""
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def import_graph() -> nx.DiGraph:
    """Edges ``a -> b``: module ``a`` imports module ``b`` (at module level or inside a function)."""
    known = modules()
    graph = nx.DiGraph()
    graph.add_nodes_from(known)
    for name, path in known.items():
        is_package = path.name == "__init__.py"
        base = name if is_package else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            for target in _imported(node, base, known):
                if target and target != name:
                    graph.add_edge(name, target)
    return graph


def _imported(node, base: str, known: dict) -> list:
    if isinstance(node, ast.Import):
        return [_target(alias.name, known) for alias in node.names]
    if not isinstance(node, ast.ImportFrom):
        return []
    if node.level:
        anchor = base.rsplit(".", node.level - 1)[0] if node.level > 1 else base
        source = f"{anchor}.{node.module}" if node.module else anchor
    else:
        source = node.module
    found = []
    for alias in node.names:
        full = f"{source}.{alias.name}"
        found.append(full if full in known else _target(source, known))
    return found


def cycles(graph: nx.DiGraph) -> list[list[str]]:
    """Strongly connected groups of more than one module (each holds at least one import cycle)."""
    return sorted(sorted(c) for c in nx.strongly_connected_components(graph) if len(c) > 1)
