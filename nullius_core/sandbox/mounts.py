"""Which folders of this machine a container sees, read-only at their own paths.

An agent's install and definition folder are mounted at their paths; an
agent installed into a Python environment gets that environment's
interpreter the same way.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

REFUSED = (Path("/"), Path("/proc"), Path("/sys"), Path("/dev"), Path("/etc"), Path("/usr"), Path("/bin"), Path("/lib"))


def outermost(paths: Iterable[Path]) -> list[Path]:
    """Existing folders, resolved, none inside another; none of the system's own."""
    found = sorted({p.resolve() for p in paths if p.exists()})
    out: list[Path] = []
    for path in found:
        if path in REFUSED or any(path.is_relative_to(o) for o in out):
            continue
        out.append(path)
    return out


def interpreters_of(folders: Iterable[Path]) -> list[Path]:
    """The base interpreters of the Python environments (`pyvenv.cfg`) in these folders."""
    wanted = []
    for folder in folders:
        for cfg in (folder / ".venv" / "pyvenv.cfg", folder / "pyvenv.cfg"):
            if cfg.is_file():
                for line in cfg.read_text().splitlines():
                    key, _, value = line.partition("=")
                    if key.strip() == "home" and value.strip():
                        wanted.append(Path(value.strip()).resolve().parent)
    return outermost(wanted)
