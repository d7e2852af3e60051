"""The builder (`/build`): a run chosen in a form, compiled to a recipe and its jobs, saved, and run as `nullius run --from-run`.

- `GET /build`: the benchmarks to choose from and the saved recipes;
  `?benchmark=REF` draws the form for one, `?recipe=NAME` a saved recipe in it.
- `POST /build/plan`: the form as a plan: the recipe, its jobs named as the
  standard says, the exact commands, the options that apply, what is wrong.
- `POST /build/save`: the recipe saved as `<recipes>/<name>.json`.
- `POST /build/run`: saved, then each job started (`state.runs.start`): a
  command of the RunBook, with its log, listed on /runs (`nullius host run`
  for a recipe with a host). What the CLI refuses, it says there in its own words.
- `POST /build/host-check`: `nullius host check` for the form's host.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from aiohttp import web

from nullius_app.builder_catalogue import CatalogueReader, Unavailable
from nullius_core.recipes import HOST

from nullius_app.builder_form import Plan, form_of, free_name, new_form, plan_of, where_of
from nullius_app.host.calls import Host, check
from nullius_app.render import page
from nullius_app.safety import inside

READER = web.AppKey("builder.reader", CatalogueReader)
TITLE = "Build a run"


def saved_recipes(folder: Path) -> list[dict[str, Any]]:
    """Every run recipe saved under `folder`, newest first (one that cannot be read says why)."""
    out = []
    for path in folder.glob("*.json") if folder.is_dir() else []:
        try:
            raw = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError) as exc:
            out.append({"name": path.stem, "problem": f"cannot be read: {exc}", "mtime": path.stat().st_mtime})
            continue
        if not isinstance(raw, dict) or raw.get("kind", "run") != "run":
            continue  # a prove or conform recipe: another page's
        out.append({"name": path.stem, "benchmark": raw.get("benchmark"), "mtime": path.stat().st_mtime,
                    "participants": [*raw.get("agents", []), *raw.get("capabilities", []), *raw.get("others", [])],
                    "datasets": raw.get("datasets") or [], "limit": raw.get("limit"), "machines": raw.get("machines", 1)})
    return sorted(out, key=lambda r: r["mtime"], reverse=True)


def _keys(benchmarks: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(key, its first ref) for the chooser; a key's versions are chosen in its form."""
    seen: dict[str, str] = {}
    for bench in benchmarks:
        seen.setdefault(bench["ref"].partition("@")[0], bench["ref"])
    return sorted(seen.items())


async def build_page(request: web.Request) -> web.Response:
    state = request.app["state"]
    reader = request.app[READER]
    values: dict[str, Any] = {"view": None, "form": None, "plan": None, "failed": None, "loaded": None}
    recipes = saved_recipes(state.recipes_dir)
    benchmarks: list[dict[str, Any]] = []
    try:
        benchmarks = await reader.benchmarks(fresh=True)
        ref = request.query.get("benchmark")
        saved = None
        if request.query.get("recipe"):
            saved = _read_recipe(state.recipes_dir, request.query["recipe"])
            ref = str(saved.get("benchmark") or "")
            values["loaded"] = request.query["recipe"]
        if ref:
            view = await reader.bench(ref)
            form = form_of(saved, view) if saved is not None else new_form(view, free_name(view.key, state.recipes_dir, state.jobs_dir))
            values.update(view=view, form=form, plan=plan_of(view, form, state.recipes_dir, state.jobs_dir))
    except Unavailable as exc:
        values["failed"] = str(exc)
    return page(request, "builder.html", TITLE, keys=_keys(benchmarks), recipes=recipes, recipes_dir=str(state.recipes_dir),
                jobs_dir=str(state.jobs_dir), **values)


def _read_recipe(folder: Path, name: str) -> dict[str, Any]:
    path = inside(folder, f"{name}.json")
    try:
        raw = json.loads(path.read_text())
    except OSError as exc:
        raise Unavailable(f"no saved recipe {name!r} ({exc.strerror or exc})") from None
    except json.JSONDecodeError as exc:
        raise Unavailable(f"{path}: not JSON: {exc}") from None
    if not isinstance(raw, dict) or raw.get("kind", "run") != "run":
        raise Unavailable(f"{path} is not a run recipe")
    return raw


