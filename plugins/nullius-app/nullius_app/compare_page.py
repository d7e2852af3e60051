"""Compare: two jobs on the same units, from `nullius compare A B --json` (the nullius-report plugin), with its Pareto picture.

The app runs the command as a person would and shows what it printed: the
paired wins and losses per unit, the paired difference of means with its
interval, McNemar's test for pass/fail jobs, each job's row, and the SVG it
writes (kept under the app's own folder, `compare/<digest of the pair>/`).
Without the plugin, the page says what is missing and how to add it; a
refusal (jobs on other units) is the command's own words.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from aiohttp import web

from nullius_app import job_files, job_views
from nullius_app.render import page
from nullius_app.viewer import said
from nullius_app.viewer_svg import Cell, grid

PLUGIN = "nullius-report"
LEGEND = (("cmp-a", "A better"), ("cmp-b", "B better"), ("cmp-both", "both passed"), ("cmp-neither", "neither passed"),
          ("cmp-tie", "the same score"))


def _folder(state: Any, a: str, b: str) -> Path:
    return state.app_dir / "compare" / hashlib.sha256(f"{a}\0{b}".encode()).hexdigest()[:20]


def unit_cell(unit: dict[str, Any]) -> Cell:
    """A unit's cell: who did better, or both passed, neither did, the same score."""
    a, b = job_views.number(unit.get("a")), job_views.number(unit.get("b"))
    pa, pb = unit.get("passed_a"), unit.get("passed_b")

    def said_of(reward: float | None, passed: Any) -> str:
        return ("–" if reward is None else f"{reward:g}") + ("" if passed is None else " passed" if passed else " failed")

    if a is not None and b is not None and abs(a - b) > 1e-12:
        css, verdict = ("cmp-a", "A better") if a > b else ("cmp-b", "B better")
    else:
        css = "cmp-both" if pa and pb else "cmp-neither" if pa is False and pb is False else "cmp-tie"
        verdict = "tied"
    return Cell(css=css, title=f"{unit.get('unit')}: A {said_of(a, pa)}, B {said_of(b, pb)}: {verdict}")


async def _why_missing(state: Any) -> str:
    """Why `nullius compare` is not a command here, from `nullius plugins --json`."""
    try:
        listing = await state.nullius.json("plugins", "--json")
    except Exception as exc:  # noqa: BLE001 - the page says what it could learn
        return f"`nullius compare` is not a command here, and `nullius plugins --json` failed: {exc}"
    for plugin in listing.get("plugins", []):
        if plugin.get("distribution") == PLUGIN:
            return (f"`nullius compare` comes with the plugin {PLUGIN}, which is installed but {plugin.get('status')}"
                    + (f": {plugin.get('detail') or plugin.get('error')}" if plugin.get("detail") or plugin.get("error") else ""))
    return (f"`nullius compare` comes with the plugin {PLUGIN} (plugins/nullius-report in Nullius's repository), which is not "
            f"installed here: install it (`pip install -e plugins/nullius-report`) to compare jobs and draw the Pareto picture")


def _trials_by_unit(jobs_dir: Path, folder: Path) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for t in job_views.job_view(jobs_dir, folder).trials:
        if t.outcome != "not_run":
            out.setdefault(t.unit, []).append(t.name)
    return out


async def compare(request: web.Request) -> web.Response:
    state = request.app["state"]
    picked = request.query.getall("job", [])
    if picked and len(picked) == 2:
        raise web.HTTPFound("/compare?" + urlencode({"a": picked[0], "b": picked[1]}))
    a, b = request.query.get("a", ""), request.query.get("b", "")
    rows, _ = job_views.list_jobs(state.jobs_dir)
    values: dict[str, Any] = {"a": a, "b": b, "jobs": [r.name for r in rows if not r.problem], "said": None, "missing": None,
                              "data": None, "paired": None, "strip": None, "units": [], "swap": ""}
    if picked:
        values["said"] = f"Tick two jobs to compare: {len(picked)} ticked."
    if not (a and b):
        return page(request, "viewer_compare.html", "Compare two jobs", **values)
    try:
        folder_a, folder_b = (job_files.job_folder(state.jobs_dir, n) for n in (a, b))
    except web.HTTPNotFound:
        values["said"] = "No such job here: pick two jobs of the list."
        response = page(request, "viewer_compare.html", "Compare two jobs", **values)
        response.set_status(404)
        return response
    values["swap"] = "/compare?" + urlencode({"a": b, "b": a})
    out = _folder(state, a, b)
    done = await state.nullius.run("compare", str(folder_a), str(folder_b), "--out", str(out), "--json")
    if done.code != 0:
        if "No such command 'compare'" in done.stderr:
            values["missing"] = await _why_missing(state)
        else:
            values["said"] = done.said.removeprefix("nullius: ")
        return page(request, "viewer_compare.html", f"Compare {a} and {b}", **values)
    data = json.loads(done.stdout)
    paired = (data.get("paired") or [{}])[0]
    units = paired.get("by_unit") or []
    by_a, by_b = _trials_by_unit(state.jobs_dir, folder_a), _trials_by_unit(state.jobs_dir, folder_b)
    cells = [unit_cell(u) for u in units]
    values.update(data=data, paired=paired, strip=grid([[c] for c in cells], label="each unit: who did better"),
                  keys=[k for k in LEGEND if any(c.css == k[0] for c in cells)],
                  units=[(u, unit_cell(u), by_a.get(str(u.get("unit")), []), by_b.get(str(u.get("unit")), [])) for u in units],
                  picture=(out / "pareto.svg").exists(), picture_url="/compare/pareto.svg?" + urlencode({"a": a, "b": b}))
    return page(request, "viewer_compare.html", f"Compare {a} and {b}", **values)


async def pareto(request: web.Request) -> web.StreamResponse:
    """The Pareto picture `nullius compare` drew for this pair, as an image (its own styles, nothing that runs)."""
    state = request.app["state"]
    a, b = request.query.get("a", ""), request.query.get("b", "")
    for name in (a, b):
        job_files.job_folder(state.jobs_dir, name)
    path = _folder(state, a, b) / "pareto.svg"
    if not path.is_file():
        raise web.HTTPNotFound(text="no picture for these two jobs yet: open their comparison first")
    # an SVG shown by <img> runs nothing; matplotlib styles it inline, which the app's own pages never need
    return web.FileResponse(path, headers={"Content-Type": "image/svg+xml",
                                           "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'"})


def add_routes(app: web.Application) -> None:
    app.router.add_get("/compare", said(compare))
    app.router.add_get("/compare/pareto.svg", pareto)
