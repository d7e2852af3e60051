"""A standalone Python for an agent in a task's own image: installed once by uv, read-only at /opt/nullius/python.

A task's image may have no Python, another one, or its libraries elsewhere;
this machine's interpreter, mounted at its path, needs this machine's
shared libraries and folders (a pyenv under /root). So the agent runs on a
standalone Python instead: `uv python install <minor>` with the pinned uv
(`uv==0.13.9`, whose list names each build and its sha256), into
STANDARD_DIR/runtimes/python/<minor>-<digest>/, once (a file lock), its
record in `runtime.json` there. uv's default source is python-build-standalone's
releases on GitHub; `UV_PYTHON_INSTALL_MIRROR` (a copy of those releases) or
`UV_PYTHON_DOWNLOADS_JSON_URL` (a list of builds of your own, each with its
url and sha256) name another, and the digest covers them. uv's own config
files are not read (`--no-config`).

An agent whose install is a Python environment runs its environment on it:
in the container the environment's `bin` and `pyvenv.cfg` are replaced by a
view made here (its interpreters link to the standalone's, `home` names it;
its scripts, whose first line names the environment's python, are copied), so
the start command and every script of the environment stay as they are. An
agent started as `python3` gets the standalone's python instead.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from nullius_core.secret_names import without_secrets

PYTHON_DIR = "/opt/nullius/python"
PYTHON3 = "3.11"  # the minor an agent started as `python3` runs on
SOURCES = ("UV_PYTHON_INSTALL_MIRROR", "UV_PYTHON_DOWNLOADS_JSON_URL")
INSTALL_SECONDS = 900
_BARE = re.compile(r"python(3(\.\d+)?)?")


class RuntimeUnavailable(Exception):
    """The standalone Python could not be installed; says why."""


@attrs.frozen
class PythonRuntime:
    folder: Path  # the installed Python here (its bin/, lib/)
    version: str  # what the install is, as uv names it: 3.11.2
    name: str  # uv's key: cpython-3.11.2-linux-x86_64-gnu
    build: str  # its build (python-build-standalone's release), from its BUILD file
    uv: str
    source: str

    def record(self) -> dict[str, Any]:
        return {"python": self.version, "name": self.name, "build": self.build, "uv": self.uv, "source": self.source,
                "at": PYTHON_DIR}

    def binary(self, minor: str) -> str:
        return f"{PYTHON_DIR}/bin/python{minor}"


def venvs(folders: Iterable[Path]) -> dict[Path, str]:
    """The Python environments in these folders (`.venv`, or the folder itself), each with its minor version."""
    found = {}
    for folder in folders:
        for venv in (folder / ".venv", folder):
            cfg = venv / "pyvenv.cfg"
            if cfg.is_file():
                said = {k.strip(): v.strip() for k, _, v in (line.partition("=") for line in cfg.read_text().splitlines())}
                full = said.get("version_info") or said.get("version") or ""  # uv writes the one, venv the other
                if re.match(r"\d+\.\d+", full):
                    found[venv.resolve()] = ".".join(full.split(".")[:2])
    return found


def bare_python(argv: Sequence[str]) -> str | None:
    """The minor of a start command's first word when it is `python3` (PYTHON3), `python` or `python3.N`, else None."""
    if not argv or not _BARE.fullmatch(argv[0]):
        return None
    return argv[0][len("python"):] if "." in argv[0] else PYTHON3


def key(minor: str, env: Mapping[str, str] = os.environ) -> str:
    """The install's folder name: the minor, and the digest of the pinned uv and the sources named."""
    sources = {name: env.get(name, "") for name in SOURCES}
    listing = sources["UV_PYTHON_DOWNLOADS_JSON_URL"].removeprefix("file://")
    if listing and Path(listing).is_file():  # a list here: its content names the builds
        sources["listing_sha256"] = hashlib.sha256(Path(listing).read_bytes()).hexdigest()
    made = json.dumps({"uv": uv_version(), "minor": minor, **sources}, sort_keys=True)
    return f"{minor}-{hashlib.sha256(made.encode()).hexdigest()[:12]}"


def uv_version() -> str:
    from importlib.metadata import version

    return version("uv")


