"""How far a job has got, from its own files: `progress.jsonl`, `events.jsonl` and `result.json` (docs/standard.md, Jobs).

- Planned: the last `units` line of `progress.jsonl` (a resumed run appends one).
- Each trial's latest `trial_finished` line of `events.jsonl` says its outcome,
  so a trial cancelled and run again on `--resume` counts once, as it ended
  last; a `trial_started` with no end after it is running.
- The state and the cost so far: `result.json`, which the run rewrites every
  second while units run (`standard.state`, `standard.cost.as_served_usd`
  and each route's `cost_usd`); before it exists, the trials' own
  `agent_result.cost_usd`.

A job is read where it lies; nothing here writes to it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import attrs

from nullius_app.host.mirror import HOST_FILE

RESUMABLE = ("cancelled", "stopped", "interrupted")
TAIL_BYTES = 4 * 1024 * 1024  # the progress and event lines read of a very long job: its last few MB


@attrs.frozen(kw_only=True)
class JobProgress:
    name: str
    state: str  # not started, preparing, running, finished, cancelled, stopped, failed, interrupted
    planned: int | None
    done: int
    passed: int
    failed: int
    scored: int
    errored: int
    cancelled: int
    running: int
    mean: float | None
    cost_usd: float | None
    cost_known: bool  # False: a call without a price (or none yet): the cost so far cannot be told
    reason: str | None
    on_host: bool = False  # run on a host (`nullius host run`): picked up again by `nullius host mirror`, not resumed here
    # what resuming it asks of the person, since a job's record consents to nothing: its agent run without a sandbox
    # (--unsandboxed), this machine's key sent to the base URL it names (--base-url); the page asks before sending either
    asks_unsandboxed: bool = False
    asks_base_url: str | None = None

    @property
    def resumable(self) -> bool:
        """Resume (here) a cancelled, stopped or interrupted job; a host's job only when this side lost it (follow it again)."""
        return self.state == "interrupted" if self.on_host else self.state in RESUMABLE

    def json(self) -> dict[str, Any]:
        return {**attrs.asdict(self), "resumable": self.resumable, "bar": bar(self)}


def _lines(path: Path) -> list[dict[str, Any]]:
    """The JSON lines of `path` (its last TAIL_BYTES), a line cut short by a writer skipped."""
    try:
        with open(path, "rb") as handle:
            handle.seek(0, 2)
            size = handle.tell()
            handle.seek(max(0, size - TAIL_BYTES))
            data = handle.read()
    except OSError:
        return []
    out = []
    for line in data.decode(errors="replace").splitlines():
        try:
            item = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(item, dict):
            out.append(item)
    return out


def _json(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return None  # not written yet, or being replaced
    return data if isinstance(data, dict) else None


def _outcomes(events: list[dict[str, Any]]) -> tuple[dict[str, str], int]:
    """Each trial's latest outcome, and how many trials are running (started, not ended since)."""
    last: dict[str, dict[str, Any]] = {}
    for event in events:
        trial = event.get("trial_name")
        if isinstance(trial, str):
            last[trial] = event
    ended = {t: str(e.get("outcome")) for t, e in last.items() if e.get("type") == "trial_finished"}
    running = sum(1 for e in last.values() if e.get("type") == "trial_started")
    return ended, running


def _cost(job: Path, result: dict[str, Any] | None, trials: list[str]) -> tuple[float | None, bool]:
    """The cost so far, as served: the agent's and its judge's and simulator's routes; (None, True) for a run with no model."""
    standard = (result or {}).get("standard") or {}
    if result is not None:
        cost = standard.get("cost")
        routes = [r for r in (standard.get("routes") or {}).values() if isinstance(r, dict)]
        if cost is None and not routes:
            return None, True
        parts = ([cost.get("as_served_usd")] if isinstance(cost, dict) else []) + [r.get("cost_usd") for r in routes]
        if any(p is None for p in parts):
            return None, False
        return round(sum(parts), 6), True
    spent = [((_json(job / t / "result.json") or {}).get("agent_result") or {}) for t in trials]
    spent = [s for s in spent if s]
    if not spent:
        return None, True
    if any(s.get("cost_usd") is None for s in spent):
        return None, False
    return round(sum(s["cost_usd"] for s in spent), 6), True


def read(jobs_dir: Path, name: str, being_run: bool) -> JobProgress:
    """The job `name` of `jobs_dir` as it stands; `being_run`: a command the app started is running it now."""
    job = jobs_dir / name
    progress = _lines(job / "progress.jsonl")
    events = _lines(job / "events.jsonl")
    result = _json(job / "result.json")
    units = [p for p in progress if p.get("stage") == "units"]
    done_line = next((p for p in reversed(progress) if p.get("stage") == "done"), None)
    planned = units[-1].get("n") if units else (result or {}).get("n_total_trials")
    ended, running = _outcomes(events)
    count = {k: 0 for k in ("passed", "failed", "scored", "errored", "cancelled")}
    for outcome in ended.values():
        key = "errored" if outcome.startswith("error") or outcome == "rate_limited" else outcome
        if key in count:
            count[key] += 1
    standard = (result or {}).get("standard") or {}
    state = standard.get("state") or ("running" if units else "preparing")
    if not job.is_dir():
        state = "preparing" if being_run else "not started"
    elif state in ("running", "preparing") and not being_run:
        state = "interrupted"  # its command ended (or the app was away) before the run could say how it ended
    if being_run and state in RESUMABLE:
        state = "running"  # a resume of it is under way
    cost, known = _cost(job, result, list(ended))
    asked = ((_json(job / "config.json") or {}).get("standard") or {}) if job.is_dir() else {}
    agent = asked.get("agent") if isinstance(asked.get("agent"), dict) else {}
    base_url = agent.get("base_url")
    return JobProgress(name=name, state=state, planned=planned if isinstance(planned, int) else None,
                       done=sum(1 for o in ended.values() if o != "cancelled"), running=running if being_run else 0,
                       mean=standard.get("mean"), cost_usd=cost, cost_known=known,
                       reason=standard.get("reason") or (done_line or {}).get("reason"), on_host=(job / HOST_FILE).is_file(),
                       asks_unsandboxed=asked.get("unsandboxed") is True,
                       asks_base_url=base_url if isinstance(base_url, str) and base_url else None, **count)


WIDTH = 200


def bar(progress: JobProgress) -> list[dict[str, Any]]:
    """The stacked bar of a job's trials, as the SVG's rectangles: passed, scored, failed, errored, cancelled, running; the rest to come."""
    total = max(progress.planned or 0, progress.done + progress.running + progress.cancelled, 1)
    parts = [("passed", progress.passed), ("scored", progress.scored), ("failed", progress.failed), ("errored", progress.errored),
             ("cancelled", progress.cancelled), ("running", progress.running)]
    out, x = [], 0.0
    for kind, n in parts:
        width = WIDTH * n / total
        out.append({"kind": kind, "n": n, "x": round(x, 2), "width": round(width, 2)})
        x += width
    return out
