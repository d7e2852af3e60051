"""Runs (`/runs`): every command the app started, running and finished (an earlier session's too), each run's jobs as they go.

The page is drawn on the server; its script (static/runs.js) asks
`/runs.json` every second and writes the new figures in place. Cancel is
Ctrl-C's SIGINT to the command (`RunBook.cancel`): the run ends cancelled,
its records whole. Resume is `nullius run --resume JOB`, a command of its
own in the RunBook. A job's name links into the viewer (`/jobs/<name>`).
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from aiohttp import web

from nullius_app import job_progress
from nullius_app.render import page
from nullius_app.runbook import Started, log_tail
from nullius_app.safety import inside

LOG_LINES = 40  # the log's last lines each poll carries
LOG_BYTES = 64 * 1024
EXITS = {0: "finished", 1: "failed", 2: "refused", 130: "cancelled", -1: "ended while the app was away"}


def _tail(log: Path, lines: int = LOG_LINES) -> list[str]:
    return log_tail(log, LOG_BYTES).splitlines()[-lines:]


def said(log: Path) -> str:
    """The command's own last words: from its last `nullius: ...` line (a refusal, with the lines it spans) to the end, else its last line."""
    tail = [line for line in _tail(log, 200) if line.strip()]
    for i in range(len(tail) - 1, -1, -1):
        if tail[i].startswith("nullius: "):
            return "\n".join(tail[i:])
    return tail[-1] if tail else ""


def _state(entry: Started) -> str:
    if entry.running:
        return "running"
    if entry.code is None:
        return "ended while the app was away"
    return EXITS.get(entry.code, f"exited {entry.code}")


def _being_run(state: Any) -> set[str]:
    return {job for entry in state.runs.started.values() if entry.running for job in entry.jobs}


def entry_json(state: Any, entry: Started, busy: set[str] | None = None) -> dict[str, Any]:
    busy = _being_run(state) if busy is None else busy
    ended = not entry.running
    return {
        "id": entry.id, "title": entry.title, "command": shlex.join(["nullius", *entry.args]), "started": entry.started,
        "ended": entry.ended, "code": entry.code, "running": entry.running, "state": _state(entry),
        "said": said(entry.log) if ended and entry.code != 0 else "",  # a refusal, a failure, how to finish a cancelled run
        "log": _tail(entry.log),
        "jobs": [_job(state, name, busy) for name in entry.jobs],
    }


def _job(state: Any, name: str, busy: set[str]) -> dict[str, Any]:
    try:
        inside(state.jobs_dir, name)
    except web.HTTPNotFound:
        return {"name": name, "state": "not a job of the jobs folder", "bar": [], "resumable": False}
    return job_progress.read(state.jobs_dir, name, name in busy).json()


async def runs_page(request: web.Request) -> web.Response:
    state = request.app["state"]
    busy = _being_run(state)
    entries = [entry_json(state, e, busy) for e in state.runs.all()]
    return page(request, "runs.html", "Runs", entries=entries, jobs_dir=str(state.jobs_dir), width=job_progress.WIDTH)


async def runs_json(request: web.Request) -> web.Response:
    state = request.app["state"]
    busy = _being_run(state)
    return web.json_response({"runs": [entry_json(state, e, busy) for e in state.runs.all()]})


def _entry(request: web.Request) -> Started:
    entry = request.app["state"].runs.get(request.match_info["id"])
    if entry is None:
        raise web.HTTPNotFound(text="no such command here")
    return entry


async def run_json(request: web.Request) -> web.Response:
    return web.json_response(entry_json(request.app["state"], _entry(request)))


async def run_log(request: web.Request) -> web.Response:
    entry = _entry(request)
    try:
        text = entry.log.read_text(errors="replace")
    except OSError as exc:
        raise web.HTTPNotFound(text=f"its log cannot be read: {exc.strerror or exc}") from None
    return web.Response(text=text, content_type="text/plain")


async def cancel(request: web.Request) -> web.Response:
    entry = _entry(request)
    if not request.app["state"].runs.cancel(entry.id):
        return web.json_response({"said": f"{entry.title} is not running"}, status=409)
    return web.json_response({"said": f"sent Ctrl-C (SIGINT) to {entry.title}: it ends cancelled, resumable"})


async def resume(request: web.Request) -> web.Response:
    state = request.app["state"]
    body = await request.json()
    name = str(body.get("job") or "")
    folder = inside(state.jobs_dir, name)
    if name in _being_run(state):
        return web.json_response({"said": f"{name} is being run now"}, status=409)
    progress = job_progress.read(state.jobs_dir, name, False)
    if progress.on_host and not progress.resumable:
        return web.json_response({"said": f"{name} ran on a host and is {progress.state}: only a job this side lost is followed again"},
                                 status=409)
    if not progress.resumable:
        return web.json_response({"said": f"{name} is {progress.state}: only a cancelled, stopped or interrupted job is resumed"}, status=409)
    if progress.on_host:  # it may run on there still: mirror it until it ends (nullius host mirror)
        entry = await state.runs.start(f"follow {name} on its host", ["host", "mirror", str(folder)], jobs=[name])
        return web.json_response({"said": f"following {name} on its host again", "id": entry.id})
    # the person's consent, confirmed on the page, never the job's record: the CLI refuses what it lacks, naming it
    consent = body.get("consent") if isinstance(body.get("consent"), dict) else {}
    args = ["run", "--resume", str(folder)] + (["--unsandboxed"] if consent.get("unsandboxed") is True else [])
    if isinstance(consent.get("base_url"), str) and consent["base_url"]:
        args += ["--base-url", consent["base_url"]]
    entry = await state.runs.start(f"resume {name}", args, jobs=[name])
    return web.json_response({"said": f"resuming {name}", "id": entry.id})


def add_routes(app: web.Application) -> None:
    app.router.add_get("/runs", runs_page)
    app.router.add_get("/runs.json", runs_json)
    app.router.add_get("/runs/{id}.json", run_json)
    app.router.add_get("/runs/{id}/log", run_log)
    app.router.add_post("/runs/{id}/cancel", cancel)
    app.router.add_post("/runs/resume", resume)
