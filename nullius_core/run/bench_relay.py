"""The run's own relay, for a benchmark whose chosen option value embeds (`needs.embeddings`).

Started before the driver's first op (it may embed from its `units` on):
one route, `benchmark`, every call sent as the embeddings model, forwarded
to the OpenAI provider, recorded in the job's `.work/relay-benchmark` and
priced by a meter of its own: the benchmark's cost, never an agent's. The
driver and the benchmark's own MCP servers get its URL as OPENAI_BASE_URL
and its token as OPENAI_API_KEY; the provider's key stays in the relay.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import attrs

from nullius_core.contracts.refused import RunRefused
from nullius_core.jobs.layout import BENCH_RECORD
from nullius_core.relay import upstreams
from nullius_core.run import budget
from nullius_core.run.prepare import Prepared
from nullius_core.run.progress import Progress
from nullius_core.session import Session

if TYPE_CHECKING:
    from nullius_core.relay.server import Relay

ROUTE = "benchmark"


async def start_bench_relay(session: Session, job: Path, prepared: Prepared, progress: Progress) -> tuple[Prepared, Relay]:
    """The relay started and its route added; the prepared run with the driver's environment pointing at it."""
    from nullius_core.relay.server import Relay  # here: a run without a driver that embeds loads no aiohttp

    upstream = prepared.bench_upstream
    assert upstream is not None
    meter = budget.bench_meter(session.paths, upstream.provider.name, RunRefused)
    relay = Relay(upstream, upstreams.apis(session, upstream), meter=meter)
    await relay.start()
    seconds = prepared.bench.limits.call_seconds
    route = relay.add_route(ROUTE, job / BENCH_RECORD, kind="benchmark", model=prepared.embeddings,
                            call_seconds=float(seconds) if seconds else None)
    progress.stage("relay", role="benchmark", provider=upstream.provider.name, model=prepared.embeddings, url=relay.base_url)
    env = {**prepared.launch.env, "OPENAI_BASE_URL": relay.url(ROUTE), "OPENAI_API_KEY": route.token}
    prepared = attrs.evolve(prepared, launch=attrs.evolve(prepared.launch, env=env), bench_route={"base_url": relay.url(ROUTE), "key": route.token})
    return prepared, relay
