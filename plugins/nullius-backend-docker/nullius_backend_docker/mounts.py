"""Which folders of this machine a container sees, read-only at their own paths.

The run's relay container runs Nullius's own relay with this machine's Python: its
interpreter, its environment and the packages of every Nullius plugin, read
only. An agent installed into a Python environment gets that environment's
interpreter the same way.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import sys
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


def nullius_python() -> list[Path]:
    """The interpreter, the environment and every `nullius` entry point's package root."""
    wanted = [Path(sys.prefix), Path(sys.base_prefix), Path(sys.executable).resolve().parent.parent]
    for ep in importlib.metadata.entry_points(group="nullius"):
        spec = importlib.util.find_spec(ep.module.split(".")[0])
        if spec is not None and spec.origin:
            wanted.append(Path(spec.origin).resolve().parent.parent)
    return outermost(wanted)


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
