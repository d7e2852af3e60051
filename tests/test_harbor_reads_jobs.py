"""Harbor reads Nullius's jobs: every result.json and trajectory.json through Harbor 0.25.0's own models.

Harbor needs Python 3.12, so its models run in a venv of their own
(tests/harbor/venv.py, built once per machine) and validate each job folder
with tests/harbor/validate_job.py.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import ROOT
from harbor.venv import ensure_harbor_python

from nullius_core.testing import run_cli

VALIDATE = ROOT / "tests" / "harbor" / "validate_job.py"
CATALOGUE = ROOT / "tests" / "fixtures" / "catalogue"


@pytest.fixture(scope="module")
def harbor_python() -> Path:
    return ensure_harbor_python()


def harbor_check(python: Path, job: Path) -> dict:
    done = subprocess.run([str(python), str(VALIDATE), str(job)], capture_output=True, text=True, timeout=300)
    report = json.loads(done.stdout)
    assert report["ok"], json.dumps(report["errors"][:5], indent=1)
    return report


def test_harbor_reads_control_jobs_errors_repeats_and_merges(harbor_python, nullius_env, tmp_path):
    env = {**nullius_env, "NULLIUS_CATALOGUE": str(CATALOGUE), "NULLIUS_JOBS_DIR": str(tmp_path)}
    runs = {
        "oracle": ["run", "faulty", "oracle"],
        "nop": ["run", "faulty", "nop"],
        "faults": ["run", "faulty", "oracle", "--bench-option", "mode=faulty"],
        "repeat": ["run", "faulty", "oracle", "--repeat", "2", "--limit", "3"],
        "s1": ["run", "faulty", "oracle", "--shard", "1/2", "--launch", "L"],
        "s2": ["run", "faulty", "oracle", "--shard", "2/2", "--launch", "L"],
    }
    for name, args in runs.items():
        result = run_cli([*args, "--job-name", name], env)
        assert result.code == 0, result.output
    assert run_cli(["merge", str(tmp_path / "s1"), str(tmp_path / "s2"), "-o", str(tmp_path / "merged")], env).code == 0
    for name, trials in {"oracle": 12, "nop": 12, "faults": 12, "repeat": 6, "merged": 12}.items():
        report = harbor_check(harbor_python, tmp_path / name)
        assert report["checked"]["trials"] == trials
        assert report["checked"]["locks"] == 0 and not (tmp_path / name / "lock.json").exists()  # no task folder to pin
        # an errored setup leaves no prompt, so no trajectory; every other trial has one
        assert report["checked"]["trajectories"] == trials - (1 if name == "faults" else 0)


def test_harbor_reads_the_real_benchmarks(harbor_python, env_shared_installs, tmp_path):
    env = {**env_shared_installs, "NULLIUS_JOBS_DIR": str(tmp_path)}
    for bench, limit in (("gsm8k", "40"), ("humaneval", "8")):
        result = run_cli(["run", bench, "oracle", "--limit", limit, "--job-name", bench], env)
        assert result.code == 0, result.output
        report = harbor_check(harbor_python, tmp_path / bench)
        assert report["checked"]["trials"] == int(limit)
        summary = json.loads((tmp_path / bench / "result.json").read_text())["standard"]
        assert summary["passed"] == int(limit)


def test_harbor_reads_a_job_of_harbor_tasks_steps_artifacts_and_services_included(harbor_python, env_shared_installs, tmp_path):
    """The Harbor benchmark's job (examples/harbor-tasks: a task of steps, a compose task with a sidecar's artifact) is Harbor's shape."""
    tasks = tmp_path / "tasks"
    for name in ("ledger-cli-steps", "compose-inventory-report", "sales-summary-csv"):
        shutil.copytree(ROOT / "examples" / "harbor-tasks" / name, tasks / name)
    env = {**env_shared_installs, "NULLIUS_JOBS_DIR": str(tmp_path / "jobs")}
    result = run_cli(["run", "harbor", "oracle", "--dataset", str(tasks), "--backend", "docker", "--job-name", "h"], env, timeout=2400)
    assert result.code == 0, result.output
    report = harbor_check(harbor_python, tmp_path / "jobs" / "h")
    assert report["checked"]["trials"] == 3 and report["checked"]["trajectories"] == 3
    # each trial pinned by Harbor's own hash of its task folder (checked by the validator), and the job by its trials
    assert report["checked"]["locks"] == 3 and report["checked"]["job_lock"] == 1
    job_lock = json.loads((tmp_path / "jobs" / "h" / "lock.json").read_text())
    assert sorted(t["task"]["name"] for t in job_lock["trials"]) == sorted(
        json.loads(p.read_text())["task_name"] for p in (tmp_path / "jobs" / "h").glob("*/result.json"))
    steps = [t for t in job_lock["trials"] if t["task"]["path"].endswith("ledger-cli-steps")]
    assert steps[0]["verifier"]["environment_mode"] is None  # a task of steps: Harbor resolves the mode per step
    trial = json.loads((tmp_path / "jobs" / "h" / "compose-inventory-report" / "result.json").read_text())
    assert trial["task_name"] == "nullius-examples/compose-inventory-report" and trial["verifier_result"]["rewards"]["report_posted"] == 1.0
    manifest = json.loads((tmp_path / "jobs" / "h" / "compose-inventory-report" / "artifacts" / "manifest.json").read_text())
    assert {(e["source"], e["service"], e["status"]) for e in manifest} >= {("/srv/api/requests.log", "inventory-api", "ok")}


def test_an_agents_job_records_the_core_it_ran_and_harbor_reads_it(harbor_python, nullius_env, tmp_path, fake_model):
    """`upstream.core` (the core an adapter runs) is in config.json with the agent, and in each trial's agent_info, which Harbor reads."""
    catalogue = tmp_path / "catalogue"
    shutil.copytree(CATALOGUE, catalogue)
    definition = catalogue / "agents" / "scripted" / "agent.json"
    raw = json.loads(definition.read_text())
    raw["upstream"]["core"] = "scripted-core==2.0.1"
    definition.write_text(json.dumps(raw))
    env = {**nullius_env, "NULLIUS_CATALOGUE": str(catalogue), "NULLIUS_JOBS_DIR": str(tmp_path / "jobs"),
           "OPENAI_COMPATIBLE_API_KEY": "sk-upstream-held-by-the-relay-0123456789"}
    fake_model.use({"rules": [{"when": {"contains": "Say alpha"}, "reply": {"text": "alpha"}}]})
    result = run_cli(["run", "faulty", "scripted", "--model", "fake-1", "--provider", "openai-compatible", "--base-url", fake_model.openai_base_url,
                      "--unsandboxed", "--limit", "1", "--job-name", "cored"], env)
    assert result.code == 0, result.output
    job = tmp_path / "jobs" / "cored"
    agent = json.loads((job / "config.json").read_text())["standard"]["agent"]
    assert agent["upstream"] == {"pypi": "nullius-test-fixture", "version": "1.0", "core": "scripted-core==2.0.1"}
    trial = json.loads((job / "u0000" / "result.json").read_text())
    assert trial["agent_info"] == {"name": "scripted", "version": "1.0", "core": "scripted-core==2.0.1",
                                   "model_info": {"name": "fake-1", "provider": "openai-compatible"}}
    assert trial["config"]["standard"]["agent"]["upstream"]["core"] == "scripted-core==2.0.1"
    report = harbor_check(harbor_python, job)  # Harbor's AgentInfo ignores the key it does not know; the trial still reads
    assert report["checked"]["trials"] == 1 and report["checked"]["trajectories"] == 1
