"""The experiment runner on experiments made up here: outputs written all or nothing in the
format their suffix names, interrupts (also wrapped by numba in a ``SystemError``) ending with
exit code 130 and no file, results alone on stdout, and names read lazily."""

import argparse
import json
import sys

import pandas as pd
import pytest

from dpmodels.core import options as std
from dpmodels.core.runner import Result, experiment, interrupt_of, run_command

TABLE = pd.DataFrame({"epsilon": [0.5, 1.0, 1.0], "run": [0, 0, 1], "error": [3.25, 1.5, 2.0]})

#: The first bytes of a file of each figure format.
MAGIC = {".png": b"\x89PNG", ".pdf": b"%PDF", ".svg": b"<?xml"}


def _draw(path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    ax.plot(TABLE["epsilon"], TABLE["error"])
    fig.savefig(path)  # the format follows the path's suffix
    plt.close(fig)


def _main(run, argv, plot: str | None = "error against epsilon") -> int:
    """``run_command`` on a made-up experiment taking --epsilon and --runs."""
    command = experiment("test", run, options=(std.epsilon([1.0]), std.runs(2)), table="one row per run", plot=plot)
    parser = argparse.ArgumentParser(prog="test")
    command.add_arguments(parser)
    parser.set_defaults(run=command.run)
    return run_command(parser.parse_args(argv))


def _leftovers(folder) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


@pytest.mark.parametrize("suffix", [".png", ".pdf", ".svg"])
def test_every_output_is_written_in_the_format_its_suffix_names(suffix, tmp_path, capsys):
    out = {kind: tmp_path / f"out.{kind}" for kind in ("csv", "json")} | {"plot": tmp_path / f"fig{suffix}"}
    argv = [arg for kind, path in out.items() for arg in (f"--{kind}", str(path))]
    assert _main(lambda args: Result(TABLE, figure=_draw), argv) == 0
    pd.testing.assert_frame_equal(pd.read_csv(out["csv"]), TABLE)
    assert json.loads(out["json"].read_text()) == TABLE.to_dict(orient="records")
    assert out["plot"].read_bytes().startswith(MAGIC[suffix])
    assert _leftovers(tmp_path) == sorted(p.name for p in out.values())  # no temporary file left
    captured = capsys.readouterr()
    assert captured.out.split() == TABLE.to_string(index=False).split()  # a bare table is printed as it is
    assert all(f"wrote {path}" in captured.err for path in out.values())


def test_parquet_holds_the_table(tmp_path):
    pytest.importorskip("pyarrow")
    path = tmp_path / "out.parquet"
    assert _main(lambda args: TABLE, ["--parquet", str(path)]) == 0
    pd.testing.assert_frame_equal(pd.read_parquet(path), TABLE)


def test_parquet_writes_a_column_of_mixed_types_as_text(tmp_path):
    pytest.importorskip("pyarrow")
    path = tmp_path / "mixed.parquet"
    mixed = TABLE.assign(status=["optimal", 3, None])
    assert _main(lambda args: mixed, ["--parquet", str(path)]) == 0
    read = pd.read_parquet(path)
    assert read["status"].tolist()[:2] == ["optimal", "3"] and pd.isna(read["status"].iloc[2])
    pd.testing.assert_frame_equal(read.drop(columns="status"), TABLE)


def test_parquet_without_pyarrow_is_refused_before_the_run(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # import pyarrow fails
    ran = []
    code = _main(lambda args: ran.append(1) or TABLE, ["--parquet", str(tmp_path / "t.parquet")])
    assert code == 2 and not ran and "--parquet: needs pyarrow" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


def test_a_json_document_replaces_the_records(tmp_path):
    path = tmp_path / "doc.json"
    document = {"sizes": [{"n": 3, "seconds": 0.25}], "note": "nested"}
    assert _main(lambda args: Result(TABLE, ["a report"], document=document), ["--json", str(path)]) == 0
    assert json.loads(path.read_text()) == document


def _interrupted_figure(path):
    raise KeyboardInterrupt


def _numba_interrupt(args):
    try:
        raise KeyboardInterrupt
    except KeyboardInterrupt as err:
        raise SystemError("CPUDispatcher(<function demands>) returned a result with an exception set") from err


@pytest.mark.parametrize(
    "run",
    [lambda args: Result(TABLE, figure=_interrupted_figure), _numba_interrupt],
    ids=["while-writing", "numba-system-error"],
)
def test_an_interrupt_leaves_no_file_and_exits_130(run, tmp_path, capsys):
    argv = ["--csv", str(tmp_path / "t.csv"), "--json", str(tmp_path / "t.json"), "--plot", str(tmp_path / "f.png")]
    assert _main(run, argv) == 130
    err = capsys.readouterr().err
    assert err.strip().splitlines()[-1] == "dpmodels: interrupted" and "SystemError" not in err
    assert not list(tmp_path.iterdir())  # the staged CSV and JSON were removed with the figure's temporary


def test_a_system_error_that_is_no_interrupt_is_a_failed_run(capsys):
    def run(args):
        raise SystemError("something else")

    assert _main(run, []) == 1
    assert "dpmodels: the run failed: SystemError: something else" in capsys.readouterr().err


def test_interrupt_of_follows_causes_and_contexts():
    try:
        try:
            raise KeyboardInterrupt("deep")
        except KeyboardInterrupt:
            raise ValueError("handling it failed")  # noqa: B904 - implicit context on purpose
    except ValueError as err:
        wrapped = SystemError("wrapper")
        wrapped.__cause__ = err
    found = interrupt_of(wrapped)
    assert isinstance(found, KeyboardInterrupt) and str(found) == "deep"
    assert interrupt_of(RuntimeError("no interrupt")) is None


def test_quiet_prints_only_the_results(tmp_path, capsys):
    import logging

    def run(args):
        logging.getLogger("dpmodels.somewhere").info("progress note")
        logging.getLogger("dpmodels.somewhere").warning("a warning")
        return Result(TABLE, ["the results"])

    assert _main(run, ["--csv", str(tmp_path / "t.csv"), "-q"]) == 0
    captured = capsys.readouterr()
    assert captured.out == "the results\n"
    assert captured.err == "dpmodels: warning: a warning\n"  # no note, no "wrote ..."
    assert _main(run, []) == 0
    assert capsys.readouterr().err == "progress note\ndpmodels: warning: a warning\n"


def test_a_run_without_a_figure_writes_the_rest_and_says_so(tmp_path, capsys):
    csv, png = tmp_path / "t.csv", tmp_path / "f.png"
    assert _main(lambda args: Result(TABLE), ["--csv", str(csv), "--plot", str(png)]) == 0
    assert csv.exists() and not png.exists()
    assert f"dpmodels: warning: --plot: this run draws no figure; {png} not written" in capsys.readouterr().err


def test_progress_follows_no_progress_and_quiet():
    seen = []
    for argv in ([], ["--no-progress"], ["-q"], ["-v"]):
        _main(lambda args: seen.append(args.progress) or TABLE, argv)
    assert seen == [True, False, False, True]


def test_names_are_read_only_when_a_value_is_checked(capsys):
    missing = std.Names("dpmodels.no_such_module", "NAMES")
    parser = argparse.ArgumentParser(prog="test")
    parser.add_argument("--method", type=std.one_of(missing, "method"), help=std.LazyHelp(lambda: "x"))
    assert parser.parse_args([]).method is None  # built and parsed without importing the module
    known = std.Names("dpmodels.core.options", "STANDARD_FLAGS")
    parser.add_argument("--flag", type=std.one_of(known, "flag"), help=std.LazyHelp(lambda: f"one of {known()}"))
    assert parser.parse_args(["--flag=--runs"]).flag == "--runs"
    with pytest.raises(SystemExit) as done:
        parser.parse_args(["--flag=--seeds"])
    assert done.value.code == 2 and "invalid choice: '--seeds'" in capsys.readouterr().err
    assert "'--epsilon'" in parser.format_help()  # the help lists the names, read when shown
