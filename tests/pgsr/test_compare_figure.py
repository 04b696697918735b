"""``dpmodels compare pgsr``'s figure and its default instance: the ceiling marked, readable log
bars, and a default on which the mechanisms differ instead of all sitting at the ceiling."""

import xml.etree.ElementTree as ET

import numpy as np
import pytest
from figure_checks import readable, reference_styles, visible_tick_labels

import dpmodels.instances as instances
from dpmodels.cli import main
from dpmodels.instances.pgsr import taxi_like
from dpmodels.pgsr.commands import COMPARE_INSTANCE, COMPARE_SETTINGS
from dpmodels.pgsr.compare import compare_mechanisms, plot_comparison, table7

FAST = ["M_H^dp", "M_c^dp", "M_c^ch", "TopDown"]


@pytest.fixture(scope="module")
def small_runs():
    data = taxi_like(seed=0, scale=0.1, N=6)
    return data, compare_mechanisms(data, (0.5, 1.0), runs=2, mechanisms=["M_H^dp", "TopDown"], seed=1)


def _references(ax) -> dict[float, str]:
    return {line.get_ydata()[0]: line.get_label() for line in ax.get_lines() if str(line.get_gid()).startswith("ref")}


def test_the_figure_marks_the_ceiling_in_both_error_panels(small_runs, tmp_path):
    data, runs = small_runs
    path = tmp_path / "pgsr.svg"
    fig = plot_comparison(runs, path, title=data.name)
    total, levels, _ = fig.axes[:3]
    ceiling, L = 2 * data.G, data.hierarchy.n_levels
    assert set(_references(levels)) == {ceiling} and set(_references(total)) == {ceiling * L}
    assert "2G" in _references(levels)[ceiling]
    assert levels.get_ylim()[1] >= ceiling and total.get_ylim()[1] >= ceiling * L  # the ceiling is in view
    assert reference_styles(path.read_bytes())  # and in the saved file
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert legend[: len(set(runs["mechanism"]))] == list(dict.fromkeys(runs["mechanism"]))


def test_without_G_there_is_no_ceiling_to_mark(small_runs):
    _, runs = small_runs
    fig = plot_comparison(runs.drop(columns="G"), None)
    assert not any(_references(ax) for ax in fig.axes)


def test_log_bars_start_at_a_decade_below_the_smallest_bar_and_the_top_is_labelled(small_runs):
    _, runs = small_runs
    fig = plot_comparison(runs, None)
    levels = fig.axes[1]
    heights = [p.get_height() for p in levels.patches]
    low, high = levels.get_ylim()
    assert np.log10(low) == pytest.approx(round(np.log10(low))) and min(heights) >= 2 * low
    labels = visible_tick_labels(levels)
    assert all(readable(t) for t in labels), labels
    assert float(labels[-1].replace(",", "")) == pytest.approx(high)  # the upper end is labelled


def test_the_default_instance_shows_differences_instead_of_a_ceiling():
    data = instances.from_settings(COMPARE_INSTANCE, {}, COMPARE_SETTINGS)
    table = table7(compare_mechanisms(data, (1.0,), runs=2, mechanisms=FAST, seed=0))
    ceiling = 2 * data.G
    for level in [c for c in table.columns if c.startswith("L1 level")]:
        errors = table[level]
        assert errors.min() < 0.25 * ceiling, level  # the best mechanism is far from the ceiling
        assert errors.max() > 1.5 * errors.min(), level  # and the mechanisms differ


def test_the_command_writes_the_figure_in_the_suffix_format(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    argv = ["compare", "pgsr", "--instance", "pgsr/running-example", "--runs", "1", "--epsilon", "1"]
    argv += ["--mechanisms", "M_H^dp", "TopDown", "--no-progress"]
    assert main([*argv, "--plot", "fig.pdf"]) == 0
    assert (tmp_path / "fig.pdf").read_bytes().startswith(b"%PDF-")
    assert main([*argv, "--plot", "fig.svg"]) == 0
    assert ET.parse(tmp_path / "fig.svg").getroot().tag.endswith("svg")
