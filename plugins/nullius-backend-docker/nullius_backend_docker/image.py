"""The base image, `nullius/base:<hash>`: git, python3, curl, CA certificates, tmux and Node 22.

Built once per recipe: the hash covers the packages, the Node release and its
registry integrity, the source of the root file system and this builder's
own steps, so a changed recipe is a new image and an unchanged one is never
rebuilt. Two ways to build it:

- `ubuntu:24.04` is on this machine or its registry answers: a two-line
  Dockerfile on it (apt-get, then Node copied in);
- otherwise, from Debian's packages alone: `debootstrap --variant=minbase`
  of bookworm, Node from the npm registry (`node-linux-<arch>`, whose
  tarball holds the official binary), then `docker import`. No image
  registry is needed.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import platform
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path
from typing import Any, Callable

from nullius_backend_docker import dockercli
from nullius_backend_docker.calls import CallLog
from nullius_backend_docker.dockercli import DockerError
from nullius_core.heartbeat import beating

PACKAGES = ("git", "python3", "curl", "ca-certificates", "tmux")
NODE_VERSION = "22.23.5"
NPM_VERSION = "10.9.9"
DEBIAN_SUITE = "bookworm"
DEBIAN_MIRROR = os.environ.get("NULLIUS_DEBIAN_MIRROR", "http://deb.debian.org/debian")
UBUNTU = "ubuntu:24.04"
IMAGE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
BUILDER_VERSION = 1  # bump when the steps below change what lands in the image

NODE_ARCH = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}


def node_package() -> str:
    arch = NODE_ARCH.get(platform.machine().lower())
    if arch is None:
        raise DockerError(f"no Node build for this machine's architecture ({platform.machine()})")
    return f"node-linux-{arch}"


def recipe(source: str) -> dict[str, Any]:
    """What goes into the image; its hash names it."""
    return {
        "builder": BUILDER_VERSION,
        "source": source,
        "packages": list(PACKAGES),
        "node": f"{node_package()}@{NODE_VERSION}",
        "npm": f"npm@{NPM_VERSION}",
        "path": IMAGE_PATH,
    }


def tag_for(source: str) -> str:
    digest = hashlib.sha256(json.dumps(recipe(source), sort_keys=True).encode()).hexdigest()[:12]
    return f"nullius/base:{digest}"


def choose_source() -> str:
    """`ubuntu:24.04` when it is here or can be pulled, else Debian's packages (debootstrap)."""
    if dockercli.image_exists(UBUNTU):
        return UBUNTU
    if os.environ.get("NULLIUS_DOCKER_PULL", "1") != "0":
        done = subprocess.run([dockercli.docker_binary(), "pull", "-q", UBUNTU], capture_output=True, timeout=120)
        if done.returncode == 0:
            return UBUNTU
    return f"debootstrap:{DEBIAN_SUITE}"


