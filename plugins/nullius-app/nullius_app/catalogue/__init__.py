"""The catalogue: Benchmarks, Agents, Capabilities, a page per definition, its actions and a benchmark's Licences panel."""

from __future__ import annotations

from aiohttp import web

from nullius_app.catalogue import actions, licences, pages
from nullius_app.catalogue.data import CACHE, ListingCache


def add_routes(app: web.Application) -> None:
    app[CACHE] = ListingCache()
    pages.add_routes(app)
    actions.add_routes(app)
    licences.add_routes(app)
