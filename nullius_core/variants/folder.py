"""A variant folder: `variant.toml`, instruction files, `skills/<name>/`, read into frozen classes.

A malformed folder is a DefinitionError whose problems name the file, the
field and what was expected, as every definition's do (definitions/problems.py).
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import attrs

from nullius_core.definitions.common import Issues
from nullius_core.definitions.converter import structure
from nullius_core.definitions.problems import DefinitionError, Problem

TOML = "variant.toml"
SKILLS = "skills"
SKILL_FILE = "SKILL.md"
NOTES = ("README.md",)  # the variant's own notes: neither staged nor part of its digest
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


@attrs.frozen(kw_only=True)
class SkillRef:
    """`[[skill]]`: a skill folder by reference, `path` relative to the variant folder, read at git `ref` when given."""

    path: str
    ref: str | None = None

    def _invariants(self) -> Issues:
        if not self.path.strip():
            yield ("path",), "expected the skill folder's path, relative to the variant folder"
        if self.ref is not None and not self.ref.strip():
            yield ("ref",), "expected a git ref (a commit, a tag, a branch), found an empty string"


@attrs.frozen(kw_only=True)
class VariantToml:
    """variant.toml: the agent (a catalogue key, KEY[@VERSION]) and model it runs, its effort, its task scope, its skills."""

    agent: str
    model: str
    reasoning_effort: str | None = None
    tasks: list[str] = attrs.field(factory=list)
    skill: list[SkillRef] = attrs.field(factory=list)

    def _invariants(self) -> Issues:
        if not self.agent.strip():
            yield ("agent",), "expected the agent's catalogue key (reference, claude, codex@0.9.0), found an empty string"
        if not self.model.strip():
            yield ("model",), "expected the model the variant runs, found an empty string"
        if self.reasoning_effort is not None and not self.reasoning_effort.strip():
            yield ("reasoning_effort",), "expected an effort level (low, medium, high, ...) or no key, found an empty string"
        seen: set[str] = set()
        for i, task in enumerate(self.tasks):
            if not task.strip():
                yield ("tasks", i), "expected a unit id, found an empty string"
            elif task in seen:
                yield ("tasks", i), f"expected each unit once, found {task!r} again"
            seen.add(task)


@attrs.frozen(kw_only=True)
class Variant:
    """A variant as read from its folder: its name is the folder's."""

    name: str
    folder: Path
    toml: VariantToml
    instructions: tuple[str, ...]  # the instruction files it holds (AGENTS.md, CLAUDE.md, ...), by name
    skills: tuple[str, ...]  # the skill folders under skills/, by name

    @property
    def file(self) -> Path:
        return self.folder / TOML

    @property
    def scoped(self) -> bool:
        return bool(self.toml.tasks)


def _fail(file: Path, path: str, message: str) -> DefinitionError:
    return DefinitionError([Problem(path, message, file)])


def read_variant(folder: Path) -> Variant:
    """The variant in `folder`; DefinitionError (file, field, expectation) when it is not one."""
    folder = folder.resolve()
    file = folder / TOML
    if not folder.is_dir():
        raise _fail(folder, "$", "expected a variant folder (holding variant.toml), found no such folder")
    if not NAME.match(folder.name):
        raise _fail(folder, "$", f"expected a folder name of letters, digits, '.', '-' or '_' (it names the job), found {folder.name!r}")
    if not file.is_file():
        raise _fail(file, "$", "expected variant.toml (agent, model, optional reasoning_effort, tasks, [[skill]]), found no such file")
    try:
        data = tomllib.loads(file.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise _fail(file, "$", f"expected TOML, found a syntax error: {exc}") from None
    try:
        toml = structure(data, VariantToml)
    except DefinitionError as exc:
        raise DefinitionError([p.in_file(file) for p in exc.problems]) from None
    instructions, skills, problems = _contents(folder)
    if problems:
        raise DefinitionError(problems)
    return Variant(name=folder.name, folder=folder, toml=toml, instructions=instructions, skills=skills)


def _contents(folder: Path) -> tuple[tuple[str, ...], tuple[str, ...], list[Problem]]:
    """Its instruction files and skill folders; anything else is a problem, never silently left out."""
    instructions, skills, problems = [], [], []
    for entry in sorted(folder.iterdir()):
        if entry.name.startswith(".") or entry.name == TOML or entry.name in NOTES:
            continue
        if entry.is_file() and entry.suffix == ".md":
            instructions.append(entry.name)
        elif entry.is_dir() and entry.name == SKILLS:
            for skill in sorted(entry.iterdir()):
                if skill.name.startswith("."):
                    continue
                if not skill.is_dir() or not (skill / SKILL_FILE).is_file():
                    problems.append(Problem("$", f"expected a skill folder holding {SKILL_FILE}, found {skill.name!r}", skill))
                else:
                    skills.append(skill.name)
        else:
            problems.append(Problem("$", "expected only variant.toml, instruction files (*.md) and skills/<name>/ in a variant folder, "
                                         f"found {entry.name!r}", entry))
    return tuple(instructions), tuple(skills), problems
