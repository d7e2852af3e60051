"""JSON text as a definition may be written: finite numbers, nesting of bounded depth.

Python's `json` reads `NaN`, `Infinity` and `1e999` (which JSON does not
have) as floats that no comparison holds for, and recurses once per level of
nesting, so a file nested a hundred thousand deep ends in a RecursionError.
Here both are problems pointing into the file, like every other.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from nullius_core.definitions.problems import DefinitionError, Problem, child_path

# No definition of the standard nests past a dozen levels; a hundred leaves
# room for extensions and stays far below the interpreter's recursion limit.
MAX_DEPTH = 100

# A string (skipped whole: brackets inside it do not count) or a bracket.
_TOKENS = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]')


class NotFinite(str):
    """A number JSON has no value for, kept as its text until it is reported."""


def _number(text: str) -> Any:
    value = float(text)
    return value if math.isfinite(value) else NotFinite(text)


def _where(text: str, offset: int) -> str:
    line = text.count("\n", 0, offset) + 1
    column = offset - text.rfind("\n", 0, offset)
    return f"$ (line {line}, column {column})"


def _too_deep(text: str) -> int | None:
    """The offset of the first bracket past MAX_DEPTH, or None."""
    depth = 0
    for match in _TOKENS.finditer(text):
        token = match.group()
        if token in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                return match.start()
        elif token in "]}":
            depth -= 1
    return None


def leaves(data: Any) -> Iterator[tuple[str, Any]]:
    """(JSON path, value) of every value in `data` that is not an object or a list, in order, without recursion."""
    stack: list[tuple[str, Any]] = [("$", data)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, dict):
            stack.extend((child_path(path, k), v) for k, v in reversed(list(value.items())))
        elif isinstance(value, list):
            stack.extend((child_path(path, i), v) for i, v in reversed(list(enumerate(value))))
        else:
            yield path, value


def parse(text: str, file: Path | None = None) -> Any:
    """The JSON value of `text`; a DefinitionError naming where it is not a definition's JSON."""
    deep = _too_deep(text)
    if deep is not None:
        raise DefinitionError([Problem(_where(text, deep), f"expected JSON nested at most {MAX_DEPTH} deep, found deeper nesting", file)])
    try:
        data = json.loads(text, parse_constant=NotFinite, parse_float=_number)
    except json.JSONDecodeError as exc:
        where = f"$ (line {exc.lineno}, column {exc.colno})"
        raise DefinitionError([Problem(where, f"expected JSON, found a syntax error: {exc.msg}", file)]) from None
    except (ValueError, RecursionError) as exc:  # an integer of more digits than Python converts, say
        raise DefinitionError([Problem("$", f"expected JSON, found {exc}", file)]) from None
    bad = [(path, value) for path, value in leaves(data) if isinstance(value, NotFinite)]
    if bad:
        raise DefinitionError([Problem(path, f"expected a finite number (JSON has no NaN or Infinity), found {text}", file) for path, text in bad])
    return data
