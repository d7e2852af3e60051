"""What `nullius merge` reads of each trial: its result.json, and the few fields of its own record that a merge checks.

A merge reads every trial's result.json once, one at a time (a merge of
100,000 trials holds one record, not all), by its name in the job's folder
with four system calls, not through a Path and pathlib's seven.

Each record's `standard` block is held to `TrialOwn` as `read_trial_own()`
holds it, but a block of plain fields (a string, a number, true or false, an
object of anything, or null where the field allows it) is checked here, field
by field, as the strict converter would check it: cattrs structured 13,190
blocks in 0.44 s to read four strings of each. A block with anything else (a
nested record, an unknown key, a missing one, a value of another kind) goes
to `read_trial_own()` itself, which accepts it or names what is wrong, as
before.
"""

from __future__ import annotations

import errno
import json
import os
import types
import typing
from collections.abc import Callable, Iterator
from typing import Any

import attrs

from nullius_core import handed
from nullius_core.definitions.converter import json_key
from nullius_core.jobs.standard import TrialOwn, read_trial_own


def read_results(job: str, names: list[str]) -> Iterator[tuple[str, dict[str, Any] | None]]:
    """Each trial's result.json parsed, one at a time, in `names`' order; None where it is missing or not JSON, as
    `TrialDir.read_result()` says."""
    for name in names:
        yield name, _parsed(_read(f"{job}/{name}/result.json"))


def _read(path: str) -> bytes | None:
    """The file's bytes (five system calls, not pathlib's seven); None when it is not there. A job merged may be someone
    else's: a record that is a link, or larger than a record can be, is refused (handed.Refused), never read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise handed.Refused(path, "expected a file, found a link") from None
        raise
    try:
        size = os.fstat(fd).st_size
        if size > handed.RECORD_BYTES:
            raise handed.Refused(path, f"expected at most {handed.RECORD_BYTES} bytes, found {size}")
        parts = []
        while chunk := os.read(fd, 1 << 16):
            parts.append(chunk)
        return b"".join(parts)
    finally:
        os.close(fd)


def _parsed(data: bytes | None) -> dict[str, Any] | None:
    """`data` read as `TrialDir.read_result()` reads it, by the standard library: orjson, twice as fast, makes a float of an
    integer past 64 bits, and a guard against that cost here what orjson saved."""
    if data is None:
        return None
    try:
        return json.loads(data.decode())
    except json.JSONDecodeError:
        return None


def own_fields(result: Any, file: str) -> dict[str, Any] | None:
    """The trial's own record (result.json's `standard`) as a mapping of its fields, held to `TrialOwn`; None when it has none.

    Raises `read_trial_own()`'s JobRecordError for a block that is not a TrialOwn."""
    block = result.get("standard") if isinstance(result, dict) else None
    if block is None:
        return None
    if _plain_and_valid(block):
        return {key: block.get(key, default) for key, default in _DEFAULTS.items()}
    own = read_trial_own(result, file)
    return {key: getattr(own, key) for key in _DEFAULTS}


def _plain_and_valid(block: Any) -> bool:
    """True when every field is one this module checks, of the kind the strict converter accepts, and none required is missing."""
    if not _CHECKS or not isinstance(block, dict):
        return False
    for key, value in block.items():
        check = _CHECKS.get(key)
        if check is None or not check(value):
            return False
    return _REQUIRED <= block.keys()


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


_PLAIN: dict[Any, Callable[[Any], bool]] = {
    str: lambda v: isinstance(v, str),
    int: _is_int,
    bool: lambda v: isinstance(v, bool),
    Any: lambda v: True,
}


def _check_of(kind: Any) -> Callable[[Any], bool]:
    """How the strict converter (definitions/converter.py) accepts a value of `kind`, for the plain kinds; a nested record's
    value is never accepted here (only its null, where allowed), so that cattrs reads it."""
    if kind in _PLAIN:
        return _PLAIN[kind]
    if typing.get_origin(kind) is dict and typing.get_args(kind)[1:] in ((), (Any,)):
        return lambda v: isinstance(v, dict)  # an object of anything: its keys are JSON's strings
    if typing.get_origin(kind) in (typing.Union, types.UnionType) and type(None) in typing.get_args(kind):
        others = [a for a in typing.get_args(kind) if a is not type(None)]
        inner = _check_of(others[0]) if len(others) == 1 else _never
        return lambda v: v is None or inner(v)
    return _never


def _never(value: Any) -> bool:
    return False


def _checks(cls: type) -> dict[str, Callable[[Any], bool]]:
    """Each JSON key of `cls` and its check; none at all for a class that checks invariants or keeps extension keys."""
    if getattr(cls, "_invariants", None) is not None or any(a.name == "extensions" for a in attrs.fields(cls)):
        return {}
    hints = typing.get_type_hints(cls)
    return {json_key(a): _check_of(hints[a.name]) for a in attrs.fields(cls)}


_CHECKS = _checks(TrialOwn)
_REQUIRED = frozenset(json_key(a) for a in attrs.fields(TrialOwn) if a.default is attrs.NOTHING)
# the fields a merge holds each trial to, and what TrialOwn gives one the block leaves out
_DEFAULTS = {key: attrs.fields_dict(TrialOwn)[key].default for key in ("job", "benchmark", "dataset", "control")}
