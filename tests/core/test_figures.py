"""The shared figure style: formats by suffix, one colour per method, readable log axes, legends."""

import itertools
import math
import subprocess
import sys
import xml.etree.ElementTree as ET

import numpy as np
import pandas as pd
import pytest
from figure_checks import colours, overlapping_x_labels, readable, reference_styles, visible_tick_labels

from dpmodels.core.commands import OUTPUT_SUFFIXES
from dpmodels.core.errors import DataValidationError
from dpmodels.core.figures import (
    FIGURE_FORMATS,
    METHOD_STYLES,
    PALETTE,
    epsilon_axis,
    log_axis,
    method_style,
    new_figure,
    reference_line,
    save_figure,
    shared_legend,
)

MAGIC = {".png": lambda b: b.startswith(b"\x89PNG\r\n\x1a\n"), ".pdf": lambda b: b.startswith(b"%PDF-")}


def _small_figure():
    fig, ax = new_figure(figsize=(3, 2))
    ax.plot([1, 2, 3], [1, 10, 100], **method_style("M_H^dp"))
    return fig


# ---------------------------------------------------------------------- formats
@pytest.mark.parametrize("suffix", [".png", ".pdf", ".svg", ".PDF"])
def test_every_suffix_writes_a_valid_file_of_its_format(tmp_path, suffix):
    path = save_figure(_small_figure(), tmp_path / f"fig{suffix}")
    data = path.read_bytes()
    if suffix.lower() == ".svg":
        root = ET.fromstring(data)
        assert root.tag.rsplit("}", 1)[-1] == "svg"
    else:
        assert MAGIC[suffix.lower()](data)


def test_vector_formats_are_reproducible(tmp_path):
    for suffix in (".pdf", ".svg"):
        a = save_figure(_small_figure(), tmp_path / f"a{suffix}").read_bytes()
        b = save_figure(_small_figure(), tmp_path / f"b{suffix}").read_bytes()
        assert a == b  # no creation date, fixed SVG ids


@pytest.mark.parametrize("name", ["fig.jpg", "fig.eps", "fig", "fig.png.txt"])
def test_a_bad_suffix_fails_naming_the_option_and_writes_nothing(tmp_path, name):
    with pytest.raises(DataValidationError, match="--plot") as err:
        save_figure(_small_figure(), tmp_path / name)
    assert ".png, .pdf, .svg" in str(err.value)
    with pytest.raises(DataValidationError, match="--figure"):
        save_figure(_small_figure(), tmp_path / name, option="--figure")
    assert not list(tmp_path.iterdir())


def test_the_plot_option_accepts_exactly_the_formats_written():
    assert set(OUTPUT_SUFFIXES["plot"]) == set(FIGURE_FORMATS)


def test_importing_the_module_does_not_import_matplotlib():
    code = "import sys, dpmodels.core.figures; print('matplotlib' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


# ---------------------------------------------------------------------- colours
def _family_methods() -> dict[str, list[str]]:
    """Every method label each family plots, read from the families' own declarations."""
    from dpmodels.facility.mechanism import BASELINES
    from dpmodels.metricdp.bench.sweep import SWEEP_METHODS
    from dpmodels.metricdp.compare import METHODS
    from dpmodels.pgsr import MECHANISMS
    from dpmodels.topdown.compare import CONFIGS

    submodular = ["greedy", "continuous greedy", "private CG (Alg. 1)", "Mitrovic private greedy"]
    return {
        "pgsr": list(MECHANISMS),
        "topdown": list(CONFIGS),
        "metricdp compare": list(METHODS),
        "metricdp sweep": list(SWEEP_METHODS),
        "facility": list(BASELINES),
        "submodular": submodular,
        "k-submodular": ["k-greedy", "Alg. 3", "Alg. 4"],
    }


def test_every_plotted_method_has_a_fixed_style_distinct_within_its_family():
    for family, names in _family_methods().items():
        missing = [n for n in names if n not in METHOD_STYLES]
        assert not missing, f"{family}: no fixed style for {missing}"
        colours = [METHOD_STYLES[n][0] for n in names]
        assert len(set(colours)) == len(colours), f"{family}: two methods share a colour"


def test_every_colour_is_from_the_colour_blind_safe_palette():
    assert {colour for colour, _ in METHOD_STYLES.values()} <= set(PALETTE.values())


def test_unknown_names_get_a_deterministic_style_independent_of_hash_seeds():
    code = (
        "from dpmodels.core.figures import method_style; s = method_style('my method'); print(s['color'], s['marker'])"
    )
    outs = set()
    for seed in ("0", "1", "12345"):
        env = {"PYTHONHASHSEED": seed, "PATH": ""}
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
        outs.add(proc.stdout.strip())
    style = method_style("my method")
    assert outs == {f"{style['color']} {style['marker']}"}
    assert style["color"] in PALETTE.values()
    assert len({method_style(f"method {k}")["color"] for k in range(40)}) > 3  # not one colour for all


def _pgsr_runs(mechanisms, G=100):
    rows = []
    for eps, run, name in itertools.product((0.5, 1.0), (0, 1), mechanisms):
        rows.append(
            {"mechanism": name, "epsilon": eps, "run": run, "status": "optimal", "objective": 1.0}
            | {"seconds": 0.01 * (1 + run), "epsilon spent": eps, "#CV": 0, "#faithfulness": 0, "G": G}
            | {"L1 level 1": 10.0 / eps, "L1 level 2": 40.0 / eps + run, "L1 total": 50.0 / eps + run}
        )
    return pd.DataFrame(rows)


