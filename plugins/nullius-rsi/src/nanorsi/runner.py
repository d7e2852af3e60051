"""The rollout protocol: one task under one harness -> {ok, delivered, trajectory, deliverables, usage, error}.

Kinds: loopback (the built-in document agent on the configured model), command (a workspace command reading
NANORSI_REQUEST and writing NANORSI_RESULT), nullius (a command runner: `<runner.nullius> improve rollout`).
"""

import json
import os
import shutil
import subprocess
from pathlib import Path

from . import harness as hz
from .model import Client, ModelError, add_usage, fence, parse_reply, zero_usage
from .tasks import NAME, Task

AGENT_SYSTEM = """nanorsi:agent
You are a document agent. Work only through actions. Each reply is one JSON header line, then fenced bodies.
Actions: {"action": "list"} names the documents; {"action": "read", "name": N} shows one (or a skill's SKILL.md);
{"action": "write_deliverable", "name": N} followed by a body fenced as ```N ... ``` writes deliverable N;
{"action": "done"} ends the task.
"""


def rollout(cfg: dict, workspace: Path, task: Task, harness: dict, label: str, out: Path, client: Client) -> dict:
    """Run one rollout into the folder out (cleared first) and return its record."""
    if out.exists():
        shutil.rmtree(out)
    (out / "deliverables").mkdir(parents=True)
    hz.write(out / "harness", harness)
    if cfg["runner"]["kind"] == "loopback":
        result = _loopback(cfg["runner"], task, harness, client)
    else:
        result = _command(cfg["runner"], workspace, task, hz.render_always_on(harness), label, out)
    for name, text in result["deliverables"].items():
        (out / "deliverables" / name).write_text(text, encoding="utf-8")
    (out / "trajectory.md").write_text(result["trajectory"], encoding="utf-8")
    if cfg["runner"]["kind"] == "loopback":
        (out / "result.json").write_text(json.dumps(result, indent=2), encoding="utf-8")
    return {**result, "label": label, "dir": str(out)}


def _loopback(runner: dict, task: Task, harness: dict, client: Client) -> dict:
    messages = [{"role": "system", "content": AGENT_SYSTEM + "\n" + hz.render_always_on(harness)},
                {"role": "user", "content": _task_prompt(task)}]
    written, usage, log = {}, zero_usage(), [f"# {task.id}\n"]
    for step in range(1, runner["max_steps"] + 1):
        try:
            reply = client.chat(messages)
        except ModelError as exc:
            return _result(False, task, written, log, usage, str(exc))
        usage = add_usage(usage, reply.usage)
        answer, finished = _act(reply.text, task, harness, written)
        log.append(f"## step {step}\n\n{reply.text.strip()}\n\n> {answer[:2000]}\n")
        if finished:
            return _result(True, task, written, log, usage, None)
        messages += [{"role": "assistant", "content": reply.text},
                     {"role": "user", "content": f"nanorsi:agent result\n{answer}"}]
    return _result(False, task, written, log, usage, f"no done action within {runner['max_steps']} steps")


def _task_prompt(task: Task) -> str:
    return (f"nanorsi:agent task {task.id}\n{task.instruction}\n\nDocuments: {', '.join(task.documents) or 'none'}\n"
            f"Deliverables to write: {', '.join(task.deliverables)}")


def _act(text: str, task: Task, harness: dict, written: dict) -> tuple[str, bool]:
    """The agent's one action: (what it is told back, whether it said done). read also loads a skill or a script
    of the harness (skills load on demand); the loopback agent reads scripts but cannot run them."""
    try:
        header, bodies = parse_reply(text)
    except ModelError as exc:
        return f"error: {exc}; answer with one JSON header line", False
    action, name = header.get("action"), header.get("name")
    if action == "list":
        return "documents: " + ", ".join(task.documents), False
    if action == "read":
        found = task.documents.get(name, harness.get(name) if name not in hz.ALWAYS_ON else None)
        return (found, False) if isinstance(found, str) else (f"error: no document or skill {name!r}", False)
    if action == "write_deliverable":
        if not isinstance(name, str) or not NAME.fullmatch(name) or name not in bodies:
            return f"error: write_deliverable needs a name and a body fenced as {fence('NAME', '...')}", False
        written[name] = bodies[name]
        return f"wrote {name} ({len(bodies[name])} characters)", False
    if action == "done":
        return "done", True
    return f"error: unknown action {action!r}; expected list, read, write_deliverable or done", False


