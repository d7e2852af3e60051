"""What the builder offers for a benchmark: read from `nullius list --json`, `nullius fit BENCH --json`, `nullius plugins --json`
and the definition files `list --json` names (loaded with `nullius_core.definitions.load`).

A page drawn asks each command anew; what it read is kept for a few
seconds, so that the plan the builder shows as the form changes does not
start a command at each change.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import attrs

from nullius_core.definitions import DefinitionError, Option, Standard, load

KEEP_SECONDS = 15.0
REFERENCE_FIRST = ("reference",)  # the standard: reference agents appear first


class Unavailable(Exception):
    """What the builder cannot show, in the words of the command or file that failed."""


@attrs.frozen(kw_only=True)
class Refused:
    participant: str
    reasons: list[str]


@attrs.frozen(kw_only=True)
class BenchView:
    """One benchmark (one version) as the builder offers it."""

    ref: str
    key: str
    versions: list[str]  # every ref of this key, the default first
    family: str
    title: str
    summary: str
    standard: Standard
    datasets: list[tuple[str, int, str]]  # name, units, summary
    default_dataset: str | None
    folders: str | None  # what a folder as the dataset is, for a benchmark that takes one
    fits: list[str]
    refused: list[Refused]
    controls: list[str]
    control_notes: dict[str, str]  # what each control answers, from the definition
    agent_options: dict[str, dict[str, Option]]  # participant ref -> its own options
    providers: list[str]
    backends: list[str]

    @property
    def original(self) -> bool:
        """No agent · Original is offered: the benchmark declares setups."""
        return bool(self.standard.setups)

    @property
    def paper_models(self) -> list[str]:
        original = (self.standard.setups or {}).get("original")
        return list(original.models or []) if original is not None else []

    @property
    def paper_default(self) -> str | None:
        original = (self.standard.setups or {}).get("original")
        return original.default if original is not None else None

    @property
    def simulator(self) -> str | None:
        return self.standard.simulator.model if self.standard.simulator is not None else None

    @property
    def judge(self) -> Any:
        return self.standard.score.judge if self.standard.score is not None else None

    @property
    def options(self) -> dict[str, Option]:
        return dict(self.standard.options or {})

    @property
    def agent_option_rows(self) -> list[tuple[str, list[str] | None, list[tuple[str, str]]]]:
        """Each option the participants declare: its name, the values any of them allows (None: free text), who declares it and why."""
        rows = []
        for name in sorted({n for options in self.agent_options.values() for n in options}):
            declaring = [(ref, options[name]) for ref, options in self.agent_options.items() if name in options]
            offered: list[str] = []
            for _, option in declaring:
                offered += [v for v in option.values or [] if v not in offered]
            free = any(option.values is None for _, option in declaring)
            rows.append((name, None if free else offered, [(ref, option.summary) for ref, option in declaring]))
        return rows

    @property
    def participant_kind(self) -> str:
        return "capabilities" if self.family == "capability" else "agents"


class CatalogueReader:
    """The CLI's JSON the builder reads, the listing and the plugins kept for KEEP_SECONDS."""

    def __init__(self, state: Any):
        self.state = state
        self._kept: dict[tuple[str, ...], tuple[float, Any]] = {}

    async def _json(self, *args: str, fresh: bool = False) -> Any:
        """A command's JSON; one asked within KEEP_SECONDS is not asked again unless `fresh`."""
        now = time.monotonic()
        if not fresh and args in self._kept and now - self._kept[args][0] < KEEP_SECONDS:
            return self._kept[args][1]
        from nullius_app.cli_client import CommandFailed

        try:
            data = await self.state.nullius.json(*args)
        except CommandFailed as exc:
            raise Unavailable(f"nullius {' '.join(args)}: {exc.done.said.removeprefix('nullius: ')}") from None
        self._kept[args] = (now, data)
        return data

    async def listing(self, fresh: bool = False) -> dict[str, Any]:
        return await self._json("list", "--json", fresh=fresh)

    async def benchmarks(self, fresh: bool = False) -> list[dict[str, Any]]:
        """Every benchmark of the listing (each version a ref), by key; `fresh`: the listing asked now (a page drawn)."""
        return sorted((await self.listing(fresh))["benchmarks"], key=lambda b: b["ref"])

    async def bench(self, ref: str, fresh: bool = True) -> BenchView:
        """The benchmark `ref` as the builder offers it; `fresh`: its fit and the plugins asked now (a page drawn), else as kept (a plan)."""
        listing, fitted, plugins = await asyncio.gather(self.listing(), self._json("fit", ref, "--json", fresh=fresh),
                                                        self._json("plugins", "--json", fresh=fresh))
        entry = next((b for b in listing["benchmarks"] if b["ref"] == ref), None)
        if entry is None:
            known = ", ".join(b["ref"] for b in listing["benchmarks"]) or "none"
            raise Unavailable(f"no benchmark {ref!r} in the catalogue (benchmarks: {known})")
        return _view(entry, listing, fitted, plugins)


def _definition(path: str) -> Any:
    try:
        return load(Path(path))
    except DefinitionError as exc:
        raise Unavailable(exc.render()) from None


def _split(ref: str) -> tuple[str, str | None]:
    key, _, version = ref.partition("@")
    return key, version or None


def _view(entry: dict[str, Any], listing: dict[str, Any], fitted: dict[str, Any], plugins: dict[str, Any]) -> BenchView:
    ref = entry["ref"]
    key, version = _split(ref)
    standard: Standard = _definition(entry["definition"])
    try:
        resolved = standard.resolve(key, version)
    except KeyError:
        raise Unavailable(f"{entry['definition']}: no version {version!r} of {key}") from None
    same = [b["ref"] for b in listing["benchmarks"] if _split(b["ref"])[0] == key]
    default = f"{key}@{standard.versions.default}" if standard.versions is not None else key
    versions = sorted(same, key=lambda r: (r != default, r))
    datasets = [(name, ds.units, ds.summary or "") for name, ds in resolved.datasets.items()]
    fits = sorted(fitted.get("fits") or [], key=lambda r: (_split(r)[0] not in REFERENCE_FIRST, r))
    participants = {p["ref"]: p for p in [*listing.get("agents", []), *listing.get("capabilities", [])]}
    agent_options = {}
    for fit in fits:
        found = participants.get(fit)
        if found is None or not found.get("definition"):
            continue
        try:
            agent_options[fit] = dict(_definition(found["definition"]).resolve(*_split(fit)).options)
        except (Unavailable, KeyError):
            agent_options[fit] = {}  # the CLI says what is wrong with it when it runs
    registered = [p.get("registered") or {} for p in plugins.get("plugins", []) if p.get("status") == "loaded"]
    return BenchView(
        ref=ref, key=key, versions=versions, family=entry.get("family") or standard.family, title=standard.name or key,
        summary=standard.summary or "", standard=standard, datasets=datasets, default_dataset=resolved.default_dataset,
        folders=resolved.dataset_folders.summary if resolved.dataset_folders is not None else None,
        fits=fits, refused=[Refused(participant=r["participant"], reasons=list(r.get("reasons") or [])) for r in fitted.get("refused") or []],
        controls=list(fitted.get("controls") or ["nop", "oracle"]), agent_options=agent_options,
        control_notes={"nop": resolved.controls.nop.from_, "oracle": resolved.controls.oracle.from_} if resolved.controls else {},
        providers=[n for r in registered for n in r.get("providers", [])],
        backends=[n for r in registered for n in r.get("backends", [])],
    )
