"""The documentation site: it builds with warnings as errors, every Python block of every page runs as
a script in a fresh process, the pages' examples show what their text claims, every release command
of the releases page does what it says, and the notebooks carry their outputs."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from doc_blocks import DOCS, ROOT, blocks, doc_pages, exec_block, python_code, run_script

from dpmodels.core.families import family_names

NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
PYTHON_BLOCKS = [block for page in doc_pages() for block in blocks(page, "python")]


@pytest.mark.slow  # ~9 s; test_new_family builds this site (and a toy family) --strict, every family checked
def test_site_builds_with_warnings_as_errors(tmp_path):
    """``mkdocs build --strict`` succeeds, and the generated pages of every family and notebook exist."""
    site = tmp_path / "site"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    command = [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)]
    proc = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, env=env, timeout=900)
    assert proc.returncode == 0, proc.stderr[-4000:]
    for name in family_names():
        assert (site / "reference" / name / "index.html").is_file(), name
        assert (site / "families" / name / "index.html").is_file(), name
    for notebook in NOTEBOOKS:
        assert (site / "notebooks" / notebook.stem / "index.html").is_file(), notebook.name
    assert not (site / "hooks.py").exists() and not list((site / "measurements").glob("*.json"))  # not published


def test_the_docs_have_python_blocks_to_run():
    assert len(PYTHON_BLOCKS) >= 8 and all(block.skip is None for block in PYTHON_BLOCKS)


@pytest.mark.parametrize("block", PYTHON_BLOCKS, ids=str)
def test_every_python_block_runs_as_a_script_in_a_fresh_process(block, tmp_path):
    """What a reader does: save the snippet in an empty folder and run it (no state from other snippets)."""
    if block.skip:
        pytest.skip(f"{block}: {block.skip}")
    proc = run_script(block.code, tmp_path)
    assert proc.returncode == 0, f"{block}:\n{proc.stderr[-3000:]}"


def test_quickstart_example_compares_as_its_text_says():
    scope = exec_block(python_code(DOCS / "quickstart.md"), "docs/quickstart.md")
    table = scope["table"].set_index(["formulation", "solver"])
    assert table.loc[("Model 1", "pgsr_dp"), "objective"] == table.loc[("Model 1", "scip"), "objective"]
    assert table.loc[("Model 1-R", "pgsr_dp"), "termination"] == "refused"
    assert table.loc[("Model 1", "clarabel"), "termination"] in ("refused", "error")
    assert table.loc[("Model 1-R", "clarabel"), "objective"] <= table.loc[("Model 1", "scip"), "objective"] + 1e-6


def test_topdown_example_reports_the_failsafe_column(tmp_path):
    """Run as a script: the process executor's workers import it (the __main__ guard)."""
    proc = run_script(python_code(DOCS / "families" / "topdown.md"), tmp_path, "topdown_example.py")
    assert proc.returncode == 0, proc.stderr[-3000:]  # the snippet asserts every public constraint holds
    assert "failsafe" in proc.stdout


def test_metric_dp_example_reaches_the_full_lp_optimum():
    import dpmodels

    scope = exec_block(python_code(DOCS / "families" / "metricdp.md"), "docs/families/metricdp.md")
    lp = dpmodels.solve(scope["build_full_lp"](scope["data"]), "highs").incumbent_objective
    assert scope["result"].termination_condition.name == "convergenceCriteriaSatisfied"
    assert abs(scope["result"].incumbent_objective - lp) <= 1e-5 * lp
    audit = scope["audit"](scope["data"], scope["perturbation_matrix"](scope["model"], scope["data"]))
    assert audit["max mDP violation (relative)"] <= 1e-6 and audit["row-sum error"] <= 1e-6


def test_submodular_example_and_its_accounting():
    scope = exec_block(python_code(DOCS / "families" / "submodular.md"), "docs/families/submodular.md")
    opt, acc = scope["opt"], scope["private"].accountant.summary()
    assert scope["cg"].incumbent_objective <= opt + 1e-9 and scope["private"].rounded_value <= opt + 1e-9
    assert acc["basic_epsilon"] == 2 * 0.5 * scope["M"].r * acc["steps"] == 16  # the "16 in total" of the text


def test_facility_example_and_its_budget():
    scope = exec_block(python_code(DOCS / "families" / "facility.md"), "docs/families/facility.md")
    summary = scope["report"].summary()
    assert summary["eps_used"] <= 1.0 and summary["L_prime"] == len(summary["noise_scales"])
    assert scope["report"].realized_cost >= scope["opt"] - 1e-9  # nothing beats the MIP optimum


