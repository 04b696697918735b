"""The README's Python example runs as written and shows what the text claims."""

import re
from pathlib import Path

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


def test_readme_topdown_example_runs():
    code = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)[1]
    scope: dict = {}
    exec(compile(code, "README.md", "exec"), scope)
    assert all(v == 0 for v in scope["result"].checks.values())
    assert scope["leaf_histograms"].sum() == scope["data"].population


def test_readme_commands_match_ci():
    text = README.read_text()
    ci = (README.parent / ".ci" / "run").read_text()
    test_cmd = re.findall(r"```bash\n(.*?)\n```", text, re.S)[1].strip()
    assert test_cmd in ci
