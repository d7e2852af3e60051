"""A real SSH host for the app's run-on-a-host tests: a container of Nullius's base image with Debian's openssh-server.

The image is the docker backend's offline base image (`nullius docker base`:
Debian's packages, Node from npm) with `openssh-server` from Debian's
mirror (a docker build here reaches it), this machine's CA bundle (the
network's TLS goes through a proxy this machine trusts: the host must too,
to reach PyPI for uv and its environment), bubblewrap (HumanEval's checks
run in it; the container's seccomp profile is unconfined and its /proc
unmasked so that it can make its namespaces and mount a /proc, as on a
machine) and three users, reached by a key
the test makes, on a port of 127.0.0.1, the host's key in a known_hosts of
the test's own:

- `runner`: python3 (and its venv module), git, npm (the base's), bubblewrap, no uv, no docker: a host for the local backend;
- `nonpm`: its sessions' PATH lacks /usr/local/bin, where npm is;
- `nopython`: its sessions' PATH holds every program but python3.

These tests need docker; without it they fail, saying so
(NULLIUS_TESTS_WITHOUT_DOCKER=1: a skip whose reason is shown).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest

from nullius_core.testing import isolated_env, run_cli

USERS = ("runner", "nonpm", "nopython")
SSHD = """PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin no
Match User nonpm
    SetEnv PATH=/usr/bin:/bin
Match User nopython
    SetEnv PATH=/opt/nopython/bin
"""
DOCKERFILE = """FROM {base}
RUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends openssh-server bubblewrap python3-venv >/dev/null \\
 && rm -rf /var/lib/apt/lists/*
COPY ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY sshd.conf /etc/ssh/sshd_config.d/nullius-test.conf
RUN echo 'SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt' >> /etc/environment \\
 && for u in {users}; do useradd -m -s /bin/bash $u; done \\
 && mkdir -p /opt/nopython/bin /run/sshd \\
 && for f in /usr/local/bin/* /usr/bin/* /bin/*; do case "${{f##*/}}" in python3*) ;; *) ln -sf "$f" /opt/nopython/bin/ ;; esac; done \\
 && ssh-keygen -A
CMD ["/usr/sbin/sshd", "-D", "-e"]
"""
CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")


def docker(*argv: str, stdin: bytes | None = None, seconds: float = 600) -> str:
    done = subprocess.run(["docker", *argv], input=stdin, capture_output=True, timeout=seconds)
    if done.returncode != 0:
        raise RuntimeError(f"docker {' '.join(argv[:3])} failed: {done.stderr.decode(errors='replace')[-2000:]}")
    return done.stdout.decode(errors="replace")


def docker_or_fail() -> None:
    done = subprocess.run(["docker", "info"], capture_output=True, timeout=120) if shutil.which("docker") else None
    if done is None or done.returncode != 0:
        why = "no docker command" if done is None else done.stderr.decode(errors="replace").strip()[-300:]
        if os.environ.get("NULLIUS_TESTS_WITHOUT_DOCKER") == "1":
            pytest.skip(f"docker is not here: {why}")
        pytest.fail(f"the run-on-a-host tests need docker (their SSH host is a container): {why}")
    for tool in ("ssh", "ssh-keygen"):
        if shutil.which(tool) is None:
            pytest.fail(f"these tests need OpenSSH's {tool} (apt-get install openssh-client; ./dev test installs it)")


def host_image(env: dict[str, str], scratch: Path) -> str:
    """The SSH host's image, built once per recipe (its tag the digest of what makes it)."""
    made = run_cli(["docker", "base"], env)
    assert made.code == 0, f"nullius docker base failed:\n{made.output[-3000:]}"
    base = made.stdout.strip().splitlines()[-1]
    dockerfile = DOCKERFILE.format(base=base, users=" ".join(USERS))
    bundle = CA_BUNDLE.read_bytes() if CA_BUNDLE.exists() else b""
    digest = hashlib.sha256(dockerfile.encode() + SSHD.encode() + bundle).hexdigest()[:12]
    tag = f"nullius-test/ssh-host:{digest}"
    if subprocess.run(["docker", "image", "inspect", tag], capture_output=True, timeout=120).returncode == 0:
        return tag
    context = scratch / "ssh-host-image"
    context.mkdir(parents=True)
    (context / "Dockerfile").write_text(dockerfile)
    (context / "sshd.conf").write_text(SSHD)
    (context / "ca-certificates.crt").write_bytes(bundle)
    docker("build", "-q", "-t", tag, str(context), seconds=1200)
    return tag


