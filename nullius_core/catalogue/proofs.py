"""Proofs of a plugin's definitions, kept in the user catalogue beside the definition, never over it.

`nullius prove` of a plugin's benchmark and `nullius conform` of a plugin's
agent or capability once copied the whole definition into the user
catalogue, after which the user's copy won: edits to the plugin's driver or
definition were silently ignored. Now they write a proofs file instead:

    <user catalogue>/proofs/<benchmarks|agents|capabilities>/<key>.json

    {"schema": "nullius.proofs/v1", "kind": "agent", "key": "reference",
     "records": [{"version": null, "digest": "sha256:...", "definition": "plugin reference (nullius-agent-reference 0.1.0)",
                  "date": "2026-12-01", "proven": {"agent.task/v1": {...}}}]}

One record per version (`null`: a file without `versions`), made on the
definition whose digest it names. The digest covers every file of the
definition's folder (its driver, its agent's program), the definition file
read without its `proven` blocks, so the shipped proofs changing does not
change it. When the catalogue is read, a record whose digest is the
definition's now is laid over the definition's shipped `proven`, port by
port (a port taken back is a failing proof that hides the shipped one) or
check by check (`failed` and `not_checked` as prove writes them). A record
made on another digest is stale: it is shown, never used, and the next
proof of that version replaces it. A user's own definition keeps its proofs
in its own file, as before; a proofs file is never applied to it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from datetime import date
from pathlib import Path
from typing import Any, Literal

import attrs

from nullius_core.definitions import DefinitionError, Proof, Problem, read_json, structure, unstructure, write_json

PROOFS_SCHEMA = "nullius.proofs/v1"
FOLDERS = {"benchmark": "benchmarks", "agent": "agents", "capability": "capabilities"}
SECTIONS = ("failed", "not_checked")  # a benchmark dataset's checks that are not passes


@attrs.frozen(kw_only=True)
class Record:
    """One version's proofs, made on the definition whose digest it names."""

    version: str | None
    digest: str
    definition: str
    date: str
    proven: dict[str, Any] = attrs.field(factory=dict)


@attrs.frozen(kw_only=True)
class ProofsFile:
    schema: Literal["nullius.proofs/v1"]
    kind: Literal["benchmark", "agent", "capability"]
    key: str
    records: list[Record] = attrs.field(factory=list)

    def record(self, version: str | None) -> Record | None:
        return next((r for r in self.records if r.version == version), None)


@attrs.frozen(kw_only=True)
class Standing:
    """Where one version's proofs come from, for `list`, `fit` and a job's config.json."""

    file: Path | None  # the proofs file, when it has a record of this version
    digest: str | None  # the definition's digest now (computed only when there is a record)
    record: Record | None  # the record, current or stale
    own: bool  # a user's own definition: its proofs are in its own file

    @property
    def current(self) -> bool:
        return self.record is not None and self.record.digest == self.digest

    @property
    def stale(self) -> bool:
        return self.record is not None and self.record.digest != self.digest

    def describe(self) -> str:
        if self.own:
            return "the definition's own file"
        if self.current:
            return f"{self.file}, over the definition's shipped proofs"
        if self.stale:
            assert self.record is not None
            return (f"the definition's shipped proofs; the proofs in {self.file} are stale (made on {self.record.digest[:19]} on "
                    f"{self.record.date}, the definition is now {str(self.digest)[:19]}) and not used")
        return "the definition's shipped proofs"

    def as_json(self) -> dict[str, Any]:
        return {
            "from": "definition" if self.own or not self.current else "proofs file",
            "file": str(self.file) if self.file else None,
            "stale": self.stale,
            "stale_record": {"digest": self.record.digest, "date": self.record.date, "definition": self.record.definition}
            if self.stale and self.record else None,
            "digest": self.digest,
            "says": self.describe(),
        }


def path_for(user_root: Path, kind: str, key: str) -> Path:
    return user_root / "proofs" / FOLDERS[kind] / f"{key}.json"


def read(path: Path, kind: str) -> ProofsFile | None:
    """The proofs file, read strictly (its problems name it), or None when there is none."""
    if not path.exists():
        return None
    loaded: ProofsFile = structure(read_json(path), ProofsFile)
    problems: list[Problem] = []
    if loaded.kind != kind:
        problems.append(Problem("$.kind", f"expected {kind!r}, as the folder it is in says, found {loaded.kind!r}", path))
    for i, rec in enumerate(loaded.records):
        if kind != "benchmark":
            try:
                structure(rec.proven, dict[str, Proof], f"$.records[{i}].proven")
            except DefinitionError as exc:
                problems += exc.problems
    if problems:
        raise DefinitionError([p.in_file(path) for p in problems])
    return loaded