async def _plan(request: web.Request) -> tuple[Plan, dict[str, Any]]:
    state = request.app["state"]
    try:
        form = await request.json()
    except json.JSONDecodeError:
        raise web.HTTPBadRequest(text="expected the form as JSON") from None
    if not isinstance(form, dict) or not isinstance(form.get("benchmark"), str):
        raise web.HTTPBadRequest(text="expected the form as JSON, with its benchmark")
    try:
        view = await request.app[READER].bench(form["benchmark"], fresh=False)
    except Unavailable as exc:
        raise web.HTTPBadRequest(text=str(exc)) from None
    return plan_of(view, form, state.recipes_dir, state.jobs_dir), form


async def plan_route(request: web.Request) -> web.Response:
    plan, _ = await _plan(request)
    return web.json_response(plan.json())


def _save(plan: Plan, recipes_dir: Path) -> Path:
    assert plan.recipe is not None and plan.file is not None
    recipes_dir.mkdir(parents=True, exist_ok=True)
    path = inside(recipes_dir, plan.file.name)
    part = path.with_name(f".{path.name}.{os.getpid()}.part")
    part.write_text(json.dumps(plan.recipe, indent=2) + "\n")
    part.replace(path)
    return path


def _refused(plan: Plan) -> web.Response:
    return web.json_response({"said": "; ".join(plan.problems), "plan": plan.json()}, status=400)


async def save_route(request: web.Request) -> web.Response:
    plan, _ = await _plan(request)
    if plan.problems:
        return _refused(plan)
    path = _save(plan, request.app["state"].recipes_dir)
    return web.json_response({"said": f"saved as {path}", "plan": plan.json()})


async def run_route(request: web.Request) -> web.Response:
    state = request.app["state"]
    plan, _ = await _plan(request)
    if plan.problems:
        return _refused(plan)
    path = _save(plan, state.recipes_dir)
    started = []
    for job in plan.jobs:
        title = f"{job['name']} on {job['host']}" if job["host"] else f"run {job['name']}"
        entry = await state.runs.start(title, job["argv"][1:], jobs=[job["name"]])  # `nullius run` or `nullius host run`
        started.append({"id": entry.id, "job": job["name"]})
    jobs = "job" if len(started) == 1 else "jobs"
    return web.json_response({"said": f"saved as {path}; started {len(started)} {jobs}", "runs": started, "plan": plan.json()})


async def host_check_route(request: web.Request) -> web.Response:
    """`nullius host check` for the form's host: what it has, and what a run there on the chosen backend would lack."""
    try:
        form = await request.json()
    except json.JSONDecodeError:
        raise web.HTTPBadRequest(text="expected the form as JSON") from None
    problems: list[Any] = []
    where = where_of({**form, "where": "host"}, problems) if isinstance(form, dict) else {}
    if problems or not where.get("host") or not HOST.match(where["host"]):
        said = "; ".join(text for _, text in problems) or f"host: expected USER@HOST, found {where.get('host')!r}"
        return web.json_response({"ok": False, "problems": [said], "found": {}, "said": said}, status=400)
    login = where.get("ssh") or {}
    host = Host(where["host"], port=login.get("port"), identity=Path(login["identity"]) if login.get("identity") else None,
                known_hosts=Path(login["known_hosts"]) if login.get("known_hosts") else None,
                accept_new=form.get("accept_new") in ("on", "true", True))
    backend = form.get("backend") if form.get("backend") in ("local", "docker") else "local"
    checked = await check(request.app["state"], host, backend=backend)
    return web.json_response({"ok": checked.ok, "problems": checked.problems, "found": checked.found, "host": host.name,
                              "backend": backend})


def add_routes(app: web.Application) -> None:
    app[READER] = CatalogueReader(app["state"])
    app.router.add_get("/build", build_page)
    app.router.add_post("/build/plan", plan_route)
    app.router.add_post("/build/save", save_route)
    app.router.add_post("/build/run", run_route)
    app.router.add_post("/build/host-check", host_check_route)
