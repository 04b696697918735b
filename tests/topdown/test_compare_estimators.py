"""``compare topdown --estimators``: every estimator on the same noise, scored by independent code.

Cross-checks: TopDown's L1 errors equal those of the existing harness (``compare_topdown``, the
``auto`` configuration, same seeds: the same noise draw; with ``facts="shared"`` on the census
without its group-quarters facts and edits); per level the squared bias plus the
variance equals the mean squared error computed run by run; GLS's estimate keeps the invariant
totals; the command writes its CSV and figure.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from dpmodels import instances
from dpmodels.cli import main
from dpmodels.core.errors import DataValidationError
from dpmodels.topdown.compare import compare_topdown
from dpmodels.topdown.compare_estimators import ESTIMATORS, compare_estimators


def _census():
    return instances.generate(
        "topdown/synthetic", seed=1, fanout=(1, 2, 1, 1, 2), races=1, mean_block_population=6.0, edits=False
    )


def _check_comparison(names, facts):
    data = _census()
    found = compare_estimators(data, epsilons=(2,), runs=2, estimators=names, seed=5, facts=facts)
    runs = found.per_run
    assert set(runs["estimator"]) == set(names)
    assert len(runs) == len(names) * 2 * data.geography.n_levels
    if facts == "shared":  # every estimator gets the totals and zeros only
        data = replace(data, knowledge=replace(data.knowledge, gq=None, edits=()))
    harness = compare_topdown(data, epsilons=(2,), runs=2, configs=["auto"], seed=5)
    ours = runs[runs["estimator"] == "TopDown"].sort_values(["run", "level"])["L1 error"].to_numpy()
    np.testing.assert_allclose(ours, harness.sort_values(["run", "level"])["L1 error"].to_numpy())
    mse = runs.assign(mse=runs["RMSE/cell"] ** 2).groupby(["estimator", "level"])["mse"].mean()
    summary = found.summary.set_index(["estimator", "level"])
    np.testing.assert_allclose(
        (summary["bias^2/cell"] + summary["variance/cell"]).loc[mse.index], mse, rtol=1e-5, atol=1e-6
    )
    gls = summary.loc["GLS"]
    assert gls.loc[1, "total L1 error"] == pytest.approx(0.0, abs=1e-6)  # the invariant root total
    assert gls["CI coverage"].between(0, 1).all()
    others = summary[summary.index.get_level_values("estimator") != "GLS"]
    assert others["CI coverage"].isna().all()
    return summary


def test_gls_and_topdown_on_the_same_noise_agree_with_the_harness_and_their_own_summary():
    _check_comparison(["GLS", "TopDown"], "all")


@pytest.mark.slow
def test_every_estimator_on_the_same_noise():
    summary = _check_comparison(list(ESTIMATORS), "shared")
    pgsr = summary.loc["PGSR DP"]
    assert pgsr.loc[1, "total L1 error"] == pytest.approx(0.0, abs=1e-9)  # Model 1 keeps G at the root
    assert (pgsr["negative cells"] == 0).all()


def test_unknown_estimators_are_refused():
    with pytest.raises(DataValidationError, match="estimators"):
        compare_estimators(_census(), estimators=["GLS", "nope"])


@pytest.mark.slow
def test_the_command_writes_its_table_and_figure(tmp_path, capsys):
    csv, png = tmp_path / "est.csv", tmp_path / "est.png"
    code = main(
        ["compare", "topdown", "--estimators", "--set", "fanout=1,2,1,1,2", "--set", "races=1", "--epsilon", "4",
         "--runs", "2", "--csv", str(csv), "--plot", str(png)]
    )  # fmt: skip
    assert code in (0, None)
    table = pd.read_csv(csv)
    assert set(table["estimator"]) == set(ESTIMATORS) and png.stat().st_size > 0
    assert "CI coverage" in capsys.readouterr().out
