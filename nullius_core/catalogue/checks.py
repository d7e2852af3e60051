"""`nullius check`: a definition read strictly, then checked against what this session knows.

The file's own shape and rules are the definitions' business; here come the
rules that need the registered ports and the entry's other files: a needed
port must be registered, a needed skill named by its port's kit, a benchmark
must carry its catalogue entry and its inventory of upstream settings, and
every decision of that inventory must name an option, setup or dataset that
some version has. Then what needs the disk: every `{here}` path and every
link of the definition's folder stays inside it, and every dataset file
check can read without fetching (in the folder, the dataset cache or an
upstream's clone) has the pinned sha256.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from nullius_core.catalogue.catalogue import Entry
from nullius_core.definitions import (
    FILE_KINDS,
    Agent,
    Capability,
    CatalogueEntry,
    Dataset,
    DefinitionError,
    Problem,
    Standard,
    Upstream,
    UpstreamSettings,
    load,
    read_json,
    structure,
)
from nullius_core.definitions.common import FIDELITY_KEY, bad_port
from nullius_core.definitions.compat import OLD_FILE, canonical_port
from nullius_core.definitions.dockerfile import layer_problems
from nullius_core.definitions.folder import folder_problems, inside
from nullius_core.definitions.problems import child_path
from nullius_core.paths import Paths
from nullius_core.ports.model import Port
from nullius_core.run import data, upstream


def check_file(path: Path, ports: Mapping[str, Port], paths: Paths | None = None) -> list[Problem]:
    """Every problem of one definition file (and, for a standard.json, of its entry), in one pass.

    With `paths`, a dataset's file in the cache or an upstream's clone is checked too.
    A file whose shape is wrong still gets every check that can be made
    without its whole model (`_beyond_its_shape`), so a fix is not followed by
    the next problem, one at a time.
    """
    try:
        definition = load(path)
    except DefinitionError as exc:
        return exc.problems + _beyond_its_shape(path, ports, paths)
    problems: list[Problem] = []
    if isinstance(definition, Standard):
        problems += _standard(path, definition, ports)
        problems += folder_problems(path)
        problems += _datasets(path, _pinned(definition, path.parent.name), paths)
    elif isinstance(definition, (Agent, Capability)):
        problems += _participant(path, definition, ports)
        problems += folder_problems(path)
    return problems


def check_entry(entry: Entry, ports: Mapping[str, Port], paths: Paths | None = None) -> list[Problem]:
    return check_file(entry.file, ports, paths)


def _beyond_its_shape(path: Path, ports: Mapping[str, Port], paths: Paths | None) -> list[Problem]:
    """The checks a file whose model could not be built still gets, read from its JSON: the folder, the ports, the entry's files, the data."""
    if path.name not in FILE_KINDS:
        return []
    try:
        raw = read_json(path)
    except DefinitionError:
        return []  # not JSON: the one problem is said already
    if not isinstance(raw, dict):
        return []
    problems = folder_problems(path)
    known = ", ".join(sorted(ports)) or "none registered"
    if path.name == "standard.json":
        for i, port in enumerate(raw.get("needs") if isinstance(raw.get("needs"), list) else []):
            if isinstance(port, str) and not bad_port(port) and port not in ports:
                problems.append(Problem(f"$.needs[{i}]", f"expected a registered port ({known}), found {port!r}", path))
        if "kit" not in raw:
            for name, cls in (("benchmark.json", CatalogueEntry), ("upstream-settings.json", UpstreamSettings)):
                try:
                    load(path.parent / name, cls)
                except DefinitionError as exc:
                    problems += exc.problems
        problems += _datasets(path, _pinned_raw(raw), paths)
    elif path.name in ("agent.json", "capability.json", OLD_FILE):
        for where, block in _raw_blocks(raw):
            for port in block.get("proven") if isinstance(block.get("proven"), dict) else {}:
                if port != FIDELITY_KEY and not bad_port(port) and canonical_port(port) not in ports:
                    problems.append(Problem(child_path(f"{where}.proven", port), f"expected a registered port ({known}), found {port!r}", path))
    return problems


