"""A variant's files made ready before the first unit: skills read (at their git ref), laid out where the agent reads them, digested.

The staged tree is `<scratch>/variant/{workspace,home}/...`: each unit gets a
copy of it before its agent starts. The digest is the sha256 over the
normalized files (text with LF line ends) and the parsed variant.toml: a
changed variant is a different configuration.
"""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path
from typing import Any

import attrs

from nullius_core.definitions.converter import unstructure
from nullius_core.definitions.problems import DefinitionError, Problem
from nullius_core.definitions.variant_places import VariantPlaces
from nullius_core.variants.folder import SKILL_FILE, SKILLS, Variant

SKIPPED = frozenset({".git", "__pycache__", ".DS_Store"})


@attrs.frozen(kw_only=True)
class StagedVariant:
    """The variant's files laid out per root (`workspace`, `home`), and its digest."""

    variant: Variant
    folder: Path  # holds workspace/ and home/
    digest: str  # sha256 hex
    files: tuple[str, ...]  # "workspace/AGENTS.md", "workspace/.agents/skills/x/SKILL.md", ...

    def roots(self) -> list[str]:
        return sorted({f.split("/", 1)[0] for f in self.files})

    def unreachable(self, place: Any) -> str | None:
        """Why the agent cannot see the staged workspace files in `place`: a box that cannot take them (AgentLaunch.workdir_files)."""
        if place.box is None or "workspace" not in self.roots() or hasattr(place.box, "put_files"):
            return None
        return (f"the variant {self.variant.name}'s workspace files cannot be put into a task's own image "
                f"(its agent works in {place.box.workdir} inside it): not supported")

    def write_into(self, roots: dict[str, Path]) -> None:
        """Every staged file copied into its root (the unit's workspace, the agent's HOME), over what is there."""
        for name in self.roots():
            shutil.copytree(self.folder / name, roots[name], dirs_exist_ok=True, symlinks=False)


def _files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file() and not SKIPPED.intersection(p.relative_to(folder).parts))


def _normalized(path: Path) -> bytes:
    data = path.read_bytes()
    return data.replace(b"\r\n", b"\n") if b"\0" not in data else data


def _git(args: list[str], cwd: Path) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, timeout=120)


def skill_at_ref(variant: Variant, index: int, into: Path) -> Path:
    """`[[skill]]` number `index` read from its git ref into `into` (git archive), the skill folder returned."""
    entry = variant.toml.skill[index]
    where = f"$.skill[{index}]"
    source = (variant.folder / entry.path).resolve()
    existing = source
    while not existing.is_dir() and existing != existing.parent:
        existing = existing.parent
    top = _git(["rev-parse", "--show-toplevel"], existing)
    if top.returncode != 0:
        raise DefinitionError([Problem(f"{where}.ref", f"expected {entry.path!r} inside a git repository to read it at {entry.ref!r}; "
                                                      f"git says: {top.stderr.decode(errors='replace').strip()}", variant.file)])
    root = Path(top.stdout.decode().strip()).resolve()
    relative = source.relative_to(root).as_posix() if source != root else "."
    archive = _git(["archive", "--format=tar", str(entry.ref), "--", relative], root)
    if archive.returncode != 0:
        raise DefinitionError([Problem(f"{where}.ref", f"expected a ref of {root} holding {relative!r}, found {entry.ref!r}; "
                                                      f"git says: {archive.stderr.decode(errors='replace').strip()}", variant.file)])
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(into, filter="data")
    return into / relative if relative != "." else into


def _skill_sources(variant: Variant, scratch: Path) -> dict[str, Path]:
    """Every skill by name: the folder's own skills/<name>/, and each [[skill]] (at its ref, read into scratch)."""
    out = {name: variant.folder / SKILLS / name for name in variant.skills}
    problems = []
    for i, entry in enumerate(variant.toml.skill):
        where = f"$.skill[{i}]"
        if entry.ref is not None:
            folder = skill_at_ref(variant, i, Path(tempfile.mkdtemp(prefix=f"skill-{i}-", dir=scratch)))
        else:
            folder = (variant.folder / entry.path).resolve()
        at = f" at {entry.ref}" if entry.ref else ""
        if not (folder / SKILL_FILE).is_file():
            problems.append(Problem(f"{where}.path", f"expected a skill folder holding {SKILL_FILE}{at}, found {entry.path!r} without one", variant.file))
        elif folder.name in out:
            problems.append(Problem(f"{where}.path", f"expected skill names to be unique, found a second skill {folder.name!r}", variant.file))
        else:
            out[folder.name] = folder
    if problems:
        raise DefinitionError(problems)
    return out


def stage(variant: Variant, places: VariantPlaces, scratch: Path) -> StagedVariant:
    """The variant laid out for an agent whose places are `places` (fit.py has checked it declares each one needed)."""
    folder = scratch / "variant"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    digest = hashlib.sha256()
    digest.update(b"variant.toml\0" + json.dumps(unstructure(variant.toml), sort_keys=True).encode() + b"\0")
    staged: list[str] = []

    def put(source: Path, root: str, target: str, label: str) -> None:
        data = _normalized(source)
        digest.update(label.encode() + b"\0" + hashlib.sha256(data).hexdigest().encode() + b"\0")
        out = folder / root / target
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(source.read_bytes())
        staged.append(f"{root}/{target}")

    for name in variant.instructions:
        assert places.instructions is not None and places.instructions.file == name
        put(variant.folder / name, places.instructions.root, places.instructions.target, name)
    for name, source in sorted(_skill_sources(variant, scratch).items()):
        assert places.skills is not None
        for path in _files(source):
            relative = path.relative_to(source).as_posix()
            put(path, places.skills.root, f"{places.skills.path}/{name}/{relative}", f"skills/{name}/{relative}")
    return StagedVariant(variant=variant, folder=folder, digest=digest.hexdigest(), files=tuple(staged))


def variant_digest(variant: Variant, places: VariantPlaces, scratch: Path) -> str:
    """The digest alone (a resumed job's check that its variant is the one it ran)."""
    return stage(variant, places, scratch).digest
