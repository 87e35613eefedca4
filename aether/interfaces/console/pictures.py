"""Geometry of the console's pictures, drawn as SVG by the templates (text escaped there).

The entity graph: the entities a query names at the centre, each further hop on a wider
ring. Bar charts: one bar per day, scaled to the largest.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

__all__ = ["Bar", "Chart", "Edge", "GraphPicture", "Node", "bars", "chart", "graph_picture"]

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


PLOT_TOP = 22.0
"""The plot's top edge in a chart: above it only the unit's label."""


@dataclass
class Chart:
    """A bar chart with its scale: bars, the value axis's ticks, the unit, the plot's box.

    Attributes:
        bars: one per label.
        ticks: ``(y, text)`` of the value axis (0, the middle, the top).
        unit: what the values count (``tokens``, ``USD``...).
        left: where the plot starts (the axis's labels are left of it).
        bottom: the baseline's y.
        top: the highest bar's top: the unit's label sits above it, clear of the top tick.
    """

    bars: list[Bar]
    ticks: list[tuple[float, str]]
    unit: str
    left: float
    bottom: float
    width: float
    top: float = PLOT_TOP


def _nice(top: float) -> float:
    """The smallest of 1, 2, 2.5, 5 times a power of ten that is at least ``top``."""
    if top <= 0:
        return 1.0
    power = float(10 ** math.floor(math.log10(top)))
    for step in (1, 2, 2.5, 5, 10):
        if step * power >= top:
            return step * power
    return 10 * power


def _tick(value: float) -> str:
    if value >= 1000:
        return f"{value / 1000:g}k"
    return f"{value:g}" if value >= 0.01 or value == 0 else f"{value:.1e}"


def bars(values: Sequence[tuple[str, float]], width: int = 700, height: int = 160) -> list[Bar]:
    """Bars for ``(label, value)`` pairs, scaled to the largest value."""
    return chart(values, "", width, height).bars


def chart(
    values: Sequence[tuple[str, float]], unit: str, width: int = 700, height: int = 160
) -> Chart:
    """A bar chart of ``(label, value)`` pairs on a value axis from 0 to a round top."""
    left, bottom = 48.0, float(height - 18)
    top = _nice(max((v for _, v in values), default=0.0))
    plot = width - left
    slot = plot / max(1, len(values))
    out = []
    for i, (label, value) in enumerate(values):
        h = (bottom - PLOT_TOP) * value / top
        out.append(
            Bar(label, value, round(left + i * slot + 2, 1), round(bottom - h, 1), slot - 4, h)
        )
    ticks = [(round(bottom - (bottom - PLOT_TOP) * f, 1), _tick(top * f)) for f in (0.0, 0.5, 1.0)]
    return Chart(out, ticks, unit, left, bottom, float(width))
