"""A user's folder as a benchmark's dataset (`--dataset PATH`, for a benchmark that declares `dataset_folders`).

The folder is read where it lies, never copied, and pinned by the sha256 of
every file it holds: the job keeps the list as `dataset.sha256` (the format
of `sha256sum`, so `cd FOLDER && sha256sum -c JOB/dataset.sha256` checks the
folder against what ran), and the folder's digest is the sha256 of that
list. `.git` folders and `__pycache__` are left out (a checkout's index and
byte-code change without the tasks changing). A link that leads outside the
folder refuses the run, naming it: what the driver is handed is the folder,
nothing beside it.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

import attrs

from nullius_core.run.data import sha256_file

LEFT_OUT = frozenset({".git", "__pycache__"})
MANIFEST = "dataset.sha256"
_NAME_CHARS = re.compile(r"[^a-z0-9._-]+")


class FolderProblem(ValueError):
    """The folder cannot be a dataset: missing, not a folder, empty, or a link out of it."""


@attrs.frozen(kw_only=True)
class FolderDataset:
    name: str  # the folder's own name, as Harbor names a local dataset's source
    path: Path  # resolved
    sha256: str  # of the manifest
    files: tuple[tuple[str, str], ...]  # (sha256, path relative to the folder), sorted by path

    def manifest(self) -> str:
        return "".join(f"{digest}  {rel}\n" for digest, rel in self.files)


def names_a_folder(value: str | None) -> bool:
    """A `--dataset` value that is a path rather than a declared dataset's name."""
    if not value:
        return False
    return "/" in value or value.startswith((".", "~")) or Path(value).is_dir()


def dataset_name(folder: Path) -> str:
    """The folder's name as a dataset name: lowercase letters, digits, '.', '-' and '_'."""
    return _NAME_CHARS.sub("-", folder.name.lower()).strip("-.") or "folder"


def read_folder(value: str) -> FolderDataset:
    folder = Path(value).expanduser()
    if not folder.exists():
        raise FolderProblem(f"the dataset folder {value} does not exist")
    if not folder.is_dir():
        raise FolderProblem(f"the dataset {value} is not a folder")
    root = folder.resolve()
    files = []
    for rel in _walk(root):
        files.append((sha256_file(root / rel), rel))
    if not files:
        raise FolderProblem(f"the dataset folder {root} holds no file")
    files.sort(key=lambda pair: pair[1])
    body = "".join(f"{digest}  {rel}\n" for digest, rel in files)
    return FolderDataset(name=dataset_name(root), path=root, sha256=hashlib.sha256(body.encode()).hexdigest(), files=tuple(files))


def _walk(root: Path) -> list[str]:
    out = []
    for here, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in LEFT_OUT)
        for name in [*names, *dirs]:
            path = Path(here) / name
            if path.is_symlink():
                target = path.resolve()
                if not target.is_relative_to(root):
                    raise FolderProblem(f"the dataset folder {root}: {path.relative_to(root)} is a link to {target}, outside it; refused")
        out.extend(str((Path(here) / name).relative_to(root)) for name in names if (Path(here) / name).is_file())
    return out


def changed(folder: FolderDataset, sha256: str | None) -> str | None:
    """Why the folder is not the one a job ran (for --resume), or None."""
    if sha256 is not None and folder.sha256 != sha256:
        return f"the dataset folder {folder.path} has changed since the job ran (sha256 {folder.sha256}, the job's {sha256})"
    return None
