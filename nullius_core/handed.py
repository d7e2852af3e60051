"""What someone else hands a user (a job, a trial, a task folder), read without letting it reach out of itself.

A folder handed over is its own root: a path in it is used only when, once
every link is followed, it still lies under that root; a name read from a
record (a trial's name, a job's) is used as one plain path part or not at
all; a file is read only up to a bound, measured by its size before reading
(a sparse file of gigabytes is refused, not read) and held to while reading.
Each refusal is one line naming the file and what was expected: Refused.

Nullius's own writers never need this; every command that reads a job it did
not just write does (export first; view, rescore, replay, merge, calibrate,
the app and the mirror next).
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

RECORD_BYTES = 64 * 1024 * 1024  # a record (result.json, a trajectory) larger than this is not a record Nullius wrote
NAME_CHARS = 255


class Refused(ValueError):
    """A handed file or name refused: str() is `FILE: what was expected`."""

    def __init__(self, path: Path | str, expected: str):
        super().__init__(f"{path}: {expected}")
        self.path = Path(path)
        self.expected = expected


def within(root: Path, path: Path) -> Path:
    """`path` (under `root`, or relative to it) once every link is followed, refused unless it still lies under root."""
    base = root.resolve()
    target = (base / path).resolve() if not path.is_absolute() else path.resolve()
    if target != base and not target.is_relative_to(base):
        raise Refused(path if path.is_absolute() else root / path, f"leads out of {root} (a link to {target})")
    return target


def plain_name(value: object, where: Path | str, field: str) -> str:
    """A name from a record, fit to be one part of a path: a non-empty string with no separator, not `.` or `..`."""
    if (not isinstance(value, str) or not value or value in (".", "..") or "/" in value or "\\" in value or "\x00" in value
            or len(value) > NAME_CHARS):
        raise Refused(where, f"{field}: expected a plain name (no '/', not '..', at most {NAME_CHARS} characters), "
                             f"found {str(value)[:80]!r}")
    return value


def read_bytes(root: Path, path: Path, limit: int = RECORD_BYTES) -> bytes:
    """A regular file under root, whole, refused when it is larger than `limit` bytes or is not a regular file."""
    real = within(root, path)
    try:
        fd = os.open(real, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        raise  # absent is the caller's question (an optional file), not a refusal
    except OSError as exc:
        raise Refused(real, f"cannot be read ({exc.strerror})") from None
    with os.fdopen(fd, "rb") as file:
        info = os.fstat(file.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise Refused(real, "expected a regular file")
        if info.st_size > limit:
            raise Refused(real, f"expected at most {limit} bytes, found {info.st_size}")
        data = file.read(limit + 1)
    if len(data) > limit:  # it grew while being read
        raise Refused(real, f"expected at most {limit} bytes")
    return data


def read_json(root: Path, path: Path, limit: int = RECORD_BYTES) -> Any:
    """read_bytes, as JSON; not JSON is refused, naming the file."""
    data = read_bytes(root, path, limit)
    try:
        return json.loads(data)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise Refused(within(root, path), f"expected JSON ({exc})") from None


def links_out(root: Path) -> list[Path]:
    """Every link under root that leads out of it once followed as the kernel follows it (links through links included)."""
    found = []
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(folder) / name
            if path.is_symlink():
                try:
                    within(root, path.relative_to(root))
                except Refused:
                    found.append(path)
    return found


def copy_file(root: Path, source: Path, target: Path, limit: int = RECORD_BYTES) -> None:
    """read_bytes of source, written to target (a new file or replacing one: never through a link at target)."""
    data = read_bytes(root, source, limit)
    if target.is_symlink():
        target.unlink()
    target.write_bytes(data)
