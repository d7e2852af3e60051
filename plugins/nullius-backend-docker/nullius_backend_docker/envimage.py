"""A benchmark's environment as an image: its Dockerfile (no FROM: Nullius writes it) layered on the base image.

`ADD` is refused and `COPY` takes only the files the environment lists,
which are the build's whole context. The tag is
`nullius/env-<benchmark>-<name>:<hash>`, the sha256 of the base, the
Dockerfile and each listed file: built when a unit first asks, once.
"""

from __future__ import annotations

import hashlib
import re
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO

from nullius_core.definitions.dockerfile import layer_problems

from nullius_backend_docker import buildonce, dockercli
from nullius_backend_docker.calls import CallLog
from nullius_backend_docker.dockercli import DockerError

def problems(dockerfile: str, files: list[str], where: str) -> list[str]:
    """What makes this Dockerfile unfit to be layered on the base image; each names the file and line."""
    return [f"{where}:{line}: {why}" for line, why in layer_problems(dockerfile, files)]


def tag_for(benchmark: str, name: str, base: str, dockerfile: bytes, files: dict[str, bytes]) -> str:
    digest = hashlib.sha256(base.encode() + b"\0" + dockerfile)
    for relative in sorted(files):
        digest.update(b"\0" + relative.encode() + b"\0" + hashlib.sha256(files[relative]).digest())
    safe = re.sub(r"[^a-z0-9._-]+", "-", f"{benchmark}-{name}".lower()).strip("-.")
    return f"nullius/env-{safe}:{digest.hexdigest()[:12]}"


def ensure(
    benchmark: str, name: str, folder: Path, dockerfile: str, files: list[str], base: str, log: Path, images_dir: Path,
    say: Callable[..., None] = lambda state, tag, **fields: None, calls: CallLog | None = None,
) -> str:
    """The environment's image, built first if it is not there; a DockerError says why it cannot be.

    The job's log says which image it was, and holds the build's output when it was built.
    """
    source = folder / dockerfile
    where = str(source)
    try:
        text = source.read_bytes()
        contents = {relative: (folder / relative).read_bytes() for relative in files}
    except OSError as exc:
        raise DockerError(f"the environment {name!r} cannot be read: {exc}") from None
    found = problems(text.decode("utf-8", "replace"), files, where)
    if found:
        raise DockerError("; ".join(found))
    tag = tag_for(benchmark, name, base, text, contents)

    def build(out: IO[bytes]) -> int:
        with tempfile.TemporaryDirectory(prefix="nullius-env-") as scratch:
            context = Path(scratch)
            for relative, data in contents.items():
                (context / relative).parent.mkdir(parents=True, exist_ok=True)
                (context / relative).write_bytes(data)
            (context / "Dockerfile.nullius").write_bytes(f"FROM {base}\n".encode() + text + b"\n")
            return subprocess.run(
                [dockercli.docker_binary(), "build", "--force-rm", "--label", f"nullius.environment={benchmark}/{name}", "-f",
                 str(context / "Dockerfile.nullius"), "-t", tag, str(context)],
                stdout=out, stderr=subprocess.STDOUT, timeout=3600,
            ).returncode

    return buildonce.once(tag, log, images_dir / "env.lock", build, found="built before, used as it is", making=f"building on {base}",
                          failed=lambda code: f"the environment {name!r} did not build (docker build exit {code}); see {log}", say=say,
                          calls=calls)
