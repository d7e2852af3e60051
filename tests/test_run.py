"""The run engine on the local backend, with the controls: records, faults, Ctrl-C and resume."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import ROOT

from nullius_core.fsutil import read_json_lines
from nullius_core.testing import processes_under, run_cli

CATALOGUE = ROOT / "tests" / "fixtures" / "catalogue"
DRIVER = CATALOGUE / "benchmarks" / "faulty" / "driver.py"


@pytest.fixture
def env(nullius_env):
    return {**nullius_env, "NULLIUS_CATALOGUE": str(CATALOGUE)}


def job_trials(job: Path) -> dict[str, dict]:
    return {p.parent.name: json.loads(p.read_text()) for p in job.glob("*/result.json")}


def driver_processes(root: Path) -> list[str]:
    """The faulty driver's processes of this test (root in their environment): other tests run it on other workers."""
    return [line for line in processes_under(root) if str(DRIVER) in line]


def test_oracle_and_nop_make_complete_jobs(env, tmp_path):
    result = run_cli(["run", "faulty", "oracle", "--job-name", "o", "--jobs-dir", str(tmp_path)], env)
    assert result.code == 0, result.output
    job = tmp_path / "o"
    assert result.stdout.strip() == str(job)
    trials = job_trials(job)
    assert sorted(trials) == [f"u{i:04d}" for i in range(12)]
    for name, trial in trials.items():
        assert trial["verifier_result"] == {"rewards": {"reward": 1.0}}
        assert trial["standard"]["outcome"] == "passed" and trial["agent_info"]["name"] == "oracle"
        assert (job / name / "verifier" / "reward.txt").read_text() == "1\n"
        assert json.loads((job / name / "verifier" / "score.json").read_text())["passed"] is True
        assert not (job / name / ".work").exists()  # nothing was written into its workspace: a control keeps none (control_place.py)
        assert sorted(p.name for p in (job / name).iterdir()) == ["agent", "config.json", "result.json", "trial.log", "verifier"]
        assert f"unit={name}" in (job / name / "trial.log").read_text()  # the driver's stderr, per unit
    summary = json.loads((job / "result.json").read_text())
    assert summary["stats"]["evals"]["oracle__test"]["metrics"] == [{"mean": 1.0}]
    assert summary["standard"]["passed"] == 12 and summary["standard"]["state"] == "finished"
    config = json.loads((job / "config.json").read_text())["standard"]
    assert config["control"] == "oracle" and config["options"] == {"mode": "clean", "delay": "0.5"}
    assert config["backend"]["name"] == "local" and config["plugins"]["nullius-core"] == "0.1.0"
    progress = read_json_lines(job / "progress.jsonl")
    assert [p["stage"] for p in progress] == ["units"] + ["unit"] * 12 + ["done"]
    assert "[nullius] stage=units n=12" in result.stderr and "[nullius] stage=done state=finished" in result.stderr
    events = read_json_lines(job / "events.jsonl")
    assert sum(e["type"] == "trial_finished" for e in events) == 12
    nop = run_cli(["run", "faulty", "nop", "--job-name", "n", "--jobs-dir", str(tmp_path), "--limit", "3"], env)
    assert nop.code == 0
    nop_trials = job_trials(tmp_path / "n")
    assert sorted(nop_trials) == ["u0000", "u0001", "u0002"]
    assert all(t["verifier_result"]["rewards"]["reward"] == 0.0 for t in nop_trials.values())
    assert json.loads((tmp_path / "n" / "u0000" / "agent" / "trajectory.json").read_text())["steps"][1]["message"] == ""


def test_each_fault_is_that_units_record_and_the_run_goes_on(env, tmp_path):
    result = run_cli(
        ["run", "faulty", "oracle", "--bench-option", "mode=faulty", "-j", "3", "--job-name", "f", "--jobs-dir", str(tmp_path)],
        {**env, "FAKE_PROVIDER_API_KEY": "sk-never-seen"},
    )
    assert result.code == 0, result.output
    trials = job_trials(tmp_path / "f")
    kinds = {name: (t.get("exception_info") or {}).get("exception_type") for name, t in trials.items()}
    assert kinds == {
        "u0000": None,
        "u0001": "EnvironmentSetupError",
        "u0002": "VerifierError",
        "u0003": "OracleError",
        "u0004": "VerifierTimeoutError",
        "u0005": "VerifierError",
        **{f"u{i:04d}": None for i in range(6, 12)},
    }
    messages = {name: t["exception_info"]["exception_message"] for name, t in trials.items() if t.get("exception_info")}
    assert "the driver exited (status 3) during op 'score'" in messages["u0002"]
    assert "'this is not JSON'" in messages["u0003"]
    assert "no reply within 2 s" in messages["u0004"]
    for name in messages:
        assert (tmp_path / "f" / name / "exception.txt").exists()
        assert trials[name]["verifier_result"] is None if "verifier_result" in trials[name] else True
    detail = json.loads((tmp_path / "f" / "u0006" / "verifier" / "score.json").read_text())["detail"]
    assert "FAKE_PROVIDER_API_KEY" not in detail["env"]  # nothing named like a secret reaches a driver
    assert {"NULLIUS_DATASET", "NULLIUS_UPSTREAM", "NULLIUS_VERSION", "NULLIUS_OPTION_MODE"} <= set(detail["env"])
    assert not detail["executable"].startswith(sys.prefix)  # the machine's python3, not Nullius's own
    summary = json.loads((tmp_path / "f" / "result.json").read_text())
    assert summary["stats"]["n_errored_trials"] == 5
    assert summary["standard"]["errored"] == 5 and summary["standard"]["passed"] == 7
    assert driver_processes(tmp_path) == []


