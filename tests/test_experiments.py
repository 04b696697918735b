"""Every family's experiment commands (``compare``, ``bench``), run as a user runs them.

The families are the ones :func:`~dpmodels.core.families.family_names` finds, each with the
``FAMILY`` its ``commands.py`` declares (no list here).  Every experiment takes the standard
options declared once in :mod:`dpmodels.core.options` (same names, same checks), refuses bad
values before any work (exit code 2, the option named, nothing written), prints only results on
stdout (progress and "wrote ..." go to logging on stderr; ``-q`` silences them, ``-v`` adds debug
messages), and Ctrl-C ends it with ``dpmodels: interrupted``, exit code 130, and no output file.
"""

import argparse
import functools
import re
import signal
import subprocess
import sys
import threading
import time

import pandas as pd
import pytest

from dpmodels import cli
from dpmodels.core import options as std
from dpmodels.core.families import family_module, family_names
from dpmodels.core.options import MARK, STANDARD_FLAGS

#: Every family found, by its package name, with its declaration.
FAMILIES = {name: family_module(name, "commands").FAMILY for name in family_names()}

#: Each standard option as the core declares it (any default): the type and nargs every command must share.
REFERENCE = {
    "--instance": std.instance(None),
    "--set": std.settings(),
    "--epsilon": std.epsilon(None),
    "--runs": std.runs(None),
    "--seed": std.seed(),
    "--executor": std.executor(),
    "--time-limit": std.time_limit(None),
    "--noise": std.noise(("a", "b")),
    "--rho": std.rho(None),
}

#: A bad value of each standard option and the words of its refusal.
BAD_VALUES = {
    "--epsilon": ("-1", "--epsilon: expected a finite number > 0, got '-1'"),
    "--runs": ("0", "--runs: expected an integer > 0, got '0'"),
    "--seed": ("-1", "--seed: expected an integer >= 0, got '-1'"),
    "--executor": ("threads", "--executor: expected serial, process, dask, a number"),
    "--time-limit": ("nan", "--time-limit: expected a finite number > 0, got 'nan'"),
    "--csv": ("x.png", "--csv: x.png must end in .csv"),
    "--parquet": ("x.csv", "--parquet: x.csv must end in .parquet"),
    "--json": ("missing_folder/x.json", "--json: the folder missing_folder does not exist"),
    "--plot": ("out.xyz", "--plot: out.xyz must end in .png, .pdf, .svg"),
}

#: Names another family once gave its run count; the run count is --runs everywhere.
OLD_COUNT_NAMES = {"--seeds", "--repeat", "--repeats", "--private"}


@functools.cache
def _parser() -> argparse.ArgumentParser:
    return cli._parser()


def _subcommands(*words) -> dict[str, argparse.ArgumentParser]:
    """The subcommands of ``dpmodels WORDS...`` by name (e.g. ``_subcommands("compare")["mdp"]``)."""
    parser = _parser()
    for word in (*words, None):
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        if word is None:
            return dict(sub.choices)
        parser = sub.choices[word]


def _experiments() -> list[tuple[str, str]]:
    """(word, name) of every experiment: each family's compare and bench, and the core's benches."""
    return [(word, name) for word in ("compare", "bench") for name in sorted(_subcommands(word))]


