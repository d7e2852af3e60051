"""The job on the host, mirrored into this machine's jobs folder: what changed since the last time, each file whole.

One SSH call a mirror: this side says what it has (each file's size and
modification time, which it keeps as the host's), the host answers with a
tar stream: the run's state, the job's every entry and the launcher log's
new lines first, then each file that differs. Each file is written beside
its place and renamed into it, so that a reader here never sees half a
file; what the host no longer has is removed here. The job's
`.nullius-host.json` (where it runs) is this machine's own and stays.

A link in the job is made here only when it leads to a place inside the
job, as it does there, followed as the kernel follows it (links through
links included); one that leads out is not made, and is said.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tarfile
import time
from pathlib import Path, PurePosixPath
from typing import Any

import attrs

from nullius_app.host import ssh
from nullius_core import handed
from nullius_app.host.ssh import Host, HostRefused

HOST_FILE = ".nullius-host.json"
HEAD = ".nullius-mirror.json"
SECONDS = 600


@attrs.frozen
class Mirrored:
    state: dict[str, Any]  # the run's on the host: running, ended (with its exit status), lost
    files: int  # files brought this time
    bytes: int
    seconds: float
    log: str  # the run's output since the last mirror
    log_offset: int
    entries: int = 0  # the job's entries on the host (none: it has made no job)
    links_not_made: tuple[str, ...] = ()

    @property
    def ended(self) -> bool:
        return self.state.get("state") in ("ended", "lost")


def _have(job: Path) -> dict[str, list[int]]:
    out = {}
    for folder, _, files in os.walk(job):
        for name in files:
            path = Path(folder) / name
            rel = path.relative_to(job).as_posix()
            if rel != HOST_FILE and not path.is_symlink():
                st = path.lstat()
                out[rel] = [st.st_size, st.st_mtime_ns]
    return out


def _safe(rel: str) -> bool:
    parts = PurePosixPath(rel).parts
    return bool(parts) and not rel.startswith("/") and ".." not in parts and rel != HOST_FILE


def _clear(path: Path) -> None:
    """Whatever is at path (a file, a link, a folder), gone."""
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.is_dir():
        shutil.rmtree(path)


def _ensure_dir(path: Path, job: Path) -> None:
    for parent in reversed([path, *path.parents]):
        if parent == job or not parent.is_relative_to(job):
            continue
        if parent.is_symlink() or (parent.exists() and not parent.is_dir()):
            _clear(parent)
        parent.mkdir(exist_ok=True)


def _write(job: Path, rel: str, data: bytes, mode: int, mtime_ns: int) -> None:
    target = job / rel
    _ensure_dir(target.parent, job)
    if target.is_dir() and not target.is_symlink():
        shutil.rmtree(target)
    part = target.with_name(f".{target.name}.nullius-part")
    with open(part, "wb") as out:
        out.write(data)
    os.chmod(part, mode & 0o777)
    os.utime(part, ns=(mtime_ns, mtime_ns))
    os.replace(part, target)


def _apply_listing(job: Path, listing: dict[str, list[Any]]) -> list[str]:
    """Folders and links as the host has them; what it no longer has removed. The links not made, said."""
    not_made = []
    for rel, (kind, _, _, mode, target) in sorted(listing.items()):
        if not _safe(rel):
            continue
        path = job / rel
        if kind == "dir":
            _ensure_dir(path, job)
            os.chmod(path, (mode & 0o777) | 0o700)
        elif kind == "link":
            inside = not os.path.isabs(target) and ".." not in PurePosixPath(os.path.normpath(str(PurePosixPath(rel).parent / target))).parts
            if not inside:
                not_made.append(f"{rel} -> {target}")
                continue
            if path.is_symlink() and os.readlink(path) == target:
                continue
            _ensure_dir(path.parent, job)
            _clear(path)
            path.symlink_to(target)
    for folder, dirs, files in os.walk(job, topdown=False):
        for name in files + dirs:
            path = Path(folder) / name
            rel = path.relative_to(job).as_posix()
            if rel != HOST_FILE and rel not in listing and not name.endswith(".nullius-part"):
                _clear(path)
    return not_made + _unmake_links_out(job)


def _unmake_links_out(job: Path) -> list[str]:
    """Links that lead out of the job once followed as the kernel follows them, removed: the check above reads each
    target alone, and a chain of links inside (b/c -> .) can make a path that reads `..` lead anywhere."""
    removed = []
    for path in handed.links_out(job):
        removed.append(f"{path.relative_to(job).as_posix()} -> {os.readlink(path)}")
        path.unlink()
    return removed


def remote_program(snapshot_id: str) -> str:
    """Where remote.py is on the host, from its HOME (a call's working folder)."""
    return f".nullius/app/{snapshot_id}/code/nullius_app/host/remote.py"


def mirror_once(host: Host, python: str, snapshot_id: str, run: str, job: Path, log_offset: int) -> Mirrored:
    """One mirror of the run's job into `job`; HostRefused when the host cannot be reached (the run there goes on)."""
    started = time.monotonic()
    job.mkdir(parents=True, exist_ok=True)
    asked = json.dumps({"have": _have(job), "log": log_offset}).encode()
    proc = ssh.popen(host, [python, remote_program(snapshot_id), "mirror", run], stdin=subprocess.PIPE,
                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    head: dict[str, Any] | None = None
    count = size = 0
    try:
        proc.stdin.write(asked)
        proc.stdin.close()
        with tarfile.open(fileobj=proc.stdout, mode="r|") as archive:
            for member in archive:
                data = archive.extractfile(member).read() if member.isfile() else b""  # type: ignore[union-attr]
                if head is None:
                    head = json.loads(data) if member.name == HEAD else None
                    if head is None:
                        raise HostRefused(f"{host.name} answered a mirror with no listing first")
                    continue
                entry = head["listing"].get(member.name)
                if not member.isfile() or not _safe(member.name) or not entry or entry[0] != "file":
                    continue
                _write(job, member.name, data, entry[3], entry[2])
                count, size = count + 1, size + len(data)
    except (tarfile.TarError, OSError, ValueError) as exc:
        proc.kill()
        said = proc.stderr.read().decode(errors="replace")
        proc.wait()
        if proc.returncode == 255 or not said.strip():
            raise HostRefused(ssh.explain(host, said) if said.strip() else f"{host.name}: the mirror broke off ({exc})") from None
        raise HostRefused(f"{host.name}: the mirror failed: {said.strip()[-800:]}") from None
    said = proc.stderr.read().decode(errors="replace")
    code = proc.wait(SECONDS)
    if code == 255:
        raise HostRefused(ssh.explain(host, said))
    if code != 0 or head is None:
        raise HostRefused(f"{host.name}: the mirror failed ({code}): {said.strip()[-800:]}")
    # no listing: the job is not there yet (or no more): nothing here is removed for it
    not_made = _apply_listing(job, head["listing"]) if head["listing"] else []
    return Mirrored(state=head["state"], files=count, bytes=size, seconds=time.monotonic() - started, log=head.get("log") or "",
                    log_offset=int(head.get("log_offset") or log_offset), entries=len(head["listing"]), links_not_made=tuple(not_made))
