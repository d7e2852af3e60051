"""The catalogue's actions, each a `nullius` command the app starts through its RunBook (so the Runs page lists it, its log kept).

- Run control checks (a benchmark's page): a prove recipe written under the
  app's recipes folder, then `nullius prove --from-run FILE`, handed no key
  unless the benchmark is judged (a `score.judge` whose `when` holds under
  the options chosen).
- Prove its ports (an agent's or capability's page): a conform recipe, then
  `nullius conform --from-run FILE`, with the app's keys (the relay holds
  them; the agent never sees one).
- Use bundled entry (a user copy that shadows a plugin's): `nullius use-bundled KEY`.

The page polls the command's state (`/catalogue/started/ID`) and reloads
when it ends: the listing is forgotten then, so the page shows what the
command wrote, a failed check as failed.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from aiohttp import web

from nullius_core.definitions import unstructure
from nullius_core.recipes import ConformRecipe, ProveRecipe

from nullius_app.catalogue.data import CACHE, SECTIONS, NoData, definition, find, key_of, listing
from nullius_app.catalogue.proofs import runnable_ports
from nullius_app.runbook import log_tail

PROVE, CONFORM, USE_BUNDLED = "Run control checks", "Prove its ports", "Use bundled entry"
VERBS = (PROVE, CONFORM, USE_BUNDLED)
TAIL_BYTES = 16_384
LAST_LINES = 8


class Asked(Exception):
    """A form that cannot become a command: said back to the page, nothing started."""


def judged(standard: Any, chosen: dict[str, str]) -> bool:
    """Whether the control runs ask the benchmark's judge: it has one, and its `when` holds under the options (defaults filled in)."""
    judge = standard.score.judge if standard is not None and standard.score is not None else None
    if judge is None:
        return False
    values = {name: option.default for name, option in (standard.options or {}).items() if option.default is not None}
    values.update(chosen)
    return all(values.get(name) in allowed for name, allowed in (judge.when or {}).items())


def control_options(standard: Any) -> dict[str, Any]:
    """The benchmark's options a control run takes (the `yours` setup's: an option without `setups`, or one naming it)."""
    return {name: option for name, option in (standard.options or {}).items() if option.setups is None or "yours" in option.setups}


def _count(value: Any, field: str) -> int | None:
    if value in (None, ""):
        return None
    try:
        number = int(str(value))
    except ValueError:
        raise Asked(f"{field}: expected a whole number, found {value!r}") from None
    if number < 1:
        raise Asked(f"{field}: expected a positive number, found {number}")
    return number


def _text(value: Any) -> str | None:
    return str(value).strip() or None if value is not None else None


def prove_recipe(row: dict[str, Any], standard: Any, form: dict[str, Any]) -> ProveRecipe:
    """The prove recipe a Run control checks form asks for: the datasets ticked (or a folder), the limit, the options chosen."""
    datasets = [name for name in row["datasets"] if form.get(f"dataset.{name}")]
    folder = _text(form.get("folder"))
    if folder:
        datasets.append(folder)
    options = control_options(standard)
    chosen = {name: str(form[f"option.{name}"]) for name in options if _text(form.get(f"option.{name}"))}
    for name, value in chosen.items():
        if not options[name].allows(value):
            raise Asked(f"option {name}: {value!r} is not a value it allows")
    return ProveRecipe(benchmark=row["ref"], datasets=datasets, limit=_count(form.get("limit"), "limit"), bench_options=chosen)


def conform_recipe(row: dict[str, Any], ports: list[dict[str, Any]], form: dict[str, Any]) -> ConformRecipe:
    """The conform recipe a Prove its ports form asks for: only ports whose kit runs."""
    chosen = [p["name"] for p in runnable_ports(row, ports) if form.get(f"port.{p['name']}")]
    if not chosen:
        raise Asked("tick at least one port to prove")
    backend = _text(form.get("backend")) or "local"
    if backend not in ("local", "docker"):
        raise Asked(f"backend: expected local or docker, found {backend!r}")
    return ConformRecipe(participant=row["ref"], model=_text(form.get("model")), provider=_text(form.get("provider")),
                         base_url=_text(form.get("base_url")), repeat=_count(form.get("repeat"), "repeat") or 1, ports=chosen,
                         backend=backend, unsandboxed=backend == "local" and bool(form.get("unsandboxed")))


