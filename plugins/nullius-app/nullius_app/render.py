"""Pages from the app's Jinja templates, every value escaped, every page carrying the session's form token."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jinja2
from aiohttp import web

TEMPLATES = Path(__file__).parent / "templates"
STATIC = Path(__file__).parent / "static"

_env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=jinja2.select_autoescape(["html"]),
                          undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)


def page(request: web.Request, template: str, title: str, **values: Any) -> web.Response:
    state = request.app["state"]
    html = _env.get_template(template).render(title=title, token=state.token, here=request.path, **values)
    return web.Response(text=html, content_type="text/html")


def filters() -> jinja2.Environment:
    """The environment, for a module that adds a filter of its own."""
    return _env
