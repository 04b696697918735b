"""``dpmodels compare submodular`` and ``dpmodels bench submodular`` as a user runs them."""

import json
import subprocess
import sys

import pandas as pd


def run(*args):
    proc = subprocess.run([sys.executable, "-m", "dpmodels.cli", *args], capture_output=True, text=True)
    return proc


def test_compare_submodular_on_the_trap_writes_csv_and_plot(tmp_path):
    csv, png = tmp_path / "runs.csv", tmp_path / "curve.png"
    proc = run("compare", "submodular", "--runs", "2", "--epsilon", "0.5", "5", "--csv", str(csv), "--plot", str(png))
    assert proc.returncode == 0, proc.stderr
    assert "OPT = 2" in proc.stdout and "private CG (Alg. 1)" in proc.stdout
    table = pd.read_csv(csv)
    assert table.feasible.all()
    greedy = table[table.method == "greedy"]
    assert greedy["true F(S)/OPT (diagnostic)"].iloc[0] == 0.55  # labelled: evaluated on the true data
    alg1 = table[table.method == "private CG (Alg. 1)"]
    assert set(alg1.epsilon_total) == {2 * 0.5 * 2 * 2, 2 * 5 * 2 * 2}  # 2 eps r T
    assert png.stat().st_size > 0


def test_compare_submodular_k_instance_and_bad_epsilon():
    proc = run(
        "compare", "submodular", "--instance", "submodular/k-coverage", "--set", "n=6", "--runs", "1", "--epsilon", "1"
    )
    assert proc.returncode == 0, proc.stderr
    assert "Alg. 3" in proc.stdout and "Alg. 4" in proc.stdout
    bad = run("compare", "submodular", "--epsilon", "-1", "--runs", "1")
    assert bad.returncode == 2 and "epsilon" in bad.stderr


def test_bench_submodular_small(tmp_path):
    out = tmp_path / "bench.json"
    proc = run(
        "bench", "submodular", "--sizes", "50", "200", "--rank", "4", "--graphic", "60", "200", "--json", str(out)
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text())
    rows = doc["sizes"]
    labelling, per_edge = doc["graphic extension"]  # the same Lambda(S), checked by the bench itself
    assert labelling["|Lambda(S)|"] == per_edge["|Lambda(S)|"] > 0 and labelling["|E|"] == 200
    greedy = [r for r in rows if r["method"] == "greedy"]
    assert [r["|E|"] for r in greedy] == [50, 200]
    assert all(r["oracle calls"] > 0 for r in greedy)
    sampled = [r for r in rows if r["method"].startswith("continuous greedy (sampled")]
    assert all(r["oracle calls"] == 4 * 4 * (r["|E|"] + 1) for r in sampled)  # T m (|E| + 1)


def test_bench_submodular_times_the_private_runs(tmp_path):
    """``--epsilon EPS`` adds private Alg. 1 and Mitrovic's greedy (secure generator, exact samplers)."""
    out = tmp_path / "bench.json"
    argv = ["--sizes", "60", "--rank", "3", "--epsilon", "1", "--graphic", "30", "60", "--json", str(out)]
    proc = run("bench", "submodular", *argv)
    assert proc.returncode == 0, proc.stderr
    rows = {r["method"]: r for r in json.loads(out.read_text())["sizes"]}
    assert {"private CG (Alg. 1, eps=1)", "Mitrovic private greedy (eps=1)"} <= set(rows)
    assert rows["Mitrovic private greedy (eps=1)"]["oracle calls"] > 0
    assert all(rows[m]["seconds"] > 0 for m in rows)
