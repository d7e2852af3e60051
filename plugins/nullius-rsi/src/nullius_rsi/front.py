"""`nullius improve BENCH AGENT --tasks ... --model M`: a nanoRSI experiment whose rollouts are Nullius runs, start to report.

It makes the kernel's workspace with the kernel's own commands (`nanorsi new`,
`configure`, `evolve`, `freeze`, `judge`, `report`, `verify`): each task's
manifest holds the unit's own prompt (`nullius prompt`), the [runner] is of
kind nullius (every rollout the same benchmark, agent, model, options and
backend), the [judge] is `nullius improve judge`. The improver's calls go
through a relay route of their own (`nullius relay serve`, recorded and
priced in the workspace's improver-relay/): the relay holds the provider's
key; the file [model] api_key_file names, outside the workspace, holds the
route's token alone.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable

import attrs

from nullius_rsi.keys import KeyDesk
from nullius_rsi.nullius_cli import CommandFailed, agent_places, nullius_argv, run_nullius

BASE_HARNESS = {
    "systemprompt.md": "Work on the task in your workspace. End with your final answer, as the task asks for it.\n",
    "guardrails.md": "",
    "memory.md": "",
    "tool_guidance.md": "",
}
RELAY_RECORD = "improver-relay"  # in the workspace: the improver's calls, as the relay recorded and priced them
BUDGET_STOPPED = 3  # nanorsi's exit status when the budget ran out (evolve resumes)


class FrontRefused(Exception):
    """`nullius improve` cannot start: the message says why and what to do."""


@attrs.frozen(kw_only=True)
class Experiment:
    benchmark: str
    agent: str
    tasks: tuple[str, ...]
    model: str
    workspace: Path
    provider: str | None = None
    base_url: str | None = None
    improver_model: str | None = None
    mode: str = "agg"
    k: int = 2
    final_repeats: int = 1
    backend: str = "local"
    unsandboxed: bool = False
    options: tuple[str, ...] = ()
    bench_options: tuple[str, ...] = ()
    dataset: str | None = None
    max_rollouts: int | None = None
    max_proposer_calls: int | None = None
    assess_judge: str | None = None  # with it, the judge adds the rubric assessment (`nullius assess`) to each score's detail
    assess_model: str | None = None
    rubric: Path | None = None
    criteria_dir: Path | None = None
    assess_repetitions: int = 1

    def assess_args(self) -> list[str]:
        """`nullius assess`'s options for [runner] assess: the judge, its model and relay, the rubric; none without --assess-judge."""
        if not self.assess_judge:
            return []
        args = ["--judge", self.assess_judge, "--model", self.assess_model or self.model, "--eval-repetitions", str(self.assess_repetitions),
                "--backend", self.backend]
        for flag, value in (("--provider", self.provider), ("--base-url", self.base_url), ("--rubric", self.rubric),
                            ("--criteria-dir", self.criteria_dir)):
            if value:
                args += [flag, str(Path(value).resolve()) if isinstance(value, Path) else value]
        return args + (["--unsandboxed"] if self.unsandboxed else [])


def kernel_argv() -> list[str]:
    """The kernel's command: `nanorsi` beside this interpreter, else its module; FrontRefused when it is not installed."""
    beside = Path(sys.executable).with_name("nanorsi")
    if beside.is_file():
        return [str(beside)]
    if importlib.util.find_spec("nanorsi") is not None:
        return [sys.executable, "-m", "nanorsi.cli"]
    raise FrontRefused("the nanoRSI kernel (the nanorsi package of nullius-rsi) is not installed here")


def token_file(workspace: Path) -> Path:
    """Where the route's token goes: outside the workspace (the kernel refuses a key file inside it), the same for each run of it."""
    tag = hashlib.sha256(str(workspace.resolve()).encode()).hexdigest()[:16]
    folder = Path(tempfile.gettempdir()) / f"nullius-improve-{os.getuid()}" / tag
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    return folder / "route-token"


def _toml(value: Any) -> str:
    return json.dumps(value)  # a JSON string, number, boolean or list of strings is the same in TOML


def assignments(exp: Experiment, relay_url: str, key_file: Path, nullius: str) -> list[str]:
    """`nanorsi configure` TABLE.FIELD=VALUE for the whole experiment."""
    places = agent_places(exp.agent)
    instructions = ((places or {}).get("instructions") or {}).get("file")
    if not instructions:
        raise FrontRefused(f"{exp.agent} declares no instruction file (agent.json variant.instructions): a harness has nowhere to go")
    runner: dict[str, Any] = {"kind": "nullius", "nullius": nullius, "benchmark": exp.benchmark, "agent": exp.agent, "model": exp.model,
                              "backend": exp.backend, "unsandboxed": exp.unsandboxed, "options": list(exp.options),
                              "bench_options": list(exp.bench_options), "instructions": instructions,
                              "skills": bool((places or {}).get("skills"))}
    runner.update({k: v for k, v in (("provider", exp.provider), ("base_url", exp.base_url), ("dataset", exp.dataset),
                                     ("assess", exp.assess_args())) if v})
    fields: dict[str, Any] = {"experiment.mode": exp.mode, "experiment.k": exp.k, "experiment.final_repeats": exp.final_repeats,
                              "model.base_url": relay_url, "model.name": exp.improver_model or exp.model,
                              "model.api_key_file": str(key_file), "judge.command": [nullius, "improve", "judge"],
                              **{f"runner.{k}": v for k, v in runner.items()}}
    if exp.max_rollouts is not None:
        fields["budget.max_rollouts"] = exp.max_rollouts
    if exp.max_proposer_calls is not None:
        fields["budget.max_proposer_calls"] = exp.max_proposer_calls
    return [f"{k}={_toml(v)}" for k, v in fields.items()]


