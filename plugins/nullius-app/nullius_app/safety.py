"""What keeps the app's server for its own browser: loopback, its own Host, its own origin, a form token, paths held to their roots.

- Every request must name the app's own host (`127.0.0.1:PORT`, `localhost:PORT`):
  a page of another site that resolves its name to 127.0.0.1 (DNS rebinding)
  reaches nothing.
- Every request that changes anything (not GET or HEAD) must come from the
  app's own origin (`Origin`, else `Referer`) and carry the session's form
  token (`X-Nullius-Token`, or a form field `token`); the token is in the
  app's own pages alone, which no other origin can read.
- A path taken from a request is held to its root (`inside`): the jobs folder,
  the app's recipes; `..`, an absolute path or a link leading out is refused.
- A request from an address that is not loopback is refused (the server
  binds to loopback; this holds if it is ever reached another way).
"""

from __future__ import annotations

import hmac
import ipaddress
from pathlib import Path
from typing import Any, Awaitable, Callable

from aiohttp import web

from nullius_core import handed

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
SAFE = frozenset({"GET", "HEAD"})


def _loopback(address: str | None) -> bool:
    try:
        return address is not None and ipaddress.ip_address(address.split("%")[0]).is_loopback
    except ValueError:
        return False


def _own_hosts(origin: str) -> set[str]:
    port = origin.rsplit(":", 1)[-1]
    return {f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}"}


def refuse(status: int, why: str) -> web.Response:
    return web.Response(status=status, text=why + "\n", content_type="text/plain")


def middleware(state: Any) -> Callable[[web.Request, Handler], Awaitable[web.StreamResponse]]:
    @web.middleware
    async def guard(request: web.Request, handler: Handler) -> web.StreamResponse:
        if not _loopback(request.remote):
            return refuse(403, "the app serves this machine's loopback alone")
        if request.host not in _own_hosts(state.origin):
            return refuse(421, f"the app is {state.origin}, not {request.host}")
        if request.method not in SAFE:
            came = request.headers.get("Origin") or _origin_of(request.headers.get("Referer"))
            if came not in {f"http://{h}" for h in _own_hosts(state.origin)}:
                return refuse(403, "a request that changes anything comes from the app's own pages alone")
            token = request.headers.get("X-Nullius-Token")
            if token is None and request.content_type in ("application/x-www-form-urlencoded", "multipart/form-data"):
                token = (await request.post()).get("token")
            if not isinstance(token, str) or not hmac.compare_digest(token, state.token):
                return refuse(403, "this request lacks the app's form token (reload the page)")
        response = await handler(request)
        response.headers.setdefault("X-Content-Type-Options", "nosniff")
        response.headers.setdefault("X-Frame-Options", "DENY")
        response.headers.setdefault("Referrer-Policy", "same-origin")
        response.headers.setdefault("Content-Security-Policy",
                                    "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; frame-ancestors 'none'")
        return response

    return guard


def _origin_of(referer: str | None) -> str | None:
    if not referer:
        return None
    scheme, _, rest = referer.partition("://")
    return f"{scheme}://{rest.split('/', 1)[0]}" if rest else None


def inside(root: Path, name: str) -> Path:
    """`root/name`, refused (HTTPNotFound) unless it lies under root once every link is followed (handed.within, the
    rule every reader of a handed job keeps), and is not root itself."""
    if not name or "\x00" in name or Path(name).is_absolute():
        raise web.HTTPNotFound(text="no such thing here")
    try:
        target = handed.within(root, Path(name))
    except handed.Refused:
        raise web.HTTPNotFound(text="no such thing here") from None
    if target == root.resolve():
        raise web.HTTPNotFound(text="no such thing here")
    return target
