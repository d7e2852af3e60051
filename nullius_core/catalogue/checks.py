"""`nullius check`: a definition read strictly, then checked against what this session knows.

The file's own shape and rules are the definitions' business; here come the
rules that need the registered ports and the entry's other files: a needed
port must be registered, a needed skill named by its port's kit, a benchmark
must carry its catalogue entry and its inventory of upstream settings, and
every decision of that inventory must name an option, setup or dataset that
some version has.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from nullius_core.catalogue.catalogue import Entry
from nullius_core.definitions import (
    Agent,
    Capability,
    CatalogueEntry,
    DefinitionError,
    Problem,
    Standard,
    UpstreamSettings,
    load,
)
from nullius_core.definitions.problems import child_path
from nullius_core.ports.model import Port


def check_file(path: Path, ports: Mapping[str, Port]) -> list[Problem]:
    """Every problem of one definition file (and, for a standard.json, of its entry)."""
    try:
        definition = load(path)
    except DefinitionError as exc:
        return exc.problems
    problems: list[Problem] = []
    if isinstance(definition, Standard):
        problems += _standard(path, definition, ports)
    elif isinstance(definition, (Agent, Capability)):
        problems += _participant(path, definition, ports)
    return problems


def check_entry(entry: Entry, ports: Mapping[str, Port]) -> list[Problem]:
    return check_file(entry.file, ports)


def _standard(path: Path, standard: Standard, ports: Mapping[str, Port]) -> list[Problem]:
    problems: list[Problem] = []
    known = ", ".join(sorted(ports)) or "none registered"
    for i, port in enumerate(standard.needs):
        if port not in ports:
            problems.append(Problem(f"$.needs[{i}]", f"expected a registered port ({known}), found {port!r}", path))
    for port, skills in standard.needs_skills.items():
        registered = ports.get(port)
        if registered is None:
            continue
        for i, skill in enumerate(skills):
            if skill not in registered.skills:
                names = ", ".join(registered.skills) or "none"
                problems.append(
                    Problem(
                        f"{child_path('$.needs_skills', port)}[{i}]",
                        f"expected a skill the kit of {port} names ({names}), found {skill!r}",
                        path,
                    )
                )
    if standard.kit is not None:
        return problems
    folder = path.parent
    for name, cls in (("benchmark.json", CatalogueEntry), ("upstream-settings.json", UpstreamSettings)):
        try:
            loaded = load(folder / name, cls)
        except DefinitionError as exc:
            problems += exc.problems
            continue
        if isinstance(loaded, UpstreamSettings):
            problems += _decisions(folder / name, loaded, standard)
    return problems


def _decisions(path: Path, inventory: UpstreamSettings, standard: Standard) -> list[Problem]:
    options = set(standard.options or {})
    setups = set(standard.setups or {}) | ({"original"} if not standard.setups else set())
    datasets = set(standard.datasets)
    for version in (standard.versions.blocks.values() if standard.versions else []):
        datasets |= set(version.datasets or {})
    problems = []
    for i, row in enumerate(inventory.settings):
        decision = row.decision()
        if decision is None:
            continue
        kind, name = decision
        pool: dict[str, Any] = {"option": options, "setup": setups, "dataset": datasets}
        if kind in pool and name not in pool[kind]:
            have = ", ".join(sorted(pool[kind])) or "none"
            problems.append(
                Problem(
                    f"$.settings[{i}].nullius",
                    f"expected a {kind} some version has ({have}), found {kind}:{name}",
                    path,
                )
            )
    return problems


def _participant(path: Path, definition: Agent | Capability, ports: Mapping[str, Port]) -> list[Problem]:
    problems: list[Problem] = []
    known = ", ".join(sorted(ports)) or "none registered"
    blocks: list[tuple[str, Any]] = [("$", definition)]
    if definition.versions is not None:
        blocks += [(child_path("$.versions", name), b) for name, b in definition.versions.blocks.items()]
    for where, block in blocks:
        for port in block.proven:
            if port not in ports:
                problems.append(Problem(child_path(f"{where}.proven", port), f"expected a registered port ({known}), found {port!r}", path))
    return problems