def manifest(exp: Experiment) -> list[dict[str, Any]]:
    """The frozen task manifest: each unit's own prompt as its instruction; what it leaves is its answer (and its changes)."""
    args = ["prompt", exp.benchmark, *exp.tasks, "--json"]
    args += ["--dataset", exp.dataset] if exp.dataset else []
    args += [a for o in exp.bench_options for a in ("--bench-option", o)]
    prompts = json.loads(run_nullius(args))
    return [{"id": unit, "instruction": prompts[unit], "documents": {}, "deliverables": ["answer.md"]} for unit in exp.tasks]


class ImproverRoute:
    """`nullius relay serve` for the improver's calls: started, its URL and token read from its first line, stopped at the end."""

    def __init__(self, exp: Experiment, record: Path):
        # the same port each time the experiment runs: the kernel's [model] base_url is pinned once its ledger starts
        port_file = record / "port"
        port = port_file.read_text(encoding="utf-8").strip() if port_file.is_file() else "0"
        args = ["relay", "serve", "--unit", "improver", "--record", str(record), "--port", port, "--model", exp.improver_model or exp.model]
        args += [a for flag, v in (("--provider", exp.provider), ("--base-url", exp.base_url)) if v for a in (flag, v)]
        record.mkdir(parents=True, exist_ok=True)
        self.log = (record.parent / f"{RELAY_RECORD}.log").open("w", encoding="utf-8")
        self.process = subprocess.Popen(nullius_argv(*args), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=self.log, text=True)
        line = self.process.stdout.readline() if self.process.stdout else ""  # the relay says where it listens once it does
        if not line:
            self.stop()
            said = (record.parent / f"{RELAY_RECORD}.log").read_text(encoding="utf-8").strip().splitlines()[-2:]
            raise FrontRefused("the improver's relay did not start: " + " / ".join(said))
        ready = json.loads(line)
        self.url, self.token = str(ready["base_url"]), str(ready["token"])
        port_file.write_text(self.url.split("://", 1)[1].split("/", 1)[0].rsplit(":", 1)[1] + "\n", encoding="utf-8")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log.close()


def _write_secret(path: Path, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(text + "\n")


def start(exp: Experiment, say: Callable[[str], None]) -> int:
    """The whole experiment; the exit status of the kernel's last step (3: the budget ran out, `evolve` resumes)."""
    kernel, ws = kernel_argv(), exp.workspace
    beside = Path(sys.executable).with_name("nullius")  # this install's own command, for the kernel's runner and judge
    nullius = str(beside) if beside.is_file() else shutil.which("nullius") or "nullius"
    desk = KeyDesk(os.environ, token_file(ws).parent)  # the kernel runs without the key; its rollouts ask the desk

    def nanorsi(*args: str, check: bool = True, where: list[str] | None = None) -> int:
        argv = [*kernel, *(["-C", str(ws)] if where is None else where), *args]
        code = subprocess.run(argv, stdin=subprocess.DEVNULL, env=desk.kernel_env()).returncode
        if check and code != 0:
            raise FrontRefused(f"nanorsi {args[0]} exited {code}")
        return code

    try:
        _make(exp, ws, nanorsi)
        return _evolve_to_report(exp, ws, nanorsi, nullius, say)
    finally:
        desk.close()


def _make(exp: Experiment, ws: Path, nanorsi: Callable[..., int]) -> None:
    """The workspace, when it is not there yet: the starter, the tasks' manifest, the base harness."""
    if (ws / "nanorsi.toml").is_file():
        return
    tasks = manifest(exp)
    nanorsi("new", str(ws), where=[])
    (ws / "tasks.json").write_text(json.dumps(tasks, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    shutil.rmtree(ws / "judge", ignore_errors=True)  # the starter's keyword judge: a Nullius benchmark scores itself
    for name, text in BASE_HARNESS.items():
        (ws / "harness" / name).write_text(text, encoding="utf-8")


def _evolve_to_report(exp: Experiment, ws: Path, nanorsi: Callable[..., int], nullius: str, say: Callable[[str], None]) -> int:
    ledger = ws / ".nanorsi" / "ledger.jsonl"
    started = ledger.is_file() and ledger.stat().st_size > 0  # the kernel pins its configuration from then on
    key_file = token_file(ws)
    route = ImproverRoute(exp, ws / RELAY_RECORD)
    try:  # the kernel validates its config (the key file there) at each step: the route lives until the last
        _write_secret(key_file, route.token)
        if not started:
            nanorsi("configure", *assignments(exp, route.url, key_file, nullius))
        say(f"improver route: {route.url} (recorded in {ws / RELAY_RECORD})")
        code = nanorsi("evolve", check=False)
        if code == BUDGET_STOPPED:
            say(f"the budget ran out; raise [budget] in {ws / 'nanorsi.toml'} and run the same nullius improve again to go on")
            return code
        if code != 0:
            raise FrontRefused(f"nanorsi evolve exited {code}")
        for step in ("freeze", "judge", "report"):
            nanorsi(step)
        return nanorsi("verify", check=False)
    finally:
        route.stop()
        key_file.unlink(missing_ok=True)  # the token dies with its relay


__all__ = ["Experiment", "FrontRefused", "start", "CommandFailed"]
