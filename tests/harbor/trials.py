"""Run Harbor's own trials (`harbor run`) on a folder of Harbor tasks and read back what Harbor recorded.

    from tests.harbor.trials import run_harbor
    job = run_harbor(Path("examples/harbor-tasks"), "oracle", jobs_dir=tmp, job_name="oracle", n_concurrent=4)
    for trial in job.trials:
        print(trial.task, trial.reward, trial.rewards, trial.exception_type, trial.seconds)

One call sets up everything the run needs (``ensure_harbor_venv()``: the Python 3.12
venv with harbor==0.25.0 and docker compose v2.40.3 in its own DOCKER_CONFIG), then runs

    harbor run -p TASKS -a AGENT -n N -e ENV -o JOBS --job-name NAME -q -y

with ``LITELLM_LOCAL_MODEL_COST_MAP=True``, ``HARBOR_TELEMETRY=0`` and that
``DOCKER_CONFIG``, and reads every trial's ``result.json`` in ``JOBS/NAME/`` with the
standard library only (this module runs under Nullius's Python, not the venv's).
``env`` is Harbor's ``-e``: ``docker`` (the stock compose environment) or an import
path such as ``plain_docker_env:PlainDockerEnvironment`` with ``pythonpath`` naming its
folder. Harbor's exit code and output are kept on the result; a job that never
finished (Harbor refuses some tasks before any trial runs, and then the whole job
stops) has ``finished`` false.

``leftovers(job)`` lists the containers and networks of the job's compose projects
that are still there (Harbor names each project after its trial, ``<trial>__env``
sanitised); ``remove_leftovers(job)`` removes them.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from .venv import HarborVenv, ensure_harbor_venv  # imported as tests.harbor.trials, or harbor.trials with tests/ on sys.path


@dataclass(frozen=True)
class Trial:
    """One trial as Harbor recorded it in its result.json."""

    task: str  # task_name (the task.toml [task] name, e.g. nullius-examples/ini-to-env)
    trial: str  # trial_name, the trial's folder
    folder: Path
    rewards: dict[str, float] | None  # verifier_result.rewards
    exception_type: str | None
    exception_message: str | None
    seconds: float | None  # started_at -> finished_at
    phases: dict[str, float | None]  # environment_setup, agent_setup, agent_execution, verifier: seconds each
    step_rewards: list[tuple[str, dict[str, float] | None]] | None  # multi-step tasks: (step name, rewards)
    raw: dict = field(repr=False)

    @property
    def reward(self) -> float | None:
        """The `reward` key (reward.txt's value, or reward.json's `reward`)."""
        return None if self.rewards is None else self.rewards.get("reward")


@dataclass(frozen=True)
class HarborJob:
    folder: Path
    returncode: int
    stdout: str
    stderr: str
    wall_seconds: float
    finished: bool  # the job's result.json has finished_at
    n_total_trials: int | None
    trials: list[Trial]

    def by_task(self) -> dict[str, Trial]:
        return {t.task: t for t in self.trials}

    def summary(self) -> str:
        lines = [f"{self.folder.name}: {len(self.trials)} trials, finished={self.finished}, rc={self.returncode}, {self.wall_seconds:.1f} s"]
        for t in sorted(self.trials, key=lambda t: t.task):
            lines.append(f"  {t.task}: rewards={t.rewards} exception={t.exception_type} seconds={t.seconds}")
        return "\n".join(lines)


def _stamp(value: str | None) -> datetime | None:
    if not value:
        return None
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def _span(timing: dict | None) -> float | None:
    if not timing:
        return None
    start, end = _stamp(timing.get("started_at")), _stamp(timing.get("finished_at"))
    return None if start is None or end is None else round((end - start).total_seconds(), 3)


def read_trial(result_json: Path) -> Trial:
    data = json.loads(result_json.read_text())
    verifier = data.get("verifier_result") or {}
    exc = data.get("exception_info") or {}
    steps = data.get("step_results")
    return Trial(
        task=data.get("task_name") or "",
        trial=data.get("trial_name") or result_json.parent.name,
        folder=result_json.parent,
        rewards=verifier.get("rewards"),
        exception_type=exc.get("exception_type"),
        exception_message=exc.get("exception_message"),
        seconds=_span(data),
        phases={k: _span(data.get(k)) for k in ("environment_setup", "agent_setup", "agent_execution", "verifier")},
        step_rewards=None if steps is None else [(s.get("step_name"), (s.get("verifier_result") or {}).get("rewards")) for s in steps],
        raw=data,
    )


def read_job(folder: Path, returncode: int = 0, stdout: str = "", stderr: str = "", wall_seconds: float = 0.0) -> HarborJob:
    job_result = folder / "result.json"
    info = json.loads(job_result.read_text()) if job_result.is_file() else {}
    trials = [read_trial(p) for p in sorted(folder.glob("*/result.json"))]
    return HarborJob(
        folder=folder,
        returncode=returncode,
        stdout=stdout,
        stderr=stderr,
        wall_seconds=wall_seconds,
        finished=bool(info.get("finished_at")),
        n_total_trials=info.get("n_total_trials"),
        trials=trials,
    )


def harbor_command(venv: HarborVenv, tasks: Path, agent: str, *, jobs_dir: Path, job_name: str, n_concurrent: int,
                   env: str, extra_args: tuple[str, ...] = ()) -> list[str]:
    return [str(venv.harbor), "run", "-p", str(tasks), "-a", agent, "-n", str(n_concurrent), "-e", env,
            "-o", str(jobs_dir), "--job-name", job_name, "-q", "-y", *extra_args]


def run_harbor(
    tasks: Path,
    agent: str,
    *,
    jobs_dir: Path,
    job_name: str,
    n_concurrent: int = 4,
    env: str = "docker",
    pythonpath: Path | str | None = None,
    extra_args: tuple[str, ...] = (),
    timeout: float = 3600.0,
) -> HarborJob:
    """`harbor run` AGENT (oracle, nop, ...) over TASKS (a task folder or a folder of them); the job as Harbor left it."""
    venv = ensure_harbor_venv()
    jobs_dir = Path(jobs_dir).resolve()
    jobs_dir.mkdir(parents=True, exist_ok=True)
    process_env = {**os.environ, **venv.env()}
    if pythonpath is not None:
        process_env["PYTHONPATH"] = os.pathsep.join(p for p in (str(pythonpath), os.environ.get("PYTHONPATH")) if p)
    cmd = harbor_command(venv, Path(tasks).resolve(), agent, jobs_dir=jobs_dir, job_name=job_name,
                         n_concurrent=n_concurrent, env=env, extra_args=extra_args)
    started = time.monotonic()
    out = subprocess.run(cmd, env=process_env, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    wall = round(time.monotonic() - started, 2)
    return read_job(jobs_dir / job_name, out.returncode, out.stdout, out.stderr, wall)


def _project_name(session_id: str) -> str:
    # Harbor's _sanitize_docker_compose_project_name
    name = session_id.lower()
    if not re.match(r"^[a-z0-9]", name):
        name = "0" + name
    return re.sub(r"[^a-z0-9_-]", "-", name)


def job_projects(job: HarborJob | Path) -> set[str]:
    """The compose project names of a job's trials (Harbor's session id is `<trial>__env`)."""
    folder = job.folder if isinstance(job, HarborJob) else Path(job)
    return {_project_name(f"{d.name}__env") for d in folder.iterdir() if d.is_dir()} if folder.is_dir() else set()


def leftovers(job: HarborJob | Path) -> dict[str, list[str]]:
    """Containers and networks of the job's compose projects (and of the plain environment's containers) still present."""
    projects = job_projects(job)
    found: dict[str, list[str]] = {"containers": [], "networks": []}
    if not projects:
        return found
    ps = subprocess.run(["docker", "ps", "-a", "--format", '{{.ID}} {{.Names}} {{.Label "com.docker.compose.project"}}'],
                        capture_output=True, text=True)
    for line in ps.stdout.splitlines():
        cid, name, *project = line.split()
        plain = name.startswith("nullius-anchors-") and _project_name(name[len("nullius-anchors-"):]) in projects
        if (project and project[0] in projects) or plain:
            found["containers"].append(cid)
    nets = subprocess.run(["docker", "network", "ls", "--format", '{{.ID}} {{.Label "com.docker.compose.project"}}'],
                          capture_output=True, text=True)
    for line in nets.stdout.splitlines():
        nid, *project = line.split()
        if project and project[0] in projects:
            found["networks"].append(nid)
    return found


def remove_leftovers(job: HarborJob | Path) -> dict[str, list[str]]:
    """Remove what leftovers(job) finds; returns what was removed."""
    found = leftovers(job)
    if found["containers"]:
        subprocess.run(["docker", "rm", "-f", *found["containers"]], capture_output=True)
    if found["networks"]:
        subprocess.run(["docker", "network", "rm", *found["networks"]], capture_output=True)
    return found
