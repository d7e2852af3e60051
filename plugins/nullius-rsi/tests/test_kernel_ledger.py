"""The ledger's chain, the refusals that protect a run, and bad input named without a traceback."""

import json

import pytest

from kernel_world import events, of, run
from nanorsi import NanoError
from nanorsi.ledger import Ledger


def _small_run(ws):
    run(["configure", 'tasks.select=["refund-decision"]', "experiment.k=1"], ws)
    run(["evolve"], ws)


def test_verify_fails_after_any_one_byte_of_the_ledger_changed(workspace):
    ws = workspace
    _small_run(ws)
    path = ws / ".nanorsi" / "ledger.jsonl"
    good = path.read_bytes()
    assert Ledger(path).verify()[0] == len(events(ws))
    for offset in range(0, len(good), 23):  # a byte everywhere along the file, newlines and braces included
        path.write_bytes(good[:offset] + bytes([good[offset] ^ 0x01]) + good[offset + 1:])
        with pytest.raises(NanoError, match="ledger broken"):
            Ledger(path).verify()
    line3 = good.split(b"\n")[2]
    changed = line3.replace(b'"task":"refund-decision"', b'"task":"refund-decisioN"')
    path.write_bytes(good.replace(line3, changed))
    failed = run(["verify"], ws, code=1)
    assert "ledger broken at line 3: the hash does not match the content" in failed.stderr
    assert "ledger broken" in run(["report"], ws, code=2).stderr  # no report from a broken ledger
    path.write_bytes(b"\n".join(good.split(b"\n")[:-2]) + b"\n")  # the last event cut away
    assert "the ledger ends at" in run(["verify"], ws, code=1).stderr
    path.write_bytes(good)
    assert run(["verify"], ws).stdout.startswith("ledger ok")


def test_evolve_refuses_a_changed_configuration_or_manifest_but_not_a_raised_budget(workspace):
    ws = workspace
    _small_run(ws)
    toml = ws / "nanorsi.toml"
    original = toml.read_text()
    toml.write_text(original.replace("temperature = 0.0", "temperature = 0.5"))
    assert "the config changed since the ledger started" in run(["evolve"], ws, code=2).stderr
    toml.write_text(original.replace("max_rollouts = 100", "max_rollouts = 200").replace("timeout = 300.0",
                                                                                         "timeout = 200.0"))
    run(["evolve"], ws)  # the limits and how the model is reached may move; what it is may not
    tasks = ws / "tasks.json"
    tasks.write_text(tasks.read_text().replace("Clause 3", "Clause 4"))
    assert "the manifest changed" in run(["evolve"], ws, code=2).stderr


def test_judge_is_refused_before_freeze_and_a_bad_judge_result_is_ungraded_not_zero(workspace, tmp_path):
    ws = workspace
    _small_run(ws)
    assert "judge is refused before freeze" in run(["judge"], ws, code=2).stderr
    run(["freeze"], ws)
    (tmp_path / "secrets" / "key").unlink()  # judging asks no model: a key gone after the run does not stop it
    judge = ws / "judge" / "keyword_judge.py"
    judge.write_text('import os\nopen(os.environ["NANORSI_JUDGE_RESULT"], "w").write("{\\"n_passed\\": 3}")\n')
    out = run(["judge"], ws).stdout
    assert "refund-decision base1: ungraded: expected n_passed and n_criteria" in out
    assert all(e["graded"] is False and e["score"] is None for e in of(ws, "judged"))
    report = run(["report"], ws).stdout
    assert "score: base1 ungraded" in report and "ungraded 1" in report and "win/tie/loss 0/0/0" in report


@pytest.mark.parametrize("assignment, message", [
    ("experiment.k=0", "[experiment] k: expected an integer from 1 to 32, found 0"),
    ("experiment.parallel=0", "[experiment] parallel: expected an integer from 1 to 32, found 0"),
    ("experiment.parallel=\"all\"", '[experiment] parallel: expected an integer, found "all"'),
    ("experiment.mode=par", '[experiment] mode: expected agg or seq, found "par"'),
    ("model.retries=\"two\"", '[model] retries: expected an integer, found "two"'),
    ("runner.kind=command", "[runner] command: expected a non-empty list of strings"),
    ("model.api_key_file=tasks.json", "[model] api_key_file: expected a file outside the workspace"),
    ("model.api_key_file=/nonexistent/key", "[model] api_key_file: expected an existing file"),
    ("budget.max_dollars=3", "[budget] max_dollars: unknown field: expected one of max_rollouts, max_proposer_calls"),
])
def test_a_bad_field_is_named_with_what_was_expected(workspace, assignment, message):
    before = (workspace / "nanorsi.toml").read_text()
    failed = run(["configure", assignment], workspace, code=2)
    assert f"nanorsi.toml: {message}" in failed.stderr and "Traceback" not in failed.stderr
    assert (workspace / "nanorsi.toml").read_text() == before  # nothing written, nothing lost


def test_a_hand_broken_config_is_named_by_evolve_too(workspace):
    toml = workspace / "nanorsi.toml"
    toml.write_text(toml.read_text().replace("k = 2", "k = \"2\"").replace("[budget]", "[budjet]"))
    failed = run(["evolve"], workspace, code=2)
    assert '[experiment] k: expected an integer, found "2"' in failed.stderr
    assert "[budjet]: unknown table" in failed.stderr and "Traceback" not in failed.stderr
    assert not (workspace / ".nanorsi" / "ledger.jsonl").exists()


def test_new_refuses_a_folder_that_is_not_empty(workspace):
    assert "not empty" in run(["new", "."], workspace, code=2).stderr


def test_ledger_events_are_one_table(tmp_path):
    ledger = Ledger(tmp_path / "l.jsonl")
    with pytest.raises(ValueError):
        ledger.append("score_peek", task="x")
    ledger.append("freeze", choices={"t": "agg1"}, missing=[])
    assert ledger.frozen() == {"t": "agg1"} and json.loads((tmp_path / "l.jsonl").read_text())["seq"] == 1


def test_one_command_at_a_time_writes_a_workspace(workspace):
    with Ledger(workspace / ".nanorsi" / "ledger.jsonl").lock():
        busy = run(["evolve"], workspace, code=2)
    assert "another nanorsi command is running in this workspace" in busy.stderr
    assert not (workspace / ".nanorsi" / "ledger.jsonl").exists()
