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

import fcntl
import hashlib
import json
import os
import re
import subprocess
from collections.abc import Callable
from pathlib import Path

from nullius_backend_docker import dockercli
from nullius_backend_docker.dockercli import DockerError

BUILD_SECONDS = 3600


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
           say: Callable[[str, str], None] = lambda state, tag: None) -> str:
    """The unit's image, built or pulled first when it is not here; a DockerError says why it cannot be."""
    log.parent.mkdir(parents=True, exist_ok=True)
    if pull is not None:
        return _pull(pull, log, say)
    assert build is not None
    folder = (source / build).resolve()
    tag = tag_for(benchmark, build, context_hash(folder, base))
    if dockercli.image_exists(tag):
        _note(log, f"{tag}: built before from {folder}, used as it is")
        say("cached", tag)
        return tag
    images_dir.mkdir(parents=True, exist_ok=True)
    with open(images_dir / "own.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if dockercli.image_exists(tag):
            _note(log, f"{tag}: built before from {folder}, used as it is")
            say("cached", tag)
            return tag
        say("start", tag)
        _note(log, f"{tag}: building {folder}")
        with open(log, "ab") as out:
            done = subprocess.run(
                [dockercli.docker_binary(), "build", "--force-rm", "--label", f"nullius.own={benchmark}/{build}", "--build-arg",
                 f"NULLIUS_BASE={base}", "-t", tag, str(folder)],
                stdout=out, stderr=subprocess.STDOUT, timeout=BUILD_SECONDS, env=dockercli.client_env(None),
            )
    if done.returncode != 0:
        say("failed", tag)
        raise DockerError(f"the task's image {build!r} did not build (docker build exit {done.returncode}); see {log}")
    say("done", tag)
    return tag


def _pull(ref: str, log: Path, say: Callable[[str, str], None]) -> str:
    if dockercli.image_exists(ref):
        _note(log, f"{ref}: here already, used as it is")
        say("cached", ref)
        return ref
    say("start", ref)
    _note(log, f"{ref}: pulling")
    with open(log, "ab") as out:
        done = subprocess.run([dockercli.docker_binary(), "pull", ref], stdout=out, stderr=subprocess.STDOUT,
                              timeout=BUILD_SECONDS, env=dockercli.client_env(None))
    if done.returncode != 0:
        say("failed", ref)
        tail = log.read_text(errors="replace").strip().splitlines()[-1:] or [""]
        raise DockerError(f"the task's image {ref} could not be pulled (docker pull exit {done.returncode}: {tail[0][-300:]})")
    say("done", ref)
    return ref


def facts(tag: str) -> tuple[str, list[str]]:
    """The image's working directory ("/" when it names none) and its own environment."""
    found = json.loads(dockercli.run(["image", "inspect", "--format", "{{json .Config}}", tag], timeout=60) or "{}")
    return (found.get("WorkingDir") or "/"), list(found.get("Env") or [])


def _note(log: Path, line: str) -> None:
    with open(log, "a", encoding="utf-8") as out:
        out.write(f"[nullius] {line}\n")
