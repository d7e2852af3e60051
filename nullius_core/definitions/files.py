"""Reading and writing definition files, with problems that point into them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from nullius_core.fsutil import write_text_atomic
from nullius_core.definitions.agent import Agent, Capability
from nullius_core.definitions.benchmark import Standard
from nullius_core.definitions.compat import OLD_FILE, normalise_capability, normalise_standard
from nullius_core.definitions.converter import structure
from nullius_core.definitions.entry import CatalogueEntry, UpstreamSettings
from nullius_core.definitions.jsontext import parse
from nullius_core.definitions.problems import DefinitionError, Problem

# file name -> (class, normaliser of older names)
FILE_KINDS: dict[str, tuple[type, Any]] = {
    "standard.json": (Standard, normalise_standard),
    "benchmark.json": (CatalogueEntry, None),
    "upstream-settings.json": (UpstreamSettings, None),
    "agent.json": (Agent, None),
    "capability.json": (Capability, normalise_capability),
    OLD_FILE: (Capability, normalise_capability),
}


def read_json(path: Path) -> Any:
    """Parse a JSON file strictly (jsontext.parse); a bad file is a DefinitionError naming where."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise DefinitionError([Problem("$", "expected a file here, found none", path)]) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise DefinitionError([Problem("$", f"expected a readable UTF-8 file, found {exc}", path)]) from None
    return parse(text, path)


def load(path: Path, cls: type | None = None) -> Any:
    """Read `path` as the definition its file name says (or as `cls`)."""
    normaliser = None
    if cls is None:
        if path.name not in FILE_KINDS:
            known = ", ".join(sorted(FILE_KINDS))
            raise DefinitionError([Problem("$", f"expected a definition file named one of {known}, found {path.name!r}", path)])
        cls, normaliser = FILE_KINDS[path.name]
    raw = read_json(path)
    if normaliser is not None:
        raw = normaliser(raw)
    try:
        return structure(raw, cls)
    except DefinitionError as exc:
        raise DefinitionError([p.in_file(path) for p in exc.problems]) from None


def dumps(data: Any) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def write_json(path: Path, data: Any) -> None:
    """Write atomically: a reader never sees half a file, a crash leaves the old one."""
    write_text_atomic(path, dumps(data))
