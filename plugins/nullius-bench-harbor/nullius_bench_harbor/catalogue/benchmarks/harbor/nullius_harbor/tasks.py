"""A folder of Harbor tasks as units, each read with Harbor's own models (harbor.models.task.task.Task).

The folder is the dataset: a task folder itself (it holds task.toml) is one
unit; otherwise every folder in it that holds a task.toml is one, in name
order (Harbor's LocalDatasetConfig lists them the same way, but passes over
the ones that do not validate: here such a task is a unit whose setup fails,
saying why). Paths in a setup reply are relative to the dataset folder,
which is what Nullius builds and copies from.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from harbor.constants import MAIN_SERVICE_NAME
from harbor.models.task.artifacts import convention_source_for_os, normalize_artifact_entries, source_relative_path, with_convention_entry
from harbor.models.task.config import NetworkMode, StepConfig, TaskOS
from harbor.models.task.task import Task
from harbor.publisher.packager import Packager
from harbor.utils.env import resolve_env_vars
from pydantic import ValidationError

CONFIG = "task.toml"
LOGS = "mkdir -p /logs/agent /logs/verifier /logs/artifacts"


class NotMapped(ValueError):
    """A feature of the task this version does not run: its setup error, naming the feature and why."""


def task_dirs(folder: Path) -> dict[str, Path]:
    """Unit id -> task folder."""
    if (folder / CONFIG).is_file():
        return {folder.name: folder}
    return {p.name: p for p in sorted(folder.iterdir()) if p.is_dir() and (p / CONFIG).is_file()}


def load(folder: Path, unit: str) -> tuple[Task, str]:
    """The unit's Task and its folder relative to the dataset folder ("." for a dataset that is one task)."""
    found = task_dirs(folder).get(unit)
    if found is None:
        raise ValueError(f"no task {unit!r} in {folder}")
    try:
        task = Task(found)
    except ValidationError as exc:
        raise ValueError(f"{found / CONFIG}: " + "; ".join(_pydantic(e) for e in exc.errors())) from None
    except (OSError, ValueError, RuntimeError) as exc:
        raise ValueError(f"{found}: not a Harbor task Harbor 0.25 reads: {exc}") from None
    return task, found.relative_to(folder).as_posix() if found != folder else "."


def _pydantic(error: dict[str, Any]) -> str:
    where = ".".join(str(p) for p in error.get("loc", ())) or "(top)"
    return f"{where}: {error.get('msg')}"


def _join(rel: str, *parts: str) -> str:
    return "/".join(p for p in (rel if rel != "." else "", *parts) if p)


def refused(task: Task) -> list[str]:
    """The task's features this version does not run, each with its reason (empty: it runs)."""
    c = task.config
    env = c.environment
    out = []
    for step in c.steps or []:
        if step.agent.user is not None or step.verifier.user is not None:
            out.append(f"steps {step.name!r} agent.user / verifier.user: the box runs as its image's user")
        if step.healthcheck is not None:
            out.append(f"steps {step.name!r} healthcheck: a step's own readiness check is not run yet")
    if _compose_file(task) is not None and not (task.paths.environment_dir / "Dockerfile").is_file():
        out.append("environment/docker-compose.yaml without environment/Dockerfile: main's image is built from the Dockerfile")
    if env.os != TaskOS.LINUX:
        out.append(f"environment.os {env.os.value}: only Linux images run")
    if env.gpus or env.gpu_types or env.tpu:
        out.append("environment.gpus/gpu_types/tpu: no accelerator is handed to a box")
    if env.skills_dir:
        out.append("environment.skills_dir: skills are not staged for the agent yet")
    if c.agent.user is not None or c.verifier.user is not None:
        out.append("agent.user / verifier.user: the box runs as its image's user")
    if c.verifier.environment is not None or (c.verifier.environment_mode is not None and c.verifier.environment_mode.value == "separate"):
        out.append("verifier.environment (a separate verifier container): the check runs where the work is")
    if _compose_file(task) is None and any(a.service not in (None, MAIN_SERVICE_NAME) for a in normalize_artifact_entries(c.artifacts)):
        out.append("artifacts of another service: the task has no compose file")
    if task.paths.trajectory_path.exists():
        out.append("trajectory.json (prior context for the agent): not seeded")
    for server in env.mcp_servers:
        if server.transport != "stdio":
            out.append(f"environment.mcp_servers {server.name!r}: transport {server.transport} (only stdio servers are handed to the agent)")
    return out


