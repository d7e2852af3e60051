"""The running Nullius and the effective catalogue, as one content-addressed tree for a host.

What goes in, laid out as the host uses it (`~/.nullius/app/<content-id>/`):

- `code/`: each distribution this machine runs (the core, and every plugin
  distribution loaded here): its top-level packages as they are on disk now
  (an editable install's source folder, edits included; no `__pycache__`),
  and its `.dist-info` (METADATA, entry points) so that the host finds the
  same plugins through the same entry points. The host's environment puts
  `code/` on its path.
- `catalogue/`: the user catalogue's entries (benchmarks, agents,
  capabilities: their definitions and proofs), nothing else of the folder
  (no `.set-aside`); never the settings, the secrets store or a key.
- `requirements.txt`: what those distributions ask of others (markers kept:
  the host evaluates them), Nullius's own left out; `constraints.txt`: the
  version of each that runs here, so the host installs the same.
- `snapshot.json`: its id and what it holds (written last).

The content id is the sha256 of every file's path, mode and digest: the same
code and catalogue are the same id, and a host that has it is not sent it
again.
"""

from __future__ import annotations

import hashlib
import importlib.metadata as md
import importlib.util
import io
import json
import os
import re
import stat
import tarfile
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any

import attrs
from packaging.markers import default_environment
from packaging.requirements import InvalidRequirement, Requirement

from nullius_core.definitions.compat import OLD_FOLDER
from nullius_core.paths import Paths

from nullius_app.host.ssh import HostRefused

CORE = "nullius-core"
ENTRY_FOLDERS = ("benchmarks", "agents", "capabilities", OLD_FOLDER)  # the user catalogue's entries, by kind
DIST_INFO_FILES = ("METADATA", "entry_points.txt", "top_level.txt")
SKIP_DIRS = {"__pycache__"}
SKIP_SUFFIXES = (".pyc", ".pyo")
ID_LENGTH = 32


@attrs.frozen
class Item:
    path: str  # inside the snapshot, with /
    data: bytes
    mode: int  # 0o644 or 0o755

    @property
    def digest(self) -> str:
        return hashlib.sha256(self.data).hexdigest()


@attrs.frozen
class Snapshot:
    id: str
    items: tuple[Item, ...]
    distributions: tuple[tuple[str, str], ...]  # (name, version)
    seconds: float  # how long it took to make

    @property
    def size(self) -> int:
        return sum(len(i.data) for i in self.items)

    def holding(self, values: dict[str, bytes]) -> list[str]:
        """`NAME in path` for each value found in a file of the snapshot (values shorter than 8 bytes are not looked for)."""
        return [f"{name} in {item.path}" for item in self.items for name, value in values.items()
                if len(value) >= 8 and value in item.data]

    def write_tar(self, out: IO[bytes]) -> None:
        """The snapshot as a gzipped tar stream, `snapshot.json` last: a tree that has it is whole."""
        with tarfile.open(fileobj=out, mode="w|gz") as archive:
            for item in self.items:
                info = tarfile.TarInfo(item.path)
                info.size, info.mode, info.mtime = len(item.data), item.mode, int(time.time())
                archive.addfile(info, io.BytesIO(item.data))


def _walk(root: Path) -> Iterator[Path]:
    """Every regular file under root, in order, caches left out."""
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
        for name in sorted(files):
            if not name.endswith(SKIP_SUFFIXES):
                yield Path(folder) / name


def _mode(path: Path) -> int:
    return 0o755 if path.stat().st_mode & stat.S_IXUSR else 0o644


def _item(path_in: str, source: Path) -> Item:
    return Item(path=path_in, data=source.read_bytes(), mode=_mode(source))


def _top_level(dist: md.Distribution) -> list[str]:
    """The distribution's importable top-level names: top_level.txt, else what its RECORD installs, else its entry points'."""
    said = dist.read_text("top_level.txt")
    if said:
        return sorted({n.strip() for n in said.splitlines() if n.strip()})
    names = set()
    for file in dist.files or []:
        first = file.parts[0]
        if ".dist-info" in first or first in ("..", "__pycache__") or first.endswith(".pth") or first.startswith("__editable__"):
            continue
        names.add(first[:-3] if first.endswith(".py") else first)
    return sorted(names or {ep.value.split(":")[0].split(".")[0] for ep in dist.entry_points})