def _raw_blocks(raw: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    versions = raw.get("versions") if isinstance(raw.get("versions"), dict) else {}
    return [("$", raw)] + [(child_path("$.versions", n), b) for n, b in versions.items() if n != "default" and isinstance(b, dict)]


# (where in the file, the dataset's name, the dataset, its version's upstream): what `_datasets` checks
Pinned = list[tuple[str, str, Dataset, Upstream | None]]


def _pinned(standard: Standard, key: str) -> Pinned:
    out: Pinned = []
    for version in standard.version_names() or [None]:
        resolved = standard.resolve(key, version)
        own = version is not None and standard.versions is not None and standard.versions.blocks[version].datasets
        at = child_path(child_path("$.versions", version) if own else "$", "datasets")
        out += [(child_path(at, name), name, dataset, resolved.upstream) for name, dataset in resolved.datasets.items()]
    return out


def _pinned_raw(raw: dict[str, Any]) -> Pinned:
    """The datasets of a file that did not structure whole: each one that structures alone, with its block's upstream if that does."""
    out: Pinned = []
    top_upstream = _or_none(raw.get("upstream"), Upstream, "$.upstream")
    for where, block in _raw_blocks(raw):
        upstream = _or_none(block.get("upstream"), Upstream, f"{where}.upstream") if where != "$" else top_upstream
        datasets = block.get("datasets")
        for name, value in (datasets.items() if isinstance(datasets, dict) else []):
            dataset = _or_none(value, Dataset, child_path(f"{where}.datasets", name))
            if dataset is not None:
                out.append((child_path(f"{where}.datasets", name), name, dataset, upstream or top_upstream))
    return out


def _or_none(value: Any, cls: type, where: str) -> Any:
    if value is None:
        return None
    try:
        return structure(value, cls, where)
    except DefinitionError:
        return None  # its problems are said already, by the whole file's read


def _datasets(path: Path, pinned: Pinned, paths: Paths | None) -> list[Problem]:
    """Each dataset file that can be read here (the folder, the cache, a clone already made), against its pin."""
    folder, key = path.parent, path.parent.name  # a catalogue entry's key is its folder's name
    problems: list[Problem] = []
    seen: set[tuple[str, Path]] = set()
    for where, name, dataset, upstream_block in pinned:
        local = data.local_file(dataset, folder)
        if local is not None and not inside(folder, local):
            continue  # folder_problems says so
        clone = upstream.existing_clone(paths, key, upstream_block) if paths is not None else None
        file = local or (data.reachable(paths, key, name, dataset, folder, clone) if paths is not None else None)
        if file is None or (where, file) in seen:
            continue  # nothing to read without fetching, or read already
        seen.add((where, file))
        if not file.is_file():
            problems.append(Problem(f"{where}.path", f"expected a file in the benchmark's folder, found none at {file}", path))
            continue
        found = data.sha256_file(file)
        if found != dataset.sha256:
            problems.append(Problem(f"{where}.sha256", f"expected the sha256 of {file}, which is {found}, found {dataset.sha256!r}", path))
    return problems


def _environments(path: Path, standard: Standard) -> list[Problem]:
    """Each environment's Dockerfile and files are there, inside the folder, and the Dockerfile is a layer; one kind per secret."""
    problems: list[Problem] = []
    folder = path.parent.resolve()
    kinds: dict[str, tuple[str, str]] = {}
    for name, env in (standard.environments or {}).items():
        at = child_path("$.environments", name)
        if env.image == "own" and standard.family == "capability":
            problems.append(Problem(f"{at}.image", "a capability benchmark has no own image: its sessions run on this machine", path))
        for i, secret in enumerate(env.needs_secrets or []):
            first = kinds.setdefault(secret.name, (secret.kind, name))
            if first[0] != secret.kind:
                problems.append(Problem(f"{at}.needs_secrets[{i}].kind", f"expected {first[0]!r}, as environment {first[1]!r} declares {secret.name}, found {secret.kind!r}", path))
        for i, relative in enumerate(env.files or []):
            target = (folder / relative).resolve()
            if not target.is_relative_to(folder) or not target.is_file():
                problems.append(Problem(f"{at}.files[{i}]", f"expected a file inside the benchmark's folder, found {relative!r}", path))
        if env.dockerfile is None:
            continue
        dockerfile = (folder / env.dockerfile).resolve()
        if not dockerfile.is_relative_to(folder) or not dockerfile.is_file():
            problems.append(Problem(f"{at}.dockerfile", f"expected a file inside the benchmark's folder, found {env.dockerfile!r}", path))
            continue
        for line, why in layer_problems(dockerfile.read_text(errors="replace"), list(env.files or [])):
            problems.append(Problem(f"{at}.dockerfile", f"{env.dockerfile}:{line}: {why}", path))
    return problems


def _standard(path: Path, standard: Standard, ports: Mapping[str, Port]) -> list[Problem]:
    problems: list[Problem] = []
    known = ", ".join(sorted(ports)) or "none registered"
    for i, port in enumerate(standard.needs):
        if port not in ports:
            problems.append(Problem(f"$.needs[{i}]", f"expected a registered port ({known}), found {port!r}", path))
    for name, option in (standard.options or {}).items():  # a value's own ports (ports/fit.py needs_of)
        for value, needed in (option.needs or {}).items():
            for i, port in enumerate(needed.ports or []):
                if port not in ports:
                    problems.append(Problem(f"$.options.{name}.needs.{value}.ports[{i}]", f"expected a registered port ({known}), found {port!r}", path))
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
    problems += _environments(path, standard)
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
            if port not in ports and not (port == FIDELITY_KEY and definition.family == "agent"):
                problems.append(Problem(child_path(f"{where}.proven", port), f"expected a registered port ({known}), found {port!r}", path))
    return problems
