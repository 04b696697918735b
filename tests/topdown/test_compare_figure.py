"""The TopDown comparison's figure: one legend, readable log axes, one colour per configuration."""

import itertools

import pandas as pd
from figure_checks import colours, readable, visible_tick_labels

from dpmodels.core.figures import method_style
from dpmodels.topdown.compare import DEFAULT_CONFIGS
from dpmodels.topdown.compare_report import plot_topdown

LEVELS = (1, 2, 3)


def _runs() -> pd.DataFrame:
    rows = []
    for eps, run, k, level in itertools.product((0.5, 1.0, 4.0), (0, 1), range(3), LEVELS):
        rows.append(
            {"config": DEFAULT_CONFIGS[k], "epsilon": eps, "run": run, "level": level}
            | {"L1 error": (60 + 300 * level) / eps + 7 * k, "workload MAE": 1.5 / eps + 0.1 * k}
            | {"seconds": 0.01 * level * (k + 1), "invariant totals": level == 1}
        )
    return pd.DataFrame(rows)


def test_one_shared_legend_and_readable_log_axes(tmp_path):
    path = tmp_path / "topdown.pdf"
    fig = plot_topdown(_runs(), path, title="synthetic")
    assert path.read_bytes().startswith(b"%PDF-")
    assert len(fig.legends) == 1 and not any(ax.get_legend() for ax in fig.axes)
    assert [t.get_text() for t in fig.legends[0].get_texts()] == list(DEFAULT_CONFIGS)
    for ax in fig.axes[: len(LEVELS)]:
        labels = visible_tick_labels(ax)
        assert len(labels) >= 2 and all(readable(t) for t in labels), labels
        assert "(persons)" in ax.get_ylabel()
    drawn = colours(fig)
    assert all(drawn[name] == method_style(name)["color"].lower() for name in DEFAULT_CONFIGS)