def test_refusals_before_any_unit(env, tmp_path):
    def refused(*args):
        result = run_cli(["run", *args, "--jobs-dir", str(tmp_path / "jobs")], env)
        assert result.code == 2, result.output
        assert "Traceback" not in result.output
        return result.stderr

    assert "has no option 'colour'" in refused("faulty", "oracle", "--bench-option", "colour=red")
    assert "does not allow 'loud'" in refused("faulty", "oracle", "--bench-option", "mode=loud")
    assert "has no dataset 'dev'" in refused("faulty", "oracle", "--dataset", "dev")
    assert "no benchmark named 'nope'" in refused("nope", "oracle")
    assert "no backend named 'cloud'" in refused("faulty", "oracle", "--backend", "cloud")
    [said] = refused("faulty", "oracle", "--bench-option", "mode=loud").splitlines()  # said once: no `stage=refused` line beside it
    assert said.startswith("nullius: run refused: option 'mode' of faulty does not allow 'loud' (allowed: clean, faulty, ")
    assert not (tmp_path / "jobs").exists()


def test_ctrl_c_leaves_a_cancelled_job_that_resume_finishes(env, tmp_path):
    args = [sys.executable, "-m", "nullius_core", "run", "faulty", "oracle", "--bench-option", "mode=slow",
            "--bench-option", "delay=0.4", "-j", "2", "--job-name", "c", "--jobs-dir", str(tmp_path)]
    proc = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    job = tmp_path / "c"
    deadline = time.monotonic() + 300  # a limit that never decides: the loop ends when the trials are there
    while time.monotonic() < deadline and len(list(job.glob("*/result.json"))) < 3:
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 130, err
    assert "nullius run --resume" in err
    result = json.loads((job / "result.json").read_text())
    assert result["standard"]["state"] == "cancelled"
    trials = job_trials(job)
    assert 3 <= len(trials) < 12
    assert result["stats"]["n_completed_trials"] == len(trials)
    assert result["stats"]["n_pending_trials"] == 12 - len(trials)
    assert driver_processes(tmp_path) == []
    progress = read_json_lines(job / "progress.jsonl")
    cancelled = [p for p in progress if p.get("outcome") == "cancelled"]
    assert cancelled and len(cancelled) == result["stats"]["n_cancelled_trials"]  # a cancelled trial is reported too
    assert result["standard"]["mean"] == 1.0  # cancelled trials weigh nothing in Nullius's mean
    # every record written so far is whole
    for line in (job / "progress.jsonl").read_text().splitlines():
        json.loads(line)
    refused = run_cli(["run", "--resume", str(job), "--limit", "2"], env)
    assert refused.code == 2 and "other settings than the job's" in refused.stderr
    resumed = run_cli(["run", "--resume", str(job)], env)
    assert resumed.code == 0, resumed.output
    finished = json.loads((job / "result.json").read_text())
    assert finished["standard"]["state"] == "finished"
    assert finished["standard"]["passed"] == 12 and finished["stats"]["n_completed_trials"] == 12
    assert finished["stats"]["n_cancelled_trials"] == 0
    assert finished["id"] == result["id"]


def test_resume_keeps_errors_unless_asked(env, tmp_path):
    run_cli(["run", "faulty", "oracle", "--bench-option", "mode=faulty", "--job-name", "r", "--jobs-dir", str(tmp_path)], env)
    job = tmp_path / "r"
    before = job_trials(job)
    again = run_cli(["run", "--resume", str(job)], env)
    assert again.code == 0
    assert job_trials(job)["u0001"]["id"] == before["u0001"]["id"]  # an error stands
    retried = run_cli(["run", "--resume", str(job), "--retry-errors"], env)
    assert retried.code == 0
    after = job_trials(job)
    assert after["u0001"]["id"] != before["u0001"]["id"]
    assert after["u0000"]["id"] == before["u0000"]["id"]
    assert (job / ".work" / "earlier" / "u0001.1" / "result.json").exists()


