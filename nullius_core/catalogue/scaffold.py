"""`nullius new`: definitions to fill in, new versions, and writable copies of plugin entries.

Every write goes to the user catalogue. A plugin-shipped entry is copied
there first (`writable_dir`); the plugin's installed files are never touched.
Edits are made on the file's own JSON, so keys Nullius does not model (`x-`
extension keys) and the file's order are kept.
"""

from __future__ import annotations

import copy
import shutil
from datetime import datetime, timezone
from importlib import resources
from pathlib import Path
from typing import Any

from nullius_core.catalogue import proofs
from nullius_core.catalogue.catalogue import Catalogue, Entry
from nullius_core.definitions import read_json, write_json
from nullius_core.definitions.common import KEY_NAME
from nullius_core.definitions.compat import canonical_port

FOLDERS = {"benchmark": "benchmarks", "agent": "agents", "capability": "capabilities"}
FILES = {"benchmark": "standard.json", "agent": "agent.json", "capability": "capability.json"}
FILL = "FILL IN"


class ScaffoldError(Exception):
    """The scaffold cannot be written (the key is taken, the name is bad)."""


def _template(name: str, key: str) -> str:
    text = resources.files("nullius_core.catalogue").joinpath("templates", name).read_text(encoding="utf-8")
    return text.format(key=key)


def _check_key(key: str) -> None:
    if not KEY_NAME.match(key):
        raise ScaffoldError(f"a key is lowercase letters, digits, '.', '-' or '_', starting with a letter or digit; not {key!r}")


def new_entry(catalogue: Catalogue, kind: str, key: str, family: str = "agent", port: str | None = None) -> Path:
    """Write a definition to fill in under the user catalogue; return its folder."""
    _check_key(key)
    existing = catalogue.get(kind, key)
    if existing is not None:
        raise ScaffoldError(f"{kind} {key!r} exists already ({existing.source()}: {existing.folder})")
    folder = catalogue.user_root / FOLDERS[kind] / key
    if folder.exists():
        raise ScaffoldError(f"{folder} exists already")
    folder.mkdir(parents=True)
    if kind == "benchmark":
        _new_benchmark(folder, key, family, canonical_port(port) if port else None)
    elif kind == "agent":
        write_json(folder / "agent.json", _agent(key))
    else:
        write_json(folder / "capability.json", _capability(key, canonical_port(port or "cap.memory/v1")))
        (folder / "capability.py").write_text(_template("capability.py", key), encoding="utf-8")
    return folder


def _new_benchmark(folder: Path, key: str, family: str, port: str | None) -> None:
    capability = family in ("capability", "feature")
    needs = [port or ("cap.memory/v1" if capability else "agent.task/v1")]
    standard: dict[str, Any] = {
        "schema": "nullius.standard/v1",
        "name": key,
        "summary": f"{FILL}: what the benchmark measures, in one sentence.",
        "family": "capability" if capability else "agent",
        "needs": needs,
        "upstream": {
            "repository": f"https://github.com/{FILL}/{FILL}",
            "tag": FILL,
            "tested": f"{FILL}: the full commit of the tag",
        },
        "datasets": {
            "test": {
                "path": f"{FILL}: the data file's path in the upstream",
                "sha256": f"{FILL}: the data file's sha256",
                "units": 1,
            }
        },
        "driver": {"command": ["python3", "{here}/driver.py"]},
        "limits": {"turn_seconds": 600},
        "controls": {
            "nop": {"source": "nullius", "from": "Nullius: no agent runs; the answer is empty and the workspace is left as setup made it."},
            "oracle": {"source": "official", "from": f"{FILL}: where the reference answers come from.", "expect": {"at_least": 1.0}},
        },
    }
    write_json(folder / "standard.json", standard)
    write_json(
        folder / "benchmark.json",
        {"name": key, "summary": f"{FILL}: one sentence for the catalogue.", "harness": "standard", "good_to_know": [], "limitations": []},
    )
    write_json(folder / "upstream-settings.json", {"settings": []})
    (folder / "driver.py").write_text(_template("driver.py", key), encoding="utf-8")


def _agent(key: str) -> dict[str, Any]:
    return {
        "schema": "nullius.agent/v1",
        "name": key,
        "summary": f"{FILL}: the agent, and where it comes from.",
        "upstream": {"npm": "fill-in-package", "version": "0.0.0"},
        "install": {"npm": ["fill-in-package@0.0.0"]},
        "start": ["{install}/node_modules/.bin/" + key],
        "model": {
            "api": "openai-chat",
            "env": {"OPENAI_BASE_URL": "{base_url}", "OPENAI_API_KEY": "{token}", "OPENAI_MODEL": "{model}"},
        },
        "options": {},
    }


def _capability(key: str, port: str) -> dict[str, Any]:
    return {
        "schema": "nullius.capability/v1",
        "name": key,
        "summary": f"{FILL}: the library, and where it comes from.",
        "kind": port.split(".")[1].split("/")[0],
        "upstream": {"pypi": "fill-in-package", "version": "0.0.0"},
        "start": ["python3", "{here}/capability.py"],
    }


