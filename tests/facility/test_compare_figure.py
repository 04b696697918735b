"""The facility comparison's figure: budgets on the x axis never overprint, one colour per algorithm."""

import pytest
from figure_checks import colours, overlapping_x_labels

from dpmodels.core.figures import method_style
from dpmodels.facility.compare import RATIO, compare_facility, plot_compare


@pytest.fixture(scope="module")
def table():
    return compare_facility(
        epsilons=(0.25, 0.5, 1.0, 2.0, 5.0), sizes=(12, 16), runs=2, seed=3, algorithms=("dp", "base")
    )


def test_x_labels_are_the_budgets_and_do_not_overprint(table, tmp_path):
    fig = plot_compare(table, tmp_path / "facility.png")
    ax = fig.axes[0]
    assert not overlapping_x_labels(ax)  # matplotlib's own log labels (3x10^-1, 4x10^-1 ...) did
    assert [t.get_text() for t in ax.get_xticklabels() if t.get_text()] == ["0.25", "0.5", "1", "2", "5"]
    assert "ratio" in ax.get_ylabel() and "ε" in ax.get_xlabel()


def test_one_colour_per_algorithm_one_line_style_per_size(table):
    fig = plot_compare(table, None)
    drawn = colours(fig)
    lines = {line.get_label(): line for line in fig.axes[0].get_lines()}
    for label, colour in drawn.items():
        if label.startswith("n="):
            algorithm = label.split()[1]
            assert colour == method_style(algorithm)["color"].lower()
    by_size = {label.split()[0]: lines[label].get_linestyle() for label in lines if label.startswith("n=")}
    assert len(set(by_size.values())) == len(set(table["n"]))
    assert table[RATIO].notna().all()