def _distribution_items(dist: md.Distribution) -> Iterator[Item]:
    name, version = dist.metadata["Name"], dist.version
    for top in _top_level(dist):
        spec = importlib.util.find_spec(top)
        if spec is None:
            raise HostRefused(f"{name} {version}: its module {top} cannot be found here, so it cannot be sent")
        if spec.submodule_search_locations:
            for location in spec.submodule_search_locations:
                for file in _walk(Path(location)):
                    yield _item(f"code/{top}/{file.relative_to(location).as_posix()}", file)
        elif spec.origin and spec.origin.endswith(".py"):
            yield _item(f"code/{top}.py", Path(spec.origin))
    info = f"code/{re.sub(r'[-_.]+', '_', name)}-{version}.dist-info"
    for part in DIST_INFO_FILES:
        # a development install's .egg-info (found first from its project's folder) says PKG-INFO for METADATA
        text = dist.read_text(part) or (dist.read_text("PKG-INFO") if part == "METADATA" else None)
        if text is not None:
            yield Item(path=f"{info}/{part}", data=text.encode(), mode=0o644)


def _catalogue_items(paths: Paths) -> Iterator[Item]:
    """The user catalogue's entry folders, whole; a link that leads out of the catalogue, or into a store of keys, is refused."""
    root = paths.catalogue
    if not root.is_dir():
        return
    guarded = [paths.secrets_dir.resolve(), paths.settings.resolve(), paths.prices.resolve()]
    for kind in ENTRY_FOLDERS:
        base = root / kind
        if not base.is_dir():
            continue
        for entry in sorted(base.iterdir()):
            if not entry.is_dir() or entry.name.startswith((".", "_")):
                continue
            for file in _walk(entry):
                real = file.resolve()
                if not real.is_relative_to(root.resolve()):
                    raise HostRefused(f"the user catalogue's {file.relative_to(root)} leads out of it (to {real}): "
                                      "a snapshot takes what is inside the catalogue alone")
                if any(real == g or real.is_relative_to(g) for g in guarded):
                    raise HostRefused(f"the user catalogue's {file.relative_to(root)} is in the settings or the secrets store: never sent")
                yield _item(f"catalogue/{file.relative_to(root).as_posix()}", file)


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def requirements(dists: list[md.Distribution]) -> tuple[list[str], list[str]]:
    """(requirements, constraints): what the distributions ask of others, and the version of each that runs here."""
    own = {_normal(d.metadata["Name"]) for d in dists}
    asked: set[str] = set()
    for dist in dists:
        for line in dist.requires or []:
            req = Requirement(line)
            if _normal(req.name) in own or (req.marker is not None and "extra" in str(req.marker)):
                continue  # Nullius's own come in the snapshot; an extra's are not what runs
            asked.add(str(req))
    installed = {_normal(d.metadata["Name"]): d for d in md.distributions()}
    pinned: dict[str, str] = {}
    todo = [Requirement(r) for r in asked]
    while todo:
        req = todo.pop()
        name = _normal(req.name)
        dist = installed.get(name)
        if dist is None or name in pinned:
            continue
        pinned[name] = dist.version
        for line in dist.requires or []:
            try:
                sub = Requirement(line)
            except InvalidRequirement:
                continue
            environments = [dict(default_environment(), extra=e) for e in (req.extras or {""})]
            if sub.marker is None or any(sub.marker.evaluate(e) for e in environments):
                todo.append(sub)
    return sorted(asked), sorted(f"{n}=={v}" for n, v in pinned.items())


def running(distribution_names: Iterable[str], paths: Paths) -> Snapshot:
    """The snapshot of these distributions (the core's among them) as this process imports them, and of the user catalogue."""
    started = time.monotonic()
    dists = [md.distribution(n) for n in sorted(set(distribution_names) | {CORE})]
    items: dict[str, Item] = {}
    for dist in dists:
        for item in _distribution_items(dist):
            items.setdefault(item.path, item)
    for item in _catalogue_items(paths):
        items[item.path] = item
    asked, pins = requirements(dists)
    items["requirements.txt"] = Item(path="requirements.txt", data=("\n".join(asked) + "\n").encode(), mode=0o644)
    items["constraints.txt"] = Item(path="constraints.txt", data=("\n".join(pins) + "\n").encode(), mode=0o644)
    ordered = [items[k] for k in sorted(items)]
    listing = "".join(f"{i.path}\t{i.mode:o}\t{i.digest}\n" for i in ordered)
    content_id = hashlib.sha256(listing.encode()).hexdigest()[:ID_LENGTH]
    names = tuple((d.metadata["Name"], d.version) for d in dists)
    about: dict[str, Any] = {"id": content_id, "distributions": [{"name": n, "version": v} for n, v in names],
                             "files": len(ordered), "bytes": sum(len(i.data) for i in ordered)}
    ordered.append(Item(path="snapshot.json", data=json.dumps(about, indent=2).encode(), mode=0o644))
    return Snapshot(id=content_id, items=tuple(ordered), distributions=names, seconds=time.monotonic() - started)
