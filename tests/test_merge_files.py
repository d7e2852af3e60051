"""`nullius merge`'s own reading and linking (jobs/merge_reads.py, jobs/merge_links.py) say what the general code says."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from nullius_core.jobs.layout import TrialDir
from nullius_core.jobs.merge_links import link_trials
from nullius_core.jobs.merge_reads import own_fields, read_results
from nullius_core.jobs.standard import JobRecordError, read_trial_own

OWN = {"unit": "u1", "position": 1, "attempt": 1, "outcome": "passed", "job": "a", "benchmark": "b", "dataset": "d",
       "control": "oracle", "passed": True, "reasoning_effort": ""}
# each block beside what read_trial_own makes of it: the checks here must accept and refuse exactly what it does
BLOCKS = [
    OWN,
    {k: v for k, v in OWN.items() if k not in ("control", "passed", "reasoning_effort")},
    {**OWN, "control": None, "passed": None, "parts": {"n": 2, "by": "x", "parts": []}, "served": {"p": {"calls": 1}}},
    {**OWN, "environment": "local", "image": None, "stopped": "guard", "scored_later": "2026", "not_rescored": None},
    {**OWN, "agent": {"ref": "reference", "turns": 3}},  # a nested record: read by cattrs
    {**OWN, "agent": {"ref": 3}},
    {**OWN, "routes": {"judge": "not a route"}},
    {**OWN, "position": True},  # true is no integer
    {**OWN, "position": 1.0},
    {**OWN, "passed": 1},
    {**OWN, "job": None},
    {**OWN, "parts": []},
    {**OWN, "reasoning_effort": None},
    {**OWN, "x-extra": 1},
    {**OWN, "unknown": 1},
    {k: v for k, v in OWN.items() if k != "job"},
]


@pytest.mark.parametrize("block", BLOCKS)
def test_own_fields_accepts_and_refuses_what_read_trial_own_does(block):
    result = {"standard": block}
    try:
        own = read_trial_own(result, "t/result.json")
    except JobRecordError as exc:
        with pytest.raises(JobRecordError) as raised:
            own_fields(result, "t/result.json")
        assert str(raised.value) == str(exc)
        return
    assert own_fields(result, "t/result.json") == {k: getattr(own, k) for k in ("job", "benchmark", "dataset", "control")}


def test_a_result_without_its_own_record_has_no_fields():
    assert own_fields({"trial_name": "u1"}, "t/result.json") is None
    assert own_fields({"standard": None}, "t/result.json") is None


def test_results_read_as_a_trial_reads_its_own(tmp_path):
    texts = {"plain": json.dumps({"a": 1, "b": [1.5, None, "é"]}), "nan": '{"reward": NaN, "inf": 1e400}',
             "big": '{"n": 123456789012345678901234567890, "m": -9999999999999999999}',
             "torn": '{"a": 1', "empty": "", "list": "[1, 2]"}
    for name, text in texts.items():
        (tmp_path / name).mkdir()
        (tmp_path / name / "result.json").write_text(text)
    (tmp_path / "none").mkdir()
    names = [*texts, "none"]
    read = list(read_results(str(tmp_path), names))
    assert [n for n, _ in read] == names
    for name, result in read:
        want = TrialDir(tmp_path / name).read_result()
        assert json.dumps(result) == json.dumps(want), name  # NaN is not equal to itself: compared as written


def test_links_keep_links_and_name_the_trials_with_a_lock(tmp_path):
    source = tmp_path / "job"
    for name in ("u1", "u2", "u3"):
        (source / name / "agent").mkdir(parents=True)
        (source / name / "config.json").write_text("{}")
        (source / name / "agent" / "trajectory.json").write_text("[]")
    (source / "u2" / "lock.json").write_text("{}")
    os.symlink("config.json", source / "u3" / "alias.json")
    out = tmp_path / "out"
    out.mkdir()
    locked = link_trials([(str(source), n) for n in ("u1", "u2", "u3")], str(out))
    assert locked == ["u2"]
    assert (out / "u1" / "agent" / "trajectory.json").stat().st_ino == (source / "u1" / "agent" / "trajectory.json").stat().st_ino
    assert os.readlink(out / "u3" / "alias.json") == "config.json"
    assert sorted(p.name for p in out.iterdir()) == ["u1", "u2", "u3"]


def test_the_first_error_of_a_link_is_raised(tmp_path):
    source = tmp_path / "job"
    (source / "u1").mkdir(parents=True)
    out = tmp_path / "out"
    (out / "u1").mkdir(parents=True)  # already there
    with pytest.raises(FileExistsError):
        link_trials([(str(source), "u1")], str(out))
    assert not Path(out / "u1" / "config.json").exists()
