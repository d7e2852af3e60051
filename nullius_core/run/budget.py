"""The run's cost meter, made before the relay starts, and `--max-cost`, which it enforces.

Every agent run prices its calls (`relay/meter.py`). With `--max-cost USD`
the run stops when the relay's running cost as served passes it: no new unit
starts, the units in flight are cancelled and recorded so, with the reason,
and the job can be resumed. A limit on a model the catalogue does not price
could never trip, so such a run is refused before any unit, naming the model.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from nullius_core.paths import Paths
from nullius_core.relay.meter import CostMeter
from nullius_core.relay.prices import PriceBook, PriceError


def bench_meter(paths: Paths, provider: str, refused: type[Exception]) -> CostMeter:
    """The meter of the run's own relay for a driver that embeds: priced apart, the benchmark's cost, never under --max-cost."""
    try:
        return CostMeter(PriceBook.load(paths.prices), provider)
    except PriceError as exc:
        raise refused(f"the price catalogue cannot be read:\n{exc}") from None


def open_meter(paths: Paths, prepared: Any, model: str | None, max_cost: float | None,
               on_limit: Callable[[str], None], refused: type[Exception]) -> CostMeter | None:
    """The meter for the run's relay (None when the run has no relay); `refused` when --max-cost cannot hold."""
    agent = prepared.agent
    upstream = getattr(agent, "upstream", None)
    if upstream is None:
        if max_cost is not None:
            raise refused("--max-cost needs a run that calls a model: this one has no relay to meter")
        return None
    try:
        book = PriceBook.load(paths.prices)
    except PriceError as exc:
        raise refused(f"the price catalogue cannot be read:\n{exc}") from None
    provider = upstream.provider.name
    if max_cost is not None:
        if not model:
            raise refused("--max-cost needs --model: the model its calls go as, to price them")
        wiring = getattr(agent.resolved, "model", None)
        models = [model, *(wiring.side_models if wiring is not None else [])]
        unpriced = [m for m in models if book.lookup(m, provider) is None]
        if unpriced:
            raise refused(f"--max-cost {max_cost:g}: no price for {', '.join(unpriced)} (provider {provider}); "
                          f"add it to {paths.prices}")
    return CostMeter(book, provider, limit=max_cost, on_limit=on_limit)
