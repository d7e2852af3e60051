"""Problems found in a definition file, and the error that carries them.

A problem points into the file (`FILE: $.path.to.field: ...`) and says what was
expected and what was found. Every problem in a file is collected before the
error is raised, so a user fixes a file in one pass.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import attrs

_PLAIN_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def child_path(path: str, key: str | int) -> str:
    """`$.a` + `b` -> `$.a.b`; keys that are not plain names are bracketed."""
    if isinstance(key, int):
        return f"{path}[{key}]"
    if _PLAIN_KEY.match(key):
        return f"{path}.{key}"
    return f"{path}[{json.dumps(key)}]"


def describe_value(value: Any) -> str:
    """A short, human description of a JSON value, for "found ..." messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return f"the integer {value}"
    if isinstance(value, float):
        return f"the number {value}"
    if isinstance(value, str):
        shown = value if len(value) <= 60 else value[:57] + "..."
        return f"the string {json.dumps(shown)}"
    if isinstance(value, list):
        return f"a list of {len(value)}" if value else "an empty list"
    if isinstance(value, dict):
        return "an object" if value else "an empty object"
    return type(value).__name__


@attrs.frozen
class Problem:
    """One thing wrong at one place of one file."""

    path: str
    message: str
    file: Path | None = None

    def render(self) -> str:
        where = f"{self.file}: " if self.file is not None else ""
        return f"{where}{self.path}: {self.message}"

    def in_file(self, file: Path) -> Problem:
        return attrs.evolve(self, file=file)


class DefinitionError(Exception):
    """A definition could not be read; carries every problem found in it."""

    def __init__(self, problems: list[Problem]):
        self.problems = list(problems)
        super().__init__("\n".join(p.render() for p in self.problems))

    def render(self) -> str:
        return "\n".join(p.render() for p in self.problems)
