"""What goes in and out of a box as files: the check's files as one archive, the collected folder, `docker diff` without docker's own."""

from __future__ import annotations

import fnmatch
import io
import os
import tarfile
import time
from pathlib import Path

from nullius_core.contracts.own_image import Steps, VerifyProblem
from nullius_core.links import noted

OURS_IN_VERIFIER = {"test-stdout.txt", "stopped.txt", "egress.log", "links.txt"}  # the run's own records, never replaced by collected files


def archive(source: Path, steps: Steps) -> bytes:
    buffer = io.BytesIO()
    now = time.time()
    made: set[str] = set()

    def folders(inside: str) -> None:
        parts = Path(inside.lstrip("/")).parts
        for i in range(1, len(parts)):
            name = "/".join(parts[:i])
            if name not in made:
                made.add(name)
                info = tarfile.TarInfo(name)
                info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o755, now
                tar.addfile(info)

    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for relative, inside in steps.copy.items():
            folder = source / relative
            if not folder.exists():
                raise VerifyProblem(f"{relative!r} is not in the upstream ({folder})")
            folders(inside + "/x")
            tar.add(str(folder), arcname=inside.strip("/"))
        for inside, text in steps.write.items():
            folders(inside)
            data = text.encode()
            info = tarfile.TarInfo(inside.lstrip("/"))
            info.size, info.mode, info.mtime = len(data), 0o644, now
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def folder_archive(folder: Path, inside: str) -> bytes:
    """Every file under `folder` as a tar to extract at the box's root, each at `inside`/its path (a variant's files)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for path in sorted(folder.rglob("*")):
            if path.is_file() and not path.is_symlink():
                info = tar.gettarinfo(str(path), arcname=f"{inside.strip('/')}/{path.relative_to(folder).as_posix()}")
                info.uid = info.gid = 0
                info.uname = info.gname = ""
                info.mode = 0o644
                with open(path, "rb") as file:
                    tar.addfile(info, file)
    return buffer.getvalue()


def extract(data: bytes, verifier_dir: Path) -> list[str]:
    """The collected folder's files into verifier/, beside the run's own (which they never replace).

    A link leading outside verifier/ is not made: its note is, listed in
    verifier/links.txt, as the core does for the workspace.
    """
    found = []
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        for member in tar.getmembers():
            parts = Path(member.name).parts[1:]  # the collected folder's own name goes
            if not parts or (len(parts) == 1 and parts[0] in OURS_IN_VERIFIER):
                continue
            member.name = "/".join(parts)
            try:
                tar.extract(member, verifier_dir, filter="data")
            except tarfile.FilterError:
                kind = "a symbolic link" if member.issym() else "a hard link" if member.islnk() else "an entry"
                (verifier_dir / member.name).parent.mkdir(parents=True, exist_ok=True)
                noted(verifier_dir / member.name, verifier_dir, kind, member.linkname or member.name, verifier_dir / "links.txt")
                continue
            if member.isfile():
                found.append(member.name)
    return sorted(found)


def extract_artifact(data: bytes, target: Path, exclude: list[str]) -> tuple[str, str]:
    """An artifact `docker cp` gave (a file, or a folder whose own name goes) at `target`: (file|directory, ok|empty).

    Links are not made (tarfile's data filter refuses those leading out);
    a folder's entries matching an `exclude` pattern are left out.
    """
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        members = tar.getmembers()
        top = members[0] if members else None
        if top is None or not top.isdir():
            target.parent.mkdir(parents=True, exist_ok=True)
            source = tar.extractfile(top) if top is not None and top.isfile() else None
            target.write_bytes(source.read() if source is not None else b"")
            return "file", "ok"
        target.mkdir(parents=True, exist_ok=True)
        kept = 0
        for member in members[1:]:
            parts = Path(member.name).parts[1:]
            inner = "/".join(parts)
            # as tar's --exclude: a pattern matches a path, or any of its folders, whole or by its last name
            heads = ["/".join(parts[:i]) for i in range(1, len(parts) + 1)]
            if any(fnmatch.fnmatch(h, p) or fnmatch.fnmatch(Path(h).name, p) for h in heads for p in exclude):
                continue
            member.name = inner
            try:
                tar.extract(member, target, filter="data")
            except tarfile.FilterError:
                continue
            kept += member.isfile()
        return "directory", "ok" if kept else "empty"


def without_ours(lines: list[str], points: list[str]) -> list[str]:
    """`docker diff` without what docker made for us: the --init binary and the folders our mounts are made at.

    A line is ours when its path is one of those points or a folder on the
    way to one, and nothing the task or the agent changed lies under it.
    """
    def path(line: str) -> str:
        return line[2:]

    def ours(p: str) -> bool:
        return any(point == p or point.startswith(p.rstrip("/") + "/") for point in points)

    theirs = [path(line) for line in lines if not ours(path(line))]
    return [line for line in lines if not ours(path(line)) or any(t.startswith(path(line).rstrip("/") + "/") for t in theirs)]


def by_path(lines: list[str]) -> list[str]:
    """`docker diff`'s lines in one order, a folder before what is in it (the daemon's own order changes from call to call)."""
    return sorted(lines, key=lambda line: line[2:].split("/"))


def yours(path: Path) -> bool:
    try:
        return path.lstat().st_uid == os.getuid()
    except OSError:
        return True