@attrs.frozen
class SshHost:
    container: str
    port: int
    key: Path
    known_hosts: Path
    gateway: str  # this machine's address as the container reaches it (the docker bridge's gateway)

    def dest(self, user: str = "runner") -> str:
        return f"{user}@127.0.0.1"

    def options(self) -> list[str]:
        return ["--port", str(self.port), "--identity", str(self.key), "--known-hosts", str(self.known_hosts)]

    def sh(self, script: str, user: str = "runner", seconds: float = 600) -> str:
        """A shell script run in the container as `user` (docker exec: not through SSH)."""
        return docker("exec", "-u", user, self.container, "sh", "-c", script, seconds=seconds)


def _wait_for_sshd(port: int) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=5) as conn:
                if conn.recv(4).startswith(b"SSH-"):
                    return
        except OSError:
            pass
        time.sleep(0.2)
    pytest.fail(f"sshd did not answer on 127.0.0.1:{port}")


@pytest.fixture(scope="module")
def ssh_host(tmp_path_factory: pytest.TempPathFactory, nullius_installs: Path) -> Iterator[SshHost]:
    """A fresh SSH host for the module (its first run sets uv and the environment up), removed at its end."""
    docker_or_fail()
    root = tmp_path_factory.mktemp("ssh-host")
    tag = host_image(isolated_env(root / "builder", standard_dir=nullius_installs), root)
    key = root / "id_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "nullius-test", "-f", str(key)], check=True, timeout=60)
    name = f"nullius-test-ssh-{uuid.uuid4().hex[:8]}"
    # seccomp and /proc unmasked: bubblewrap makes its namespaces and mounts its /proc there as on a machine (HumanEval's checks run in it)
    container = docker("run", "-d", "--rm", "--name", name, "--label", "nullius.test=ssh-host", "--security-opt", "seccomp=unconfined",
                       "--security-opt", "systempaths=unconfined", "-p", "127.0.0.1::22", tag).strip()
    try:
        port = int(docker("port", container, "22/tcp").splitlines()[0].rsplit(":", 1)[1])
        for user in USERS:
            docker("exec", "-i", container, "sh", "-c",
                   f"mkdir -p /home/{user}/.ssh && cat > /home/{user}/.ssh/authorized_keys && chown -R {user}:{user} /home/{user}/.ssh "
                   f"&& chmod 700 /home/{user}/.ssh && chmod 600 /home/{user}/.ssh/authorized_keys", stdin=key.with_suffix(".pub").read_bytes())
        host_key = docker("exec", container, "cat", "/etc/ssh/ssh_host_ed25519_key.pub").split()[:2]
        known_hosts = root / "known_hosts"
        known_hosts.write_text(f"[127.0.0.1]:{port} {' '.join(host_key)}\n")
        gateway = docker("exec", container, "python3", "-c",
                         "import socket, struct\n"
                         "for line in open('/proc/net/route').read().splitlines()[1:]:\n"
                         "    f = line.split()\n"
                         "    if f[1] == '00000000': print(socket.inet_ntoa(struct.pack('<L', int(f[2], 16))))").strip()
        _wait_for_sshd(port)
        yield SshHost(container=container, port=port, key=key, known_hosts=known_hosts, gateway=gateway)
    finally:
        subprocess.run(["docker", "rm", "-f", container], capture_output=True, timeout=120)
