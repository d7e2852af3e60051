"""Isolated homes, sessions with inline plugins, and the CLI run for real."""

from __future__ import annotations

import functools
import os
import subprocess
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import attrs

from nullius_core.paths import Paths
from nullius_core.plugins.manager import PluginControl
from nullius_core.run.install import uv_program
from nullius_core.session import Session

# Variables that would let the machine's own settings leak into a test.
_CONTROL_VARS = (
    "NULLIUS_PLUGINS",
    "NULLIUS_DISABLE_PLUGINS",
    "NULLIUS_DISABLE_PLUGIN_AUTOLOAD",
    "NULLIUS_CATALOGUE",
    "STANDARD_DIR",
    "STANDARD_DATA_DIR",
    "SECRETS_DIR",
    "NULLIUS_JOBS_DIR",
    "NULLIUS_PROGRESS_EVERY",  # the pace of a download's lines: a test that wants another sets it itself
    "COLUMNS",  # the width of piped tables: a test sees the default, whatever terminal ran it
)


def isolated_env(root: Path, base: Mapping[str, str] | None = None, standard_dir: Path | None = None) -> dict[str, str]:
    """An environment whose every Nullius location lies under `root`.

    `standard_dir`: a STANDARD_DIR of its own instead (installs, upstream
    clones, images), such as the session's `nullius_installs`, so that what
    is installed once by digest is not installed again for every home; the
    datasets stay under `root` (STANDARD_DATA_DIR, where they would be).
    uv's cache stays the machine's (UV_CACHE_DIR, as its user has it):
    what is in it is what PyPI serves, whoever asked first, so a test that
    installs makes its environment afresh without downloading it again.
    """
    env = {k: v for k, v in (os.environ if base is None else base).items() if k not in _CONTROL_VARS}
    env.setdefault("UV_CACHE_DIR", _uv_cache(env.get("HOME", ""), env.get("XDG_CACHE_HOME", "")))
    env.update(
        HOME=str(root / "home"),
        XDG_CONFIG_HOME=str(root / "config"),
        XDG_DATA_HOME=str(root / "data"),
        NULLIUS_JOBS_DIR=str(root / "jobs"),
    )
    if standard_dir is not None:
        env.update(STANDARD_DIR=str(standard_dir), STANDARD_DATA_DIR=str(root / "data" / "nullius" / "standard" / "datasets"))
    for key in ("HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME"):
        Path(env[key]).mkdir(parents=True, exist_ok=True)
    return env


@functools.cache
def _uv_cache(home: str, xdg_cache_home: str) -> str:
    """Where uv keeps its cache for a user with this HOME and XDG_CACHE_HOME: uv's own answer (`uv cache dir`)."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": home, **({"XDG_CACHE_HOME": xdg_cache_home} if xdg_cache_home else {})}
    return subprocess.run([uv_program(), "cache", "dir"], env=env, capture_output=True, text=True, check=True).stdout.strip()


def make_session(
    env: Mapping[str, str],
    plugins: Iterable[tuple[str, Any]] = (),
    control: PluginControl | None = None,
) -> Session:
    """A session over `env`'s locations, with (name, plugin) pairs registered inline."""
    return Session(
        control=control or PluginControl.from_env(env),
        paths=Paths.from_env(env),
        plugins=plugins,
    )


@attrs.frozen
class CliResult:
    code: int
    stdout: str
    stderr: str

    @property
    def output(self) -> str:
        return self.stdout + self.stderr


# A command may install an environment first (a minute or more on a busy two-core machine): the limit is there
# only so that a hung command ends the test, never to decide it.
CLI_SECONDS = 1800


def run_cli(
    args: list[str],
    env: Mapping[str, str],
    cwd: Path | None = None,
    timeout: float = CLI_SECONDS,
    input: str | None = None,
    in_process: bool = False,
) -> CliResult:
    """Run `nullius ARGS` in a subprocess, as a user would (`input`: what it reads on stdin).

    `in_process`: in this process instead (testing/in_process.py), for a test
    of a command's output, exit status or files, not of a process's behaviour
    (signals, children, what leaks into them, timing). `timeout` does not apply.
    """
    if in_process:
        from nullius_core.testing.in_process import run_in_process

        return CliResult(*run_in_process(args, env, cwd, input))
    proc = subprocess.run(
        [sys.executable, "-m", "nullius_core", *args],
        env=dict(env),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        input=input,
    )
    return CliResult(proc.returncode, proc.stdout, proc.stderr)


def processes_under(root: Path) -> list[str]:
    """Live processes of a test whose every location lies under root: their command line, working folder or environment names it.

    The environment counts because what a run starts inherits its HOME and jobs folder, whatever its command line
    says (an agent started from an install shared with other tests, a sleep its agent left behind); another test's
    processes, on another xdist worker, name another root.
    """
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = Path(f"/proc/{entry.name}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = Path(f"/proc/{entry.name}/stat").read_text().rsplit(")", 1)[1].split()[0]
            cwd = os.readlink(f"/proc/{entry.name}/cwd")
            environ = Path(f"/proc/{entry.name}/environ").read_bytes()
        except OSError:
            continue
        if state != "Z" and (str(root) in cmdline or cwd.startswith(str(root)) or str(root).encode() in environ):
            found.append(f"{entry.name}: {cmdline.strip()} (cwd {cwd})")
    return found


def files_holding(folder: Path, needle: bytes) -> list[str]:
    """The regular files under folder that hold needle (a secret that must not be there), symlinks not followed."""
    return [str(p) for p in folder.rglob("*") if p.is_file() and not p.is_symlink() and needle in p.read_bytes()]
