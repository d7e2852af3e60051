"""What the docker backend's tests share: one home (its installs in the session's STANDARD_DIR), the fake model, docker itself.

These tests need docker (`.ci/run` installs Debian's docker.io and starts
dockerd). Without it they fail, saying so; NULLIUS_TESTS_WITHOUT_DOCKER=1
turns that into a skip whose reason the summary shows.
"""

from __future__ import annotations

import contextlib
import hashlib
import http.server
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from nullius_core.testing import isolated_env
from nullius_core.testing.fake_model import running_fake_model

from nullius_backend_docker import dockercli, pyruntime
from nullius_backend_docker.sweep import folder_label

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "tests"))  # the adversaries the bwrap backend's tests run too
from fixtures.models.adversary import listening_everywhere, machine_addresses, printed, scan_command  # noqa: E402,F401
PLAYER = "nullius_agent_reference.player"  # shipped in the reference agent's distribution
KEY = "sk-upstream-held-by-the-relay-docker-0123456789"


def docker_or_fail() -> None:
    try:
        dockercli.check_daemon()
    except dockercli.DockerError as exc:
        if os.environ.get("NULLIUS_TESTS_WITHOUT_DOCKER") == "1":
            pytest.skip(f"docker is not here: {exc}")
        pytest.fail(f"these tests need docker: {exc}")


@pytest.fixture(scope="session")
def world(tmp_path_factory, nullius_installs):
    """One home for the session; the reference agent and the kits' environments in the session's STANDARD_DIR, installed once.

    The standalone Python an agent runs on in a task's own image comes from a
    mirror on the loopback (python_mirror): uv's own source is unreachable here.
    """
    docker_or_fail()
    root = tmp_path_factory.mktemp("docker")
    env = {**isolated_env(root, standard_dir=nullius_installs), "OPENAI_COMPATIBLE_API_KEY": KEY}
    with running_fake_model(f"{PLAYER}:respond") as fake, python_mirror(root / "python-mirror") as mirror:
        env.update(mirror.env)
        try:
            yield env, fake, root
        finally:  # its install is this session's alone (the mirror's port names it): not left in the shared STANDARD_DIR
            forget_runtime(Path(nullius_installs), mirror.env)


def forget_runtime(standard_dir: Path, env: dict[str, str]) -> None:
    """The standalone Python installed from a mirror of the session's, and its lock, removed from STANDARD_DIR."""
    installed = standard_dir / "runtimes" / "python" / pyruntime.key(pyruntime.PYTHON3, env)
    shutil.rmtree(installed, ignore_errors=True)
    installed.with_name(f"{installed.name}.lock").unlink(missing_ok=True)


def model_args(fake) -> list[str]:
    return ["--model", "fake-model", "--provider", "openai-compatible", "--base-url", fake.openai_base_url, "--backend", "docker"]


def docker(*argv: str) -> str:
    return subprocess.run(["docker", *argv], capture_output=True, text=True, check=True, timeout=120).stdout


def events_since(since: float, fmt: str, *filters: str) -> list[str]:
    """What docker's event log says happened since `since` (time.time()), up to now: read whole, nothing waited for."""
    until = str(int(time.time()) + 1)
    return docker("events", "--since", str(int(since)), "--until", until, *filters, "--format", fmt).split()


def labelled(env: dict[str, str], job: str) -> dict[str, list[str]]:
    """What carries the labels of the job of that name in the test's jobs folder (another run's leftovers of that name are not)."""
    filters = ["--filter", f"label=nullius.job={job}", "--filter", f"label=nullius.folder={folder_label(Path(env['NULLIUS_JOBS_DIR']) / job)}"]
    return {
        "containers": docker("ps", "-aq", *filters).split(),
        "networks": docker("network", "ls", "-q", *filters).split(),
        "volumes": docker("volume", "ls", "-q", *filters).split(),
    }


MUSL_IMAGE = "nullius-test/musl:1"


