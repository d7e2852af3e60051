"""How a driver (and a capability's process) starts: its command's slots filled, its interpreter, its environment.

The environment is the machine's, without anything named like a secret,
Nullius's own variables (`NULLIUS_*`) or its virtual environment, so that a
driver runs as the upstream's own code would, never on Nullius's packages.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import Any

from nullius_core.catalogue.catalogue import Entry
from nullius_core.contracts.driver import DriverLaunch
from nullius_core.contracts.refused import RunRefused
from nullius_core.definitions import ResolvedBenchmark
from nullius_core.run import install
from nullius_core.secret_names import without_secrets


def process_env() -> dict[str, Any]:
    """The environment of a driver or capability: the machine's, without secrets or Nullius's own venv."""
    env: dict[str, Any] = without_secrets(os.environ)
    for key in [k for k in env if k.startswith("NULLIUS_")] + ["VIRTUAL_ENV", "PYTHONHOME", "PYTHONPATH"]:
        env.pop(key, None)
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if not _inside_own_env(p))
    return env


def _inside_own_env(folder: str) -> bool:
    """A PATH entry of the virtual environment Nullius itself runs in."""
    if sys.prefix == sys.base_prefix or not folder:
        return False
    try:
        return Path(folder).resolve().is_relative_to(Path(sys.prefix).resolve())
    except OSError:
        return False


def machine_python() -> Path:
    """The machine's python3: the first on PATH outside Nullius's own environment."""
    for folder in os.environ.get("PATH", "").split(os.pathsep):
        candidate = Path(folder) / "python3"
        if folder and not _inside_own_env(folder) and os.access(candidate, os.X_OK):
            return candidate
    return Path(getattr(sys, "_base_executable", sys.executable))


def fill(text: str, slots: dict[str, str]) -> str:
    """Replace `{name}` for the given slots only; other braces are left as they are."""
    return re.sub(r"\{([A-Za-z_][A-Za-z0-9_]*)\}", lambda m: slots.get(m.group(1), m.group(0)), text)


def driver_launch(
    bench: ResolvedBenchmark,
    entry: Entry,
    dataset_file: Path | None,
    clone: Path | None,
    install_dir: Path | None,
    options: dict[str, str],
    scratch: Path,
) -> DriverLaunch:
    assert bench.driver is not None
    slots = {"here": str(entry.folder)}
    if install_dir is not None:
        slots["install"] = str(install_dir)
    argv = [fill(arg, slots) for arg in bench.driver.command]
    if argv[0] in ("python3", "python"):
        argv[0] = str(machine_python())
    unfilled_install(bench)
    env = process_env()
    env.update(
        NULLIUS_DATASET=str(dataset_file) if dataset_file else "",
        NULLIUS_UPSTREAM=str(clone) if clone else "",
        NULLIUS_VERSION=bench.version or "",
        NULLIUS_PREFETCH=install.prefetch_folder(install_dir, bench.driver.install),
        PYTHONUNBUFFERED="1",
    )
    for name, value in options.items():
        env[f"NULLIUS_OPTION_{name.upper()}"] = value
    scratch.mkdir(parents=True, exist_ok=True)
    return DriverLaunch(argv=argv, env=env, cwd=scratch, label=f"driver of {bench.ref}")


def unfilled_install(bench: ResolvedBenchmark) -> None:
    """A driver command naming `{install}` without an install to fill it: a definition's mistake, refused before anything runs."""
    assert bench.driver is not None
    if bench.driver.install is None and any("{install}" in arg for arg in bench.driver.command):
        raise RunRefused(f"{bench.ref}: driver.command names {{install}} but driver.install is not set")
