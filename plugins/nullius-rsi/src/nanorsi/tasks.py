"""The frozen task manifest (a JSON list of tasks) and the selection [tasks] select makes from it."""

import hashlib
import json
import re
from dataclasses import asdict, dataclass
from pathlib import Path

from . import NanoError

TASK_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")


@dataclass(frozen=True)
class Task:
    id: str
    instruction: str
    documents: dict
    deliverables: tuple

    def as_json(self) -> dict:
        return {**asdict(self), "deliverables": list(self.deliverables)}


def _task(path: Path, i: int, raw, errors: list) -> Task | None:
    where = f"{path}: $[{i}]"
    if not isinstance(raw, dict):
        errors.append(f"{where}: expected an object, found {json.dumps(raw)[:60]}")
        return None
    for key in set(raw) - {"id", "instruction", "documents", "deliverables"}:
        errors.append(f"{where}.{key}: unknown field: expected id, instruction, documents, deliverables")
    tid, instr = raw.get("id"), raw.get("instruction")
    docs, wanted = raw.get("documents", {}), raw.get("deliverables")
    checks = [
        ("id", isinstance(tid, str) and TASK_ID.fullmatch(tid), "an id of letters, digits, _ . -", tid),
        ("instruction", isinstance(instr, str) and instr.strip(), "a non-empty string", instr),
        ("documents", isinstance(docs, dict) and all(isinstance(k, str) and NAME.fullmatch(k) and isinstance(v, str)
                                                     for k, v in docs.items()), "{name: text}", docs),
        ("deliverables", isinstance(wanted, list) and wanted and all(isinstance(x, str) and NAME.fullmatch(x)
                                                                     for x in wanted),
         "a non-empty list of file names", wanted),
    ]
    bad = [f"{where}.{f}: expected {exp}, found {json.dumps(got)[:60]}" for f, ok, exp, got in checks if not ok]
    errors += bad
    return None if bad else Task(tid, instr, dict(docs), tuple(wanted))


def load(path: Path) -> list[Task]:
    path = Path(path)
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise NanoError(f"{path}: no such task manifest") from None
    except json.JSONDecodeError as exc:
        raise NanoError(f"{path}: line {exc.lineno}: not JSON ({exc.msg})") from None
    if not isinstance(raw, list) or not raw:
        raise NanoError(f"{path}: $: expected a non-empty list of tasks")
    errors: list[str] = []
    tasks = [_task(path, i, t, errors) for i, t in enumerate(raw)]
    seen = set()
    for t in tasks:
        if t and t.id in seen:
            errors.append(f"{path}: task {t.id!r}: the id is used twice")
        seen.add(t and t.id)
    if errors:
        raise NanoError("\n".join(errors))
    return tasks


def digest(path: Path) -> str:
    """The manifest's hash, pinned in run_started: a later evolve refuses a changed manifest."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def select(tasks: list[Task], ids: list[str], path: Path) -> list[Task]:
    if not ids:
        return tasks
    by_id = {t.id: t for t in tasks}
    missing = [i for i in ids if i not in by_id]
    if missing:
        raise NanoError(f"[tasks] select: expected ids from {path.name}, found unknown {', '.join(missing)}")
    return [by_id[i] for i in ids]
