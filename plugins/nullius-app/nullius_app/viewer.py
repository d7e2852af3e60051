"""The job viewer: /jobs (every job), /jobs/JOB (its summary, its grid, its trials), /jobs/JOB/TRIAL (its records).

Everything shown is read from the job's own files (job_views, trial_views);
every name from a request is held to the jobs folder (job_files). A record
is served whole only from the list RECORDS: the trial's records a person
reads, never its workspace or home.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

from aiohttp import web

from nullius_app import job_files, job_views, trial_views
from nullius_app.job_files import Unreadable, dig, read_object, read_part, record
from nullius_app.host.mirror import HOST_FILE
from nullius_app.job_views import OUTCOMES, JobView, moment, obj
from nullius_app.render import filters, page
from nullius_app.viewer_svg import Cell, grid, timeline

# The records a trial's page may hand over whole (its "whole file" links), and nothing else of the trial's folder.
RECORDS = ("agent/trajectory.json", "agent/trace.json", "agent/gateway.log", "agent/stderr.txt", "verifier/test-stdout.txt",
           "verifier/score.json", "exception.txt", "trial.log",
           *(where[k] for where in trial_views.ROUTES.values() for k in ("calls", "live", "bodies")))
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
LANES = ("phases", "model calls", "tool calls", "judge calls", "simulated user")
CALL_CHARS = 1024 * 1024
STEPS_SHOWN = 2000  # of a trajectory's steps, the page lays out this many  # of a request or reply, a call's own page shows this much


def job_url(job: str, *rest: str) -> str:
    return "/jobs/" + "/".join(quote(part, safe="") for part in (job, *rest))


def _num(value: Any, digits: int = 4) -> str:
    return "–" if job_views.number(value) is None else f"{value:.{digits}f}"


def _usd(value: Any) -> str:
    return "unknown" if job_views.number(value) is None else f"${value:,.6f}"


def _count(value: Any) -> str:
    return "–" if job_views.number(value) is None else f"{int(value):,}"


def _items(value: Any) -> list[tuple[Any, Any]]:
    """A record's object's items; none where the record holds something else."""
    return list(value.items()) if isinstance(value, dict) else []


def _seconds(value: Any) -> str:
    return "" if job_views.number(value) is None else f"+{value:.3f} s"


_env = filters()
_env.filters.update(viewer_num=_num, viewer_usd=_usd, viewer_count=_count, viewer_at=_seconds, viewer_size=job_files.size_text,
                    viewer_json=trial_views.as_text, viewer_items=_items)
_env.globals.update(job_url=job_url, outcome_labels=OUTCOMES)


def _jobs_dir(request: web.Request) -> Path:
    return request.app["state"].jobs_dir


async def jobs(request: web.Request) -> web.Response:
    rows, others = job_views.list_jobs(_jobs_dir(request))
    return page(request, "viewer_jobs.html", "Jobs", rows=rows, others=others, jobs_dir=str(_jobs_dir(request)))


def outcome_grid(view: JobView) -> Any:
    """A column per unit (plan order), a cell per attempt, coloured by outcome; each a link to its trial."""
    units: dict[str, list[job_views.TrialRow]] = {}
    for trial in view.trials:
        units.setdefault(trial.unit, []).append(trial)
    depth = max([view.repeat] + [t.attempt for t in view.trials])
    columns = []
    for unit, trials in units.items():
        column: list[Cell | None] = [None] * depth
        for t in trials:
            reward = f", reward {t.reward:g}" if t.reward is not None else ""
            title = f"{unit}" + (f" · attempt {t.attempt}" if depth > 1 else "") + f": {OUTCOMES[t.outcome]}{reward}" \
                + (f" · {t.exception}" if t.exception else "")
            column[min(t.attempt, depth) - 1] = Cell(css=f"o-{t.outcome}", title=title,
                                                     href=None if t.outcome == "not_run" else job_url(view.name, t.name),
                                                     opacity=t.reward if t.outcome == "scored" else None)
        columns.append(column)
    return grid(columns, label=f"{view.name}: each unit's outcome")


async def job(request: web.Request) -> web.Response:
    folder = job_files.job_folder(_jobs_dir(request), request.match_info["job"])
    view = job_views.job_view(_jobs_dir(request), folder)
    return page(request, "viewer_job.html", view.name, view=view, standard=view.standard, config=view.config,
                stats=obj(view.result.get("stats")), grid=outcome_grid(view), on_host=_on_host(_jobs_dir(request), folder))


def _on_host(jobs_dir: Path, folder: Path) -> dict[str, Any] | None:
    """Where a job run on a host ran (`nullius host run`'s record in its folder): its host and run there; None for a job run here."""
    path = record(jobs_dir, folder, HOST_FILE)
    if path is None:
        return None
    try:
        found = read_object(path, HOST_FILE)
    except Unreadable as exc:
        return {"problem": str(exc)}
    host = obj(found.get("host"))
    port = f":{host['port']}" if host.get("port") else ""
    return {"host": f"{host.get('destination', '?')}{port}", "run": found.get("run"), "snapshot": found.get("snapshot")}


def _timelines(spans: list[Any], result: dict[str, Any], origin: datetime | None) -> list[tuple[str, Any]]:
    """The whole trial; and, where the calls take a small part of it, the stretch that holds them, drawn wider."""
    if not spans:
        return []
    ends = [s.end for s in spans if s.end is not None]
    finished = trial_views.offset(result.get("finished_at"), origin)
    t0, t1 = min(0.0, *(s.start for s in spans)), max([finished or 0.0, *ends])
    out = [("The whole trial", timeline(spans, LANES, t0, t1, "the trial's timeline"))]
    busy = [s for s in spans if s.lane != "phases"]
    if busy:
        lo, hi = min(s.start for s in busy), max(t1 if s.end is None else s.end for s in busy)
        if hi - lo < 0.4 * (t1 - t0):
            pad = max((hi - lo) * 0.05, 0.001)
            out.append((f"The calls, drawn wider: +{lo:.3f} s to +{hi:.3f} s",
                        timeline(spans, LANES, lo - pad, hi + pad, "the trial's calls, drawn wider")))
    return out


def _trajectory(jobs_dir: Path, folder: Path, origin: datetime | None, simulated: bool) -> dict[str, Any]:
    path = record(jobs_dir, folder, "agent/trajectory.json")
    if path is None:
        return {"steps": None, "part": None, "problem": None, "here": False}
    try:
        data = read_object(path, "agent/trajectory.json")
    except Unreadable as exc:
        return {"steps": None, "part": read_part(path), "problem": str(exc), "here": True}
    steps = trial_views.steps_of(data, origin, simulated)
    return {"steps": steps[:STEPS_SHOWN], "total": len(steps), "part": None, "problem": None, "here": True,
            "final": obj(data.get("final_metrics")), "extra": obj(data.get("extra"))}


async def trial(request: web.Request) -> web.Response:
    jobs_dir = _jobs_dir(request)
    name, job_name = request.match_info["trial"], request.match_info["job"]
    folder = job_files.trial_folder(jobs_dir, job_name, name)
    problems: list[str] = []
    result: dict[str, Any] = {}
    try:
        result = read_object(record(jobs_dir, folder, "result.json"), f"{name}/result.json")
    except Unreadable as exc:
        problems.append(str(exc))
    try:
        config = obj(read_object(record(jobs_dir, folder.parent, "config.json"), "config.json").get("standard"))
    except Unreadable:
        config = {}
    trace: dict[str, Any] = {}
    if record(jobs_dir, folder, "agent/trace.json") is not None:
        try:
            trace = read_object(record(jobs_dir, folder, "agent/trace.json"), "agent/trace.json")
        except Unreadable as exc:
            problems.append(str(exc))
    origin = moment(result.get("started_at")) or moment(dig(trace, "model_calls", 0, "started"))
    routes = {r: trial_views.route_calls(jobs_dir, folder, r, origin) for r in trial_views.ROUTES}
    others = {r: _lines(jobs_dir, folder, r) for r in ("judge", "simulator") if routes[r] is not None}
    spans = trial_views.spans_of(trace, result, others, origin)
    names = job_views.trial_names(folder.parent, config)
    at = names.index(name) if name in names else -1
    return page(request, "viewer_trial.html", f"{job_name} · {name}", job=job_name, name=name, result=result,
                reward=dig(result, "verifier_result", "rewards", "reward"),
                standard=obj(result.get("standard")), problems=problems, config=config,
                trajectory=_trajectory(jobs_dir, folder, origin, bool(config.get("simulator"))),
                timelines=_timelines(spans, result, origin), lanes={s.lane for s in spans}, trace_here=bool(trace), routes=routes,
                verifier=trial_views.verifier_of(jobs_dir, folder),
                exception=read_part(record(jobs_dir, folder, "exception.txt")),
                logs=[(n, read_part(record(jobs_dir, folder, n))) for n in ("trial.log", "agent/stderr.txt")],
                previous=names[at - 1] if at > 0 else None, next=names[at + 1] if 0 <= at < len(names) - 1 else None)


def _lines(jobs_dir: Path, folder: Path, route: str) -> list[dict[str, Any]]:
    where = trial_views.ROUTES[route]
    try:
        return job_files.read_lines(record(jobs_dir, folder, where["calls"]) or record(jobs_dir, folder, where["live"]),
                                    where["calls"])[0]
    except Unreadable:
        return []


async def call(request: web.Request) -> web.Response:
    """One relay call's request and reply, read from its route's whole bodies.jsonl."""
    jobs_dir = _jobs_dir(request)
    job_name, name, route, call_id = (request.match_info[k] for k in ("job", "trial", "route", "call"))
    if route not in trial_views.ROUTES:
        raise web.HTTPNotFound(text="no such route here")
    folder = job_files.trial_folder(jobs_dir, job_name, name)
    line = next((c for c in _lines(jobs_dir, folder, route) if str(c.get("id")) == call_id), None)
    body = trial_views.call_body(record(jobs_dir, folder, trial_views.ROUTES[route]["bodies"]), call_id, CALL_CHARS)
    if line is None and body is None:
        raise web.HTTPNotFound(text="no such call here")
    return page(request, "viewer_call.html", f"{job_name} · {name} · call {call_id}", job=job_name, name=name,
                route=route, call_id=call_id, line=trial_views.as_text(line) if line else "", body=body)


async def whole_record(request: web.Request) -> web.StreamResponse:
    """A record of RECORDS, whole, as text."""
    jobs_dir = _jobs_dir(request)
    name = request.match_info["name"]
    if name not in RECORDS:
        raise web.HTTPNotFound(text="not a record the viewer hands over")
    folder = job_files.trial_folder(jobs_dir, request.match_info["job"], request.match_info["trial"])
    path = record(jobs_dir, folder, name)
    if path is None:
        raise web.HTTPNotFound(text="no such record here")
    return web.FileResponse(path, headers={"Content-Type": "text/plain; charset=utf-8"})


def said(handler: Handler) -> Handler:
    """A page whose records hold what it did not expect says so, with the job's name, never a traceback."""

    @functools.wraps(handler)
    async def guarded(request: web.Request) -> web.StreamResponse:
        try:
            return await handler(request)
        except web.HTTPException:
            raise
        except Exception as exc:  # noqa: BLE001 - a record of any shape must not break the page
            where = " · ".join(request.match_info.values())
            response = page(request, "viewer_problem.html", "Cannot be shown", where=where, why=f"{type(exc).__name__}: {exc}")
            response.set_status(500)
            return response

    return guarded


def add_routes(app: web.Application) -> None:
    app.router.add_get("/jobs", said(jobs))
    app.router.add_get("/jobs/{job}", said(job))
    app.router.add_get("/jobs/{job}/{trial}", said(trial))
    app.router.add_get("/jobs/{job}/{trial}/calls/{route}/{call}", said(call))
    app.router.add_get("/jobs/{job}/{trial}/record/{name:.+}", whole_record)
