"""Blind terminal selection: anonymised deliverables, ids shuffled by a seeded hash of the task."""

import hashlib

from .model import Client, ModelError, ask, fence, zero_usage
from .tasks import Task


def anonymise(task: Task, seed: int, finals: list[dict]) -> dict[str, dict]:
    """{id: rollout}, the order fixed by sha256(seed, task, label) so that no label's position leaks."""
    order = sorted(finals, key=lambda r: hashlib.sha256(f"{seed}:{task.id}:{r['label']}".encode()).hexdigest())
    return {f"F{i + 1}": r for i, r in enumerate(order)}


def blind(client: Client, task: Task, seed: int, finals: list[dict], charge) -> dict:
    """{chosen, ids, fallback, error, usage}. A failed selector keeps the first delivered final."""
    ids = anonymise(task, seed, finals)
    shown = "\n\n".join(f"CANDIDATE {i}:\n" + ("\n".join(fence(n, t) for n, t in sorted(r["deliverables"].items())))
                        for i, r in ids.items())
    system = ("nanorsi:select\nYou choose the best deliverables for the task among anonymous candidates. Reply with "
              'one JSON header line {"choice": ID, "reason": "..."} naming exactly one candidate id.')
    user = f"nanorsi:select task {task.id}\nTASK:\n{task.instruction}\n\n{shown}"
    record = {"ids": {i: r["label"] for i, r in ids.items()}, "fallback": False, "error": None}
    charge()
    try:
        header, _, usage = ask(client, system, user)
    except ModelError as exc:
        return {**record, "chosen": finals[0]["label"], "fallback": True, "error": str(exc),
                "usage": getattr(exc, "usage", zero_usage())}
    choice = header.get("choice")
    if choice not in ids:
        return {**record, "chosen": finals[0]["label"], "fallback": True, "usage": usage,
                "error": f"choice {choice!r}: expected exactly one of {', '.join(ids)}"}
    return {**record, "chosen": ids[choice]["label"], "reason": str(header.get("reason", ""))[:2000], "usage": usage}