def digest(folder: Path, file_name: str) -> str:
    """sha256 over every file of the definition's folder; the definition file without its `proven` blocks."""
    h = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"):
        rel = path.relative_to(folder).as_posix()
        content = path.read_bytes()
        if rel == file_name:
            content = _without_proven(json.loads(content))
        h.update(f"{rel}\0{len(content)}\0".encode())
        h.update(content)
    return "sha256:" + h.hexdigest()


def _without_proven(raw: Any) -> bytes:
    if isinstance(raw, dict):
        raw = {k: v for k, v in raw.items() if k != "proven"}
        versions = raw.get("versions")
        if isinstance(versions, dict):
            raw["versions"] = {n: ({k: v for k, v in b.items() if k != "proven"} if isinstance(b, dict) else b) for n, b in versions.items()}
    return json.dumps(raw, sort_keys=True, separators=(",", ":")).encode()


def merge(kind: str, shipped: Mapping[str, Any], local: Mapping[str, Any]) -> dict[str, Any]:
    """The local record laid over the shipped `proven` (raw JSON, or Proofs for an agent's)."""
    if kind != "benchmark":
        return {**shipped, **local}
    out = {ds: _copy(checks) for ds, checks in shipped.items()}
    for ds, checks in local.items():
        target = out.setdefault(ds, {})
        for name, rec in checks.items():
            if name not in SECTIONS:
                apply_check(target, name, "passed", rec)
        for section, state in (("failed", "failed"), ("not_checked", "not checked")):
            for name, rec in (checks.get(section) or {}).items():
                apply_check(target, name, state, rec)
    return out


def not_looked_for(name: str, record: Any) -> bool:
    """A leak record that looked for nothing (every reference under 12 characters): not a pass, whatever it says."""
    return name == "leak" and isinstance(record, dict) and record.get("looked_for") == 0


def _copy(checks: Any) -> Any:
    if not isinstance(checks, dict):
        return checks
    return {k: (dict(v) if k in SECTIONS and isinstance(v, dict) else v) for k, v in checks.items()}


def apply_check(dataset: dict[str, Any], name: str, state: str, record: dict[str, Any]) -> None:
    """One check's outcome into a dataset's records: a pass stands, a failure is taken back, a check not made changes nothing else."""
    sections = {s: dict(dataset.get(s) or {}) for s in SECTIONS}
    if state == "passed":
        dataset[name] = record
        sections["failed"].pop(name, None)
        sections["not_checked"].pop(name, None)
    elif state == "failed":
        dataset.pop(name, None)
        sections["failed"][name] = record
        sections["not_checked"].pop(name, None)
    else:  # not checked: it proves and disproves nothing, so a standing record stays
        sections["not_checked"][name] = record
    for section, held in sections.items():
        if held:
            dataset[section] = held
        else:
            dataset.pop(section, None)


def overlay(definition: Any, kind: str, proofs: ProofsFile | None, now: str) -> Any:
    """The definition with each current record laid over its shipped proofs."""
    if proofs is None:
        return definition
    for rec in proofs.records:
        if rec.digest != now:
            continue  # stale: shown by `list`, never used
        local = rec.proven if kind == "benchmark" else structure(rec.proven, dict[str, Proof])
        if definition.versions is None:
            if rec.version is None:
                definition = attrs.evolve(definition, proven=merge(kind, definition.proven, local))
            continue
        block = definition.versions.blocks.get(rec.version)
        if block is None:
            continue  # a version the definition no longer has
        blocks = {**definition.versions.blocks, rec.version: attrs.evolve(block, proven=merge(kind, block.proven, local))}
        definition = attrs.evolve(definition, versions=attrs.evolve(definition.versions, blocks=blocks))
    return definition


def write_record(path: Path, kind: str, key: str, version: str | None, now: str, source: str, proven: dict[str, Any]) -> None:
    """Replace this version's record (a stale one included); a record left with nothing is removed, and an empty file with it."""
    existing = read(path, kind)
    records = [r for r in (existing.records if existing else []) if r.version != version]
    if proven:
        records.append(Record(version=version, digest=now, definition=source, date=date.today().isoformat(), proven=proven))
    if not records:
        path.unlink(missing_ok=True)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    records.sort(key=lambda r: r.version or "")
    write_json(path, unstructure(ProofsFile(schema=PROOFS_SCHEMA, kind=kind, key=key, records=records)))  # type: ignore[arg-type]
