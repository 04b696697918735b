"""Reading a drawn or saved figure back: colours by label, tick labels, overlaps, reference lines."""

from __future__ import annotations

import itertools
import xml.etree.ElementTree as ET

from matplotlib.colors import to_hex

SVG = "{http://www.w3.org/2000/svg}"


def drawn(fig):
    """An Agg renderer after drawing ``fig`` (a plain Figure has no canvas of its own)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    return canvas.get_renderer()


def colours(fig) -> dict[str, str]:
    """label -> colour (hex) of every labelled line and error bar drawn on the figure's axes."""
    out = {}
    for ax in fig.axes:
        for line in ax.get_lines():
            if not line.get_label().startswith("_"):
                out.setdefault(line.get_label(), to_hex(line.get_color()))
        for container in ax.containers:  # error bars: the data line carries the colour
            label, lines = container.get_label(), getattr(container, "lines", None)
            if lines and lines[0] is not None and not label.startswith("_"):
                out.setdefault(label, to_hex(lines[0].get_color()))
    return out


def visible_tick_labels(ax, axis: str = "y") -> list[str]:
    """The texts of the major tick labels inside the axis limits, after drawing."""
    drawn(ax.figure)
    target = ax.yaxis if axis == "y" else ax.xaxis
    low, high = sorted(ax.get_ylim() if axis == "y" else ax.get_xlim())
    return [
        t.get_text()
        for tick, t in zip(target.get_majorticklocs(), target.get_majorticklabels(), strict=True)
        if low * (1 - 1e-9) <= tick <= high * (1 + 1e-9) and t.get_text()
    ]


def readable(text: str) -> bool:
    """A plain number (1,000 or 0.05): no mathtext, no 1e3, no 10^k."""
    if set(text) & set("$^e×"):
        return False
    try:
        return float(text.replace(",", "")) > 0
    except ValueError:
        return False


def overlapping_x_labels(ax) -> list[tuple[str, str]]:
    """Pairs of x tick labels (major and minor) whose drawn boxes overlap."""
    renderer = drawn(ax.figure)
    labels = [t for t in ax.get_xticklabels(which="both") if t.get_text() and t.get_visible()]
    boxes = [(t.get_text(), t.get_window_extent(renderer)) for t in labels]
    return [(a, b) for (a, x), (b, y) in itertools.combinations(boxes, 2) if x.overlaps(y)]


def reference_styles(svg: bytes) -> list[tuple[str, str]]:
    """(stroke colour, dash pattern) of every reference line in a saved SVG."""
    out = []
    for group in ET.fromstring(svg).iter():
        if group.get("id", "").startswith("reference"):
            path = next(group.iter(f"{SVG}path"))
            style = dict(item.split(":", 1) for item in path.get("style", "").replace(" ", "").split(";") if item)
            out.append((style.get("stroke", ""), style.get("stroke-dasharray", "solid")))
    return out
