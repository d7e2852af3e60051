"""A driver's, agent's or capability's environment: installed once per digest of what makes it, under STANDARD_DIR.

`install` names files downloaded ahead (`prefetch`, first, into
`<install>/prefetch/`), the interpreter, pinned pip requirements, packages
from other indexes, wheels checked by sha256, npm packages and the upstream
project itself; every file fetched by URL goes through download.py. The
Python environment is made and filled by uv (`uv venv`, `uv pip install`),
from uv's shared cache (UV_CACHE_DIR, else uv's default), byte-compiled. The
digest covers everything that makes the environment (`Makings`): that
block, the upstream's commit when the project is installed from its clone,
and the interpreters it is made with (the path and version of the Python
`find_python` picks by running it, of the node npm runs on). So a fork at another commit, a changed pin or another
interpreter is a new environment, and an unchanged one is installed once.
The installer is handed no variable named like a secret.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import attrs

from nullius_core.definitions import Install, unstructure
from nullius_core.definitions.urls import url_file_name
from nullius_core.heartbeat import heartbeat
from nullius_core.paths import Paths
from nullius_core.run.download import DownloadError, download
from nullius_core.run.progress import Progress, Timer
from nullius_core.run.upstream import UpstreamError, cloned_commit
from nullius_core.secret_names import without_secrets

MARKER = ".nullius-installed"
PREFETCH = "prefetch"  # the folder of an install's prefetched files, NULLIUS_PREFETCH
OWN_SCRIPTS = Path(sysconfig.get_path("scripts"))  # the programs of Nullius's own environment (uv, a dependency of nullius-core)

# What an install step says while it goes (a download's bytes): the fields of an `install` progress line.
Say = Callable[..., None]


class InstallError(Exception):
    """The environment cannot be installed; says why."""


@attrs.frozen
class Interpreter:
    """A program an environment is made with and runs on: where it is and what it says its version is."""

    path: str
    version: str


@attrs.frozen(kw_only=True)
class Makings:
    """Everything that makes an environment; its digest names the environment's folder."""

    install: Install
    upstream_commit: str | None = None  # the clone's, when the install builds the upstream's project
    python: Interpreter | None = None  # the venv's base interpreter
    node: Interpreter | None = None  # what npm installs for

    @classmethod
    def of(cls, install: Install, upstream: Path | None) -> Makings:
        commit = None
        if install.project is not None and upstream is not None:
            try:
                commit = cloned_commit(upstream)
            except UpstreamError as exc:
                raise InstallError(str(exc)) from None
        python = find_python(install.python) if wants_python(install) else None
        node = None
        if install.npm:
            exe = shutil.which("node")
            said = _ask([exe, "--version"]) if exe else None
            if said is None:
                raise InstallError(f"the environment installs npm packages, but node {'is not on PATH' if exe is None else f'at {exe} does not run'}")
            node = Interpreter(exe, said)
        return cls(install=install, upstream_commit=commit, python=python, node=node)

    def record(self) -> dict[str, Any]:
        return {
            "install": unstructure(self.install),
            "upstream_commit": self.upstream_commit,
            "python": attrs.asdict(self.python) if self.python else None,
            "node": attrs.asdict(self.node) if self.node else None,
        }


def _ask(argv: list[str]) -> str | None:
    """What a program prints, or None when it does not run or fails."""
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=120, env=without_secrets(os.environ))
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def wants_python(install: Install) -> bool:
    return bool(install.pip or install.no_deps or install.indexes or install.wheels or install.project or install.python)


