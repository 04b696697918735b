"""All-or-nothing outputs: targets checked up front, written aside, moved into place together."""

import os
import signal
import threading
import time

import pytest

from dpmodels.core.errors import DataValidationError
from dpmodels.core.facts import ReleaseFacts
from dpmodels.core.manifest import SCHEMA, build_manifest, read_manifest, software, verify_outputs
from dpmodels.core.staging import StagedOutputs, check_targets, file_record


def _targets(tmp_path):
    return {"--out": tmp_path / "a.csv", "--ledger": tmp_path / "a.ledger.json", "--manifest": tmp_path / "a.m.json"}


def test_existing_outputs_need_force_and_inputs_are_never_replaced(tmp_path):
    targets = _targets(tmp_path)
    (tmp_path / "a.csv").write_text("old")
    with pytest.raises(DataValidationError, match="--force"):
        check_targets(targets, {})
    assert check_targets(targets, {}, force=True)["--out"] == tmp_path / "a.csv"
    with pytest.raises(DataValidationError, match="overwrite the input --records"):
        check_targets(targets, {"--records": tmp_path / "a.csv"}, force=True)
    link = tmp_path / "link.csv"
    os.link(tmp_path / "a.csv", link)  # a hard link is the same file
    with pytest.raises(DataValidationError, match="overwrite the input"):
        check_targets({"--out": link}, {"--records": tmp_path / "a.csv"}, force=True)


@pytest.mark.parametrize("bad", ["/dev/full", "/dev/null"])
def test_a_device_is_never_an_output(bad):
    with pytest.raises(DataValidationError, match="not a regular file"):
        check_targets({"--out": bad}, {}, force=True)


def test_two_outputs_on_one_path_and_missing_folders_are_refused(tmp_path):
    with pytest.raises(DataValidationError, match="must differ"):
        check_targets({"--out": tmp_path / "x.csv", "--ledger": tmp_path / "x.csv"}, {})
    with pytest.raises(DataValidationError, match="does not exist"):
        check_targets({"--out": tmp_path / "no" / "x.csv"}, {})


def test_a_failure_before_commit_leaves_nothing(tmp_path):
    targets = _targets(tmp_path)
    with pytest.raises(RuntimeError), StagedOutputs(targets) as stage:
        stage.write_text("--out", "x,y\n1,2\n")
        stage.write_text("--ledger", "{}")
        raise RuntimeError("the mechanism failed")
    assert sorted(os.listdir(tmp_path)) == []


def test_commit_moves_everything_and_the_records_name_the_final_paths(tmp_path):
    targets = _targets(tmp_path)
    with StagedOutputs(targets) as stage:
        record = stage.write_text("--out", "x\n1\n")
        stage.write_text("--ledger", "{}")
        stage.write_text("--manifest", "{}")
        assert not targets["--out"].exists()  # nothing visible before the commit
        stage.commit()
    assert sorted(os.listdir(tmp_path)) == sorted(p.name for p in targets.values())
    assert record == file_record(targets["--out"])


@pytest.fixture
def python_ctrl_c():
    """Python's own Ctrl-C handler for the test, whatever an earlier test in this process left installed."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def test_an_interrupt_held_during_the_commit_arrives_after_it(tmp_path, python_ctrl_c):
    targets = _targets(tmp_path)
    with pytest.raises(KeyboardInterrupt), StagedOutputs(targets) as stage:
        for flag in targets:
            stage.write_text(flag, flag)
        stage.commit(then=lambda: os.kill(os.getpid(), signal.SIGINT))
    assert all(p.read_text() == flag for flag, p in targets.items())  # complete, not half


def test_an_interrupt_that_lands_on_another_thread_is_held_too(tmp_path, python_ctrl_c):
    """A Ctrl-C sent to the process may land on any thread (a solver's, Dask's); Python still runs its
    handler on the main thread, so masking the signal there alone let it strike between two moves."""
    targets = _targets(tmp_path)
    finished = []

    def then():
        sender = threading.Thread(target=lambda: os.kill(os.getpid(), signal.SIGINT))
        sender.start()
        sender.join()
        time.sleep(0.05)  # bytecodes and a sleep at which a pending handler would run
        finished.append(True)

    with pytest.raises(KeyboardInterrupt), StagedOutputs(targets) as stage:
        for flag in targets:
            stage.write_text(flag, flag)
        stage.commit(then=then)
    assert finished == [True]  # the interrupt came after the protected step, not inside it
    assert all(p.read_text() == flag for flag, p in targets.items())


def test_orphans_of_a_killed_release_are_removed_by_the_next_one(tmp_path):
    orphan = tmp_path / ".a.csv.999999999-abcd.dpmodels-partial"  # no such process
    orphan.write_text("half")
    StagedOutputs(_targets(tmp_path))
    assert not orphan.exists()


def test_a_manifest_reads_back_and_verifies_its_outputs(tmp_path):
    out = tmp_path / "a.csv"
    out.write_text("x\n1\n")
    facts = ReleaseFacts("one person", "add or remove one record", {"N": 3}, {"G": "released exactly"})
    doc = build_manifest(
        family="pgsr",
        dataset="d",
        command=["dpmodels"],
        options={},
        facts=facts,
        request={"unit": "epsilon", "amount": "1/2", "delta": "0"},
        session={"charges": [], "private": True},
        sampler="s",
        inputs={},
        outputs={"--out": file_record(out)},
    )
    path = tmp_path / "m.json"
    import json

    path.write_text(json.dumps(doc))
    back = read_manifest(path)
    assert back["schema"] == SCHEMA and back["privacy_parameters"]["epsilon"] == "1/2"
    assert back["privacy_parameters"]["rho_implied"] == "1/8"
    assert back["unprotected_quantities"]["declared_public_facts"] == {"N": 3}
    assert back["software"]["dependencies"]["numpy"] == software()["dependencies"]["numpy"]
    assert verify_outputs(path) == {}
    out.write_text("x\n2\n")
    assert "differs" in verify_outputs(path)["--out"]
