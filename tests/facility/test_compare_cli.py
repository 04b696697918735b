"""The facility comparison harness, the bench functions and the CLI subcommands."""

import numpy as np
import pytest

from dpmodels.cli import main
from dpmodels.core.errors import DataValidationError
from dpmodels.facility.bench import bench_pipeline, bench_tree_dp
from dpmodels.facility.compare import (
    BELOW_BOUND,
    COST,
    LP,
    OPT,
    SET_COST,
    compare_facility,
    lower_bound_table,
    stretch_table,
)


def test_compare_costs_sit_above_the_mip_optimum_above_the_lp_bound():
    algorithms = ("dp", "gupta_style", "base")
    table = compare_facility(epsilons=(0.5, 4.0), sizes=(15,), runs=3, seed=1, algorithms=algorithms)
    assert len(table) == 6
    assert np.all(table[LP] <= table[OPT] + 1e-9)
    assert np.all(table[SET_COST] >= table[OPT] - 1e-9)  # every solution is feasible in d
    assert np.all(table[COST] >= table[SET_COST] - 1e-9)
    private = table[table.private]
    assert sorted(set(private.algorithm)) == ["dp", "gupta_style"]
    assert np.all(private.eps_used <= private.epsilon + 1e-12)
    assert np.all(table[~table.private].eps_used == np.inf)  # Algorithm 1 is not DP at any finite ε
    with pytest.raises(DataValidationError, match="^algorithms"):
        compare_facility(algorithms=("nope",))


def test_stretch_and_lower_bound_tables():
    s = stretch_table(sizes=(8,), trees=20)
    assert np.all(s.min_ratio >= 1 - 1e-12) and np.all(s.max_pair_mean <= s.bound)
    lb = lower_bound_table(ms=(4096,), n=64, draws=5, algorithms=("dp",))
    assert not lb[BELOW_BOUND].any()
    caught = lower_bound_table(ms=(4096,), n=64, draws=5, algorithms=("base",), epsilon=1.0)
    assert caught[BELOW_BOUND].all()


def test_bench_functions_measure_and_agree():
    rows = bench_tree_dp(sizes=(20, 40), time_limit=60)
    assert all(r["optima equal"] and r["plugin opt"] == pytest.approx(r["opt"]) for r in rows)
    out = bench_pipeline(n=3000)
    true = {k: out[f"true {k} (diagnostic)"] for k in ("set cost", "realized cost")}
    assert true["set cost"] <= true["realized cost"] + 1e-9 and out["eps used"] <= 1.0


def test_cli_compare_and_bench_facility(tmp_path, capsys):
    pts = tmp_path / "pts.csv"
    rng = np.random.default_rng(0)
    pts.write_text(
        "\n".join(f"{x},{y},{c}" for (x, y), c in zip(rng.random((12, 2)), rng.integers(0, 3, 12), strict=True))
    )
    csv = tmp_path / "out.csv"
    args = ["compare", "facility", "--points", str(pts), "--runs", "2", "--epsilon", "1", "--skip-stretch"]
    assert main([*args, "--skip-lower-bound", "--csv", str(csv)]) == 0
    assert "MIP optimum" in capsys.readouterr().out and csv.exists()
    assert main(["bench", "facility", "--points", "2000", "--sizes", "16"]) == 0
    assert "highs / DP data" in capsys.readouterr().out
    assert main(["compare", "facility", "--epsilon", "0", "--sizes", "5"]) == 2
    assert "epsilon" in capsys.readouterr().err
