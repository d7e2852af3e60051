"""Harnessing-level recursion: one evidence-backed lesson per adopted harness, kept in .nanorsi/library.jsonl."""

import json
from pathlib import Path

from . import NanoError, harness as hz
from .model import Client, ModelError, ask, zero_usage
from .tasks import Task


def library(path: Path) -> list[dict]:
    if not path.exists():
        return []
    out = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        try:
            entry = json.loads(line) if line.strip() else None
        except json.JSONDecodeError as exc:
            raise NanoError(f"{path}: line {n}: not JSON ({exc.msg})") from None
        if entry is not None:
            if not isinstance(entry, dict) or not isinstance(entry.get("lesson"), str):
                raise NanoError(f"{path}: line {n}: expected {{\"lesson\": text, ...}}")
            out.append(entry)
    return out


def extract(client: Client, task: Task, base: dict, chosen: dict, contrasts: list, charge) -> dict:
    """{lesson, evidence, error, usage}; lesson is None when the call failed or named no supporting contrast."""
    lines = "\n".join(f"- {c['candidate']} ({c['verdict']}): {c['observation']}" for c in contrasts)
    system = ("nanorsi:lesson\nState one lesson for improving this agent's harness on later tasks, supported by the "
              'contrasts shown. Reply with one JSON header line {"lesson": "...", "evidence": [LABEL, ...]}.')
    user = (f"nanorsi:lesson task {task.id}\nTASK:\n{task.instruction}\n\nHARNESS CHANGE:\n{hz.diff(base, chosen)}"
            f"\n\nCONTRASTS:\n{lines or '(none)'}")
    charge()
    try:
        header, _, usage = ask(client, system, user)
    except ModelError as exc:
        return {"lesson": None, "evidence": [], "error": str(exc), "usage": getattr(exc, "usage", zero_usage())}
    lesson, evidence = header.get("lesson"), header.get("evidence")
    known = {c["candidate"] for c in contrasts}
    if not isinstance(lesson, str) or not lesson.strip():
        return {"lesson": None, "evidence": [], "error": "the reply held no lesson", "usage": usage}
    if not isinstance(evidence, list) or not evidence or not set(evidence) <= known:
        return {"lesson": None, "evidence": [], "usage": usage,
                "error": f"evidence {evidence!r}: expected labels of contrasts ({', '.join(sorted(known))})"}
    return {"lesson": lesson.strip()[:1000], "evidence": evidence, "error": None, "usage": usage}


def append(path: Path, task: str, label: str, found: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps({"task": task, "label": label, "lesson": found["lesson"],
                             "evidence": found["evidence"]}) + "\n")
