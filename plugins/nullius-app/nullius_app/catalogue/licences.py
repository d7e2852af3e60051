"""A benchmark's Licences panel: set, replace and unset each secret its environments declare.

What is declared, and whether each is set and until when, is `nullius
secrets list BENCH --json`. A value goes to `nullius secrets set BENCH NAME`
on its stdin, never on a command line; unset is `nullius secrets unset`.
These run directly (`state.nullius.run`), not through the RunBook, whose
logs are kept: the value is never written by the app, never in a response,
a page or a log, and it comes in a POST alone (never in a URL, so never in
the browser's history). The middleware serves a loopback browser alone, and
checks the page's own origin and form token on each of these requests.
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Any

from aiohttp import web

from nullius_app.catalogue.data import NoData, command_json

DAY = re.compile(r"^\d{4}-\d{2}-\d{2}$")


async def declared(request: web.Request, ref: str) -> list[dict[str, Any]]:
    """Each declared licence: name, kind, to, summary, set, set_at, expires, expired (never a value)."""
    rows = await command_json(request, "secrets", "list", ref, "--json")
    if not isinstance(rows, list):
        raise NoData(["secrets", "list", ref, "--json"], "expected a list")
    return rows


def _value(data: dict[str, Any]) -> bytes:
    """The value as sent: text (`value`), or a licence file's bytes in base64 (`value_b64`)."""
    if isinstance(data.get("value_b64"), str) and data["value_b64"]:
        try:
            return base64.b64decode(data["value_b64"], validate=True)
        except (binascii.Error, ValueError):
            raise web.HTTPBadRequest(text="the licence file did not arrive whole: choose it again") from None
    if isinstance(data.get("value"), str):
        return data["value"].encode()
    return b""


async def set_licence(request: web.Request) -> web.Response:
    """Set or replace NAME: the value on `nullius secrets set`'s stdin."""
    ref, name = request.match_info["ref"], request.match_info["name"]
    try:
        data = await request.json()
    except ValueError:
        data = None
    if not isinstance(data, dict):
        return web.json_response({"said": "expected the form's fields as JSON"}, status=400)
    value = _value(data)
    if not value:
        return web.json_response({"said": f"{name}: give a value (it is never shown back)"}, status=400)
    args = ["secrets", "set", ref, name]
    expires = str(data.get("expires") or "").strip()
    if expires:
        if not DAY.match(expires):
            return web.json_response({"said": f"expires: expected YYYY-MM-DD, found {expires!r}"}, status=400)
        args += ["--expires", expires]
    done = await request.app["state"].nullius.run(*args, stdin=value, keys=False)
    return web.json_response({"said": done.said}, status=200 if done.code == 0 else 400)


async def unset_licence(request: web.Request) -> web.Response:
    ref, name = request.match_info["ref"], request.match_info["name"]
    done = await request.app["state"].nullius.run("secrets", "unset", ref, name, keys=False)
    return web.json_response({"said": done.said}, status=200 if done.code == 0 else 400)


def add_routes(app: web.Application) -> None:
    app.router.add_post("/benchmarks/{ref}/licences/{name}", set_licence)
    app.router.add_post("/benchmarks/{ref}/licences/{name}/unset", unset_licence)
