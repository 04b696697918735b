"""The metric-DP figures: bounds per iteration and the Fig. 6 sweep share the shared style."""

import numpy as np
import pandas as pd
from figure_checks import colours, readable, visible_tick_labels

from dpmodels.metricdp.bench.sweep import RULES, plot_sweep
from dpmodels.metricdp.compare import plot_bounds


def _history(n: int) -> pd.DataFrame:
    it = np.arange(1, n + 1)
    return pd.DataFrame({"iteration": it, "LB": 10 - 5 / it, "best UB": np.r_[np.inf, 10 + 5 / it[1:]]})


def test_the_same_algorithm_has_one_colour_in_both_figures(tmp_path):
    bounds = plot_bounds({"structured IPM": _history(8), "Benders k-m-DV": _history(5)}, tmp_path / "b.svg", 10.0)
    rows = [
        {"eps": 10.0, "N": n, "method": m, **{f"s to {rule}": 0.01 * n * (k + 1) for rule in RULES}}
        for n in (16, 64, 256)
        for k, m in enumerate(("highs-simplex", "mdp_ipm"))
    ]
    sweep = plot_sweep(pd.DataFrame(rows), tmp_path / "s.png")
    b, s = colours(bounds), colours(sweep)
    assert b["structured IPM: lower bound"] == s["mdp_ipm, ε = 10"]  # the same interior point
    assert b["structured IPM: lower bound"] != b["Benders k-m-DV: lower bound"]
    assert "units" in bounds.axes[0].get_ylabel() and "(s)" in sweep.axes[0].get_ylabel()
    for ax in sweep.axes:
        labels = visible_tick_labels(ax, "x")
        assert labels and all(readable(t) for t in labels), labels
