"""No check reads through a link the agent planted: what leads out of the workspace is taken out before the driver looks.

A driver reads the workspace on this machine, as you; an agent in a
container plants `answer.txt -> /etc/shadow`, harmless inside its container,
and the driver would copy this machine's file into the job. So before every
driver op that follows the agent (`turn`, `score`), the core walks the
workspace and replaces each link that resolves outside it (a symbolic link,
or a hard link to a file with names elsewhere) by a small regular file
saying what it was; `verifier/links.txt` lists each one. Links that stay
inside the workspace are left as they are. A backend that copies files out
of a container for the check (a box's `collect`) notes a link it refuses
the same way (`noted`).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import attrs

NOTE = "nullius: this was {kind} to {target}, which leads outside the workspace; it was taken out before the check\n"


@attrs.frozen
class TakenOut:
    path: str  # relative to the workspace
    kind: str  # "a symbolic link" or "a hard link"
    target: str

    def line(self) -> str:
        return f"{self.path}\t{self.kind}\t{self.target}\n"


def noted(path: Path, root: Path, kind: str, target: str, links_file: Path) -> TakenOut:
    """A link at `path` (already removed, or never made) becomes the note saying what it was; `links_file` lists it."""
    taken = _replace(str(path), str(root), kind, target)
    _list([taken], links_file)
    return taken


def take_out(workspace: Path, links_file: Path) -> list[TakenOut]:
    """Replace every link of `workspace` that leads outside it; append each to `links_file`. What was taken out."""
    root = os.path.realpath(workspace)
    taken: list[TakenOut] = []
    if os.path.islink(workspace):  # the workspace itself swapped for a link (an agent on the local backend can)
        target = os.readlink(workspace)
        os.unlink(workspace)
        os.mkdir(workspace)
        taken.append(TakenOut(".", "a symbolic link", target))
        root = os.path.realpath(workspace)
    inodes: dict[tuple[int, int], list[str]] = {}
    for folder, dirs, files in os.walk(root, followlinks=False):
        for name in [*dirs, *files]:
            path = os.path.join(folder, name)
            try:
                info = os.lstat(path)
            except OSError:
                continue
            if stat.S_ISLNK(info.st_mode):
                if not _inside(os.path.realpath(path), root):
                    taken.append(_replace(path, root, "a symbolic link", os.readlink(path)))
            elif stat.S_ISREG(info.st_mode) and info.st_nlink > 1:
                inodes.setdefault((info.st_dev, info.st_ino), []).append(path)
    for paths in inodes.values():
        links = os.lstat(paths[0]).st_nlink
        if len(paths) < links:  # some of its names are outside the workspace
            taken += [_replace(path, root, "a hard link", f"a file with {links - len(paths)} name(s) outside") for path in paths]
    _list(taken, links_file)
    return taken


def _list(taken: list[TakenOut], links_file: Path) -> None:
    if taken:
        links_file.parent.mkdir(parents=True, exist_ok=True)
        with open(links_file, "a", encoding="utf-8") as out:
            out.writelines(t.line() for t in taken)


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _replace(path: str, root: str, kind: str, target: str) -> TakenOut:
    if os.path.lexists(path):
        os.unlink(path)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(path, flags, 0o644)
    with os.fdopen(fd, "w", encoding="utf-8") as note:
        note.write(NOTE.format(kind=kind, target=target))
    return TakenOut(os.path.relpath(path, root), kind, target)
