"""The job's own `standard` blocks are typed records: read and written through the converter, refused naming the field."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import ROOT

from nullius_core.jobs.layout import JobDir
from nullius_core.jobs.records import dump
from nullius_core.jobs.standard import JobRecordError, JobStandard, TrialStandard, read_trial_own, standard_of, written
from nullius_core.testing import run_cli


@pytest.fixture(scope="module")
def job(tmp_path_factory):
    home = tmp_path_factory.mktemp("records")
    from nullius_core.testing import isolated_env

    env = {**isolated_env(home), "NULLIUS_CATALOGUE": str(ROOT / "tests" / "fixtures" / "catalogue"), "NULLIUS_JOBS_DIR": str(home / "jobs")}
    ran = run_cli(["run", "faulty", "oracle", "--limit", "2", "--job-name", "j"], env)
    assert ran.code == 0, ran.output
    return env, home / "jobs" / "j"


def test_a_real_jobs_records_read_as_their_classes_and_write_back_unchanged(job):
    _, folder = job
    config = json.loads((folder / "config.json").read_text())
    std = standard_of(JobDir(folder))
    assert isinstance(std, JobStandard) and std.control == "oracle" and std.kind == "pass" and std.backend_name == "local"
    assert written(std) == config["standard"]  # every field, null or not, as the file holds it
    trial = json.loads((folder / "u0000" / "result.json").read_text())
    own = read_trial_own(trial)
    assert own is not None and own.unit == "u0000" and own.outcome == "passed" and own.passed is True and own.job == "j"
    trial_config = json.loads((folder / "u0000" / "config.json").read_text())["standard"]
    assert dump(TrialStandard.of(std, "u0000", own.position, 1)) == trial_config  # what a trial repeats of its job


def _edited(folder: Path, tmp_path: Path, **changes) -> Path:
    copy = tmp_path / "edited"
    shutil.copytree(folder, copy)
    config = json.loads((copy / "config.json").read_text())
    for key, value in changes.items():
        if value is None:
            del config["standard"][key]
        else:
            config["standard"][key] = value
    (copy / "config.json").write_text(json.dumps(config))
    return copy


def test_a_hand_edited_config_is_refused_naming_its_file_and_fields(job, tmp_path):
    env, folder = job
    edited = _edited(folder, tmp_path, kind=3, planned_trials=None)
    with pytest.raises(JobRecordError) as caught:
        standard_of(JobDir(edited))
    said = str(caught.value)
    assert str(edited / "config.json") in said and "$.standard.kind" in said and "planned_trials" in said
    for args in (["view", str(edited)], ["run", "--resume", str(edited)], ["merge", str(folder), str(edited), "-o", str(tmp_path / "m")]):
        result = run_cli(args, env)
        assert result.code == 2, (args, result.output)
        assert "$.standard.kind" in result.stderr and "config.json" in result.stderr and "Traceback" not in result.output
    assert not (tmp_path / "m").exists()


def test_view_reads_a_handed_job_without_leaving_it_or_reading_past_the_bound(job, tmp_path):
    """Someone else's job: a record that is a link out of it, or a sparse file of gigabytes, is refused in one line."""
    env, folder = job
    secret = tmp_path / "secret.json"
    secret.write_text('{"steps": [{"source": "user", "message": "this machine\'s own secret"}]}')
    linked = tmp_path / "linked"
    shutil.copytree(folder, linked, symlinks=True)
    (linked / "u0000" / "agent").mkdir(exist_ok=True)
    (linked / "u0000" / "agent" / "trajectory.json").unlink(missing_ok=True)
    (linked / "u0000" / "agent" / "trajectory.json").symlink_to(secret)
    seen = run_cli(["view", str(linked), "--trial", "u0000"], env, in_process=True)
    assert seen.code == 2 and "leads out of" in seen.stderr and "own secret" not in seen.output, seen.output
    assert "Traceback" not in seen.output and len(seen.stderr.strip().splitlines()) == 1
    sparse = tmp_path / "sparse"
    shutil.copytree(folder, sparse, symlinks=True)
    (sparse / "u0000" / "verifier" / "score.json").unlink()
    with (sparse / "u0000" / "verifier" / "score.json").open("wb") as file:
        file.truncate(3 * 1024**3)
    seen = run_cli(["view", str(sparse)], env, in_process=True)
    assert seen.code == 2 and "expected at most" in seen.stderr and "Traceback" not in seen.output, seen.output


def test_merge_takes_no_trial_that_is_a_link_and_reads_no_record_through_one(job, tmp_path):
    env, folder = job
    secret = tmp_path / "elsewhere"
    shutil.copytree(folder / "u0000", secret, symlinks=True)
    other = tmp_path / "other"
    shutil.copytree(folder, other, symlinks=True)
    shutil.rmtree(other / "u0001")
    (other / "u0001").symlink_to(secret)
    merged = run_cli(["merge", str(other), "-o", str(tmp_path / "m")], env, in_process=True)
    assert merged.code == 2 and "a trial folder that is a link" in merged.stderr and "Traceback" not in merged.output, merged.output
    assert not (tmp_path / "m").exists()
    (other / "u0001").unlink()
    shutil.copytree(folder / "u0001", other / "u0001", symlinks=True)
    (other / "u0001" / "result.json").unlink()
    (other / "u0001" / "result.json").symlink_to(secret / "result.json")
    merged = run_cli(["merge", str(other), "-o", str(tmp_path / "m")], env, in_process=True)
    assert merged.code == 2 and "expected a file, found a link" in merged.stderr and not (tmp_path / "m").exists(), merged.output