def digest(makings: Makings) -> str:
    canonical = json.dumps(makings.record(), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def env_dir(paths: Paths, key: str, makings: Makings, kind: str = "drivers") -> Path:
    return paths.standard_dir / kind / key / digest(makings)


def find_python(version: str | None) -> Interpreter:
    """A Python of `version` (3.12, 3.11.7) that runs and says it is that version, never a virtual environment's.

    Nullius's own base interpreter when it is that version (or none is asked
    for), else `pythonX.Y` on PATH, else pyenv's `versions/`: the first that
    answers. A pyenv shim for a version that is not pyenv's global is on
    PATH all the same and fails when run, so being found is not enough.
    """
    base = Path(getattr(sys, "_base_executable", sys.executable))
    if version is None or _is_version(".".join(map(str, sys.version_info[:3])), version):
        return Interpreter(str(base), sys.version)
    short = ".".join(version.split(".")[:2])
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    candidates = [shutil.which(f"python{short}")] + [str(c / "bin" / f"python{short}") for c in sorted(pyenv.glob(f"{version}*"), reverse=True)]
    for exe in candidates:
        said = _ask([exe, "-c", "import sys; print('.'.join(map(str, sys.version_info[:3]))); print(sys.version)"]) if exe else None
        if said is not None and _is_version(said.split("\n", 1)[0], version):
            return Interpreter(exe, said.split("\n", 1)[1] if "\n" in said else said)
    raise InstallError(f"the environment needs Python {version}, which this machine does not have (install it, e.g. with pyenv or uv python install {version})")


def _is_version(full: str, wanted: str) -> bool:
    """3.12.1 is 3.12 and 3.12.1, not 3.1 or 3.12.10."""
    return full.split(".")[: len(wanted.split("."))] == wanted.split(".")


def ensure(
    paths: Paths,
    key: str,
    install: Install,
    progress: Progress,
    upstream: Path | None = None,
    kind: str = "drivers",
    label: str = "driver",
) -> Path:
    """The installed environment's folder (`{install}`), installing it first if needed."""
    makings = Makings.of(install, upstream)
    target = env_dir(paths, key, makings, kind)
    if (target / MARKER).exists():
        progress.stage("install", **{label: key}, state="cached")
        return target
    if makings.python is not None:
        uv_program()  # a missing uv refused now, not after the prefetch and npm steps
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / f".{target.name}.lock", "w") as lock:
        _wait_for(lock, progress, {label: key})  # another run may be installing the same digest
        if (target / MARKER).exists():
            progress.stage("install", **{label: key}, state="cached")
            return target
        progress.stage("install", **{label: key}, state="start", digest=target.name)
        timer = Timer()
        # A venv's scripts name their folder, so it is installed in place; the
        # marker, written last, is what makes it count (a killed install is redone).
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir(parents=True)
        try:
            with heartbeat(progress, "install", **{label: key}):
                _install(target, makings, upstream, lambda **fields: progress.stage("install", **{label: key}, **fields))
        except InstallError:
            progress.stage("install", **{label: key}, state="failed", seconds=timer.seconds)
            shutil.rmtree(target, ignore_errors=True)
            raise
        (target / MARKER).write_text(json.dumps(makings.record(), indent=2) + "\n")
        progress.stage("install", **{label: key}, state="done", seconds=timer.seconds)
    return target


def _wait_for(lock: Any, progress: Progress, named: dict[str, str]) -> None:
    """The install's lock: at once, or said (`state=waiting`, then every 30 s) while another run installs the same environment."""
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return
    except BlockingIOError:
        pass
    progress.stage("install", **named, state="waiting", reason="another run installs it")
    with heartbeat(progress, "install", state="waiting", **named):
        fcntl.flock(lock, fcntl.LOCK_EX)


def _run(argv: list[str], what: str, cwd: Path | None = None) -> None:
    """An installer's command (uv, npm); a failure raises InstallError with the tail of what it said."""
    done = subprocess.run(argv, capture_output=True, text=True, env=installer_env(), cwd=cwd, timeout=3600)
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-12:]
        raise InstallError(f"{what} failed (exit {done.returncode}):\n" + "\n".join(tail))


def installer_env() -> dict[str, str]:
    """What every installer is handed: the machine's variables (UV_CACHE_DIR among them), none named like a secret.

    An activated venv's VIRTUAL_ENV is dropped: each uv call names its environment with --python.
    """
    env = without_secrets(os.environ)
    env.pop("VIRTUAL_ENV", None)
    return env


def prefetch_folder(install_dir: Path | None, install: Install | None) -> str:
    """NULLIUS_PREFETCH: the folder of the install's prefetched files, or "" when it prefetches none."""
    return str(install_dir / PREFETCH) if install_dir is not None and install is not None and install.prefetch else ""


def uv_program() -> str:
    """uv: the one beside Nullius's own interpreter (the pinned `uv` package installs it there), else the one on PATH."""
    found = shutil.which("uv", path=str(OWN_SCRIPTS)) or shutil.which("uv")
    if found is None:
        raise InstallError(
            f"Python environments are installed with uv (and project.locked's pins read with uv export --frozen); "
            f"uv is neither in {OWN_SCRIPTS} nor on PATH (pip install uv)"
        )
    return found


