"""An image made once: found by its tag, else made by one builder at a time (a file lock), its output in the job's log."""

from __future__ import annotations

import fcntl
from collections.abc import Callable
from pathlib import Path
from typing import IO

from nullius_backend_docker import dockercli
from nullius_backend_docker.calls import CallLog
from nullius_backend_docker.dockercli import DockerError
from nullius_core.heartbeat import beating


def once(tag: str, log: Path, lock: Path, make: Callable[[IO[bytes]], int], *, found: str, making: str, failed: Callable[[int], str],
         say: Callable[..., None] = lambda state, tag, **fields: None, calls: CallLog | None = None) -> str:
    """`tag` when it is here; else `make(log)` (its exit status) under `lock`. `found`, `making`: the log's lines; `failed(exit)`: the error."""
    log.parent.mkdir(parents=True, exist_ok=True)
    if dockercli.image_exists(tag, calls):
        note(log, f"{tag}: {found}")
        say("cached", tag)
        return tag
    lock.parent.mkdir(parents=True, exist_ok=True)
    with open(lock, "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        if dockercli.image_exists(tag, calls):  # made by another run while this one waited
            note(log, f"{tag}: {found}")
            say("cached", tag)
            return tag
        say("start", tag)
        note(log, f"{tag}: {making}")
        # a build or a pull may take minutes: said every 30 s while it goes
        with open(log, "ab") as out, beating(lambda seconds: say("running", tag, seconds=seconds)):
            code = make(out)
    if code != 0:
        say("failed", tag)
        raise DockerError(failed(code))
    say("done", tag)
    return tag


def note(log: Path, line: str) -> None:
    with open(log, "a", encoding="utf-8") as out:
        out.write(f"[nullius] {line}\n")


def last_line(log: Path) -> str:
    """The log's last line (what docker said last), shortened."""
    lines = log.read_text(errors="replace").strip().splitlines()
    return lines[-1][-300:] if lines else ""
