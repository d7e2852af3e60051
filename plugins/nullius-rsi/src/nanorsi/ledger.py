"""The append-only, hash-chained event ledger (.nanorsi/ledger.jsonl) and the views every command derives from it."""

import contextlib
import datetime
import fcntl
import hashlib
import json
import threading
from pathlib import Path

from . import NanoError

GENESIS = "0" * 64

# One table of the event kinds: what each records. Nothing else is ever written to the ledger.
EVENTS = {
    "run_started": "the first evolve: config and manifest hashes, mode, k, final_repeats, model, runner, tasks",
    "evolve_started": "each evolve invocation: the budget limits in force",
    "task_started": "a task's attempt begins (attempt counts restarts after an interrupted run)",
    "charge": "one unit of budget spent, before the rollout or improver call it pays for",
    "budget_exhausted": "a charge was refused; evolve stopped cleanly",
    "stage_stopped": "the budget stopped a stage of pairs or compositions: which finished, stopped, never started",
    "rollout": "one task under one harness: label, harness hash, ok, delivered, error, usage, folder",
    "rollout_reused": "a keep decision reuses the reference rollout instead of spending one",
    "proposal": "one INV or DOM single-component edit: component, validity, rationale, usage",
    "contrast": "candidate against reference: mitigates / neutral / regresses, the deciding observation",
    "compose": "adopt / merge / keep over one pair's contrasts, the observation it rests on",
    "final_confirmed": "every final draw was contrasted: none regresses, one at least mitigates",
    "rollback": "a final draw regressed or none mitigated: the task keeps its reference",
    "selection": "blind choice among delivered finals (fallback when the selector failed)",
    "lesson": "one lesson into the experience library",
    "task_done": "the task's chosen final label; resumed runs skip the task",
    "freeze": "choices pinned {task: label}; evolve is refused afterwards",
    "judged": "a post-freeze score (graded false when the judge gave none)",
}


def _canonical(record: dict) -> str:
    return json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _digest(record: dict) -> str:
    return hashlib.sha256(_canonical(record).encode("utf-8")).hexdigest()


class Ledger:
    """The ledger file and its head (count and last hash), so that a cut tail is detected too."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.head_path = self.path.with_suffix(".head")
        self._events: list[dict] | None = None
        self.mutex = threading.RLock()  # one lock: agg's threads append (and charge) one at a time

    def events(self) -> list[dict]:
        if self._events is None:
            self._events = [rec for rec, _ in self._read()]
        return self._events

    def _read(self) -> list[tuple[dict, str]]:
        if not self.path.exists():
            return []
        out, lines = [], self.path.read_bytes().split(b"\n")
        if lines[-1]:
            raise NanoError(f"{self.path}: line {len(lines)}: cut (no newline at its end)")
        for n, raw in enumerate(lines[:-1], 1):
            try:
                line = raw.decode("utf-8")
                out.append((json.loads(line), line))
            except (UnicodeDecodeError, json.JSONDecodeError) as exc:
                raise NanoError(f"{self.path}: line {n}: not JSON ({exc})") from None
        return out

    @property
    def started(self) -> bool:
        return self.path.exists() and self.path.stat().st_size > 0

    def append(self, event: str, **data) -> dict:
        if event not in EVENTS:
            raise ValueError(f"unknown ledger event {event!r}")
        with self.mutex:
            return self._append(event, data)

    def _append(self, event: str, data: dict) -> dict:
        events = self.events()
        prev = events[-1]["hash"] if events else GENESIS
        record = {"seq": len(events) + 1, "time": _now(), "event": event, "prev": prev, **data}
        record["hash"] = _digest(record)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as fh:
            fh.write(_canonical(record) + "\n")
        self.head_path.write_text(f"{record['seq']} {record['hash']}\n", encoding="utf-8")
        events.append(record)
        return record

    def verify(self) -> tuple[int, str]:
        """(count, last hash), or NanoError naming the first line that does not hold."""
        try:
            rows = self._read()
        except NanoError as exc:
            raise NanoError(f"ledger broken: {exc}") from None
        prev = GENESIS
        for n, (rec, line) in enumerate(rows, 1):
            claimed = rec.pop("hash", None) if isinstance(rec, dict) else None
            problem = _line_problem(rec, n, prev, claimed)
            if not problem and _canonical({**rec, "hash": claimed}) != line:
                problem = "not in canonical form (rewritten)"
            if problem:
                raise NanoError(f"ledger broken at line {n}: {problem}")
            prev = claimed
        head = self.head_path.read_text(encoding="utf-8").split() if self.head_path.exists() else []
        if rows and head != [str(len(rows)), prev]:
            raise NanoError(f"ledger broken: {self.head_path.name} says {' '.join(head) or 'nothing'}, "
                            f"the ledger ends at {len(rows)} {prev}")
        return len(rows), prev

    @contextlib.contextmanager
    def lock(self):
        """One command at a time writes a workspace's ledger."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with (self.path.parent / "lock").open("w") as fh:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise NanoError(f"{self.path.parent}: another nanorsi command is running in this workspace") from None
            yield self

    # Derived views.
    def of(self, event: str, **match) -> list[dict]:
        return [e for e in self.events() if e["event"] == event and all(e.get(k) == v for k, v in match.items())]

    def done_tasks(self) -> dict[str, str]:
        return {e["task"]: e["chosen"] for e in self.of("task_done")}

    def frozen(self) -> dict | None:
        found = self.of("freeze")
        return found[-1]["choices"] if found else None

    def charged(self, what: str) -> int:
        return len(self.of("charge", what=what))

    def usage(self, *kinds: str) -> dict:
        """Calls and tokens summed over the events of these kinds (all kinds when none is named)."""
        total = {"calls": 0, "input_tokens": 0, "output_tokens": 0}
        for e in self.events():
            if not kinds or e["event"] in kinds:
                for key in total:
                    total[key] += int((e.get("usage") or {}).get(key, 0))
        return total


def _line_problem(rec, n: int, prev: str, claimed) -> str:
    if not isinstance(rec, dict) or not isinstance(claimed, str):
        return "no hash"
    if rec.get("seq") != n:
        return f"seq {rec.get('seq')!r}, expected {n}"
    if rec.get("prev") != prev:
        return "the chain is cut (prev does not match the line before)"
    if _digest(rec) != claimed:
        return "the hash does not match the content"
    return ""


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds")
