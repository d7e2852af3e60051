"""What the docker backend's tests share: one home (its installs in the session's STANDARD_DIR), the fake model, docker itself.

These tests need docker (`.ci/run` installs Debian's docker.io and starts
dockerd). Without it they fail, saying so; NULLIUS_TESTS_WITHOUT_DOCKER=1
turns that into a skip whose reason the summary shows.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from nullius_core.testing import isolated_env
from nullius_core.testing.fake_model import running_fake_model

from nullius_backend_docker import dockercli
from nullius_backend_docker.sweep import folder_label

REPO = Path(__file__).resolve().parents[3]
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
    """One home for the session; the reference agent and the kits' environments in the session's STANDARD_DIR, installed once."""
    docker_or_fail()
    root = tmp_path_factory.mktemp("docker")
    env = {**isolated_env(root, standard_dir=nullius_installs), "OPENAI_COMPATIBLE_API_KEY": KEY}
    with running_fake_model(f"{PLAYER}:respond") as fake:
        yield env, fake, root


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


SCANNER = Path(__file__).resolve().parent / "portscan.py"
DOOR_PORTS = [61080, 61090, 61128]  # the unit's door on its own loopback: the relay, the MCP door, the check's egress


def machine_addresses() -> list[str]:
    """Every address of this machine (`ip -o addr`: the docker bridge's gateway among them), but link-local ones."""
    out = subprocess.run(["ip", "-o", "addr"], capture_output=True, text=True, check=True, timeout=30).stdout
    found = [line.split()[3].split("/")[0] for line in out.splitlines() if len(line.split()) > 3]
    return [a for a in found if not a.startswith("fe80") and a not in ("127.0.0.1", "::1")]


def scan_command(addresses: list[str]) -> str:
    """The agent's shell command: the scan, on the container's own python3, of every port of each address."""
    return f"python3 - {' '.join(addresses)} <<'SCAN_EOF'\n{SCANNER.read_text()}\nSCAN_EOF\n"


def the_scan_in(records: Path) -> dict:
    """The scan's result in a JSON-lines record (the agent's acp.jsonl: the tool's output, as often as the agent was told it)."""
    found = []

    def walk(value) -> None:
        if isinstance(value, str):
            found.extend(json.loads(line[5:]) for line in value.splitlines() if line.startswith("SCAN {"))
        elif isinstance(value, dict):
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    for line in records.read_text().splitlines():
        walk(json.loads(line))
    assert found and all(scan == found[0] for scan in found), found
    return found[0]


@contextlib.contextmanager
def listening_everywhere():
    """A server on 0.0.0.0 of this machine, as a model server listening on all interfaces is: the scan must not find it."""
    import socket

    listener = socket.socket()
    listener.bind(("0.0.0.0", 0))
    listener.listen(64)
    try:
        yield listener.getsockname()[1]
    finally:
        listener.close()
