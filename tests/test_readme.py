"""The README is the front page: short, every code block runs, its test command is CI's, its links
lead to pages that exist.  The sections it used to carry live in docs/ (tests/test_docs.py)."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import tomllib

from doc_blocks import ROOT, blocks, exec_block, run_script

README = ROOT / "README.md"


def test_readme_is_a_front_page_under_200_lines():
    assert len(README.read_text().splitlines()) < 200


def test_readme_code_blocks_are_the_two_commands_and_python():
    """Every block is one the tests below run: two bash commands, then Python."""
    langs = [block.lang for block in blocks(README)]
    assert langs[:2] == ["bash", "bash"] and set(langs[2:]) == {"python"}


def test_readme_python_example_compares_the_dp_with_a_miqp_solver():
    scope = exec_block(blocks(README, "python")[0].code, "README.md")
    table = scope["table"].set_index("solver")
    assert (table["termination"] == "convergenceCriteriaSatisfied").all()
    assert table.loc["pgsr_dp", "objective"] == table.loc["scip", "objective"]  # the DP's optimum is SCIP's
    assert scope["ledger"].total_epsilon == 1


def test_every_python_block_runs_as_a_script_in_a_fresh_process(tmp_path):
    for block in blocks(README, "python"):
        proc = run_script(block.code, tmp_path)
        assert proc.returncode == 0, f"{block}:\n{proc.stderr[-2000:]}"


def _commands() -> list[str]:
    return [block.code.strip() for block in blocks(README, "bash")]


def test_readme_commands_match_ci():
    ci = (ROOT / ".ci" / "run").read_text()
    test_command = _commands()[1]
    assert test_command == 'pip install -e ".[test]" && pytest' and test_command in ci


def test_readme_install_commands_name_extras_that_exist():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    for command in _commands():
        install, _, _ = command.partition(" && ")
        extra = re.fullmatch(r'pip install -e "\.\[(\w+)\]"', install)
        assert extra and extra[1] in extras, install
    assert any(dep.startswith("dpmodels[") and "docs" in dep for dep in extras["test"])  # CI builds the docs


def test_readme_main_job_runs_and_writes_its_csv_and_plot(tmp_path):
    """The main job as the README writes it (after the install), in a fresh process in an empty folder."""
    job = _commands()[0].partition(" && ")[2]
    words = shlex.split(job)
    assert words[:3] == ["dpmodels", "compare", "pgsr"]
    env = {**os.environ, "MPLBACKEND": "Agg"}
    command = [sys.executable, "-m", "dpmodels.cli", *words[1:]]
    proc = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=900, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    runs = (tmp_path / "pgsr_runs.csv").read_text().splitlines()
    assert len(runs) > 1 and "mechanism" in runs[0]
    assert (tmp_path / "pgsr.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_readme_links_lead_to_files_that_exist():
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", README.read_text())
    local = [link for link in links if not link.startswith(("http://", "https://"))]
    assert local and all((ROOT / link).exists() for link in local), [x for x in local if not (ROOT / x).exists()]


def test_readme_links_every_top_level_docs_page():
    linked = set(re.findall(r"\]\((docs/[^)#]+\.md)", README.read_text()))
    pages = {path.relative_to(ROOT).as_posix() for path in (ROOT / "docs").glob("*.md")} - {"docs/index.md"}
    assert pages <= linked, pages - linked
