"""One look for every figure the commands draw: colours, markers, log axes, legends and formats.

A paper's figures must agree with each other: a method keeps its colour and marker in every
figure of every family (:data:`METHOD_STYLES`, a fixed map over the colour-blind-safe palette of
Okabe and Ito plus Paul Tol's muted colours; a name it lacks gets a deterministic fallback), two
reference lines on one axes never share a line style (:func:`reference_line`), log axes are
labelled with plain numbers at decades that enclose the data (:func:`log_axis`), the privacy
budgets on an x axis are labelled as given and never overprint (:func:`epsilon_axis`), and a
multi-panel figure has one legend (:func:`shared_legend`).  :func:`save_figure` writes PNG, PDF
or SVG, chosen by the path's suffix.

matplotlib is imported inside the functions only: importing this module costs nothing.
"""

from __future__ import annotations

import hashlib
import math
from contextlib import contextmanager
from pathlib import Path

from .axes import epsilon_axis, log_axis, plain_number
from .errors import DataValidationError

__all__ = [
    "PALETTE",
    "METHOD_STYLES",
    "REFERENCE_STYLES",
    "FIGURE_FORMATS",
    "method_style",
    "new_figure",
    "figure_style",
    "reference_line",
    "plain_number",
    "log_axis",
    "epsilon_axis",
    "shared_legend",
    "save_figure",
]

#: Okabe & Ito (2008) colour-blind-safe colours, then Paul Tol's muted ones for larger families.
PALETTE = {
    "blue": "#0072B2",
    "vermillion": "#D55E00",
    "green": "#009E73",
    "orange": "#E69F00",
    "sky": "#56B4E9",
    "purple": "#CC79A7",
    "indigo": "#332288",
    "wine": "#882255",
    "teal": "#44AA99",
    "olive": "#999933",
    "black": "#000000",
    "grey": "#777777",
}


def _style(colour: str, marker: str) -> tuple[str, str]:
    return PALETTE[colour], marker


#: Colour and marker of every method the five families plot (distinct within each family; the same
#: algorithm under two names, e.g. HiGHS's simplex as "full LP simplex" and "highs-simplex", shares
#: one).  Non-private references are black or grey.
METHOD_STYLES: dict[str, tuple[str, str]] = {
    # pgsr (dpmodels.pgsr.postprocessing.MECHANISMS)
    "M_H": _style("indigo", "s"),
    "M_H^r": _style("sky", "v"),
    "M_H^dp": _style("blue", "o"),
    "M_dp^OP": _style("teal", "P"),
    "M_c": _style("wine", "s"),
    "M_c^r": _style("orange", "v"),
    "M_c^dp": _style("vermillion", "o"),
    "M_c^ch": _style("purple", "D"),
    "TopDown": _style("green", "^"),
    # topdown (dpmodels.topdown.compare.CONFIGS)
    "L2 clarabel + LP-first highs": _style("blue", "o"),
    "L2 clarabel + flow rounder": _style("orange", "s"),
    "no edits": _style("green", "^"),
    "L2 highs + LP-first highs": _style("sky", "v"),
    "auto": _style("indigo", "P"),
    "paper weights": _style("purple", "D"),
    "paper objective": _style("vermillion", "X"),
    "query rounder": _style("teal", "<"),
    # metricdp (compare.METHODS, bench.sweep.SWEEP_METHODS)
    "full LP simplex": _style("blue", "s"),
    "full LP ipm": _style("sky", "v"),
    "structured IPM": _style("vermillion", "o"),
    "Benders k-m-DV": _style("green", "^"),
    "Benders k-m-rec": _style("teal", "<"),
    "Benders k-m-adj": _style("olive", ">"),
    "Benders BSC": _style("wine", "D"),
    "exponential mechanism": _style("purple", "X"),
    "highs-simplex": _style("blue", "s"),
    "highs-ipm": _style("sky", "v"),
    "highs-pdlp": _style("indigo", "P"),
    "mdp_ipm": _style("vermillion", "o"),
    "mdp_benders": _style("green", "^"),
    # facility (dpmodels.facility.mechanism.BASELINES)
    "dp": _style("vermillion", "o"),
    "base": _style("black", "s"),
    "open_all_client_locations": _style("grey", "x"),
    "dp_uniform_noise": _style("orange", "v"),
    "dp_all_marked": _style("purple", "D"),
    "gupta_style": _style("teal", "^"),
    # submodular (dpmodels.submodular.compare)
    "greedy": _style("black", "s"),
    "continuous greedy": _style("grey", "D"),
    "private CG (Alg. 1)": _style("vermillion", "o"),
    "Mitrovic private greedy": _style("blue", "^"),
    "k-greedy": _style("black", "s"),
    "Alg. 3": _style("vermillion", "o"),
    "Alg. 4": _style("orange", "v"),
}

