"""The catalogue's pages: Benchmarks, Agents and Capabilities (a table each), and a page per definition.

A benchmark's page: its definition and source, its proofs per dataset, what
fits it and why the rest do not (`nullius fit REF --json`), its Licences
panel and Run control checks. An agent's or capability's page: its ports'
proofs, the benchmarks it runs, and Prove its ports. A user copy that
shadows a plugin's entry offers Use bundled entry.
"""

from __future__ import annotations

import asyncio
from typing import Any

from aiohttp import web

from nullius_app.catalogue import actions, licences
from nullius_app.catalogue.data import SECTIONS, TITLES, NoData, about, command_json, find, listing, registered
from nullius_app.catalogue.proofs import benchmark_proofs, port_rows, runnable_ports
from nullius_app.render import page

def _failed(request: web.Request, title: str, exc: NoData) -> web.Response:
    response = page(request, "catalogue_failed.html", title, command=exc.command, said=exc.said)
    response.set_status(502)
    return response


def _missing(request: web.Request, section: str, ref: str) -> web.Response:
    response = page(request, "catalogue_failed.html", f"No {SECTIONS[section]} {ref}", command="nullius list --json",
                    said=f"the catalogue has no {SECTIONS[section]} {ref!r}")
    response.set_status(404)
    return response


async def list_page(request: web.Request) -> web.Response:
    section = request.match_info["section"]
    try:
        data = await listing(request)
    except NoData as exc:
        return _failed(request, TITLES[section], exc)
    ports = data.get("ports") or []
    rows = [{"row": row, "info": about(section, row),
             "proofs": benchmark_proofs(row) if section == "benchmarks" else port_rows(row, ports)} for row in data[section]]
    fits: dict[str, int] = {}
    for pair in data["fits"]:
        counted = pair["benchmark"] if section == "benchmarks" else pair["participant"]
        fits[counted] = fits.get(counted, 0) + 1
    invalid = [b for b in data["invalid"] if b["kind"] == SECTIONS[section]]
    return page(request, "catalogue_list.html", TITLES[section], section=section, kind=SECTIONS[section], rows=rows, fits=fits,
                invalid=invalid)


async def benchmark_page(request: web.Request) -> web.Response:
    ref = request.match_info["ref"]
    try:
        data = await listing(request)
    except NoData as exc:
        return _failed(request, ref, exc)
    row = find(data, "benchmarks", ref)
    if row is None:
        return _missing(request, "benchmarks", ref)
    fit, declared = await asyncio.gather(_or_said(command_json(request, "fit", ref, "--json")), _or_said(licences.declared(request, ref)))
    info = about("benchmarks", row)
    standard = info["model"]
    options = actions.control_options(standard) if standard is not None else {}
    problems = {part: said for part, said in (("fit", fit), ("licences", declared)) if isinstance(said, NoData)}
    return page(request, "catalogue_benchmark.html", info["name"], row=row, info=info, datasets=benchmark_proofs(row), fit=fit,
                licences=declared, problems=problems, options=options, judge=_judge(standard), section="benchmarks",
                started=actions.actions_for(request.app["state"], ref))


async def participant_page(request: web.Request) -> web.Response:
    section, ref = request.match_info["section"], request.match_info["ref"]
    try:
        data = await listing(request)
    except NoData as exc:
        return _failed(request, ref, exc)
    row = find(data, section, ref)
    if row is None:
        return _missing(request, section, ref)
    ports = data.get("ports") or []
    runs = sorted(pair["benchmark"] for pair in data["fits"] if pair["participant"] == ref)
    family = [b for b in data["benchmarks"] if b["family"] == row["family"]]
    info = about(section, row)
    try:
        providers, backends = await registered(request, "providers"), await registered(request, "backends")
    except NoData:
        providers, backends = [], ["local", "docker"]  # the form still works: the command says what it refuses
    return page(request, "catalogue_participant.html", info["name"], row=row, info=info, section=section, kind=SECTIONS[section],
                ports=port_rows(row, ports), runnable=runnable_ports(row, ports), runs=runs, providers=providers,
                backends=[b for b in ("local", "docker") if b in backends],
                not_run=[b["ref"] for b in family if b["ref"] not in runs], started=actions.actions_for(request.app["state"], ref))


async def _or_said(pending: Any) -> Any:
    """The data, or the NoData that says why the part of the page that needs it cannot be shown."""
    try:
        return await pending
    except NoData as exc:
        return exc


def _judge(standard: Any) -> dict[str, Any] | None:
    judge = standard.score.judge if standard is not None and standard.score is not None else None
    return {"model": judge.model, "when": judge.when or {}} if judge is not None else None


def add_routes(app: web.Application) -> None:
    app.router.add_get("/{section:benchmarks|agents|capabilities}", list_page)
    app.router.add_get("/benchmarks/{ref}", benchmark_page)
    app.router.add_get("/{section:agents|capabilities}/{ref}", participant_page)

