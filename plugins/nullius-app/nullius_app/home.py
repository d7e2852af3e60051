"""The front page: what the catalogue holds, at a glance, with the way to each part of the app."""

from __future__ import annotations

from aiohttp import web

from nullius_app.render import page


async def index(request: web.Request) -> web.Response:
    state = request.app["state"]
    listing = await state.nullius.json("list", "--json")
    return page(request, "home.html", "Nullius", listing=listing)


def add_routes(app: web.Application) -> None:
    app.router.add_get("/", index)
