"""A task's own image: built from a folder of the upstream, or pulled by its digest.

`nullius/own-<benchmark>-<folder>:<hash>` is pinned by the sha256 of every
file of the folder (the build's whole context), so it is built once and
rebuilt when any file changes. The build gets `--build-arg
NULLIUS_BASE=<the base image>`: a Dockerfile that starts `ARG NULLIUS_BASE`
/ `FROM ${NULLIUS_BASE}` builds on this machine's base without a registry
(the base's tag then joins the hash). A pull takes only `name@sha256:...`:
an image found here under that digest is used as it is.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import IO

import attrs

from nullius_backend_docker import buildonce, dockercli
from nullius_backend_docker.calls import CallLog
from nullius_backend_docker.dockercli import DockerError
from nullius_core import handed
from nullius_core.contracts.own_image import BuildFailed

BUILD_SECONDS = 3600


BUILD_NETWORK = "NULLIUS_DOCKER_BUILD_NETWORK"  # the user's choice of the build's network; none unless set


def build_network() -> str:
    return os.environ.get(BUILD_NETWORK) or "none"


def context_hash(folder: Path, base: str) -> str:
    digest = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        relative = path.relative_to(folder).as_posix()
        if path.is_symlink():
            digest.update(b"L\0" + relative.encode() + b"\0" + os.readlink(path).encode() + b"\0")
        elif path.is_file():
            mode = b"x" if os.access(path, os.X_OK) else b"f"
            digest.update(mode + b"\0" + relative.encode() + b"\0" + hashlib.sha256(path.read_bytes()).digest())
    if "NULLIUS_BASE" in (folder / "Dockerfile").read_text(errors="replace"):
        digest.update(b"base\0" + base.encode())
    return digest.hexdigest()[:12]


def tag_for(benchmark: str, build: str, digest: str) -> str:
    safe = re.sub(r"[^a-z0-9._-]+", "-", f"{benchmark}-{build}".lower()).strip("-.")[:100]
    return f"nullius/own-{safe}:{digest}"


def ensure(benchmark: str, source: Path, build: str | None, pull: str | None, base: str, log: Path, images_dir: Path,
           say: Callable[..., None] = lambda state, tag, **fields: None, calls: CallLog | None = None) -> str:
    """The unit's image, built or pulled first when it is not here; a DockerError says why it cannot be."""
    if pull is not None:
        def fetch(out: IO[bytes]) -> int:
            return subprocess.run([dockercli.docker_binary(), "pull", pull], stdout=out, stderr=subprocess.STDOUT,
                                  timeout=BUILD_SECONDS, env=dockercli.client_env(None)).returncode

        try:
            return buildonce.once(pull, log, images_dir / "own.lock", fetch, found="here already, used as it is", making="pulling",
                                  failed=lambda code: f"the task's image {pull} could not be pulled (docker pull exit {code}: "
                                                      f"{buildonce.last_line(log)})", say=say, calls=calls)
        except DockerError as exc:
            raise BuildFailed(str(exc)) from None
    assert build is not None
    try:  # a task set is someone else's: its build context is inside the task's folder once links are followed
        folder = handed.within(source, Path(build))
    except handed.Refused as exc:
        raise BuildFailed(f"the task's build folder {exc}") from None
    tag = tag_for(benchmark, build, context_hash(folder, base))

    def make(out: IO[bytes]) -> int:
        return subprocess.run(
            # no network for the task's RUN steps: on docker's bridge they reach this machine's services (its 0.0.0.0);
            # the user, never the task, may let a network in (BUILD_NETWORK)
            [dockercli.docker_binary(), "build", "--force-rm", "--network", build_network(), "--label", f"nullius.own={benchmark}/{build}",
             "--build-arg", f"NULLIUS_BASE={base}", "-t", tag, str(folder)],
            stdout=out, stderr=subprocess.STDOUT, timeout=BUILD_SECONDS, env=dockercli.client_env(None),
        ).returncode

    try:
        return buildonce.once(tag, log, images_dir / "own.lock", make, found=f"built before from {folder}, used as it is",
                              making=f"building {folder}", say=say, calls=calls,
                              failed=lambda code: f"the task's image {build!r} did not build (docker build exit {code}: "
                                                  f"{buildonce.last_line(log)}); see {log}"
                                                  + ("" if build_network() != "none" else
                                                     f" (its RUN steps have no network; {BUILD_NETWORK}=default lets one in)"))
    except DockerError as exc:
        raise BuildFailed(str(exc)) from None


@attrs.frozen
class ImageFacts:
    """What a task's image says of itself: its working directory ("/" when it names none), environment and user."""

    workdir: str
    env: list[str]
    user: str  # `USER`, as docker takes it ("1234", "app:staff"); "" is root

    @property
    def root(self) -> bool:
        return self.user.split(":", 1)[0] in ("", "0", "root")


def facts(tag: str, calls: CallLog | None = None) -> ImageFacts:
    """The image's working directory, its own environment and its user."""
    found = dockercli.image_inspect(tag, calls)
    if found is None:
        raise dockercli.DockerError(f"the task's image {tag} is not here")
    config = found.get("Config") or {}
    return ImageFacts(workdir=config.get("WorkingDir") or "/", env=list(config.get("Env") or []), user=config.get("User") or "")
