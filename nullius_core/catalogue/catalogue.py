"""The catalogue: every benchmark, agent and capability definition this machine has.

Plugins ship entries as package data; the user catalogue overlays them by
whole folder (a user's `agents/codex/` replaces the plugin's `agents/codex/`,
no files mixed). A user entry that is invalid is an error, never a silent
fallback to the plugin's. Two plugins providing the same key are a conflict
naming both distributions, unless the user catalogue settles it.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import attrs

from nullius_core.catalogue import proofs
from nullius_core.definitions import Agent, Capability, Standard, load
from nullius_core.definitions.compat import OLD_FILE, OLD_FOLDER
from nullius_core.plugins.manager import PluginInfo
from nullius_core.plugins.registries import CatalogueSource, Registered

# kind -> [(folder, file)], canonical first: within one root the canonical
# capability folder wins over an older folder of the same key.
LAYOUT: dict[str, list[tuple[str, str]]] = {
    "benchmark": [("benchmarks", "standard.json")],
    "agent": [("agents", "agent.json")],
    "capability": [("capabilities", "capability.json"), (OLD_FOLDER, OLD_FILE)],
}
USER = "user"


class CatalogueConflict(Exception):
    """Two plugins provide the same key."""


@attrs.frozen(kw_only=True)
class Entry:
    """One definition folder and where it comes from."""

    kind: str
    key: str
    folder: Path
    file: Path
    origin: str
    distribution: str | None = None
    version: str | None = None

    @property
    def from_user(self) -> bool:
        return self.origin == USER

    def source(self) -> str:
        if self.from_user:
            return "user catalogue"
        dist = f"{self.distribution} {self.version}" if self.distribution else "no distribution"
        return f"plugin {self.origin} ({dist})"


def scan(root: Path) -> list[tuple[str, str, Path, Path]]:
    """(kind, key, folder, file) for every entry folder under a root."""
    found: list[tuple[str, str, Path, Path]] = []
    for kind, layouts in LAYOUT.items():
        keys: set[str] = set()
        for folder_name, file_name in layouts:
            base = root / folder_name
            if not base.is_dir():
                continue
            for folder in sorted(base.iterdir()):
                if not folder.is_dir() or folder.name.startswith((".", "_")) or folder.name in keys:
                    continue
                keys.add(folder.name)
                found.append((kind, folder.name, folder, folder / file_name))
    return found


def _entry_file(kind: str, folder: Path) -> Path:
    for _, file_name in LAYOUT[kind]:
        if (folder / file_name).exists():
            return folder / file_name
    return folder / LAYOUT[kind][0][1]


class Catalogue:
    """The effective catalogue: plugin entries with the user's laid over them."""

    def __init__(
        self,
        sources: Iterable[Registered[CatalogueSource]],
        plugins: dict[str, PluginInfo],
        user_root: Path,
    ):
        self.user_root = user_root
        self._entries: dict[tuple[str, str], Entry] = {}
        self.overridden: dict[tuple[str, str], Entry] = {}
        self._cache: dict[Path, Any] = {}
        self._digests: dict[Path, str] = {}
        provided: dict[tuple[str, str], list[Entry]] = {}
        for registered in sources:
            info = plugins.get(registered.plugin)
            for kind, key, folder, file in self._source_entries(registered.item):
                entry = Entry(
                    kind=kind,
                    key=key,
                    folder=folder,
                    file=file,
                    origin=registered.plugin,
                    distribution=info.distribution if info else None,
                    version=info.version if info else None,
                )
                provided.setdefault((kind, key), []).append(entry)
        user = {(k, key): Entry(kind=k, key=key, folder=f, file=fl, origin=USER) for k, key, f, fl in scan(user_root)}
        conflicts = []
        for ident, entries in provided.items():
            if ident in user:
                self.overridden[ident] = entries[0]
                continue
            if len({e.origin for e in entries}) > 1:
                conflicts.append(entries)
                continue
            self._entries[ident] = entries[0]
        self._entries.update(user)
        if conflicts:
            raise CatalogueConflict("\n".join(_conflict_line(e, user_root) for e in conflicts))

    @staticmethod
    def _source_entries(source: CatalogueSource) -> list[tuple[str, str, Path, Path]]:
        if source.kind is None:
            return scan(source.path)
        return [(source.kind, source.path.name, source.path, _entry_file(source.kind, source.path))]

    def get(self, kind: str, key: str) -> Entry | None:
        return self._entries.get((kind, key))

    def entries(self, kind: str | None = None) -> list[Entry]:
        found = [e for e in self._entries.values() if kind is None or e.kind == kind]
        return sorted(found, key=lambda e: (e.kind, e.key))

    def load(self, entry: Entry) -> Any:
        """The entry's definition, read once (raises DefinitionError); a plugin's with its current local proofs laid over."""
        if entry.file not in self._cache:
            definition = load(entry.file)
            if not entry.from_user:
                local = self.local_proofs(entry)
                if local is not None:
                    definition = proofs.overlay(definition, entry.kind, local, self.digest(entry))
            self._cache[entry.file] = definition
        return self._cache[entry.file]

    def proofs_file(self, entry: Entry) -> Path:
        return proofs.path_for(self.user_root, entry.kind, entry.key)

    def local_proofs(self, entry: Entry) -> proofs.ProofsFile | None:
        """The user catalogue's proofs of a plugin's entry (raises DefinitionError naming the proofs file)."""
        return proofs.read(self.proofs_file(entry), entry.kind)

    def digest(self, entry: Entry) -> str:
        if entry.folder not in self._digests:
            self._digests[entry.folder] = proofs.digest(entry.folder, entry.file.name)
        return self._digests[entry.folder]

    def standing(self, entry: Entry, block: str | None) -> proofs.Standing:
        """Where the proofs of one version (`block`: its name, None for a file without versions) come from."""
        if entry.from_user:
            return proofs.Standing(file=None, digest=None, record=None, own=True)
        local = self.local_proofs(entry)
        record = local.record(block) if local is not None else None
        if record is None:
            return proofs.Standing(file=None, digest=None, record=None, own=False)
        return proofs.Standing(file=self.proofs_file(entry), digest=self.digest(entry), record=record, own=False)

    def benchmark(self, key: str) -> tuple[Entry, Standard]:
        entry = self._require("benchmark", key)
        return entry, self.load(entry)

    def participant(self, key: str) -> tuple[Entry, Agent | Capability]:
        """An agent or, failing that, a capability by key."""
        entry = self.get("agent", key) or self.get("capability", key)
        if entry is None:
            raise LookupError(f"no agent or capability named {key!r} (see nullius list)")
        return entry, self.load(entry)

    def _require(self, kind: str, key: str) -> Entry:
        entry = self.get(kind, key)
        if entry is None:
            known = ", ".join(e.key for e in self.entries(kind)) or "none"
            raise LookupError(f"no {kind} named {key!r} (known: {known})")
        return entry


def _conflict_line(entries: list[Entry], user_root: Path) -> str:
    first = entries[0]
    who = " and ".join(e.source() for e in entries)
    folder = {"benchmark": "benchmarks", "agent": "agents", "capability": "capabilities"}[first.kind]
    return (
        f"conflict: {first.kind} {first.key!r} is provided by {who}; "
        f"uninstall one, block one with -p no:NAME, or put the one you want in "
        f"{user_root / folder / first.key}"
    )


def split_ref(ref: str) -> tuple[str, str | None]:
    """`codex@2.2.2` -> ("codex", "2.2.2"); `codex` -> ("codex", None)."""
    key, _, version = ref.partition("@")
    return key, version or None
