"""A benchmark plugin's tests start its real driver: the driver's environment, installed as a run installs it."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from nullius_core.definitions import Install, structure
from nullius_core.paths import Paths
from nullius_core.run import install as installer
from nullius_core.run.progress import Progress


def driver_environment(name: str, install: dict[str, Any], standard_dir: Path) -> Path:
    """{install}: the environment of a driver whose `driver.install` is `install`, under `standard_dir` (the session's `nullius_installs`).

    Installed by Nullius's own installer, so it is the very folder a run of
    benchmark `name` on that STANDARD_DIR uses (one digest, installed once):
    test processes that ask at once wait for one build, and a build cut
    short leaves no marker and is made again. InstallError says why one fails.
    """
    quiet = Progress(io.StringIO(), bar=False)
    paths = Paths.from_env({"STANDARD_DIR": str(standard_dir), "HOME": str(standard_dir)})
    return installer.ensure(paths, name, structure(install, Install), quiet)