def test_privacy_example_spends_the_budget_and_refuses_more(tmp_path):
    """Saved as a script and run in a fresh process, as a user would."""
    proc = run_script(python_code(DOCS / "privacy.md"), tmp_path, "privacy.py")
    assert proc.returncode == 0, proc.stderr
    assert "nothing was drawn" in proc.stdout
    ledger = (tmp_path / "taxi.ledger.json").read_text()
    assert '"private": true' in ledger and '"spent": {\n    "epsilon": "1"' in ledger


def _release_inputs(folder: Path) -> None:
    """The input files the releases page names, from the release tests' tiny cases."""
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


@pytest.mark.slow  # 18-31 s of subprocesses; tests/test_release_runner.py runs every release by default
def test_releases_page_runs_command_by_command(tmp_path):
    """Every command of the releases page, in order, in a fresh process each; ``# exit 2`` marks the
    refusals the text promises.  Then what the text claims: the budget is spent, the last run replaced
    sizes.csv with --force, and every release's manifest verifies its outputs."""
    from dpmodels.core.manifest import read_manifest, verify_outputs

    lines = [line for block in blocks(DOCS / "releases.md", "bash") for line in block.code.splitlines()]
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


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_carries_the_outputs_of_every_code_cell(path):
    """The gallery renders saved outputs (nothing runs at build time): every code cell was executed,
    in order, in one kernel (execution counts 1, 2, 3, ...). ``python docs/execute_notebooks.py``."""
    cells = [c for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code" and c.source.strip()]
    counts = [cell.execution_count for cell in cells]
    assert cells and counts == list(range(1, len(cells) + 1)), f"{path.name}: execution counts {counts}"
    assert any(cell.outputs for cell in cells), f"{path.name}: no output saved"
    errors = [out for cell in cells for out in cell.outputs if out.output_type == "error"]
    assert not errors, f"{path.name}: saved an error: {errors[0].ename}"


def test_measurements_page_names_the_command_of_every_json_file():
    """Every table of the measurements page is rendered from a file of docs/measurements/, each file
    is rendered, and the page records the ``--json`` command (a bench, or PGSR's Table 7) that wrote it."""
    page = (DOCS / "measurements.md").read_text()
    rendered = set(re.findall(r"^<!-- measurements: ([\w.-]+\.json) -->$", page, re.M))
    on_disk = {path.name for path in (DOCS / "measurements").glob("*.json")}
    assert rendered == on_disk and rendered
    for name in rendered:
        command = rf"dpmodels (?:bench|compare) \w+[^`\n]* --json docs/measurements/{re.escape(name)}"
        assert re.search(command, page), name


def test_measurements_page_commands_are_valid_commands():
    """Each recorded command still parses: an option renamed since its run is caught here."""
    from dpmodels.cli import _parser

    page = (DOCS / "measurements.md").read_text()
    commands = [line for block in blocks(DOCS / "measurements.md", "bash") for line in block.code.splitlines()]
    assert len(commands) == len(re.findall(r"^<!-- measurements: ", page, re.M))
    for command in commands:
        words = shlex.split(command)
        assert words[0] == "dpmodels" and words[1] in ("bench", "compare"), command
        args = _parser().parse_args(words[1:])
        assert str(args.json).endswith(".json"), command


def _dpmodels_commands() -> list[str]:
    lines = [line for page in doc_pages() for block in blocks(page, "bash") for line in block.code.splitlines()]
    return list(dict.fromkeys(line.partition("  # ")[0] for line in lines if line.startswith("dpmodels ")))


@pytest.mark.parametrize("command", _dpmodels_commands())
def test_every_dpmodels_command_of_the_docs_parses(command):
    """The pages' commands name options that exist (the releases page's also run, above)."""
    from dpmodels.cli import _parser

    _parser().parse_args(shlex.split(command)[1:])  # argparse exits 2 on an unknown option or value


#: Seconds or bytes in the prose that are limits or targets, not results of a run.
STATED_LIMITS = ("the bar was 5 s", "600 s per cell")
_QUOTED_MEASUREMENT = re.compile(
    r"\b\d[\d,.]*\s?(?:s|ms|GB|MB|GFMA/s)\b"  # seconds, bytes
    r"|\d+(?:\.\d+)?x (?:faster|slower)|earlier session"
)


@pytest.mark.parametrize("page", doc_pages(), ids=lambda p: p.relative_to(DOCS).as_posix())
def test_no_page_quotes_a_timing_or_size_that_no_file_backs(page):
    """A stale number is a defect: seconds, bytes and speed-ups belong in docs/measurements/*.json,
    written by the command that measures them (the pages render them); the prose keeps none."""
    prose = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)  # code blocks may print anything
    for limit in STATED_LIMITS:
        prose = prose.replace(limit, "")
    assert not _QUOTED_MEASUREMENT.findall(prose), page.name