def setup_reply(task: Task, rel: str) -> dict[str, Any]:
    """The unit's setup: the instruction, its own image, its limits, its check."""
    problems = refused(task)
    if problems:
        raise NotMapped("not run: this task uses " + "; ".join(problems))
    c = task.config
    env = c.environment
    image: dict[str, Any] = {"pull": env.docker_image} if env.docker_image else {"build": _join(rel, "environment")}
    if env.memory_mb:
        image["memory_mb"] = env.memory_mb
    if env.cpus:
        image["cpus"] = env.cpus
    digest, _ = Packager.compute_content_hash(task.task_dir)  # what Harbor's TrialLock pins the task by
    reply: dict[str, Any] = {"prompt": task.instruction, "environment": "task", "image": image,
                             "task": {"name": task.name, "checksum": digest, "path": str(task.task_dir)}}
    if c.steps:
        reply["steps"] = [_step(task, rel, step, i) for i, step in enumerate(c.steps)]
        reply["prompt"] = reply["steps"][0]["prompt"]
    else:
        reply["verify"] = verify(task, rel)
    compose = _compose_file(task)
    if compose is not None:  # the task's other services; its main is the box
        reply["compose"] = _join(rel, "environment", compose)
    if env.workdir:
        reply["workdir"] = env.workdir
    seconds = [s.agent.timeout_sec or c.agent.timeout_sec for s in c.steps or []] or [c.agent.timeout_sec]
    if all(seconds):
        reply["agent_seconds"] = max(seconds)  # one limit per turn: a task of steps gets its longest step's
    mcp = [{"name": s.name, "command": [s.command, *s.args]} for s in env.mcp_servers if s.transport == "stdio" and s.command]
    if mcp:
        reply["mcp"] = mcp
    if env.env:
        reply["env"] = _resolved(env.env, "environment.env")
    if env.healthcheck is not None:
        h = env.healthcheck
        reply["healthcheck"] = {"run": ["bash", "-c", h.command], "interval": h.interval_sec, "timeout": h.timeout_sec,
                                "start_period": h.start_period_sec, "start_interval": h.start_interval_sec, "retries": h.retries}
    reply["artifacts"] = [] if c.steps else artifacts(task)  # a task of steps collects them after each step
    reply["dirs"] = ["/logs/agent", "/logs/verifier", "/logs/artifacts"]  # Harbor mounts them: they are there from the start
    return reply


def _compose_file(task: Task) -> str | None:
    return next((n for n in ("docker-compose.yaml", "docker-compose.yml") if (task.paths.environment_dir / n).is_file()), None)


def artifacts(task: Task, step: StepConfig | None = None) -> list[dict[str, Any]]:
    """Harbor's artifacts, its convention folder (/logs/artifacts) first, each where Harbor puts it under artifacts/ (a step's: the task's and its own)."""
    declared = [*task.config.artifacts, *(step.artifacts if step is not None else [])]
    entries = with_convention_entry(declared, convention_source=convention_source_for_os(task.config.environment.os))
    return [{"source": a.source, "destination": a.destination or source_relative_path(a.source).as_posix(), "exclude": list(a.exclude),
             "service": a.service if a.service not in (None, MAIN_SERVICE_NAME) else None} for a in entries]


def verify(task: Task, rel: str, step: StepConfig | None = None) -> dict[str, Any]:
    """Harbor's Verifier: stale rewards gone, tests/ copied to /tests after the agent, test.sh run with [verifier] env, /logs/verifier collected.

    A step's check has the task's tests/ and then the step's own over them,
    and runs the step's test.sh when it has one, else the task's.
    """
    paths, os_ = task.paths, task.config.environment.os
    copy = {_join(rel, "tests"): "/tests"} if paths.tests_dir.is_dir() else {}
    script, tests = paths.discovered_test_path_for(os_), paths.tests_dir
    config = task.config.verifier
    if step is not None:
        if paths.step_tests_dir(step.name).is_dir():
            copy[_join(rel, "steps", step.name, "tests")] = "/tests"
        own = paths.discovered_step_test_path_for(step.name, os_)
        if own is not None:
            script, tests = own, paths.step_tests_dir(step.name)
        config = step.verifier
    if script is None:
        raise NotMapped(f"not run: {tests} holds no test.sh" + (f" (step {step.name!r})" if step else ""))
    inside = "/tests/" + script.relative_to(tests).as_posix()
    env = {**task.config.verifier.env, **config.env}
    command = f"{LOGS} && chmod +x {inside} && exec {_env_prefix(env, 'verifier.env')}{inside}"
    seconds = config.timeout_sec if step is None or "timeout_sec" in config.model_fields_set else task.config.verifier.timeout_sec
    return {
        "copy": copy,
        "clear": ["/tests", "/logs/verifier"],  # what the agent left there (its own tests, a reward file) never counts
        "run": ["bash", "-c", command],
        "collect": "/logs/verifier",
        "seconds": seconds,
        **_network(task, config),
        "keep_processes": True,  # Harbor's shared verifier runs beside what the agent left running (a service it started)
    }


