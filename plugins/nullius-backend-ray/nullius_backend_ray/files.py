"""A unit's folders as one tar in memory: to the node before its agent starts, back before its checks run.

The tar keeps links as links (an agent's link that leads out of its
workspace is the driver's to take out, as on every backend) and is unpacked
with tarfile's `tar` filter: no member lands outside its folder, a link
followed included.
"""

from __future__ import annotations

import io
import shutil
import tarfile
from collections.abc import Mapping
from pathlib import Path


def pack(folders: Mapping[str, Path]) -> bytes:
    """Each folder under its name ('workspace', 'home')."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        for name, folder in folders.items():
            tar.add(str(folder), arcname=name, recursive=True)
    return out.getvalue()


def unpack(data: bytes, folders: Mapping[str, Path]) -> None:
    """Each named folder emptied, then filled from the tar (what the tar lacks stays empty)."""
    for folder in folders.values():
        if folder.exists():
            for child in folder.iterdir():
                if child.is_dir() and not child.is_symlink():
                    shutil.rmtree(child)
                else:
                    child.unlink()
        folder.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r") as tar:
        for member in tar.getmembers():
            name, _, rest = member.name.partition("/")
            if name not in folders:
                raise ValueError(f"the unit's files hold {member.name!r}, outside its folders")
            if not rest:
                continue  # the folder itself: made above, its mode kept as it is here
            member.name = rest
            tar.extract(member, str(folders[name]), filter="tar")
