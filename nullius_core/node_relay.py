"""A relay of the run started away from the run's own process: on a backend's node (the ray backend), from what the run tells it.

The run's relay holds the provider's key in the run's process. A backend
whose units run on other machines runs a relay beside them instead (the
standard's "no central relay"), given the provider's name, its base URL
and its key in memory by the run; its routes, records and URL are the
run's own relay's (`nullius_core.relay.server.Relay`).
"""

from __future__ import annotations

import asyncio
import os

from nullius_core.relay import upstreams
from nullius_core.relay.server import Relay, Upstream, new_token
from nullius_core.secret_names import without_secrets
from nullius_core.session import Session

__all__ = ["new_token", "start_node_relay"]


async def start_node_relay(provider: str, base_url: str, key: str | None, *, pins: dict[str, list[str]] | None = None,
                           keep_bodies: bool = True, host: str = "127.0.0.1") -> Relay:
    """A relay for `provider` (installed here: this machine's plugins are loaded), listening on `host`; ValueError when
    the provider is not installed."""
    session = await asyncio.to_thread(Session, env=without_secrets(os.environ))  # its plugins loaded off the loop
    spec = session.providers.get(provider)
    if spec is None:
        raise ValueError(f"the provider {provider!r} is not installed here")
    upstream = Upstream(provider=spec, base_url=base_url, key=key)
    relay = Relay(upstream, upstreams.apis(session, upstream), keep_bodies=keep_bodies, pins=pins or {})
    await relay.start(host, 0)
    return relay