def _network(task: Task, verifier: Any) -> dict[str, Any]:
    """The check's network policy, as Harbor resolves the verifier phase's: its own override, else the environment's."""
    policy = verifier.explicit_phase_policy() or task.config.environment.resolve_baseline()
    if policy.network_mode == NetworkMode.NO_NETWORK:
        return {"network": False}
    if policy.network_mode == NetworkMode.ALLOWLIST:
        return {"network": True, "allow": list(policy.allowed_hosts)}
    return {"network": True}


def _step(task: Task, rel: str, step: StepConfig, index: int) -> dict[str, Any]:
    """One step: its instruction, what Harbor puts in before it (steps/<name>/workdir/ into the working directory, then its setup.sh)."""
    out: dict[str, Any] = {"name": step.name, "prompt": task.step_instruction(step.name), "verify": verify(task, rel, step),
                           "artifacts": artifacts(task, step)}
    workdir = task.paths.step_workdir_dir(step.name)
    if workdir.is_dir():
        before: dict[str, Any] = {"copy": {_join(rel, "steps", step.name, "workdir"): "."}}
        if task.paths.step_setup_path(step.name).is_file():
            before["run"] = ["bash", "setup.sh"]
        out["before"] = before
    return out


def solve(task: Task, rel: str) -> dict[str, Any] | list[dict[str, Any]]:
    """Harbor's OracleAgent: solution/ copied to /solution, solve.sh run with [solution] env and DEBIAN_FRONTEND=noninteractive.

    A task of steps: one solve a step, the step's own solution/ when it has
    one, else the task's.
    """
    if task.config.steps:
        return [_solve(task, rel, step) for step in task.config.steps]
    return _solve(task, rel, None)


def _solve(task: Task, rel: str, step: StepConfig | None) -> dict[str, Any]:
    os_ = task.config.environment.os
    folder, script, source = task.paths.solution_dir, task.paths.discovered_solve_path_for(os_), _join(rel, "solution")
    if step is not None and task.paths.step_solution_dir(step.name).is_dir():
        folder, script = task.paths.step_solution_dir(step.name), task.paths.discovered_step_solve_path_for(step.name, os_)
        source = _join(rel, "steps", step.name, "solution")
    if script is None:
        raise ValueError(f"{folder} holds no solve.sh")
    inside = "/solution/" + script.relative_to(folder).as_posix()
    solution_env = {"DEBIAN_FRONTEND": "noninteractive", **task.config.solution.env}
    command = f"{LOGS} && chmod +x {inside} && exec {_env_prefix(solution_env, 'solution.env')}{inside}"
    seconds = (step.agent.timeout_sec if step is not None else None) or task.config.agent.timeout_sec or 600.0
    return {"copy": {source: "/solution"}, "run": ["bash", "-c", command], "seconds": seconds}


def _resolved(env: dict[str, str], where: str) -> dict[str, str]:
    """The values resolved as Harbor resolves them (${VAR}, ${VAR:-default}), from this process's environment."""
    try:
        return resolve_env_vars(env)
    except ValueError as exc:
        raise NotMapped(f"not run: {where}: {exc} (a driver is handed no variable named like a secret)") from None


def _env_prefix(env: dict[str, str], where: str) -> str:
    """`env K=V ... ` for the command."""
    if not env:
        return ""
    return "env " + " ".join(shlex.quote(f"{k}={v}") for k, v in _resolved(env, where).items()) + " "
