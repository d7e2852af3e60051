"""The relay's cost meter: each recorded call priced as it ends, and the running total a run's `--max-cost` watches.

The relay is the one honest meter: every call of every route passes it, and
it prices what the provider reported, never what an agent says of itself. A
call of a model the catalogue does not price is cost `null` (never 0), and
the meter warns once per model.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from nullius_core.logs import get_logger
from nullius_core.relay.prices import PriceBook, call_cost

log = get_logger("nullius.relay")


class CostMeter:
    def __init__(self, book: PriceBook, provider: str | None, limit: float | None = None,
                 on_limit: Callable[[str], None] | None = None):
        self.book = book
        self.provider = provider
        self.limit = limit
        self.on_limit = on_limit
        self.as_served = 0.0
        self.first_run = 0.0
        self.unpriced: dict[str, int] = {}  # model -> calls that could not be priced
        self.stopped: str | None = None  # why the limit stopped the run, once it has

    def charge(self, record: dict[str, Any]) -> dict[str, Any]:
        """The call's `cost` as its record names it; its cost as served added to the running total."""
        usage = record.get("usage") or {}
        if record.get("refused") or (not usage and record.get("status") != 200):
            return {"as_served_usd": 0.0, "first_run_usd": 0.0, "why": "no tokens reported: nothing billed"}
        priced = self.book.lookup(record.get("model_sent"), self.provider)
        if priced is None and record.get("model_served"):
            priced = self.book.lookup(record.get("model_served"), self.provider)  # the snapshot the provider named
        if priced is None or not usage:
            model = str(record.get("model_sent"))
            self._unpriced(model, "no usage reported" if priced is not None else "not in the price catalogue")
            return {"as_served_usd": None, "first_run_usd": None,
                    "why": "a 200 with no usage reported" if priced is not None else f"{model} has no price for provider {self.provider}"}
        served, first = call_cost(usage, priced.price)
        self.as_served += served
        self.first_run += first
        self._check()
        return {"as_served_usd": round(served, 9), "first_run_usd": round(first, 9), "priced_as": priced.name, "price_as_of": priced.price.as_of}

    def _unpriced(self, model: str, why: str) -> None:
        if model not in self.unpriced:
            log.warning("cost unknown: the relay prices this model's calls as null", model=model, provider=self.provider, why=why)
        self.unpriced[model] = self.unpriced.get(model, 0) + 1

    def _check(self) -> None:
        if self.limit is None or self.stopped is not None or self.as_served <= self.limit:
            return
        self.stopped = (f"--max-cost {self.limit:g}: the relay's running cost as served, ${self.as_served:.6f}, "
                        f"passed the limit of ${self.limit:g}")
        if self.on_limit is not None:
            self.on_limit(self.stopped)

    def record(self) -> dict[str, Any]:
        """The run's totals, for the job's result.json."""
        return {
            "as_served_usd": round(self.as_served, 9),
            "first_run_usd": round(self.first_run, 9),
            "unpriced_calls": dict(self.unpriced),
            "max_cost_usd": self.limit,
            "stopped": self.stopped,
        }
