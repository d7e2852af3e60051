"""What one trial of a rollout's job left, read from its records: its answer, its workspace's changes, its trajectory, its usage."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import attrs

from nullius_core.fsutil import read_json_lines
from nullius_core.jobs.workspace_patch import PatchError, workspace_patch

HELD_KIND = "ScoreHeld"
OBSERVATION_CHARS = 2000  # an observation longer than this is cut in the markdown trajectory (the job keeps it whole)


@attrs.frozen
class Seen:
    answer: str
    patch: str
    trajectory: str
    usage: dict[str, int]
    error: str | None  # None: the agent ran and its score is held (or stands); else the trial's kind and message


def _json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def usage_of(trial: Path) -> dict[str, int]:
    """The agent's calls and tokens, as its route's relay recorded them (agent/calls.jsonl)."""
    calls = [c for c in read_json_lines(trial / "agent" / "calls.jsonl") if c.get("kind", "agent") == "agent"]
    total = {"calls": len(calls), "input_tokens": 0, "output_tokens": 0}
    for call in calls:
        usage = call.get("usage") or {}
        total["input_tokens"] += int(usage.get("input") or 0)
        total["output_tokens"] += int(usage.get("output") or 0)
    return total


def _step(step: dict[str, Any]) -> str:
    parts = [f"## {step.get('step_id', '?')}. {step.get('source', '?')}"]
    if step.get("message"):
        parts.append(str(step["message"]).strip())
    for call in step.get("tool_calls") or []:
        parts.append(f"tool call `{call.get('function_name')}`: `{json.dumps(call.get('arguments'), ensure_ascii=False)[:OBSERVATION_CHARS]}`")
    for result in (step.get("observation") or {}).get("results") or []:
        content = str(result.get("content") or "")
        cut = f"\n(... {len(content) - OBSERVATION_CHARS} characters more)" if len(content) > OBSERVATION_CHARS else ""
        parts.append("> " + content[:OBSERVATION_CHARS].replace("\n", "\n> ") + cut)
    return "\n\n".join(parts)


def trajectory_md(trial: Path, result: dict[str, Any], error: str | None) -> str:
    """The trial as markdown: its unit, how it ended, then each step of agent/trajectory.json."""
    unit = (result.get("standard") or {}).get("unit") or trial.name
    lines = [f"# {unit} ({trial.parent.name}/{trial.name})", "", f"ended: {error or 'the agent ran; its score is held for after the freeze'}"]
    steps = (_json(trial / "agent" / "trajectory.json") or {}).get("steps") or []
    return "\n".join(lines) + "\n\n" + "\n\n".join(_step(s) for s in steps) + "\n"


def read_trial(trial: Path) -> Seen:
    result = _json(trial / "result.json") or {}
    exception = result.get("exception_info") or {}
    kind = exception.get("exception_type")
    held = _json(trial / "verifier" / "held.json") or {}
    error = None if kind in (None, HELD_KIND) else f"{kind}: {exception.get('exception_message')}"
    if kind == HELD_KIND and held.get("agent_failure"):  # a timeout is still the agent's work, scored later as it left it
        failure = held["agent_failure"]
        error_note = f"{failure.get('exception_type')}: {failure.get('exception_message')}"
    else:
        error_note = error
    patch = ""
    workspace = trial / str(held.get("dir") or ".work/workspace")
    if workspace.is_dir():
        try:
            patch = workspace_patch(workspace)[0]
        except PatchError as exc:
            error = error or f"the workspace's changes cannot be read: {exc}"
    answer = held.get("answer") if isinstance(held.get("answer"), str) else ""
    return Seen(answer=answer, patch=patch, trajectory=trajectory_md(trial, result, error_note), usage=usage_of(trial), error=error)
