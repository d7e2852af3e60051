"""The app's aiohttp application: its safety middleware, its static files, and each page module's routes."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from nullius_app import add, builder, catalogue, compare_page, home, runs, viewer
from nullius_app.render import STATIC
from nullius_app.safety import middleware

# Each page module adds its own routes (`add_routes(app)`): one module per part of the app, one line each here.
PAGES = [
    home,  # /: the front page
    viewer,  # /jobs, /jobs/JOB, /jobs/JOB/TRIAL: the job viewer
    compare_page,  # /compare?a=JOB&b=JOB: two jobs compared (nullius compare)
    catalogue,  # /benchmarks /agents /capabilities, a page per definition, its actions, a benchmark's Licences panel
    add,  # /add: the prompt for a coding assistant to bring something in
    builder,  # /build: the run builder and the saved recipes
    runs,  # /runs: the commands the app started, their jobs' progress, cancel and resume
]


def make_app(state: Any) -> web.Application:
    app = web.Application(middlewares=[middleware(state)], client_max_size=4 * 1024 * 1024)
    app["state"] = state
    for module in PAGES:
        module.add_routes(app)
    app.router.add_static("/static/", STATIC, show_index=False, follow_symlinks=False)
    return app
