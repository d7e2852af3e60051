"""agent.json's `variant`: where the agent reads a variant's instruction file and finds its skills, and how effort reaches it.

Each place is the agent definition's data, never guessed: a variant whose
agent declares no place for what the variant holds is refused before any unit
(nullius_core/variants/fit.py).
"""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Literal

import attrs

from nullius_core.definitions.common import Issues

ROOTS = ("workspace", "home")


def _relative_issues(field: str, path: str) -> Issues:
    parts = PurePosixPath(path).parts
    if not path or path.startswith("/") or ".." in parts or "\\" in path:
        yield (field,), f"expected a relative path inside the {'/'.join(ROOTS)}, without '..', found {path!r}"


@attrs.frozen(kw_only=True)
class InstructionsPlace:
    """The instruction file the agent reads (`file`, as a variant folder names it: AGENTS.md) and where it is written.

    `path` is relative to `root` (the unit's workspace or the agent's HOME); default: `file` itself.
    """

    file: str
    root: Literal["workspace", "home"] = "workspace"
    path: str | None = None

    @property
    def target(self) -> str:
        return self.path or self.file

    def _invariants(self) -> Issues:
        if "/" in self.file or not self.file:
            yield ("file",), f"expected a file name (AGENTS.md), found {self.file!r}"
        yield from _relative_issues("path", self.target)


@attrs.frozen(kw_only=True)
class SkillsPlace:
    """The folder the agent finds skills in: each skill folder `<name>/` is written whole under `path` (relative to `root`)."""

    path: str
    root: Literal["workspace", "home"] = "workspace"

    def _invariants(self) -> Issues:
        yield from _relative_issues("path", self.path)


@attrs.frozen(kw_only=True)
class EffortWay:
    """How a reasoning effort reaches the agent: one of its own options set to it, or an environment variable."""

    option: str | None = None
    env: str | None = None

    def _invariants(self) -> Issues:
        if (self.option is None) == (self.env is None):
            yield (), "expected exactly one of option (an option of the agent's) and env (a variable name)"


@attrs.frozen(kw_only=True)
class VariantPlaces:
    """`variant` of agent.json; each part optional: what is not declared, a variant cannot give this agent."""

    instructions: InstructionsPlace | None = None
    skills: SkillsPlace | None = None
    effort: EffortWay | None = None
