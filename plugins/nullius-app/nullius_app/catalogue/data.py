"""The catalogue as its pages read it: `nullius list --json`, `nullius fit --json`, and a definition's own files.

The listing is kept a few seconds at most, and forgotten as soon as a
command the app started ends (a proof, a conformance run, Use bundled
entry): a page opened after an action shows what the action wrote. What the
listing does not carry (a definition's name, its options, its judge) is read
from the definition's own file, whose path the listing gives.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import attrs
from aiohttp import web

from nullius_core.definitions import DefinitionError, load

from nullius_app.cli_client import Done

TTL_SECONDS = 3.0
SECTIONS = {"benchmarks": "benchmark", "agents": "agent", "capabilities": "capability"}
TITLES = {"benchmarks": "Benchmarks", "agents": "Agents", "capabilities": "Capabilities"}
ENTRY_FILES = {"benchmarks": "benchmark.json"}  # the catalogue entry beside a benchmark's standard.json: its name, notes, links


class NoData(Exception):
    """A command a page needed refused or broke; the page says its own words."""

    def __init__(self, args: list[str], said: str):
        self.command = "nullius " + " ".join(args)
        self.said = said or "it said nothing"
        super().__init__(f"{self.command}: {self.said}")


@attrs.define
class ListingCache:
    """Read-only commands' JSON (`list --json`, `plugins --json`), each kept a few seconds or until a command the app started ends."""

    held: dict[tuple[str, ...], tuple[float, tuple[tuple[str, int | None], ...], Any]] = attrs.field(factory=dict)
    lock: asyncio.Lock = attrs.field(factory=asyncio.Lock)

    def forget(self) -> None:
        self.held.clear()


CACHE = web.AppKey("catalogue.listing", ListingCache)


def _runs_seen(state: Any) -> tuple[tuple[str, int | None], ...]:
    """Each command the app started this session and its exit status: a change means something may have been written."""
    return tuple(sorted((run_id, started.code) for run_id, started in state.runs.started.items()))


def _json_of(done: Done) -> Any:
    try:
        return json.loads(done.stdout)
    except ValueError:
        return None


async def _cached(request: web.Request, args: tuple[str, ...], codes: tuple[int, ...] = (0,)) -> Any:
    state = request.app["state"]
    cache = request.app[CACHE]
    async with cache.lock:
        seen = _runs_seen(state)
        held = cache.held.get(args)
        if held is None or time.monotonic() - held[0] > TTL_SECONDS or held[1] != seen:
            done = await state.nullius.run(*args, keys=False)
            data = _json_of(done)
            if done.code not in codes or not isinstance(data, dict):
                raise NoData(list(args), done.said)
            held = cache.held[args] = (time.monotonic(), seen, data)
        return held[2]


async def listing(request: web.Request) -> dict[str, Any]:
    """`nullius list --json`, from the cache while it is fresh. `list` exits 2 when an entry cannot be read: its listing stands."""
    return await _cached(request, ("list", "--json"), codes=(0, 2))


async def registered(request: web.Request, registry: str) -> list[str]:
    """What the plugins registered in one registry (`providers`, `backends`), from `nullius plugins --json`."""
    data = await _cached(request, ("plugins", "--json"))
    return sorted({name for plugin in data.get("plugins") or [] for name in (plugin.get("registered") or {}).get(registry) or []})


async def command_json(request: web.Request, *args: str) -> Any:
    """A read-only command's JSON (`fit --json`, `secrets list --json`), run without any key; NoData with its words when it refuses."""
    done = await request.app["state"].nullius.run(*args, keys=False)
    data = _json_of(done)
    if done.code != 0 or data is None:
        raise NoData(list(args), done.said)
    return data


def find(data: dict[str, Any], section: str, ref: str) -> dict[str, Any] | None:
    return next((row for row in data[section] if row["ref"] == ref), None)


def key_of(ref: str) -> str:
    return ref.split("@", 1)[0]


_loaded: dict[tuple[str, int], Any] = {}


def definition(path: str | Path | None) -> Any | None:
    """A definition file as its model (Standard, Agent, Capability, CatalogueEntry); None when it is absent or cannot be read."""
    if not path:
        return None
    file = Path(path)
    try:
        stamp = (str(file), file.stat().st_mtime_ns)
    except OSError:
        return None
    if stamp not in _loaded:
        try:
            _loaded[stamp] = load(file)
        except (DefinitionError, OSError, ValueError):
            return None
    return _loaded[stamp]


def about(section: str, row: dict[str, Any]) -> dict[str, Any]:
    """A definition's name and summary, and a benchmark's catalogue notes (good to know, limitations, links)."""
    model = definition(row.get("definition"))
    entry = definition(Path(row["definition"]).parent / ENTRY_FILES[section]) if section in ENTRY_FILES and row.get("definition") else None
    return {
        "name": getattr(entry, "name", None) or getattr(model, "name", None) or row["ref"],
        "summary": getattr(entry, "summary", None) or getattr(model, "summary", None) or "",
        "good_to_know": list(getattr(entry, "good_to_know", None) or []),
        "limitations": list(getattr(entry, "limitations", None) or []),
        "links": dict(getattr(entry, "links", None) or {}),
        "model": model,
    }