def ensure_base(images_dir: Path, say: Callable[[str, dict[str, Any]], None] = lambda state, fields: None,
                calls: CallLog | None = None) -> str:
    """The base image's tag, built first if it is not there; a DockerError says why it could not be."""
    dockercli.check_daemon(calls)
    images_dir.mkdir(parents=True, exist_ok=True)
    # the common case first: any base image this builder made, for either source, is good
    for source in (f"debootstrap:{DEBIAN_SUITE}", UBUNTU):
        if dockercli.image_exists(tag_for(source), calls):
            say("cached", {"image": tag_for(source)})
            return tag_for(source)
    with open(images_dir / "base.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one build, whichever run asks first
        source = choose_source()
        tag = tag_for(source)
        if dockercli.image_exists(tag):
            say("cached", {"image": tag})
            return tag
        log = images_dir / f"base-{tag.split(':')[1]}.log"
        say("start", {"image": tag, "source": source, "log": str(log)})
        # minutes the first time: said every 30 s while it builds
        with beating(lambda seconds: say("running", {"image": tag, "seconds": seconds})), \
                tempfile.TemporaryDirectory(prefix="nullius-base-", dir=images_dir) as scratch:
            node_root = Path(scratch) / "node"
            _fetch_node(node_root, log)
            if source == UBUNTU:
                _build_on_ubuntu(tag, node_root, Path(scratch), log)
            else:
                _build_from_debian(tag, node_root, Path(scratch) / "rootfs", log)
        say("done", {"image": tag})
        return tag


def _step(argv: list[str], log: Path, **kwargs: Any) -> None:
    with open(log, "ab") as out:
        out.write(("$ " + " ".join(argv) + "\n").encode())
        out.flush()
        done = subprocess.run(argv, stdout=out, stderr=subprocess.STDOUT, **kwargs)
    if done.returncode != 0:
        tail = log.read_text(errors="replace")[-800:]
        raise DockerError(f"building the base image: `{' '.join(argv[:3])} ...` failed ({done.returncode}); see {log}:\n{tail}")


def _fetch_node(root: Path, log: Path) -> None:
    """Node and npm from the npm registry, laid out as /usr/local: npm checks each tarball's integrity."""
    npm = shutil.which("npm")
    if npm is None:
        raise DockerError("building the base image needs npm on this machine (for Node from the npm registry): apt-get install npm")
    packs = root / "packs"
    packs.mkdir(parents=True)
    for spec in (f"{node_package()}@{NODE_VERSION}", f"npm@{NPM_VERSION}"):
        _step([npm, "pack", spec, "--pack-destination", str(packs), "--silent"], log, cwd=packs)
    local = root / "usr" / "local"
    for tgz in packs.glob("*.tgz"):
        target = local / "lib" / "node_modules" / ("npm" if tgz.name.startswith("npm-") else "node")
        target.mkdir(parents=True, exist_ok=True)
        with tarfile.open(tgz) as archive:
            archive.extractall(target, filter=_strip_package)
    (local / "bin").mkdir(parents=True, exist_ok=True)
    shutil.move(str(local / "lib" / "node_modules" / "node" / "bin" / "node"), local / "bin" / "node")
    shutil.rmtree(local / "lib" / "node_modules" / "node")
    os.chmod(local / "bin" / "node", 0o755)
    for tool in ("npm", "npx"):
        (local / "bin" / tool).symlink_to(f"../lib/node_modules/npm/bin/{tool}-cli.js")
    shutil.rmtree(packs)


def _strip_package(member: tarfile.TarInfo, dest: str) -> tarfile.TarInfo | None:
    # npm tarballs hold everything under package/
    if not member.name.startswith("package/"):
        return None
    member = member.replace(name=member.name[len("package/"):], deep=False)
    return tarfile.data_filter(member, dest)


def _build_from_debian(tag: str, node_root: Path, rootfs: Path, log: Path) -> None:
    if os.geteuid() != 0:
        raise DockerError("building the base image from Debian's packages needs root (debootstrap): run "
                          "`sudo nullius docker base` once, or make ubuntu:24.04 available to docker")
    debootstrap = shutil.which("debootstrap")
    if debootstrap is None:
        raise DockerError("building the base image without an image registry needs debootstrap: apt-get install debootstrap")
    _step([debootstrap, "--variant=minbase", "--include=" + ",".join(PACKAGES), DEBIAN_SUITE, str(rootfs), DEBIAN_MIRROR], log)
    subprocess.run(["cp", "-a", str(node_root / "usr"), str(rootfs)], check=True)
    for junk in ("var/cache/apt/archives", "var/lib/apt/lists"):
        for item in (rootfs / junk).glob("*"):
            if item.is_file():
                item.unlink()
    changes = [f"ENV PATH={IMAGE_PATH}", "ENV LANG=C.UTF-8", f"LABEL nullius.base={tag}", 'CMD ["bash"]']
    argv = [dockercli.docker_binary(), "import"]
    for change in changes:
        argv += ["--change", change]
    with open(log, "ab") as out:
        tar = subprocess.Popen(["tar", "--numeric-owner", "-C", str(rootfs), "-c", "."], stdout=subprocess.PIPE, stderr=out)
        done = subprocess.run([*argv, "-", tag], stdin=tar.stdout, stdout=out, stderr=subprocess.STDOUT)
        tar.stdout.close()  # type: ignore[union-attr]
        tar.wait()
    if done.returncode != 0 or tar.returncode != 0:
        raise DockerError(f"building the base image: docker import failed; see {log}")
    shutil.rmtree(rootfs, ignore_errors=True)


def _build_on_ubuntu(tag: str, node_root: Path, context: Path, log: Path) -> None:
    (context / "Dockerfile").write_text(
        f"FROM {UBUNTU}\n"
        "RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "
        + " ".join(PACKAGES)
        + " && rm -rf /var/lib/apt/lists/*\n"
        "COPY node/usr/local /usr/local\n"
        f"ENV PATH={IMAGE_PATH} LANG=C.UTF-8\n"
        f"LABEL nullius.base={tag}\n"
    )
    _step([dockercli.docker_binary(), "build", "-q", "-t", tag, str(context)], log)


def copy_node(tag: str, folder: Path) -> None:
    """The base image's Node binary into folder/bin/node (written whole, then renamed: another run may be reading it)."""
    (folder / "bin").mkdir(parents=True, exist_ok=True)
    container = dockercli.run(["create", "--label", "nullius.job=runtime-copy", tag, "true"], timeout=60).strip()
    try:
        with tempfile.TemporaryDirectory(dir=folder) as scratch:
            dockercli.run(["cp", f"{container}:/usr/local/bin/node", str(Path(scratch) / "node")], timeout=300)
            os.replace(Path(scratch) / "node", folder / "bin" / "node")
    finally:
        dockercli.run(["rm", "-f", container], timeout=60)
