"""The price catalogue: what a model's tokens cost, and what one recorded call cost.

The core ships `prices.json` beside this module (list prices, each with the
date it was read and where); a user adds or replaces entries in their own
`prices.json` beside `settings.json` (`nullius paths` names it). Both are read
strictly: a malformed entry is a `PriceError` naming the file, the entry and
the field. Prices are USD per million tokens.

A call's cost is computed from the relay's record of it, never from what an
agent says of itself. Two figures:

* `as_served_usd`: what the provider bills, cache reads and cache writes at
  their own rates;
* `first_run_usd`: as if every run were the first, the whole prompt at the
  input rate and no cache discount. Cache hits depend on order and timing, so
  comparisons across runs use this one.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import attrs

from nullius_core.definitions.converter import structure
from nullius_core.definitions.files import read_json
from nullius_core.definitions.problems import DefinitionError

CORE_FILE = Path(__file__).with_name("prices.json")
VERSION = 1
MILLION = 1_000_000
DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
RATES = ("input", "output", "cache_read", "cache_write")

Issues = Iterator[tuple[tuple[str | int, ...], str]]


class PriceError(Exception):
    """A price file that cannot be read: one line per problem, each naming the file, the entry and the field."""


@attrs.frozen(kw_only=True)
class Price:
    input: float
    output: float
    cache_read: float
    cache_write: float
    as_of: str
    source: str
    providers: list[str] | None = None  # the relay providers that bill at this price; None: any
    aliases: list[str] = attrs.field(factory=list)
    note: str | None = None

    def _invariants(self) -> Issues:
        for rate in RATES:
            if getattr(self, rate) < 0:
                yield (rate,), f"expected a price of zero or more, found {getattr(self, rate)}"
        if not DATE.match(self.as_of):
            yield ("as_of",), f"expected a date such as 2026-12-01, found {self.as_of!r}"
        if not self.source.strip():
            yield ("source",), "expected where the price was read (a URL, or why it is what it is), found an empty string"


@attrs.frozen(kw_only=True)
class PriceFile:
    version: int
    prices: dict[str, Price]
    unit: str = "USD per million tokens"

    def _invariants(self) -> Issues:
        if self.version != VERSION:
            yield ("version",), f"expected {VERSION}, found {self.version}"
        if self.unit != "USD per million tokens":
            yield ("unit",), f"expected \"USD per million tokens\", found {self.unit!r}"


@attrs.frozen(kw_only=True)
class Priced:
    """The entry a model was priced by: its name in the catalogue and the file it came from."""

    name: str
    price: Price
    file: Path

    def label(self) -> dict[str, Any]:
        return {"model": self.name, "as_of": self.price.as_of, "source": self.price.source}


def read(path: Path) -> PriceFile:
    try:
        return structure(read_json(path), PriceFile)
    except DefinitionError as exc:
        raise PriceError("\n".join(p.in_file(path).render() for p in exc.problems)) from None


@attrs.frozen
class PriceBook:
    """The core's prices with the user's laid over them, entry by entry."""

    entries: Mapping[str, Priced]
    names: Mapping[str, str]  # a model's name or alias -> its entry

    @classmethod
    def load(cls, user_file: Path | None = None) -> PriceBook:
        entries = {name: Priced(name=name, price=price, file=CORE_FILE) for name, price in read(CORE_FILE).prices.items()}
        if user_file is not None and user_file.exists():
            entries.update({name: Priced(name=name, price=price, file=user_file) for name, price in read(user_file).prices.items()})
        names: dict[str, str] = {}
        for name, entry in entries.items():
            for alias in entry.price.aliases:
                names[alias] = name
        for name in entries:  # a name of its own wins over another entry's alias (a user's entry over a core alias)
            names[name] = name
        return cls(entries, names)

    def lookup(self, model: str | None, provider: str | None) -> Priced | None:
        entry = self.entries.get(self.names.get(model or "", ""))
        if entry is None:
            return None
        if entry.price.providers is not None and provider not in entry.price.providers:
            return None  # this price is another provider's bill, not this one's
        return entry


def call_cost(usage: Mapping[str, Any], price: Price) -> tuple[float, float]:
    """(as served, as if the first run) for one call's recorded usage. `input` includes cache reads and writes."""
    total_in = usage.get("input") or 0
    read_in = usage.get("cached_input") or 0
    write_in = usage.get("cache_write") or 0
    out = usage.get("output") or 0
    fresh = max(total_in - read_in - write_in, 0)
    served = fresh * price.input + read_in * price.cache_read + write_in * price.cache_write + out * price.output
    first = total_in * price.input + out * price.output
    return served / MILLION, first / MILLION
