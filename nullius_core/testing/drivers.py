"""A benchmark plugin's tests start its real driver: the driver's environment, installed once per set of pins."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any


def python311() -> str:
    """Python 3.11 (the one these tests run on, else on PATH): the interpreter driver.install's `python: 3.11` names."""
    if sys.version_info[:2] == (3, 11):
        return getattr(sys, "_base_executable", sys.executable)
    found = shutil.which("python3.11")
    if found is None:
        raise RuntimeError("the driver's environment needs Python 3.11 (driver.install.python); none is on PATH")
    return found


def driver_environment(name: str, install: dict[str, Any]) -> Path:
    """{install}: a venv with `install["pip"]`'s pins, made once per set of pins under the system temp folder.

    Test processes that ask at once wait for one build (a lock beside it); a
    build cut short leaves no marker, and is made again.
    """
    key = hashlib.sha256(json.dumps(install, sort_keys=True).encode()).hexdigest()[:16]
    root = Path(tempfile.gettempdir()) / "nullius-plugin-tests" / f"{name}-{key}"
    root.parent.mkdir(parents=True, exist_ok=True)
    with open(root.parent / f".{root.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (root / ".installed").exists():
            shutil.rmtree(root, ignore_errors=True)
            env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
            subprocess.run([python311(), "-m", "venv", str(root / ".venv")], check=True, env=env)
            done = subprocess.run([str(root / ".venv/bin/python"), "-m", "pip", "install", "--quiet", *install["pip"]],
                                  capture_output=True, text=True, env=env)
            if done.returncode != 0:
                raise RuntimeError(f"pip install of driver.install.pip failed:\n{done.stderr[-3000:]}")
            if install.get("no_deps"):
                done = subprocess.run([str(root / ".venv/bin/python"), "-m", "pip", "install", "--quiet", "--no-deps",
                                       *install["no_deps"]], capture_output=True, text=True, env=env)
                if done.returncode != 0:
                    raise RuntimeError(f"pip install --no-deps of driver.install.no_deps failed:\n{done.stderr[-3000:]}")
            (root / ".installed").write_text(json.dumps(install))
    return root
