"""A model request normalized for replay: what legitimately differs between two runs of one setup taken out.

Two runs of the same agent, benchmark, model and options send the same
requests but for what belongs to the run itself. Normalizing drops exactly
that, and nothing else:

* the job's folder, wherever a string holds it (the workspace's path in a
  system prompt, a file's path in a tool result): `{job}`;
* a route's token (`nlr-...`) and the run's token (`j<digest>.<random>`), should
  an agent quote them: `{token}`, `{run}`;
* date-times written as ISO 8601 (`2026-12-03T19:34:08.255Z`): `{time}`;
* UUIDs (a session's id, say): `{uuid}`;
* the top-level keys that name the caller rather than the request:
  `metadata` (Anthropic's `user_id`), `user`, `safety_identifier` and
  `prompt_cache_key`.

`digest()` is the sha256 of the normalized request as sorted, compact JSON.
`differences()` lists where two normalized requests differ, field by field,
bounded in size.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import attrs

import orjson

from nullius_core import jsonfast

DROPPED = ("metadata", "user", "safety_identifier", "prompt_cache_key")
_SHAPES = (
    (re.compile(r"nlr-[A-Za-z0-9_-]{32}"), "{token}"),
    (re.compile(r"\bj[0-9a-f]{8,64}\.[A-Za-z0-9_-]{4,}(?:/\d+)?"), "{run}"),
    (re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?"), "{time}"),
    (re.compile(r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"), "{uuid}"),
)
MAX_DIFFS = 20  # a divergence says at most this many fields, and how many more differ
WIDTH = 160  # characters of each side of a field shown


def places_of(record_folder: Path) -> list[tuple[str, str]]:
    """What of a route's record folder's run varies: its job's folder (a trial's `.work/relay` is three below it)."""
    if len(record_folder.parents) < 3:  # a record folder outside a job (relay serve's): nothing of a run to drop
        return []
    job = record_folder.parents[2]
    paths = {str(job), str(job.resolve())}
    return [(p, "{job}") for p in sorted(paths, key=len, reverse=True)]


def normalized(body: Any, places: Iterable[tuple[str, str]]) -> Any:
    places = list(places)
    if isinstance(body, dict):
        body = {k: v for k, v in body.items() if k not in DROPPED}
    return _walk(body, places)


def _walk(value: Any, places: list[tuple[str, str]]) -> Any:
    if isinstance(value, str):
        for text, mark in places:
            value = value.replace(text, mark)
        for pattern, mark in _SHAPES:
            value = pattern.sub(mark, value)
        return value
    if isinstance(value, dict):
        return {k: _walk(v, places) for k, v in value.items()}
    if isinstance(value, list):
        return [_walk(v, places) for v in value]
    return value


def digest(normal: Any) -> str:
    return hashlib.sha256(orjson.dumps(normal, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS)).hexdigest()


@attrs.frozen
class Difference:
    """One field that differs: its path (`messages[3].content`), the recorded value and the new one, each cut to WIDTH."""

    path: str
    old: str
    new: str


def differences(old: Any, new: Any, limit: int = MAX_DIFFS) -> tuple[list[Difference], int]:
    """The fields of two normalized requests that differ (at most `limit`), and how many in all."""
    found: list[Difference] = []
    count = _compare(old, new, "", found, limit)
    return found, count


_ABSENT = object()


def _compare(old: Any, new: Any, path: str, found: list[Difference], limit: int) -> int:
    if type(old) is type(new) and isinstance(old, dict):
        return sum(_compare(old.get(k, _ABSENT), new.get(k, _ABSENT), f"{path}.{k}" if path else k, found, limit)
                   for k in list(old) + [k for k in new if k not in old])
    if type(old) is type(new) and isinstance(old, list):
        return sum(_compare(old[i] if i < len(old) else _ABSENT, new[i] if i < len(new) else _ABSENT, f"{path}[{i}]", found, limit)
                   for i in range(max(len(old), len(new))))
    if old == new:
        return 0
    if len(found) < limit:
        found.append(_shown(path or "$", old, new))
    return 1


def _shown(path: str, old: Any, new: Any) -> Difference:
    if isinstance(old, str) and isinstance(new, str):
        at = next((i for i, (a, b) in enumerate(zip(old, new)) if a != b), min(len(old), len(new)))
        start = max(0, at - WIDTH // 4)
        return Difference(path, _window(old, start), _window(new, start))
    return Difference(path, _text(old), _text(new))


def _window(text: str, start: int) -> str:
    piece = text[start:start + WIDTH]
    return ("…" if start else "") + piece + ("…" if start + WIDTH < len(text) else "")


def _text(value: Any) -> str:
    if value is _ABSENT:
        return "(absent)"
    text = jsonfast.dumps_text(value)
    return text if len(text) <= WIDTH else text[:WIDTH] + "…"