def test_repeat_gives_pass_hat_k(env, tmp_path):
    result = run_cli(["run", "faulty", "oracle", "--repeat", "3", "--limit", "2", "--job-name", "k", "--jobs-dir", str(tmp_path)], env)
    assert result.code == 0, result.output
    trials = job_trials(tmp_path / "k")
    assert sorted(trials) == ["u0000r1", "u0000r2", "u0000r3", "u0001r1", "u0001r2", "u0001r3"]
    evals = json.loads((tmp_path / "k" / "result.json").read_text())["stats"]["evals"]["oracle__test"]
    assert evals["pass_at_k"] == {"2": 1.0}
    assert evals["pass_hat_k"] == {"1": 1.0, "2": 1.0, "3": 1.0}


def test_workspace_is_a_repository_with_setup_committed(env, tmp_path):
    result = run_cli(["run", "faulty", "oracle", "--bench-option", "mode=workspace", "--limit", "1", "--job-name", "w", "--jobs-dir", str(tmp_path)], env)
    assert result.code == 0, result.output
    workspace = tmp_path / "w" / "u0000" / ".work" / "workspace"
    log = subprocess.run(["git", "log", "--format=%s"], cwd=workspace, capture_output=True, text=True, check=True)
    assert log.stdout.split() == ["setup"]
    status = subprocess.run(["git", "status", "--porcelain"], cwd=workspace, capture_output=True, text=True, check=True)
    assert status.stdout.strip() == "?? answer.txt"  # what the oracle wrote after setup


def test_hook_nullius_run_started(nullius_session, env, tmp_path):
    events = _observe(nullius_session, env, tmp_path)
    started = events["started"]
    assert len(started) == 1 and started[0].units == tuple(f"u{i:04d}" for i in range(4)) and started[0].control == "oracle"


def test_hook_nullius_unit_finished(nullius_session, env, tmp_path):
    events = _observe(nullius_session, env, tmp_path)
    assert sorted(e.unit for e in events["unit"]) == ["u0000", "u0001", "u0002", "u0003"]
    assert all(e.outcome == "passed" and e.reward == 1.0 for e in events["unit"])


def test_hook_nullius_run_finished(nullius_session, env, tmp_path):
    events = _observe(nullius_session, env, tmp_path)
    [finished] = events["finished"]
    assert finished.state == "finished" and finished.summary["passed"] == 4
    assert finished.result["stats"]["n_completed_trials"] == 4


def _observe(nullius_session, env, tmp_path):
    from nullius_core import hookimpl
    from nullius_core.run.engine import Engine
    from nullius_core.run.progress import Progress
    from nullius_core.run.spec import RunSpec

    seen = {"started": [], "unit": [], "finished": []}

    class Observer:
        @hookimpl
        def nullius_run_started(self, event):
            seen["started"].append(event)

        @hookimpl
        def nullius_unit_finished(self, event):
            seen["unit"].append(event)

        @hookimpl
        def nullius_run_finished(self, event):
            seen["finished"].append(event)

    class Failing:
        @hookimpl
        def nullius_unit_finished(self, event):
            raise RuntimeError("an observer that fails does not stop the run")

    session = nullius_session(("observer", Observer()), ("failing", Failing()), env=env)
    spec = RunSpec(benchmark="faulty", participant="oracle", jobs_dir=tmp_path, limit=4, job_name="obs")
    outcome = Engine(session, spec, Progress(stream=open(os.devnull, "w"))).run()
    assert outcome.state == "finished"
    return seen


def test_a_killed_run_leaves_a_readable_job_that_resume_finishes(env, tmp_path):
    args = [sys.executable, "-m", "nullius_core", "run", "faulty", "oracle", "--bench-option", "mode=slow",
            "--bench-option", "delay=0.3", "-j", "2", "--job-name", "k9", "--jobs-dir", str(tmp_path)]
    proc = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    job = tmp_path / "k9"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and len(list(job.glob("*/result.json"))) < 4:
        time.sleep(0.02)
    proc.kill()  # no handler runs: as if the machine died
    proc.wait(timeout=120)
    for path in [job / "config.json", job / "result.json", *job.glob("*/result.json"), *job.glob("*/config.json")]:
        json.loads(path.read_text())  # every file written so far is whole
    for path in (job / "progress.jsonl", job / "events.jsonl"):
        for line in path.read_text().splitlines():
            json.loads(line)
    deadline = time.monotonic() + 120
    while driver_processes(tmp_path) and time.monotonic() < deadline:
        time.sleep(0.1)  # orphaned drivers end at the end of their stdin
    assert driver_processes(tmp_path) == []
    resumed = run_cli(["run", "--resume", str(job)], env)
    assert resumed.code == 0, resumed.output
    finished = json.loads((job / "result.json").read_text())
    assert finished["standard"]["state"] == "finished" and finished["standard"]["passed"] == 12
