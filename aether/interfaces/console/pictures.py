"""Geometry of the console's pictures, drawn as SVG by the templates (text escaped there).

The entity graph: the entities a query names at the centre, each further hop on a wider
ring. Bar charts: one bar per day, scaled to the largest.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

__all__ = ["Bar", "Edge", "GraphPicture", "Node", "bars", "graph_picture"]

WIDTH, HEIGHT = 900, 620
RING = 150.0


@dataclass
class Node:
    """An entity in the picture."""

    name: str
    x: float
    y: float
    hop: int


@dataclass
class Edge:
    """A relation in the picture (``retired``: superseded, drawn dashed)."""

    source: Node
    target: Node
    type: str
    retired: bool = False

    @property
    def mid(self) -> tuple[float, float]:
        """Where its label goes."""
        return (self.source.x + self.target.x) / 2, (self.source.y + self.target.y) / 2


@dataclass
class GraphPicture:
    """Nodes and edges with their coordinates."""

    width: int = WIDTH
    height: int = HEIGHT
    nodes: list[Node] = field(default_factory=list)
    edges: list[Edge] = field(default_factory=list)


def graph_picture(
    relations: Sequence[dict[str, object]], centre: Sequence[str], limit: int = 80
) -> GraphPicture:
    """Lay out relations (``source``, ``type``, ``target``, ``hop``, ``retired``) radially."""
    hops: dict[str, int] = {name: 0 for name in centre}
    for r in relations[: limit * 2]:
        for end in (str(r["source"]), str(r["target"])):
            hop = int(str(r.get("hop", 1)))
            hops[end] = min(hops.get(end, hop), hop)
    names = sorted(hops, key=lambda n: (hops[n], n))[:limit]
    rings: dict[int, list[str]] = {}
    for name in names:
        rings.setdefault(hops[name], []).append(name)
    cx, cy = WIDTH / 2, HEIGHT / 2
    nodes: dict[str, Node] = {}
    for hop, members in sorted(rings.items()):
        radius = 0.0 if hop == 0 and len(members) == 1 else RING * max(hop, 0.45)
        for i, name in enumerate(members):
            angle = 2 * math.pi * i / max(1, len(members)) + hop * 0.4
            x = cx + radius * math.cos(angle)
            y = cy + radius * math.sin(angle) * 0.8
            nodes[name] = Node(name, round(x, 1), round(y, 1), hop)
    edges = [
        Edge(
            nodes[str(r["source"])],
            nodes[str(r["target"])],
            str(r["type"]),
            bool(r.get("retired")),
        )
        for r in relations
        if str(r["source"]) in nodes and str(r["target"]) in nodes
    ]
    return GraphPicture(nodes=list(nodes.values()), edges=edges)


@dataclass
class Bar:
    """One bar of a chart."""

    label: str
    value: float
    x: float
    y: float
    width: float
    height: float


def bars(values: Sequence[tuple[str, float]], width: int = 700, height: int = 160) -> list[Bar]:
    """Bars for ``(label, value)`` pairs, scaled to the largest value."""
    if not values:
        return []
    top = max(v for _, v in values) or 1.0
    slot = width / len(values)
    out = []
    for i, (label, value) in enumerate(values):
        h = (height - 20) * value / top
        out.append(Bar(label, value, round(i * slot + 2, 1), round(height - h, 1), slot - 4, h))
    return out
