"""The rubric: `assessment_dimensions.json` (a benchmark's dimensions) read strictly, and its fingerprint.

Each dimension has its own positive integer `max_score`; `normalized_score` is
the sum of the scores over the sum of the max scores. The fingerprint is the
first 12 hex characters of the sha256 of the rubric's JSON with sorted keys, so
a changed description, max score or dimension is another rubric, never averaged
with the old one.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import attrs
import cattrs
from cattrs.v import format_exception

DIMENSIONS_FILE = "assessment_dimensions.json"
CRITERIA_FILE = "assessment_criteria.md"
NAME = re.compile(r"^[a-z][a-z0-9_]*$")


class RubricError(Exception):
    """A rubric that cannot be used: the message names the file, the field and what was expected."""


@attrs.frozen(kw_only=True)
class Dimension:
    name: str
    title: str
    max_score: int
    description: str


@attrs.frozen(kw_only=True)
class Rubric:
    dimensions: list[Dimension]

    @property
    def max_total(self) -> int:
        return sum(d.max_score for d in self.dimensions)

    def fingerprint(self) -> str:
        return fingerprint_of(unstructure(self))


def _strict_int(value: Any, _: type) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"expected an integer, found {json.dumps(value)}")
    return value


def _strict_str(value: Any, _: type) -> str:
    if not isinstance(value, str):
        raise TypeError(f"expected a string, found {json.dumps(value)}")
    return value


_converter = cattrs.Converter(forbid_extra_keys=True)
_converter.register_structure_hook(int, _strict_int)
_converter.register_structure_hook(str, _strict_str)


def unstructure(rubric: Rubric) -> dict[str, Any]:
    return _converter.unstructure(rubric)


def fingerprint_of(raw: dict[str, Any]) -> str:
    """The first 12 hex characters of the sha256 of the rubric's JSON, keys sorted."""
    text = json.dumps(raw, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def _message(exc: BaseException, type_: Any) -> str:
    if isinstance(exc, TypeError) and str(exc).startswith("expected"):  # our strict hooks say what they found
        return str(exc)
    if isinstance(exc, KeyError):
        return "required key missing"
    return format_exception(exc, type_)


def _problems(exc: Exception) -> list[str]:
    """Each problem as `$.path: what was expected`."""
    if not isinstance(exc, (cattrs.BaseValidationError, cattrs.ForbiddenExtraKeysError)):
        return [str(exc)]
    lines = cattrs.transform_error(exc, path="$", format_exception=_message)
    return [f"{line.rsplit(' @ ', 1)[1]}: {line.rsplit(' @ ', 1)[0]}" if " @ " in line else line for line in lines]


def parse(raw: Any, where: str) -> Rubric:
    """The rubric in `raw` (parsed JSON); RubricError naming `where`, each field and what it expected."""
    if not isinstance(raw, dict):
        raise RubricError(f"{where}: $: expected an object with \"dimensions\", found {type(raw).__name__}")
    try:
        rubric = _converter.structure(raw, Rubric)
    except Exception as exc:  # cattrs' grouped errors: each says its field
        raise RubricError("\n".join(f"{where}: {p}" for p in _problems(exc))) from None
    problems = _invariants(rubric)
    if problems:
        raise RubricError("\n".join(f"{where}: {p}" for p in problems))
    return rubric


def _invariants(rubric: Rubric) -> list[str]:
    problems = [] if rubric.dimensions else ["$.dimensions: expected at least one dimension, found none"]
    seen: set[str] = set()
    for i, dim in enumerate(rubric.dimensions):
        if not NAME.match(dim.name):
            problems.append(f"$.dimensions[{i}].name: expected a snake_case name, found {json.dumps(dim.name)}")
        if dim.name in seen:
            problems.append(f"$.dimensions[{i}].name: expected a name of its own, found {json.dumps(dim.name)} twice")
        seen.add(dim.name)
        if dim.max_score < 1:
            problems.append(f"$.dimensions[{i}].max_score: expected a positive integer, found {dim.max_score}")
    return problems


def load(path: Path) -> Rubric:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise RubricError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise RubricError(f"{path}: line {exc.lineno} column {exc.colno}: expected JSON ({exc.msg})") from None
    return parse(raw, str(path))