def _topdown_runs(configs):
    rows = []
    for eps, run, name, level in itertools.product((0.5, 1.0), (0, 1), configs, (1, 2)):
        rows.append(
            {"config": name, "epsilon": eps, "run": run, "level": level, "L1 error": 100.0 / eps}
            | {"workload MAE": 2.0 / eps, "seconds": 0.02, "invariant totals": level == 1}
        )
    return pd.DataFrame(rows)


def test_the_same_method_has_the_same_colour_in_two_families_figures(tmp_path):
    from dpmodels.facility.compare import COST, LP, OPT, RATIO, plot_compare
    from dpmodels.pgsr.compare import plot_comparison
    from dpmodels.submodular.compare import RATIO_MEAN, RATIO_SD, plot_curve
    from dpmodels.topdown.compare_report import plot_topdown

    pgsr = colours(plot_comparison(_pgsr_runs(["M_H^dp", "TopDown", "my method"]), tmp_path / "pgsr.png"))
    topdown = colours(plot_topdown(_topdown_runs(["TopDown", "no edits", "my method"]), tmp_path / "td.svg"))
    assert pgsr["TopDown"] == topdown["TopDown"] == METHOD_STYLES["TopDown"][0].lower()
    assert pgsr["my method"] == topdown["my method"] == method_style("my method")["color"].lower()
    assert pgsr["M_H^dp"] != pgsr["TopDown"]

    facility = pd.DataFrame(
        [
            {"n": 20, "algorithm": alg, "epsilon": e, RATIO: 1 + 1 / e, LP: 9.0, OPT: 10.0, COST: 12.0}
            for alg in ("dp", "my method")
            for e in (0.5, 1.0, 2.0)
        ]
    )
    curve = pd.DataFrame(
        [{"method": "my method", "epsilon": e, RATIO_MEAN: 0.8, RATIO_SD: 0.05} for e in (0.5, 5.0)]
        + [{"method": "greedy", "epsilon": math.inf, RATIO_MEAN: 0.95, RATIO_SD: np.nan}]
    )
    fac = colours(plot_compare(facility, tmp_path / "fac.pdf"))
    sub = colours(plot_curve(curve, tmp_path / "sub.png"))
    mine = method_style("my method")["color"].lower()
    assert [c for label, c in fac.items() if "my method" in label] == [mine]
    assert sub["my method"] == mine


# ---------------------------------------------------------------------- axes


@pytest.mark.parametrize(
    "values, bars",
    [
        ([0.0035, 0.3], False),
        ([58.0, 430.0, 28_711.0], True),
        ([108.0, 546.0], True),  # the old default's bars: the axis started at 100, the smallest bar looked empty
        ([1e-3, 2.0, 7e4], False),
        ([250.0, 251.0], False),
    ],
)
def test_log_axes_enclose_the_data_with_plain_labelled_decades(values, bars):
    fig, ax = new_figure(figsize=(3, 3))
    ax.bar(range(len(values)), values) if bars else ax.plot(values)
    low, high = log_axis(ax, values, bars=bars, include=[2 * max(values)])
    assert low <= min(values) and high >= 2 * max(values)
    for limit in (low, high):
        assert math.log10(limit) == pytest.approx(round(math.log10(limit)))  # decades, not an arbitrary 100 or 400
    if bars:
        assert min(values) / low >= 2  # the smallest bar is visible
    labels = visible_tick_labels(ax)
    assert len(labels) >= 2
    assert all(readable(text) for text in labels), labels  # no 10^k or 1e3 notation
    assert float(labels[0].replace(",", "")) == pytest.approx(low)  # the floor is labelled


def test_log_axis_refuses_a_bad_axis_name():
    fig, ax = new_figure(figsize=(3, 3))
    with pytest.raises(DataValidationError, match="axis"):
        log_axis(ax, [1, 10], axis="z")


@pytest.mark.parametrize("epsilons", [[0.25, 0.5, 1, 2, 5], [0.9, 1.0, 1.1, 1.2, 5], [0.01, 0.1, 1, 10, 100]])
def test_epsilon_labels_are_the_budgets_and_never_overprint(epsilons):
    fig, ax = new_figure(figsize=(3, 2.5))
    ax.plot(epsilons, np.ones(len(epsilons)))
    epsilon_axis(ax, epsilons)
    assert not overlapping_x_labels(ax)
    shown = [t.get_text() for t in ax.get_xticklabels() if t.get_text()]
    assert shown[0] == f"{min(epsilons):g}" and set(shown) <= {f"{e:g}" for e in epsilons}
    assert ax.get_xlim()[0] < min(epsilons) and ax.get_xlim()[1] > max(epsilons)


def test_reference_lines_on_one_axes_never_share_a_style(tmp_path):
    fig, ax = new_figure(figsize=(3, 2))
    for y in range(5):
        reference_line(ax, y, f"reference {y}")
    styles = reference_styles(save_figure(fig, tmp_path / "refs.svg").read_bytes())
    assert len(styles) == 5 and len(set(styles)) == 5, styles
    assert all(dashes != "solid" for _, dashes in styles)  # none looks like a method's line


def test_a_shared_legend_lists_each_label_once_methods_before_references():
    fig, axes = new_figure(1, 2, figsize=(5, 2))
    for ax in axes:
        reference_line(ax, 1.0, "bound")
        for name in ("M_H^dp", "M_c^dp"):
            ax.plot([1, 2], [1, 2], **method_style(name))
    legend = shared_legend(fig, axes)
    assert [t.get_text() for t in legend.get_texts()] == ["M_H^dp", "M_c^dp", "bound"]
    assert not any(ax.get_legend() for ax in axes)