def musl_image(scratch: Path) -> str:
    """A musl-based image, as Alpine's are, made offline from Debian's musl and busybox-static packages (once)."""
    if subprocess.run(["docker", "image", "inspect", MUSL_IMAGE], capture_output=True).returncode == 0:
        return MUSL_IMAGE
    scratch.mkdir(parents=True, exist_ok=True)
    subprocess.run(["apt-get", "download", "musl", "busybox-static"], cwd=scratch, check=True, capture_output=True, timeout=300)
    root = scratch / "root"
    for deb in scratch.glob("*.deb"):
        subprocess.run(["dpkg-deb", "-x", str(deb), str(root)], check=True, timeout=120)
    for tool in ("sh", "sleep", "ls", "cat", "echo", "mkdir"):
        (root / "bin" / tool).symlink_to("busybox")
    for folder in ("tmp", "proc", "dev", "sys", "usr/sbin"):
        (root / folder).mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(["tar", "-C", str(root), "-c", "."], check=True, capture_output=True, timeout=120).stdout
    subprocess.run(["docker", "import", "--change", 'CMD ["/bin/sh"]', "-", MUSL_IMAGE], input=archive, check=True,
                   capture_output=True, timeout=300)
    return MUSL_IMAGE


@contextlib.contextmanager
def local_registry(folder: Path):
    """Debian's docker-registry (the distribution registry) on a free loopback port, its storage in folder: a registry to pull from.

    The daemon trusts 127.0.0.0/8 without TLS. `./dev test` installs the package.
    """
    import shutil
    import socket
    import time

    if shutil.which("docker-registry") is None:
        pytest.fail("these tests need docker-registry (apt-get install docker-registry) to pull an image by digest")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    folder.mkdir(parents=True, exist_ok=True)
    config = folder / "config.yml"
    config.write_text(f"version: 0.1\nstorage:\n  filesystem:\n    rootdirectory: {folder / 'data'}\nhttp:\n  addr: 127.0.0.1:{port}\n")
    proc = subprocess.Popen(["docker-registry", "serve", str(config)], stdout=subprocess.DEVNULL, stderr=open(folder / "registry.log", "wb"))
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), 1).close()
                break
            except OSError:
                time.sleep(0.1)
        else:
            pytest.fail(f"docker-registry did not listen: {(folder / 'registry.log').read_text()[-2000:]}")
        yield f"127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(30)


DOOR_PORTS = [61080, 61090, 61128]  # the unit's door on its own loopback: the relay, the MCP door, the check's egress


def the_scan_in(records: Path) -> dict:
    """The scan's result in a JSON-lines record (the agent's acp.jsonl)."""
    return printed(records, "SCAN")


DEBIAN_PYTHON = ("python3.11-minimal", "libpython3.11-minimal", "libpython3.11-stdlib")
GLIBC = ("linux-vdso", "libc.so", "libm.so", "libpthread", "libdl.so", "librt.so", "ld-linux", "libresolv", "libutil")