_FALLBACK_COLOURS = tuple(v for k, v in PALETTE.items() if k not in ("black", "grey"))
_FALLBACK_MARKERS = ("o", "s", "^", "v", "D", "P", "X", "<", ">")

#: Line styles of reference lines (bounds, optima, non-private baselines), in the order an axes
#: takes them: the k-th reference line on an axes gets the k-th, so no two share one.
REFERENCE_STYLES = (
    {"linestyle": "--", "color": PALETTE["black"]},
    {"linestyle": "-.", "color": PALETTE["grey"]},
    {"linestyle": ":", "color": PALETTE["black"]},
    {"linestyle": (0, (5, 2, 1, 2, 1, 2)), "color": PALETTE["grey"]},
    {"linestyle": (0, (1, 3)), "color": PALETTE["grey"]},
)

#: The formats :func:`save_figure` writes, by suffix (the ``--plot`` options accept these).
FIGURE_FORMATS = {".png": "png", ".pdf": "pdf", ".svg": "svg"}

#: The look of every figure: small type, a light grid, fonts kept as text in SVG and embedded as
#: TrueType in PDF (journals refuse Type 3 fonts), and the palette as the default cycle.
_RC = {
    "font.size": 9,
    "axes.titlesize": 10,
    "axes.labelsize": 9,
    "legend.fontsize": 8,
    "xtick.labelsize": 8,
    "ytick.labelsize": 8,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "grid.linewidth": 0.5,
    "lines.markersize": 5,
    "svg.fonttype": "none",
    "pdf.fonttype": 42,
}