def source() -> str:
    named = [f"{name}={os.environ[name]}" for name in SOURCES if os.environ.get(name)]
    return ", ".join(named) or "python-build-standalone's releases on GitHub (uv's own list)"


def ensure(runtimes: Path, minor: str) -> PythonRuntime:
    """The standalone Python of `minor`, installed first when it is not (one installer at a time); RuntimeUnavailable says why not."""
    folder = runtimes / "python" / key(minor)
    record = folder / "runtime.json"
    if not record.is_file():
        folder.parent.mkdir(parents=True, exist_ok=True)
        with open(folder.parent / f"{folder.name}.lock", "w") as held:
            fcntl.flock(held, fcntl.LOCK_EX)
            if not record.is_file():  # installed by another run while this one waited
                _install(folder, minor)
    said = json.loads(record.read_text())
    return PythonRuntime(folder=folder / said["folder"], version=said["python"], name=said["name"], build=said["build"],
                         uv=said["uv"], source=said["source"])


def _install(folder: Path, minor: str) -> None:
    shutil.rmtree(folder, ignore_errors=True)  # what a killed install left
    folder.mkdir(parents=True)
    try:
        _uv_install(folder, minor)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)  # a failed install leaves nothing: the next run tries again
        raise


def _uv_install(folder: Path, minor: str) -> None:
    from uv import find_uv_bin

    argv = [find_uv_bin(), "--no-config", "python", "install", minor, "--install-dir", str(folder), "--no-bin"]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=INSTALL_SECONDS, env=without_secrets(os.environ))
    except subprocess.TimeoutExpired:
        raise RuntimeUnavailable(f"`uv python install {minor}` took more than {INSTALL_SECONDS} s") from None
    if done.returncode != 0:
        said = " ".join(line.strip() for line in done.stderr.strip().splitlines()[-4:])
        raise RuntimeUnavailable(f"`uv python install {minor}` failed ({done.returncode}) from {source()}: {said[-600:]}")
    installed = [p for p in folder.iterdir() if p.is_dir() and not p.is_symlink() and p.name.startswith(f"cpython-{minor}.")]
    if len(installed) != 1 or not (installed[0] / "bin" / f"python{minor}").exists():
        raise RuntimeUnavailable(f"`uv python install {minor}` left no python{minor} in {folder}: {sorted(p.name for p in folder.iterdir())}")
    python = installed[0]
    build = (python / "BUILD").read_text().strip() if (python / "BUILD").is_file() else ""
    record = {"folder": python.name, "python": python.name.split("-")[1], "name": python.name, "build": build, "uv": uv_version(),
              "source": source()}
    (folder / "runtime.json.part").write_text(json.dumps(record, indent=2) + "\n")
    os.replace(folder / "runtime.json.part", folder / "runtime.json")  # last: what makes it count


def view(runtime: PythonRuntime, venv: Path, minor: str, views: Path) -> Path:
    """The environment as the container sees it: `bin` (its interpreters the standalone's, its scripts copied) and `pyvenv.cfg`.

    Made once per environment and runtime, whole or not at all.
    """
    listing = sorted(p.name for p in (venv / "bin").iterdir())
    made = json.dumps({"venv": str(venv), "cfg": (venv / "pyvenv.cfg").read_text(), "bin": listing, "runtime": runtime.name})
    folder = views / hashlib.sha256(made.encode()).hexdigest()[:16]
    if folder.is_dir():
        return folder
    views.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(dir=views, prefix=".part-"))
    (scratch / "bin").mkdir()
    for entry in (venv / "bin").iterdir():
        target = scratch / "bin" / entry.name
        if _BARE.fullmatch(entry.name) or entry.name == f"python{minor}":
            target.symlink_to(runtime.binary(minor))  # resolves inside the container alone
        elif entry.is_symlink():
            target.symlink_to(os.readlink(entry))
        elif entry.is_file():
            shutil.copy2(entry, target)
    (scratch / "pyvenv.cfg").write_text(f"home = {PYTHON_DIR}/bin\ninclude-system-site-packages = false\nversion = {runtime.version}\n")
    scratch.chmod(0o755)
    try:
        scratch.rename(folder)
    except OSError:  # made by another unit meanwhile
        shutil.rmtree(scratch, ignore_errors=True)
    return folder
