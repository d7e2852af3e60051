"""`nullius improve rollout`: one nanoRSI rollout as a one-unit Nullius run, its score held for after the freeze.

The kernel runs it with NANORSI_REQUEST (request.json: the task, the
candidate harness, the rollout's folder, the [runner] table) and reads
NANORSI_RESULT. The harness becomes a variant scoped to the task, run with
`nullius run BENCH AGENT --variant DIR --hold-score` on the [runner]'s
model, provider, base URL, options and backend: every rollout of an
experiment the same configuration but its harness, by construction, and
recorded in rollout.json. Whatever goes wrong is a result with ok=false and
its error, never a crash.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import attrs

from nullius_rsi.harness_variant import HarnessProblem, instruction_file, write_variant
from nullius_rsi.keys import run_env
from nullius_rsi.nullius_cli import CommandFailed, agent_places, kernel_request, nullius_argv
from nullius_rsi.trial_reading import read_trial

JOB_NAME = "rollout"
RUN_SECONDS = 3600.0  # a default only: the [runner] table's timeout is the kernel's own limit on the whole rollout
ANSWER = "answer.md"
TIME_SHARE = 0.9  # of the [runner] timeout, the kernel's limit on the whole rollout: the run stops first, so a result is written
STOP_SECONDS = 60.0  # for a stopped run to write its records before it is killed


class RolloutProblem(Exception):
    """The request or the [runner] table is not what a nullius rollout needs: the message names the field."""


@attrs.frozen(kw_only=True)
class Runner:
    """The [runner] table of kind nullius: what every rollout of the experiment shares."""

    benchmark: str
    agent: str
    model: str
    provider: str | None = None
    base_url: str | None = None
    backend: str = "local"
    unsandboxed: bool = False
    options: dict[str, str] = attrs.field(factory=dict)  # the agent's options (--option)
    bench_options: dict[str, str] = attrs.field(factory=dict)  # the benchmark's (--bench-option)
    dataset: str | None = None
    effort: str | None = None
    timeout: float = RUN_SECONDS
    instructions: str | None = None  # the agent's instruction file (AGENTS.md), as `nullius improve` found it; else asked of `nullius list`
    skills: bool = True  # whether the agent finds skills (with `instructions`)

    def run_args(self) -> list[str]:
        args = ["--model", self.model, "--backend", self.backend]
        for flag, value in (("--provider", self.provider), ("--base-url", self.base_url), ("--dataset", self.dataset)):
            if value:
                args += [flag, value]
        args += [a for k, v in sorted(self.options.items()) for a in ("--option", f"{k}={v}")]
        args += [a for k, v in sorted(self.bench_options.items()) for a in ("--bench-option", f"{k}={v}")]
        return args + (["--unsandboxed"] if self.unsandboxed else [])

    def record(self) -> dict[str, Any]:
        return attrs.asdict(self)


def _string(table: dict[str, Any], name: str, required: bool = False) -> str | None:
    value = table.get(name)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value:
        raise RolloutProblem(f"[runner] {name}: expected a non-empty string, found {json.dumps(value)}")
    return value


def _pairs(table: dict[str, Any], name: str) -> dict[str, str]:
    """NAME=VALUE strings (a list, as `nanorsi configure` keeps them), or a table of them."""
    value = table.get(name, [])
    if isinstance(value, list) and all(isinstance(v, str) and "=" in v and not v.startswith("=") for v in value):
        return dict(v.split("=", 1) for v in value)
    if isinstance(value, dict) and all(isinstance(v, (str, int, float, bool)) for v in value.values()):
        return {str(k): str(v).lower() if isinstance(v, bool) else str(v) for k, v in value.items()}
    raise RolloutProblem(f"[runner] {name}: expected a list of \"NAME=VALUE\" strings, found {json.dumps(value)}")


def runner_of(table: Any) -> Runner:
    if not isinstance(table, dict):
        raise RolloutProblem(f"request.json $.runner: expected the [runner] table, found {json.dumps(table)}")
    unsandboxed = table.get("unsandboxed", False)
    if not isinstance(unsandboxed, bool):
        raise RolloutProblem(f"[runner] unsandboxed: expected true or false, found {json.dumps(unsandboxed)}")
    timeout = table.get("timeout", RUN_SECONDS)
    return Runner(benchmark=str(_string(table, "benchmark", True)), agent=str(_string(table, "agent", True)),
                  model=str(_string(table, "model", True)), provider=_string(table, "provider"), base_url=_string(table, "base_url"),
                  backend=_string(table, "backend") or "local", unsandboxed=unsandboxed, options=_pairs(table, "options"),
                  bench_options=_pairs(table, "bench_options"), dataset=_string(table, "dataset"), effort=_string(table, "effort"),
                  timeout=float(timeout) if isinstance(timeout, (int, float)) else RUN_SECONDS,
                  instructions=_string(table, "instructions"), skills=table.get("skills", True) is not False)


def failed(error: str, job: str | None = None, trajectory: str = "") -> dict[str, Any]:
    return {"ok": False, "delivered": False, "trajectory": trajectory, "deliverables": {},
            "usage": {"calls": 0, "input_tokens": 0, "output_tokens": 0}, "error": error, "job": job}


def _request(path: str | None) -> dict[str, Any]:
    try:
        request = kernel_request(path, "NANORSI_REQUEST", "rollout")
    except ValueError as exc:
        raise RolloutProblem(str(exc)) from None
    if not isinstance(request, dict):
        raise RolloutProblem(f"{path}: $: expected a JSON object")
    for key in ("task", "harness_dir", "output_dir", "always_on", "label"):
        if key not in request:
            raise RolloutProblem(f"{path}: $.{key}: required key missing")
    if not isinstance(request["task"], dict) or not isinstance(request["task"].get("id"), str):
        raise RolloutProblem(f"{path}: $.task.id: expected the task's id, a string")
    return request


def rollout(request_path: str | None) -> dict[str, Any]:
    """The rollout's result (the contract's result.json), whatever happened."""
    try:
        request = _request(request_path)
        runner = runner_of(request.get("runner"))
        out = Path(request["output_dir"])
        task, label = request["task"], str(request["label"])
        if runner.instructions:
            instructions, takes_skills = runner.instructions, runner.skills
        else:
            instructions, takes_skills = instruction_file(agent_places(runner.agent), runner.agent)
        variant = write_variant(out / "variant" / label, harness_dir=Path(request["harness_dir"]), always_on=request["always_on"],
                                agent=runner.agent, model=runner.model, task=task["id"], instructions=instructions,
                                takes_skills=takes_skills, effort=runner.effort)
    except (RolloutProblem, HarnessProblem, CommandFailed, OSError) as exc:
        return failed(str(exc))
    argv = [*nullius_argv("run"), runner.benchmark, runner.agent, "--variant", str(variant),
            "--hold-score", "-j", "1", "--jobs-dir", str(out / "jobs"), "--job-name", JOB_NAME, *runner.run_args()]
    (out / "rollout.json").write_text(json.dumps({"runner": runner.record(), "argv": argv[1:], "variant": str(variant)}, indent=2),
                                      encoding="utf-8")
    with (out / "nullius-run.log").open("w", encoding="utf-8") as log:
        status = _run(argv, log, runner.timeout * TIME_SHARE)
    job = out / "jobs" / JOB_NAME
    if not (job / "config.json").is_file():
        tail = (out / "nullius-run.log").read_text(encoding="utf-8", errors="replace").strip().splitlines()[-5:]
        return failed(f"{status}, no job: " + " / ".join(tail))
    return result_of(job, task, runner)


def _run(argv: list[str], log: Any, seconds: float) -> str:
    """`nullius run`, stopped as Ctrl-C stops it (SIGTERM: its trial recorded as cancelled) when it runs past `seconds`."""
    try:
        process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=run_env(os.environ))
    except OSError as exc:
        return f"nullius run could not start: {exc}"
    try:
        return f"nullius run exited {process.wait(timeout=seconds)}"
    except subprocess.TimeoutExpired:
        process.terminate()
        try:
            process.wait(timeout=STOP_SECONDS)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        return f"nullius run stopped after {seconds:g} s ([runner] timeout)"


def result_of(job: Path, task: dict[str, Any], runner: Runner) -> dict[str, Any]:
    """The contract's result from the job's one trial: its trajectory, deliverables and usage; its configuration recorded."""
    trials = sorted(p.parent for p in job.glob("*/result.json"))
    if len(trials) != 1:
        return failed(f"the job holds {len(trials)} trials, not the one of task {task['id']}", job=str(job))
    seen = read_trial(trials[0])
    wanted = [str(n) for n in task.get("deliverables") or [ANSWER]]
    deliverables = {name: text for name, text in ((ANSWER, seen.answer), ("changes.patch", seen.patch)) if text.strip()}
    config = json.loads((job / "config.json").read_text(encoding="utf-8")).get("standard") or {}
    (job.parent.parent / "config.json").write_text(json.dumps(_matched(config, runner), indent=2), encoding="utf-8")
    return {"ok": seen.error is None, "delivered": seen.error is None and all(deliverables.get(n, "").strip() for n in wanted),
            "trajectory": seen.trajectory, "deliverables": deliverables, "usage": seen.usage, "error": seen.error, "job": str(job)}


def _matched(standard: dict[str, Any], runner: Runner) -> dict[str, Any]:
    """What makes two rollouts comparable, as the job recorded it: the same for every rollout but the variant."""
    keys = ("nullius", "benchmark_ref", "dataset", "dataset_sha256", "participant", "model", "options", "reasoning_effort", "unsandboxed",
            "variant")
    agent = {k: v for k, v in (standard.get("agent") or {}).items() if k in ("ref", "version", "options", "protocol", "provider", "base_url")}
    return {"runner": runner.record(), "backend": (standard.get("backend") or {}).get("name"), "agent": agent,
            **{k: standard.get(k) for k in keys if k in standard}}