def _flags(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    return {flag: action for action in parser._actions for flag in action.option_strings}


def test_the_families_found_are_the_families_shown():
    names = {family.name for family in FAMILIES.values()}
    assert len(FAMILIES) >= 5 and all(f.package == f"dpmodels.{pkg}" for pkg, f in FAMILIES.items())
    assert set(_subcommands("compare")) == names
    assert names < set(_subcommands("bench"))  # and the core's benches (noise, startup)
    assert set(_subcommands("release")) == {f.name for f in FAMILIES.values() if f.release is not None}


@pytest.mark.parametrize("word, name", _experiments())
def test_every_experiment_takes_the_standard_options_as_the_core_declares_them(word, name):
    parser = _subcommands(word)[name]
    flags = _flags(parser)
    assert not OLD_COUNT_NAMES & set(flags), "the run count is --runs in every family"
    for flag in {"-q", "--quiet", "-v", "--verbose", "--no-progress", "--csv", "--parquet", "--json"}:
        assert flag in flags, (word, name, flag)
    for flag in set(flags) & set(STANDARD_FLAGS):
        action, reference = flags[flag], REFERENCE[flag]
        assert getattr(action, MARK, None) == reference.name, f"{word} {name} declares {flag} itself"
        assert action.type is reference.kwargs.get("type") and action.nargs == reference.kwargs.get("nargs")
    checked = {f"--{kind}" for kind in parser.get_default("_outputs")}
    assert checked == {f for f in flags if f in ("--csv", "--parquet", "--json", "--plot")}


@pytest.mark.parametrize("word, name", _experiments())
def test_bad_values_of_the_standard_options_fail_before_any_work(word, name, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    flags = _flags(_subcommands(word)[name])
    given = [flag for flag in BAD_VALUES if flag in flags]
    assert {"--csv", "--parquet", "--json"} <= set(given)
    for flag in given:
        value, message = BAD_VALUES[flag]
        assert cli.main([word, name, flag, value]) == 2, (word, name, flag)
        err = capsys.readouterr().err
        assert message in err and "Traceback" not in err, (word, name, flag, err)
    assert not list(tmp_path.iterdir())  # nothing written


@pytest.mark.parametrize("word, name", _experiments())
def test_every_help_shows_the_names_its_options_take(word, name):
    """A help lists names that family modules declare (read when shown): each module still exists."""
    text = _subcommands(word)[name].format_help()
    assert "--csv" in text and "--quiet" in text


def test_the_commands_modules_import_no_numerical_library():
    """``dpmodels --help`` reads every family's declaration: none imports pandas, scipy, numba or
    matplotlib at import time (their run functions do, when they run)."""
    code = (
        "import sys\n"
        "from dpmodels.core.families import family_module, family_names\n"
        "import dpmodels.core.bench_command, dpmodels.core.runner, dpmodels.core.options\n"
        "for name in family_names(): family_module(name, 'commands')\n"
        "print(sorted(m for m in ('pandas', 'scipy', 'numba', 'matplotlib') if m in sys.modules))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert proc.stdout.strip() == "[]"


# ---------------------------------------------------------------------- stdout, logging
#: A small PGSR comparison (no Pyomo model): 1 budget x 2 runs of the chain mechanism.
SMALL = ["compare", "pgsr", "--instance", "pgsr/running-example", "--mechanisms", "M_c^ch", "--runs", "2"]
SMALL += ["--epsilon", "1"]


def _words(text: str) -> list[str]:
    """The words of a printed table, every decimal number masked (the seconds differ run to run)."""
    return [re.sub(r"^-?\d+\.\d*(e-?\d+)?$", "#", word) for word in text.split()]


def _run(*argv):
    return subprocess.run([sys.executable, "-m", "dpmodels.cli", *argv], capture_output=True, text=True)


def test_stdout_carries_only_results_and_quiet_silences_stderr(tmp_path):
    csv = tmp_path / "runs.csv"
    quiet = _run(*SMALL, "--csv", str(csv), "-q")
    assert quiet.returncode == 0, quiet.stderr
    assert quiet.stderr == ""  # no progress bar, no "wrote ..."
    table = pd.read_csv(csv)
    assert len(table) == 2 and "M_c^ch" in quiet.stdout
    csv.unlink()
    loud = _run(*SMALL, "--csv", str(csv))
    assert loud.returncode == 0, loud.stderr
    assert f"wrote {csv}" in loud.stderr and "PGSR runs" in loud.stderr  # the progress bar and the note
    assert _words(loud.stdout) == _words(quiet.stdout)  # the same results (timings aside), nothing else
    assert "wrote" not in loud.stdout and "it/s" not in loud.stdout


def test_verbose_adds_debug_messages(tmp_path, capsys):
    csv = tmp_path / "runs.csv"
    assert cli.main([*SMALL, "--csv", str(csv), "--no-progress", "-v"]) == 0
    captured = capsys.readouterr()
    assert "dpmodels: debug: options:" in captured.err and "dpmodels: debug: computed in" in captured.err
    assert f"wrote {csv}" in captured.err and "debug" not in captured.out
    assert cli.main([*SMALL, "-q", "-v"]) == 2  # one or the other
    assert "not allowed with argument" in capsys.readouterr().err


# ---------------------------------------------------------------------- Ctrl-C
def _interrupt_when_running(argv, started: str, wait: float = 1.5) -> subprocess.CompletedProcess:
    """Start ``dpmodels ARGV``, send SIGINT ``wait`` seconds after ``started`` appears on its stderr."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "dpmodels.cli", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # not inherited as ignored
    )
    err: list[str] = []
    seen = threading.Event()

    def read():
        for line in iter(lambda: proc.stderr.read(64), ""):
            err.append(line)
            if started in "".join(err):
                seen.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    assert seen.wait(timeout=300), "".join(err)
    time.sleep(wait)
    proc.send_signal(signal.SIGINT)
    out = proc.stdout.read()
    code = proc.wait(timeout=120)
    reader.join(timeout=10)
    return subprocess.CompletedProcess(argv, code, out, "".join(err))


def test_ctrl_c_ends_with_interrupted_exit_130_and_no_partial_file(tmp_path):
    """The default comparison (several seconds of numba and Pyomo work), interrupted once its runs
    started: numba may report the interrupt as ``SystemError: CPUDispatcher(...)``; either way the
    command says 'interrupted', exits 130, and leaves neither the CSV nor a temporary file."""
    csv = tmp_path / "runs.csv"
    done = _interrupt_when_running(
        ["compare", "pgsr", "--csv", str(csv), "--json", str(tmp_path / "r.json")], "PGSR runs"
    )
    assert done.returncode == 130, done.stderr
    assert "dpmodels: interrupted" in done.stderr and "Traceback" not in done.stderr
    assert "SystemError" not in done.stderr
    assert not list(tmp_path.iterdir())  # no output, no temporary file