def _result(ok: bool, task: Task, written: dict, log: list, usage: dict, error: str | None) -> dict:
    delivered = all(written.get(name, "").strip() for name in task.deliverables)
    return {"ok": ok, "delivered": delivered, "trajectory": "\n".join(log), "deliverables": written,
            "usage": usage, "error": error, "job": None}


def _command(runner: dict, workspace: Path, task: Task, always_on: str, label: str, out: Path) -> dict:
    request = {"task": task.as_json(), "harness_dir": str((out / "harness").resolve()),
               "output_dir": str(out.resolve()), "always_on": always_on, "label": label}
    argv = runner["command"]
    if runner["kind"] == "nullius":
        argv, request["runner"] = [runner["nullius"], "improve", "rollout"], dict(runner)
    (out / "request.json").write_text(json.dumps(request, indent=2), encoding="utf-8")
    env = {**os.environ, "NANORSI_REQUEST": str((out / "request.json").resolve()),
           "NANORSI_RESULT": str((out / "result.json").resolve())}
    with (out / "runner.log").open("w", encoding="utf-8") as log:
        try:
            proc = subprocess.run(argv, cwd=workspace, env=env, stdout=log, stderr=subprocess.STDOUT,
                                  stdin=subprocess.DEVNULL, timeout=runner["timeout"])
            status = f"exit status {proc.returncode}"
        except (OSError, subprocess.TimeoutExpired) as exc:
            status = f"could not finish: {exc}"
    return read_result(out / "result.json", status)


def read_result(path: Path, status: str) -> dict:
    """result.json checked field by field; missing or malformed, a failed rollout that says why."""
    failed = {"ok": False, "delivered": False, "trajectory": "", "deliverables": {}, "usage": zero_usage(), "job": None}
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {**failed, "error": f"the runner wrote no result.json ({status})"}
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        return {**failed, "error": f"result.json: not JSON ({exc}) ({status})"}
    problem = _result_problem(raw)
    if problem:
        return {**failed, "error": f"result.json: {problem} ({status})"}
    return {"ok": raw["ok"], "delivered": raw["delivered"], "trajectory": raw["trajectory"],
            "deliverables": raw["deliverables"], "usage": add_usage(zero_usage(), raw.get("usage") or {}),
            "error": raw.get("error"), "job": raw.get("job")}


def _result_problem(raw) -> str:
    if not isinstance(raw, dict):
        return "$: expected an object"
    checks = [("ok", isinstance(raw.get("ok"), bool), "true or false"),
              ("delivered", isinstance(raw.get("delivered"), bool), "true or false"),
              ("trajectory", isinstance(raw.get("trajectory"), str), "a string"),
              ("deliverables", isinstance(raw.get("deliverables"), dict) and all(
                  isinstance(k, str) and NAME.fullmatch(k) and isinstance(v, str)
                  for k, v in raw["deliverables"].items()), "{name: text}"),
              ("usage", isinstance(raw.get("usage", {}), dict) and all(
                  isinstance(v, int) for v in raw.get("usage", {}).values()), "{calls, input_tokens, output_tokens}"),
              ("error", raw.get("error") is None or isinstance(raw.get("error"), str), "a string or null"),
              ("job", raw.get("job") is None or isinstance(raw.get("job"), str), "a string or null")]
    return next((f"$.{f}: expected {exp}, found {json.dumps(raw.get(f))[:60]}" for f, ok, exp in checks if not ok), "")