def _install(folder: Path, makings: Makings, upstream: Path | None, say: Say) -> None:
    install = makings.install
    try:
        files = install.prefetch_files()
    except ValueError as exc:
        raise InstallError(str(exc)) from None
    # first, before any installer runs: a file that is not the pinned one refuses the environment before it costs anything
    for file in files:
        _fetch(file.url, folder / PREFETCH / file.name, file.sha256, f"prefetch {file.name} ({file.url})", say)
    if install.npm:
        _run(["npm", "install", "--no-audit", "--no-fund", "--prefix", str(folder), *install.npm], "npm install")
    if makings.python is not None:
        _python_environment(folder, makings, upstream, say)


def _python_environment(folder: Path, makings: Makings, upstream: Path | None, say: Say) -> None:
    """`<folder>/.venv` made by uv on the interpreter the digest names, then each step's `uv pip install` into it.

    Byte-compiled as it goes (uv compiles what each step installs): drivers,
    agents and capabilities start once a unit, and a machine may set
    PYTHONDONTWRITEBYTECODE, so nothing else would ever write their .pyc.
    No pip inside: nothing runs one from an environment. uv's files of
    settings are not read (--no-config: not a uv.toml where Nullius happens to
    be started), its variables are (UV_CACHE_DIR, UV_DEFAULT_INDEX for a mirror).
    """
    assert makings.python is not None
    uv, venv = uv_program(), folder / ".venv"
    _run([uv, "venv", "--no-config", "--python", makings.python.path, str(venv)], f"creating a venv with {makings.python.path}")
    pip = [uv, "pip", "install", "--no-config", "--python", str(venv / "bin" / "python"), "--compile-bytecode"]
    for args, what in _pip_steps(folder, makings.install, upstream, say):
        _run([*pip, *args], what)


def _pip_steps(folder: Path, install: Install, upstream: Path | None, say: Say) -> Iterator[tuple[list[str], str]]:
    """The `uv pip install` arguments of each step, in order, and what each is called when it fails."""
    if install.pip:
        yield install.pip, "uv pip install"
    if install.no_deps:
        # a package whose declared dependencies are not wanted (heavy ones its used modules never import):
        # installed alone, what it needs being pinned in `pip`
        yield ["--no-deps", *install.no_deps], "uv pip install --no-deps"
    for index in install.indexes or []:
        # The named packages from that index alone (it as the only default, without their dependencies), so a
        # name it lacks is refused rather than taken from PyPI; then their dependencies, the index first for
        # every name it has (uv's first-index), PyPI for the rest. The named packages, installed, stay.
        yield ["--default-index", index.url, "--no-deps", *index.packages], f"uv pip install from {index.url}"
        yield ["--index", index.url, "--index-strategy", "first-index", *index.packages], f"uv pip install of what {index.url}'s packages need"
    for wheel in install.wheels or []:
        name = url_file_name(wheel.url)
        target = folder / "wheels" / name
        _fetch(wheel.url, target, wheel.sha256, f"wheel {name} ({wheel.url})", say)
        yield [str(target)], f"uv pip install {wheel.url}"
    if install.project is not None:
        yield from _project_steps(folder, install, upstream)


def _project_steps(folder: Path, install: Install, upstream: Path | None) -> Iterator[tuple[list[str], str]]:
    """The upstream's own project from its clone, with its extras; with `locked`, at its lock file's pins first."""
    assert install.project is not None
    if upstream is None:
        raise InstallError("the environment installs the upstream project, but the upstream is not cloned")
    project = upstream / install.project.path
    extras = f"[{','.join(install.extras)}]" if install.extras else ""
    if install.project.locked:
        locked = folder / "locked-requirements.txt"
        # the extras' pins too: the project itself goes in with --no-deps, so they come from the lock or not at all
        wanted = [arg for extra in install.extras or [] for arg in ("--extra", extra)]
        argv = [uv_program(), "export", "--frozen", "--no-hashes", "--no-emit-project", *wanted, "-o", str(locked)]
        _run(argv, "uv export --frozen", cwd=project)
        yield ["-r", str(locked)], "uv pip install of the locked requirements"
    # what is installed already stays (uv keeps what satisfies); a local folder named here is always built afresh
    yield [*(["--no-deps"] if install.project.locked else []), f"{project}{extras}"], "uv pip install of the upstream project"


def _fetch(url: str, target: Path, sha256: str, what: str, say: Say) -> None:
    """A file of the install, downloaded and checked, saying its bytes while it comes."""
    try:
        download(url, target, sha256, what, lambda got, total: say(state="downloading", file=target.name, bytes=got, of=total))
    except DownloadError as exc:
        raise InstallError(str(exc)) from None