def relocatable_python(scratch: Path) -> Path:
    """A Python in python-build-standalone's `install_only` layout (python/bin, python/lib), made from Debian's packages.

    Debian's python3.11 (apt-get download), its stdlib and extension modules,
    and every library they need but glibc's (this machine's, Debian's),
    copied beside them with `$ORIGIN` run paths (patchelf): it runs from any
    folder of any image with glibc 2.36 or newer. python-build-standalone's
    own builds are on GitHub, which these machines cannot reach.
    """
    if shutil.which("patchelf") is None:
        pytest.fail("these tests need patchelf (apt-get install patchelf) to make a relocatable Python")
    debs, root, python = scratch / "debs", scratch / "root", scratch / "tree" / "python"
    debs.mkdir(parents=True)
    subprocess.run(["apt-get", "download", *DEBIAN_PYTHON], cwd=debs, check=True, capture_output=True, timeout=300)
    for deb in debs.glob("*.deb"):
        subprocess.run(["dpkg-deb", "-x", str(deb), str(root)], check=True, timeout=120)
    (python / "bin").mkdir(parents=True)
    shutil.copy2(root / "usr/bin/python3.11", python / "bin" / "python3.11")
    shutil.copytree(root / "usr/lib/python3.11", python / "lib" / "python3.11", symlinks=True)
    for link in (python / "lib" / "python3.11").rglob("*"):
        if link.is_symlink() and os.readlink(link).startswith("/"):  # Debian's sitecustomize.py -> /etc/...: not in a runtime
            link.unlink()
    for name in ("python3", "python"):
        (python / "bin" / name).symlink_to("python3.11")
    modules = [python / "bin" / "python3.11", *(python / "lib" / "python3.11" / "lib-dynload").glob("*.so")]
    needed: set[str] = set()
    todo = list(modules)
    while todo:  # every library they need, and what those need
        said = subprocess.run(["ldd", str(todo.pop())], capture_output=True, text=True, timeout=60).stdout
        for line in said.splitlines():
            parts = line.split()
            if "=>" in parts and len(parts) > 2 and parts[2].startswith("/") and not any(g in parts[0] for g in GLIBC) \
                    and parts[2] not in needed:
                needed.add(parts[2])
                todo.append(Path(parts[2]))
    for library in needed:
        shutil.copy(library, python / "lib" / Path(library).name)
        subprocess.run(["patchelf", "--set-rpath", "$ORIGIN", str(python / "lib" / Path(library).name)], check=True, timeout=60)
    subprocess.run(["patchelf", "--set-rpath", "$ORIGIN/../lib", str(modules[0])], check=True, timeout=60)
    for module in modules[1:]:
        subprocess.run(["patchelf", "--set-rpath", "$ORIGIN/../..", str(module)], check=True, timeout=60)
    (python / "BUILD").write_text("debian-bookworm\n")
    archive = scratch / "cpython-3.11.2-debian-x86_64-unknown-linux-gnu-install_only.tar.gz"
    subprocess.run(["tar", "-C", str(python.parent), "-czf", str(archive), "python"], check=True, timeout=300)
    return archive


class _Quiet(http.server.SimpleHTTPRequestHandler):
    served: list[str]

    def log_message(self, format, *args):  # noqa: A002 - the base class's name
        self.served.append(self.path)


@contextlib.contextmanager
def python_mirror(folder: Path, sha256: str | None = None):
    """A server on the loopback with a relocatable Python and uv's downloads list naming it (its url and sha256).

    `.env` names the list to uv (UV_PYTHON_DOWNLOADS_JSON_URL); `.served` is
    every path asked of it. `sha256` puts another digest in the list.
    """
    archive = relocatable_python(folder / "build") if not (folder / "build").exists() else next((folder / "build").glob("*.tar.gz"))
    served: list[str] = []
    handler = type("Handler", (_Quiet,), {"served": served})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), lambda *a: handler(*a, directory=str(folder)))
    url = f"http://127.0.0.1:{server.server_address[1]}"
    listing = {"cpython-3.11.2-linux-x86_64-gnu": {
        "name": "cpython", "arch": {"family": "x86_64", "variant": None}, "os": "linux", "libc": "gnu",
        "major": 3, "minor": 11, "patch": 2, "prerelease": "", "variant": None, "build": "debian-bookworm",
        "url": f"{url}/build/{archive.name}", "sha256": sha256 or hashlib.sha256(archive.read_bytes()).hexdigest()}}
    name = f"downloads-{hashlib.sha256(json.dumps(listing).encode()).hexdigest()[:8]}.json"
    (folder / name).write_text(json.dumps(listing))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield type("Mirror", (), {"env": {"UV_PYTHON_DOWNLOADS_JSON_URL": f"{url}/{name}"}, "served": served, "url": url})()
    finally:
        server.shutdown()
        server.server_close()
