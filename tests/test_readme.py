"""The README's Python example runs as written and shows what the text claims."""

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_python_example_runs(capsys):
    code = re.search(r"```python\n(.*?)```", README.read_text(), re.S).group(1)
    scope: dict = {}
    exec(compile(code, "README.md", "exec"), scope)
    table = scope["table"].set_index(["formulation", "solver"])
    assert table.loc[("Model 1", "pgsr_dp"), "objective"] == table.loc[("Model 1", "scip"), "objective"]
    assert table.loc[("Model 1-R", "pgsr_dp"), "termination"] == "refused"
    assert table.loc[("Model 1", "clarabel"), "termination"] in ("refused", "error")
    assert table.loc[("Model 1-R", "clarabel"), "objective"] <= table.loc[("Model 1", "scip"), "objective"] + 1e-6


def test_readme_topdown_example_runs_as_a_script(tmp_path):
    """Saved as a script and run in a fresh process: the process executor needs the __main__ guard."""
    import subprocess
    import sys

    script = tmp_path / "topdown_example.py"
    script.write_text(dict(_python_blocks())["TopDown"])
    proc = subprocess.run([sys.executable, script], cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr  # the snippet asserts every public constraint holds
    assert "failsafe" in proc.stdout


def test_readme_commands_match_ci():
    text = README.read_text()
    ci = (README.parent / ".ci" / "run").read_text()
    test_cmd = re.findall(r"```bash\n(.*?)\n```", text, re.S)[1].strip()
    assert test_cmd in ci


def _run_block_under(heading: str) -> dict:
    """Execute the first Python block of the README section ``heading``."""
    section = README.read_text().split(f"\n## {heading}\n", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    scope: dict = {}
    exec(compile(code, "README.md", "exec"), scope)
    return scope


def test_readme_metric_dp_example_reaches_the_full_lp_optimum():
    import dpmodels

    scope = _run_block_under("Metric DP")
    lp = dpmodels.solve(scope["build_full_lp"](scope["data"]), "highs").incumbent_objective
    assert scope["result"].termination_condition.name == "convergenceCriteriaSatisfied"
    assert abs(scope["result"].incumbent_objective - lp) <= 1e-5 * lp
    audit = scope["audit"](scope["data"], scope["perturbation_matrix"](scope["model"], scope["data"]))
    assert audit["max mDP violation (relative)"] <= 1e-6 and audit["row-sum error"] <= 1e-6


def test_readme_submodular_example_and_its_accounting():
    scope = _run_block_under("Private submodular maximization")
    opt, acc = scope["opt"], scope["private"].accountant.summary()
    assert scope["cg"].incumbent_objective <= opt + 1e-9 and scope["private"].rounded_value <= opt + 1e-9
    assert acc["basic_epsilon"] == 2 * 0.5 * scope["M"].r * acc["steps"] == 16  # the "16 in total" of the text


def test_readme_facility_example_and_its_budget():
    scope = _run_block_under("DP facility location")
    summary = scope["report"].summary()
    assert summary["eps_used"] <= 1.0 and summary["L_prime"] == len(summary["noise_scales"])
    assert scope["report"].realized_cost >= scope["opt"] - 1e-9  # nothing beats the MIP optimum


def test_readme_privacy_example_runs_as_a_script(tmp_path):
    """Saved as a script and run in a fresh process, as a user would."""
    import subprocess
    import sys

    section = README.read_text().split("\n## Privacy guarantees\n", 1)[1]
    script = tmp_path / "privacy.py"
    script.write_text(re.search(r"```python\n(.*?)```", section, re.S).group(1))
    proc = subprocess.run([sys.executable, script], cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "nothing was drawn" in proc.stdout
    ledger = (tmp_path / "taxi.ledger.json").read_text()
    assert '"private": true' in ledger and '"spent": {\n    "epsilon": "1"' in ledger


def _python_blocks() -> list[tuple[str, str]]:
    """Every ```python block of the README with the heading it sits under."""
    blocks, heading = [], "top"
    for part in re.split(r"(```python\n.*?```)", README.read_text(), flags=re.S):
        if part.startswith("```python"):
            blocks.append((heading, part[len("```python\n") : -3]))
        else:
            found = re.findall(r"^#+ (.+)$", part, re.M)
            heading = found[-1] if found else heading
    return blocks


@pytest.mark.parametrize("heading, code", _python_blocks(), ids=lambda v: str(v)[:30])
def test_every_python_block_runs_as_a_script_in_a_fresh_process(heading, code, tmp_path):
    """What a reader does: save the snippet and run it (no state from other snippets or the tests)."""
    import subprocess
    import sys

    script = tmp_path / "snippet.py"
    script.write_text(code)
    proc = subprocess.run([sys.executable, script], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"README section {heading!r}:\n{proc.stderr[-2000:]}"


def _release_inputs(folder) -> None:
    """The input files the README's release section names, from the release tests' tiny cases."""
    import shutil

    from release_cases import CASES

    (folder / "cases").mkdir()
    cases = {family: make(folder / "cases") for family, make in CASES.items()}
    copies = {
        "regions.csv": cases["pgsr"].inputs["--hierarchy"],
        "persons.csv": cases["pgsr"].inputs["--records"],
        "census.csv": cases["topdown"].inputs["--persons"],
        "blocks.csv": cases["topdown"].inputs["--blocks"],
        "coverage.csv": cases["submodular"].inputs["--coverage"],
        "sites.csv": cases["submodular"].inputs["--elements"],
        "points.csv": cases["facility"].inputs["--points"],
    }
    for name, source in copies.items():
        shutil.copy(source, folder / name)
    (folder / "places.csv").write_text("location,x,y\nhome,0,0\nshop,1,0\npark,1,1\nschool,0,1.5\n")
    (folder / "visits.csv").write_text("user,record\nann,home\nben,park\n")


def test_readme_release_section_runs_command_by_command(tmp_path):
    """Every command of the release section, in order, in a fresh process each; ``# exit 2`` marks the
    refusals the text promises.  Then what the text claims: the budget is spent, the last run replaced
    sizes.csv with --force, and every release's manifest verifies its outputs."""
    import shlex
    import subprocess
    import sys

    from dpmodels.core.manifest import read_manifest, verify_outputs

    section = README.read_text().split("\n## Releases: ", 1)[1].split("\n## ", 1)[0]
    lines = [line for block in re.findall(r"```bash\n(.*?)```", section, re.S) for line in block.splitlines()]
    _release_inputs(tmp_path)
    outputs = {}
    for line in filter(str.strip, lines):
        command, _, comment = line.partition("  # ")
        words = shlex.split(command)
        assert words[0] == "dpmodels", line
        proc = subprocess.run(
            [sys.executable, "-m", "dpmodels.cli", *words[1:]], cwd=tmp_path, capture_output=True, text=True
        )
        expected = 2 if comment.startswith("exit 2") else 0
        assert proc.returncode == expected, f"{line}\n{proc.stderr[-2000:]}"
        outputs[command] = proc.stdout
    shown = next(out for command, out in outputs.items() if command.startswith("dpmodels budget show"))
    assert "spent     epsilon 2 " in shown and "remaining epsilon 0 " in shown
    manifests = sorted(tmp_path.glob("*.manifest.json"))
    assert len(manifests) == 6  # two pgsr releases charged to the budget, the forced experiment, four families
    assert all(verify_outputs(m) == {} for m in manifests)
    assert read_manifest(tmp_path / "sizes.manifest.json")["private"] is False  # replaced by the experiment
