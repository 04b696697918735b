"""The submodular privacy-utility figure: every reference line has its own style."""

import math

import pandas as pd
from figure_checks import reference_styles

from dpmodels.submodular.compare import RATIO_MEAN, RATIO_SD, plot_curve


def test_the_non_private_methods_and_the_guarantee_have_distinct_line_styles(tmp_path):
    rows = [{"method": "greedy", "epsilon": math.inf, RATIO_MEAN: 0.97, RATIO_SD: float("nan")}]
    rows += [{"method": "continuous greedy", "epsilon": math.inf, RATIO_MEAN: 0.9, RATIO_SD: 0.01}]
    rows += [
        {"method": m, "epsilon": e, RATIO_MEAN: 0.7 + 0.02 * k, RATIO_SD: 0.05}
        for m in ("private CG (Alg. 1)", "Mitrovic private greedy")
        for k, e in enumerate((0.5, 5.0))
    ]
    path = tmp_path / "curve.svg"
    fig = plot_curve(pd.DataFrame(rows), path)
    styles = reference_styles(path.read_bytes())
    assert len(styles) == 3 and len({dashes for _, dashes in styles}) == 3, styles  # greedy, CG, 1 - 1/e
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert {"greedy (non-private)", "continuous greedy (non-private)", "1 - 1/e (guarantee)"} <= set(labels)
    assert [t.get_text() for t in fig.axes[0].get_xticklabels() if t.get_text()] == ["0.5", "5"]
