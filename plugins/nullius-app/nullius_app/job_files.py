"""A job's own files, read for the viewer: each path held to the jobs folder, big files read in part, bad records said.

Every path comes through `safety.inside(jobs_dir, ...)`: a job, a trial or a
record that is a link leading out of the jobs folder is not found, as `..`
and an absolute path are. A file that cannot be read (absent, not JSON, not
the shape expected) is an `Unreadable` naming the file and why, which a page
says in place of what it would have shown.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
from aiohttp import web

from nullius_app.safety import inside

TEXT_PART = 64 * 1024  # of a text file, the page shows its first 64 KiB (and says its size)
JSON_WHOLE = 16 * 1024 * 1024  # a JSON record bigger than this is not laid out, only shown in part
LINES_READ = 8 * 1024 * 1024  # of a .jsonl record, the first 8 MiB are read


class Unreadable(Exception):
    """A record that cannot be read: its name in the job, and why."""

    def __init__(self, name: str, why: str):
        self.name = name
        self.why = why
        super().__init__(f"{name}: {why}")


def held(jobs_dir: Path, *parts: str) -> Path | None:
    """jobs_dir/parts..., or None when it lies outside the jobs folder once links are followed (or the name is bad)."""
    try:
        return inside(jobs_dir, "/".join(parts))
    except web.HTTPNotFound:
        return None


def job_folder(jobs_dir: Path, name: str) -> Path:
    """A job of the jobs folder by its name (a folder right under it); HTTPNotFound for anything else."""
    if "/" in name or "\\" in name:
        raise web.HTTPNotFound(text="no such job here")
    found = inside(jobs_dir, name)
    if not found.is_dir() or found.parent != jobs_dir.resolve():
        raise web.HTTPNotFound(text="no such job here")
    return found


def trial_folder(jobs_dir: Path, job: str, trial: str) -> Path:
    """A trial of a job by its name; HTTPNotFound for anything else."""
    folder = job_folder(jobs_dir, job)
    if "/" in trial or "\\" in trial or trial.startswith("."):
        raise web.HTTPNotFound(text="no such trial here")
    found = inside(jobs_dir, f"{job}/{trial}")
    if not found.is_dir() or found.parent != folder:
        raise web.HTTPNotFound(text="no such trial here")
    return found


def record(jobs_dir: Path, folder: Path, name: str) -> Path | None:
    """A record of a job's or trial's folder (`agent/trace.json`), or None when absent or a link leading out."""
    relative = folder.relative_to(jobs_dir.resolve())
    found = held(jobs_dir, str(relative), name)
    return found if found is not None and found.is_file() else None


def read_json(path: Path | None, name: str, whole: int = JSON_WHOLE) -> Any:
    """The JSON of a record; Unreadable when absent, too big to lay out, or not JSON."""
    if path is None:
        raise Unreadable(name, "not here")
    try:
        size = path.stat().st_size
        if size > whole:
            raise Unreadable(name, f"{size_text(size)}: too big to lay out here")
        return json.loads(path.read_bytes())
    except OSError as exc:
        raise Unreadable(name, exc.strerror or str(exc)) from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise Unreadable(name, f"not JSON ({exc})") from None


def read_object(path: Path | None, name: str) -> dict[str, Any]:
    found = read_json(path, name)
    if not isinstance(found, dict):
        raise Unreadable(name, f"expected a JSON object, found {type(found).__name__}")
    return found


@attrs.frozen
class Part:
    """A text file as the page shows it: its first bytes, and how big it is."""

    text: str
    size: int
    shown: int

    @property
    def cut(self) -> bool:
        return self.shown < self.size

    @property
    def said(self) -> str:
        if self.cut:
            return f"{size_text(self.size)}: its first {size_text(self.shown)} shown"
        return size_text(self.size)


def read_part(path: Path | None, limit: int = TEXT_PART) -> Part | None:
    """A text file's first `limit` bytes (cut at a line's end where one is near), or None when absent."""
    if path is None:
        return None
    try:
        size = path.stat().st_size
        with path.open("rb") as handle:
            head = handle.read(limit)
    except OSError:
        return None
    if len(head) < size:
        end = head.rfind(b"\n")
        if end > limit // 2:
            head = head[: end + 1]
    return Part(text=head.decode(errors="replace"), size=size, shown=len(head))


def read_lines(path: Path | None, name: str, limit: int = LINES_READ) -> tuple[list[dict[str, Any]], int, bool]:
    """A .jsonl record's objects from its first `limit` bytes: (lines, the file's size, whether some were not read)."""
    if path is None:
        return [], 0, False
    out: list[dict[str, Any]] = []
    try:
        size = path.stat().st_size
        for line in _lines(path, limit):
            try:
                found = json.loads(line)
            except ValueError:
                raise Unreadable(name, f"line {len(out) + 1} is not JSON") from None
            if isinstance(found, dict):
                out.append(found)
    except OSError as exc:
        raise Unreadable(name, exc.strerror or str(exc)) from None
    return out, size, size > limit


def _lines(path: Path, limit: int) -> Iterator[bytes]:
    """The whole lines of the file's first `limit` bytes (a line cut by the limit is left out)."""
    read = 0
    with path.open("rb") as handle:
        for line in handle:
            read += len(line)
            if read > limit:
                return
            if line.strip():
                yield line


def size_text(size: int) -> str:
    """A size as a person reads it: 812 bytes, 64.0 KiB, 3.2 MiB."""
    if size < 1024:
        return f"{size} bytes"
    if size < 1024 * 1024:
        return f"{size / 1024:.1f} KiB"
    return f"{size / (1024 * 1024):.1f} MiB"


def dig(data: Any, *keys: str | int, default: Any = None) -> Any:
    """data[k1][k2]..., or `default` where a step is missing or of another kind (records are read defensively)."""
    for key in keys:
        if isinstance(key, int) and isinstance(data, list) and -len(data) <= key < len(data):
            data = data[key]
        elif isinstance(key, str) and isinstance(data, dict) and key in data:
            data = data[key]
        else:
            return default
    return data
