"""A real Ray cluster on this machine for the module: a head and two more nodes, each a raylet with its own resource and TMPDIR.

Every process of it carries NULLIUS_TEST_RAY=<token> in its environment
(Ray's processes inherit the raylet's); the teardown ends those, by pid,
whatever happened (`ray stop` would end every Ray process of the machine,
not only this cluster's). The cluster's environment has no provider key.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

NODES = ("nodeA", "nodeB", "nodeC")  # nodeA is the head
START_SECONDS = 240
RAY = str(Path(sys.executable).parent / "ray")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Cluster:
    def __init__(self) -> None:
        # short: Ray's Unix sockets live under its temp dir, and a socket's path is at most 107 bytes
        self.root = Path(tempfile.mkdtemp(prefix="nr-", dir="/tmp"))
        self.temp = self.root / "ray"
        self.token = secrets.token_hex(6)
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.tmpdirs = {name: self.root / name for name in NODES}

    def env(self, node: str) -> dict[str, str]:
        keep = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and not k.startswith(("RAY_", "NULLIUS_"))}
        return {**keep, "TMPDIR": str(self.tmpdirs[node]), "NULLIUS_TEST_RAY": self.token, "RAY_USAGE_STATS_ENABLED": "0"}

    def start(self) -> None:
        common = ["--node-ip-address", "127.0.0.1", "--num-cpus", "2", "--temp-dir", str(self.temp), "--disable-usage-stats",
                  "--dashboard-agent-listen-port", "0", "--metrics-export-port", "0", "--runtime-env-agent-port", "0",
                  "--min-worker-port", "0", "--max-worker-port", "0"]
        for i, node in enumerate(NODES):
            self.tmpdirs[node].mkdir()
            where = ["--head", "--port", str(self.port), "--include-dashboard=false"] if i == 0 else ["--address", self.address]
            done = subprocess.run([RAY, "start", *where, "--resources", f'{{"{node}": 1}}', *common], env=self.env(node),
                                  capture_output=True, text=True, timeout=START_SECONDS)
            assert done.returncode == 0, done.stdout + done.stderr
        self.wait_for_nodes(len(NODES))

    def wait_for_nodes(self, n: int) -> None:
        """Until Ray says `n` nodes are alive (one driver, asking in a loop)."""
        script = ("import ray, sys, time\n"
                  f"ray.init(address={self.address!r}, log_to_driver=False)\n"
                  f"end = time.monotonic() + {START_SECONDS}\n"
                  f"while sum(1 for x in ray.nodes() if x['Alive']) != {n} and time.monotonic() < end:\n"
                  "    time.sleep(0.2)\n"
                  f"sys.exit(0 if sum(1 for x in ray.nodes() if x['Alive']) == {n} else 1)\n")
        done = subprocess.run([sys.executable, "-c", script], env=self.env("nodeA"), capture_output=True, text=True,
                              timeout=START_SECONDS + 60)
        assert done.returncode == 0, f"the cluster did not reach {n} live nodes: {done.stderr[-2000:]}"

    def raylet_of(self, node_id: str) -> int:
        for pid in self.pids():
            with contextlib.suppress(OSError):
                args = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
                if args and args[0].endswith(b"/raylet") and f"--node_id={node_id}".encode() in args:
                    return pid
        raise AssertionError(f"no raylet of node {node_id}")

    def pids(self) -> list[int]:
        """Every live process of this cluster: its marker in the environment, or the cluster's folder in its command or
        among its open files (Ray's agents retitle themselves, which can overwrite what /proc shows of their environment)."""
        mark = f"NULLIUS_TEST_RAY={self.token}".encode()
        root = str(self.root)
        out = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit() or int(entry.name) == os.getpid():
                continue
            with contextlib.suppress(OSError):
                if mark in (entry / "environ").read_bytes().split(b"\0") or root.encode() in (entry / "cmdline").read_bytes() \
                        or any(os.readlink(fd).startswith(root) for fd in (entry / "fd").iterdir()):
                    out.append(int(entry.name))
        return out

    def stop(self) -> None:
        """TERM, then KILL, every process of the cluster, by pid; then its folders."""
        for sig in (signal.SIGTERM, signal.SIGKILL):
            for pid in self.pids():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, sig)
            end = time.monotonic() + (8 if sig == signal.SIGTERM else 20)
            while self.pids() and time.monotonic() < end:
                time.sleep(0.1)
        assert self.pids() == [], f"left running: {self.pids()}"

    def remove(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)