def method_style(name: str) -> dict:
    """Keyword arguments (``color``, ``marker``, ``label``) that draw method ``name`` the same way
    in every figure.

    Parameters
    ----------
    name
        A method label; one missing from :data:`METHOD_STYLES` gets a colour and marker from a
        hash of its text (the same in every run and figure, not necessarily unique).
    """
    if name in METHOD_STYLES:
        colour, marker = METHOD_STYLES[name]
    else:
        digest = int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big")
        colour = _FALLBACK_COLOURS[digest % len(_FALLBACK_COLOURS)]
        marker = _FALLBACK_MARKERS[(digest // len(_FALLBACK_COLOURS)) % len(_FALLBACK_MARKERS)]
    return {"color": colour, "marker": marker, "label": name}


@contextmanager
def figure_style():
    """Context in which a figure is drawn with the shared look (fonts, grid, palette cycle)."""
    import matplotlib as mpl
    from cycler import cycler

    with mpl.rc_context(_RC | {"axes.prop_cycle": cycler(color=_FALLBACK_COLOURS)}):
        yield


def new_figure(nrows: int = 1, ncols: int = 1, *, figsize, interactive: bool = False, **subplots):
    """A figure and its axes (an array when ``squeeze=False`` or several panels), laid out by
    matplotlib's constrained layout (room kept for a legend outside the panels).

    Parameters
    ----------
    nrows, ncols
        The grid of panels.
    figsize
        Width and height in inches.
    interactive
        True: made by pyplot, so a notebook shows it; False (a figure to save): a plain
        ``Figure`` that touches neither pyplot's state nor its backend.
    **subplots
        Passed to ``subplots`` (``sharey``, ``squeeze`` ...).
    """
    if interactive:
        import matplotlib.pyplot as plt

        return plt.subplots(nrows, ncols, figsize=figsize, layout="constrained", **subplots)
    from matplotlib.figure import Figure

    fig = Figure(figsize=figsize, layout="constrained")
    return fig, fig.subplots(nrows, ncols, **subplots)


def reference_line(ax, value: float, label: str, *, color: str | None = None, vertical: bool = False):
    """A horizontal (or vertical) reference line whose line style no other reference line on
    ``ax`` has (the k-th one drawn gets ``REFERENCE_STYLES[k]``).

    Parameters
    ----------
    ax
        The axes.
    value
        Where the line is, in data units.
    label
        Its legend entry.
    color
        Overrides the style's colour (e.g. a non-private method's own colour); the line style
        still tells it apart.
    vertical
        Draw at ``x = value`` instead of ``y = value``.
    """
    taken = sum(1 for line in ax.get_lines() if _is_reference(line))
    style = dict(REFERENCE_STYLES[taken % len(REFERENCE_STYLES)])
    if color is not None:
        style["color"] = color
    draw = ax.axvline if vertical else ax.axhline
    return draw(value, lw=1.1, label=label, gid=f"reference-{taken}", zorder=1.5, **style)


def shared_legend(fig, axes, *, ncols: int | None = None, loc: str = "outside lower center"):
    """One legend for every panel: each label once, methods in the order first drawn, then the
    reference lines.

    Parameters
    ----------
    fig
        The figure (made with a constrained layout, see :func:`new_figure`).
    axes
        The panels whose entries it collects (any iterable, e.g. a 2-D array).
    ncols
        Columns of the legend (default: one row of up to 8 entries, else two rows).
    loc
        Where: ``"outside lower center"`` puts it below the panels.
    """
    import numpy as np

    entries: dict[str, object] = {}
    for ax in np.ravel(axes):
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            if not label.startswith("_"):
                entries.setdefault(label, handle)
    if not entries:
        return None
    order = sorted(entries, key=lambda label: _is_reference(entries[label]))  # methods first, then references
    ncols = ncols or (len(order) if len(order) <= 8 else math.ceil(len(order) / 2))
    return fig.legend([entries[label] for label in order], order, loc=loc, ncols=ncols, frameon=False)


def _is_reference(artist) -> bool:
    """Whether ``artist`` was drawn by :func:`reference_line` (its gid says so)."""
    return str(getattr(artist, "get_gid", lambda: None)() or "").startswith("reference")


def save_figure(fig, path, *, option: str = "--plot") -> Path:
    """Write ``fig`` as PNG, PDF or SVG, chosen by the suffix of ``path``.

    PDF and SVG carry no creation date, so the same figure gives the same file.

    Parameters
    ----------
    fig
        The figure.
    path
        Where; its suffix must be one of :data:`FIGURE_FORMATS`.
    option
        The option that named the path, for the error message.

    Returns
    -------
    Path
        The path written.
    """
    import matplotlib as mpl

    path = Path(path)
    fmt = FIGURE_FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise DataValidationError(
            option, f"{path} must end in {', '.join(FIGURE_FORMATS)} (the suffix picks the format)"
        )
    metadata = {"png": {"Software": None}, "pdf": {"CreationDate": None}, "svg": {"Date": None}}[fmt]
    with mpl.rc_context({"svg.fonttype": "none", "pdf.fonttype": 42, "svg.hashsalt": "dpmodels"}):
        fig.savefig(path, format=fmt, dpi=150, metadata=metadata)
    return path
