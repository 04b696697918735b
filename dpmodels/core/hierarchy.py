"""Region hierarchies: rooted trees of any depth with numbered levels.

Every family that releases statistics for nested geographies (PGSR, TopDown) works on a
:class:`Hierarchy`.  Regions are stored in one canonical breadth-first order in which

* the root is region 0 and level ``l`` (1-based, root at level 1) is a contiguous slice, and
* the children of every region are contiguous and in the order they were given,

so per-level and per-parent operations are numpy slices instead of Python loops.  In this
order, the regions of one level appear in the same relative order as in a post-order
traversal, which is what the PGSR chain transform relies on.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from .errors import DataValidationError

__all__ = ["Hierarchy"]


@dataclass(frozen=True, eq=False)
class Hierarchy:
    """A rooted tree of named regions in canonical breadth-first order.

    Build it with :meth:`from_parent_table`, :meth:`from_networkx` or :meth:`from_levels`
    rather than directly; those validate the input and compute the canonical order.
    """

    names: tuple[str, ...]
    parent: np.ndarray
    child_start: np.ndarray = field(repr=False)
    child_count: np.ndarray = field(repr=False)
    level: np.ndarray = field(repr=False)

    # ------------------------------------------------------------------ builders
    @classmethod
    def from_parent_table(
        cls, table: Mapping[Hashable, Hashable | None] | Iterable[tuple[Hashable, Hashable | None]]
    ) -> Hierarchy:
        """Build from ``{region: parent}`` pairs (the root's parent is ``None``).

        Accepts a mapping, an iterable of ``(region, parent)`` pairs, or a pandas
        DataFrame with columns ``region`` and ``parent`` (missing parent = root).
        Children keep the order in which they first appear.
        """
        pairs = _pairs_from_table(table)
        names = [str(r) for r, _ in pairs]
        if len(set(names)) != len(names):
            dup = sorted({n for n in names if names.count(n) > 1})
            raise DataValidationError("parent table", f"region names appear twice: {dup[:5]}")
        parents = [None if _is_missing(p) else str(p) for _, p in pairs]
        return cls._from_named_edges(names, parents)

    @classmethod
    def from_networkx(cls, graph, root: Hashable | None = None) -> Hierarchy:
        """Build from a networkx tree: a DiGraph arborescence (edges parent -> child) or an
        undirected tree together with ``root``."""
        import networkx as nx

        if graph.number_of_nodes() == 0:
            raise DataValidationError("graph", "has no nodes")
        if graph.is_directed():
            if not nx.is_arborescence(graph):
                raise DataValidationError("graph", "is not a tree directed from a single root (not an arborescence)")
            roots = [v for v, d in graph.in_degree() if d == 0]
            if root is not None and str(root) != str(roots[0]):
                raise DataValidationError("root", f"{root!r} is not the root {roots[0]!r}")
            tree = graph
            root = roots[0]
        else:
            if not nx.is_tree(graph):
                raise DataValidationError("graph", "is not a tree (it has a cycle or is disconnected)")
            if root is None or root not in graph:
                raise DataValidationError("root", f"must name a node of the undirected tree, got {root!r}")
            tree = nx.bfs_tree(graph, root)
        pairs = [(root, None)] + [(v, u) for u, v in nx.bfs_edges(tree, root)]
        return cls.from_parent_table(pairs)

    @classmethod
    def from_levels(cls, frame, columns: Sequence[str] | None = None, root: str | None = None):
        """Build from a table with one row per leaf and one column per level.

        ``columns`` lists the level columns from the top down (default: all columns).  A
        region is identified by its name, so names must be unique across the tree; if the
        top column has more than one distinct value, ``root`` names a region added above it.
        """
        columns = list(frame.columns if columns is None else columns)
        if not columns:
            raise DataValidationError("columns", "at least one level column is needed")
        missing = [c for c in columns if c not in frame.columns]
        if missing:
            raise DataValidationError("columns", f"not in the table: {missing}")
        data = frame[columns].astype(str)
        pairs: dict[str, str | None] = {}
        tops = list(dict.fromkeys(data[columns[0]]))
        if len(tops) > 1 or root is not None:
            if root is None:
                raise DataValidationError(
                    "root", f"column {columns[0]!r} has {len(tops)} values; name a root to join them"
                )
            pairs[str(root)] = None
            for t in tops:
                pairs[t] = str(root)
        else:
            pairs[tops[0]] = None
        for upper, lower in zip(columns[:-1], columns[1:], strict=False):
            for u, v in zip(data[upper], data[lower], strict=True):
                if v in pairs and pairs[v] != u:
                    raise DataValidationError(
                        f"column {lower!r}",
                        f"region {v!r} has two parents ({pairs[v]!r} and {u!r}); "
                        "names must be unique across the tree (prefix them with their parent)",
                    )
                pairs[v] = u
        return cls.from_parent_table(pairs)

    @classmethod
    def _from_named_edges(cls, names: list[str], parents: list[str | None]) -> Hierarchy:
        roots = [n for n, p in zip(names, parents, strict=True) if p is None]
        if len(roots) != 1:
            raise DataValidationError("parent table", f"must have exactly one root, found {len(roots)}: {roots[:5]}")
        known = set(names)
        children: dict[str, list[str]] = {n: [] for n in names}
        for n, p in zip(names, parents, strict=True):
            if p is None:
                continue
            if p not in known:
                raise DataValidationError("parent table", f"parent {p!r} of region {n!r} is not a region")
            if p == n:
                raise DataValidationError("parent table", f"region {n!r} is its own parent")
            children[p].append(n)
        order = [roots[0]]
        for name in order:  # breadth-first; the list grows while we walk it
            order.extend(children[name])
        if len(order) != len(names):
            unreachable = sorted(known - set(order))
            raise DataValidationError(
                "parent table", f"is not a tree: regions on a cycle or unreachable from the root: {unreachable[:5]}"
            )
        return cls._from_order(order, children)

    @classmethod
    def _from_order(cls, order: list[str], children: dict[str, list[str]]) -> Hierarchy:
        position = {n: i for i, n in enumerate(order)}
        count = np.array([len(children[n]) for n in order], dtype=np.int64)
        start = np.zeros(len(order), dtype=np.int64)
        parent = np.full(len(order), -1, dtype=np.int64)
        level = np.ones(len(order), dtype=np.int64)
        for i, n in enumerate(order):
            kids = children[n]
            if kids:
                start[i] = position[kids[0]]
                for k in kids:
                    parent[position[k]] = i
                    level[position[k]] = level[i] + 1
        return cls(tuple(order), parent, start, count, level)

    # ------------------------------------------------------------------ basic facts
    @property
    def n_regions(self) -> int:
        return len(self.names)

    @property
    def n_levels(self) -> int:
        """Depth of the deepest leaf (the paper's L)."""
        return int(self.level.max())

    @cached_property
    def index(self) -> dict[str, int]:
        """Region name -> canonical position."""
        return {n: i for i, n in enumerate(self.names)}

    @cached_property
    def is_leaf(self) -> np.ndarray:
        return self.child_count == 0

    @cached_property
    def leaves(self) -> np.ndarray:
        return np.flatnonzero(self.is_leaf)

    @cached_property
    def internal(self) -> np.ndarray:
        return np.flatnonzero(~self.is_leaf)

    @cached_property
    def level_bounds(self) -> np.ndarray:
        """``level_bounds[l-1] : level_bounds[l]`` is the slice of level ``l``."""
        return np.searchsorted(self.level, np.arange(1, self.n_levels + 2), side="left")

    def level_slice(self, level: int) -> slice:
        """Positions of the regions of ``level`` (1-based)."""
        if not 1 <= level <= self.n_levels:
            raise DataValidationError("level", f"must be in 1..{self.n_levels}, got {level}")
        b = self.level_bounds
        return slice(int(b[level - 1]), int(b[level]))

    def level_sizes(self) -> np.ndarray:
        """Number of regions per level, ``|R_l|`` for l = 1..L."""
        return np.diff(self.level_bounds)

    def children(self, i: int) -> np.ndarray:
        return np.arange(self.child_start[i], self.child_start[i] + self.child_count[i])

    @property
    def is_uniform_depth(self) -> bool:
        """True when every leaf sits at the deepest level, so every level partitions the data."""
        return bool(np.all(self.level[self.leaves] == self.n_levels))

    def require_uniform_depth(self, field: str = "hierarchy") -> None:
        if not self.is_uniform_depth:
            shallow = [self.names[i] for i in self.leaves if self.level[i] != self.n_levels]
            raise DataValidationError(
                field,
                f"every leaf must be at level {self.n_levels} so that each level partitions the "
                f"data; these leaves are shallower: {shallow[:5]}",
            )

    # ------------------------------------------------------------------ traversals
    @cached_property
    def postorder(self) -> np.ndarray:
        """Positions in post-order (children in their given order, then the parent)."""
        out: list[int] = []
        stack: list[tuple[int, bool]] = [(0, False)]
        while stack:
            node, expanded = stack.pop()
            if expanded:
                out.append(node)
                continue
            stack.append((node, True))
            for c in reversed(self.children(node).tolist()):
                stack.append((c, False))
        return np.asarray(out, dtype=np.int64)

    def to_networkx(self):
        """The tree as a networkx DiGraph with edges parent -> child and a ``level`` attribute."""
        import networkx as nx

        g = nx.DiGraph()
        for i, n in enumerate(self.names):
            g.add_node(n, level=int(self.level[i]))
        for i in range(1, self.n_regions):
            g.add_edge(self.names[self.parent[i]], self.names[i])
        return g

    # ------------------------------------------------------------------ aggregation
    def aggregate(self, leaf_values: np.ndarray) -> np.ndarray:
        """Values of every region from the values of the leaves (rows in leaf order).

        Sums are taken bottom-up, so a parent always equals the sum of its children.
        """
        leaf_values = np.asarray(leaf_values)
        if leaf_values.shape[0] != len(self.leaves):
            raise DataValidationError(
                "leaf values", f"need one row per leaf ({len(self.leaves)}), got {leaf_values.shape[0]}"
            )
        out = np.zeros((self.n_regions,) + leaf_values.shape[1:], dtype=leaf_values.dtype)
        out[self.leaves] = leaf_values
        for level in range(self.n_levels - 1, 0, -1):
            parents = np.arange(*self.level_slice(level).indices(self.n_regions))
            out[parents] = np.where(
                _expand(self.is_leaf[parents], out.ndim), out[parents], self.sum_children(out, parents)
            )
        return out

    def sum_children(self, values: np.ndarray, parents: np.ndarray | None = None) -> np.ndarray:
        """For each region in ``parents`` (default: all internal), the sum of its children's rows."""
        parents = self.internal if parents is None else np.asarray(parents)
        values = np.asarray(values)
        zero = np.zeros((1,) + values.shape[1:], dtype=values.dtype)
        csum = np.concatenate([zero, np.cumsum(values, axis=0)], axis=0)
        start = self.child_start[parents]
        stop = start + self.child_count[parents]
        return csum[stop] - csum[start]

    def consistency_residual(self, values: np.ndarray) -> np.ndarray:
        """``values[r] - sum of values[children of r]`` for every internal region."""
        values = np.asarray(values)
        return values[self.internal] - self.sum_children(values)

    def describe(self) -> str:
        sizes = ", ".join(str(int(k)) for k in self.level_sizes())
        return f"Hierarchy({self.n_regions} regions, {self.n_levels} levels: {sizes})"


def _expand(mask: np.ndarray, ndim: int) -> np.ndarray:
    return mask.reshape(mask.shape + (1,) * (ndim - 1))


def _is_missing(value) -> bool:
    if value is None:
        return True
    try:
        return bool(np.isnan(value))
    except (TypeError, ValueError):
        return isinstance(value, str) and value == ""


def _pairs_from_table(table) -> list[tuple[Hashable, Hashable | None]]:
    if hasattr(table, "columns"):  # pandas DataFrame
        for col in ("region", "parent"):
            if col not in table.columns:
                raise DataValidationError("parent table", f"needs columns 'region' and 'parent'; missing {col!r}")
        return list(zip(table["region"], table["parent"], strict=True))
    if isinstance(table, Mapping):
        return list(table.items())
    pairs = list(table)
    for p in pairs:
        if not isinstance(p, tuple | list) or len(p) != 2:
            raise DataValidationError("parent table", f"entries must be (region, parent) pairs, got {p!r}")
    return [tuple(p) for p in pairs]