def write_recipe(state: Any, kind: str, ref: str, recipe: Any) -> Path:
    """The recipe as a file of the app's recipes folder (`actions/`), named for what it does and when."""
    folder = state.recipes_dir / "actions"
    folder.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    path = folder / f"{kind}-{ref.replace('@', '_')}-{stamp}-{time.monotonic_ns() % 1_000_000:06d}.json"
    # the converter leaves out what is at its default; `kind` is what tells `--from-run` which recipe it is, so it is always written
    path.write_text(json.dumps({"kind": recipe.kind, **unstructure(recipe)}, indent=2) + "\n")
    return path


async def _form(request: web.Request) -> dict[str, Any]:
    try:
        data = await request.json()
    except ValueError:
        raise Asked("expected the form's fields as JSON") from None
    if not isinstance(data, dict):
        raise Asked("expected the form's fields as JSON")
    return data


async def _row(request: web.Request, section: str) -> dict[str, Any]:
    row = find(await listing(request), section, request.match_info["ref"])
    if row is None:
        raise web.HTTPNotFound(text=f"no {SECTIONS[section]} {request.match_info['ref']!r} in the catalogue")
    return row


def _started(entry: Any, said: str) -> web.Response:
    return web.json_response({"said": said, "run": entry.id})


def _said(exc: Exception) -> web.Response:
    return web.json_response({"said": str(exc)}, status=400)


async def prove(request: web.Request) -> web.Response:
    state = request.app["state"]
    try:
        row = await _row(request, "benchmarks")
        standard = definition(row["definition"])
        recipe = prove_recipe(row, standard, await _form(request))
    except (Asked, NoData) as exc:
        return _said(exc)
    keys = judged(standard, recipe.bench_options)
    path = write_recipe(state, "prove", row["ref"], recipe)
    entry = await state.runs.start(f"{PROVE}: {row['ref']}", ["prove", "--from-run", str(path)], keys=keys)
    handed = "with the app's keys (its judge is asked)" if keys else "handed no key (it asks no judge)"
    return _started(entry, f"started: nullius prove --from-run {path.name}, {handed}")


async def conform(request: web.Request) -> web.Response:
    state = request.app["state"]
    section = request.match_info["section"]
    try:
        row = await _row(request, section)
        recipe = conform_recipe(row, (await listing(request)).get("ports") or [], await _form(request))
    except (Asked, NoData) as exc:
        return _said(exc)
    path = write_recipe(state, "conform", row["ref"], recipe)
    entry = await state.runs.start(f"{CONFORM}: {row['ref']}", ["conform", "--from-run", str(path)])
    return _started(entry, f"started: nullius conform --from-run {path.name} ({', '.join(recipe.ports)})")


async def use_bundled(request: web.Request) -> web.Response:
    state = request.app["state"]
    section = request.match_info["section"]
    try:
        row = await _row(request, section)
    except NoData as exc:
        return _said(exc)
    if not row.get("shadows"):
        return _said(Asked(f"{row['ref']} is not a user copy over a plugin's entry ({row['source']})"))
    entry = await state.runs.start(f"{USE_BUNDLED}: {row['ref']}", ["use-bundled", key_of(row["ref"])], keys=False)
    request.app[CACHE].forget()
    return _started(entry, f"started: nullius use-bundled {key_of(row['ref'])}")


def last_words(log: Path) -> list[str]:
    """A command's last lines, its progress lines (`[nullius] stage=...`) left out: its verdicts, or its refusal."""
    lines = [line for line in log_tail(log, TAIL_BYTES).splitlines() if line.strip() and not line.startswith("[nullius]")]
    return lines[-LAST_LINES:]


def describe(entry: Any) -> dict[str, Any]:
    running = entry.code is None
    return {"id": entry.id, "title": entry.title, "running": running, "code": entry.code, "started": entry.started,
            "ended": entry.ended, "said": last_words(entry.log)}


async def status(request: web.Request) -> web.Response:
    """Whether a command the app started still runs, and its last words."""
    entry = request.app["state"].runs.get(request.match_info["id"])
    if entry is None:
        raise web.HTTPNotFound(text="no such command started here")
    return web.json_response(describe(entry))


def actions_for(state: Any, ref: str, limit: int = 5) -> list[dict[str, Any]]:
    """The catalogue actions the app started for this definition (any version of it), newest first."""
    out = []
    for entry in state.runs.all():
        verb, _, about = entry.title.partition(": ")
        if verb in VERBS and key_of(about) == key_of(ref):
            out.append(describe(entry))
    return out[:limit]


def add_routes(app: web.Application) -> None:
    app.router.add_post("/benchmarks/{ref}/prove", prove)
    app.router.add_post("/{section:agents|capabilities}/{ref}/conform", conform)
    app.router.add_post("/{section:benchmarks|agents|capabilities}/{ref}/use-bundled", use_bundled)
    app.router.add_get("/catalogue/started/{id}", status)