def writable_dir(catalogue: Catalogue, entry: Entry) -> Path:
    """The entry's folder in the user catalogue, copied there first if a plugin ships it.

    The copy carries the proofs that stand for the plugin's definition now:
    the shipped ones with the user catalogue's current records laid over.
    """
    if entry.from_user:
        return entry.folder
    target = catalogue.user_root / entry.folder.parent.name / entry.key
    if not target.exists():
        shutil.copytree(entry.folder, target, ignore=shutil.ignore_patterns("__pycache__"))
        _carry_proofs(catalogue, entry, target / entry.file.name)
    return target


def _carry_proofs(catalogue: Catalogue, entry: Entry, file: Path) -> None:
    local = catalogue.local_proofs(entry)
    if local is None:
        return
    now = catalogue.digest(entry)
    raw = read_json(file)
    for record in local.records:
        if record.digest != now:
            continue  # stale proofs are not carried: they are of another definition
        holder = raw if record.version is None and "versions" not in raw else (raw.get("versions") or {}).get(record.version)
        if isinstance(holder, dict) and (record.version is None) == ("versions" not in raw):
            holder["proven"] = proofs.merge(entry.kind, holder.get("proven") or {}, record.proven)
    write_json(file, raw)


# Keys a version block takes from the top of a file without versions.
_MOVED = {
    "agent": ("upstream", "install", "proven"),
    "capability": ("upstream", "install", "proven"),
    "benchmark": ("upstream", "proven"),
}


def new_version(catalogue: Catalogue, entry: Entry, version: str) -> Path:
    """Add `version` from the default's block, nothing proven; return the file written."""
    if not KEY_NAME.match(version):
        raise ScaffoldError(f"a version name is lowercase letters, digits, '.', '-' or '_'; not {version!r}")
    folder = writable_dir(catalogue, entry)
    path = folder / entry.file.name
    raw = read_json(path)
    if "versions" not in raw:
        raw = _into_versions(raw, entry)
    versions = raw["versions"]
    if version in versions:
        raise ScaffoldError(f"{entry.key}@{version} exists already in {path}")
    block = copy.deepcopy(versions[versions["default"]])
    block.pop("proven", None)
    _repin(block, entry.kind, version)
    versions[version] = block
    write_json(path, raw)
    return path


def _into_versions(raw: dict[str, Any], entry: Entry) -> dict[str, Any]:
    upstream = raw.get("upstream") or {}
    name = upstream.get("version") or upstream.get("tag")
    if not name:
        raise ScaffoldError(
            f"{entry.file}: $.upstream.version: required key missing: expected the version the file runs now, "
            "to name its block under versions"
        )
    block = {k: raw[k] for k in _MOVED[entry.kind] if k in raw}
    out = {k: v for k, v in raw.items() if k not in block}
    out["versions"] = {"default": name, name: block}
    return out


def _repin(block: dict[str, Any], kind: str, version: str) -> None:
    upstream = block.setdefault("upstream", {})
    if kind == "benchmark":
        upstream["tag"] = version
        upstream["tested"] = f"{FILL}: the full commit of {version}"
        return
    old = upstream.get("version")
    upstream["version"] = version
    upstream.pop("core", None)  # another release may run another core: not carried over, never guessed
    package = upstream.get("npm") or upstream.get("pypi")
    install = block.get("install") or {}
    if package and old:
        if "npm" in install:
            install["npm"] = [f"{package}@{version}" if r == f"{package}@{old}" else r for r in install["npm"]]
        if "pip" in install:
            install["pip"] = [f"{package}=={version}" if r == f"{package}=={old}" else r for r in install["pip"]]


def use_bundled(catalogue: Catalogue, kind: str, key: str) -> tuple[Path, Path | None]:
    """Use a plugin's own entry again: the user's copy of KEY and the local proofs of the plugin's entry set aside.

    Nothing is deleted: both move under the user catalogue's `.set-aside/<UTC time>/`, whence a person may bring
    them back. Refused for an entry no plugin ships (removing the user's would leave none) or one with no user copy.
    """
    entry = catalogue.get(kind, key)
    bundled = catalogue.overridden.get((kind, key))
    if entry is None or not entry.from_user:
        raise ScaffoldError(f"{kind} {key!r} is not a user copy: it is already the bundled entry ({entry.source() if entry else 'none'})")
    if bundled is None:
        raise ScaffoldError(f"no plugin ships {kind} {key!r}: its user copy is the only definition, and is kept ({entry.folder})")
    aside = catalogue.user_root / ".set-aside" / datetime.now(timezone.utc).strftime("%Y-%m-%dT%H-%M-%S.%fZ")
    moved = aside / f"{kind}s" / key
    moved.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(str(entry.folder), str(moved))
    proofs_file = catalogue.proofs_file(bundled)
    kept = None
    if proofs_file.exists():
        kept = aside / "proofs" / f"{kind}s" / proofs_file.name
        kept.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(proofs_file), str(kept))
    return moved, kept
