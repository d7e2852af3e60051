"""What the host has, asked once in a few lines of POSIX sh, and what a run there would lack.

A run on a host needs `python3` (3.11 or newer: Nullius runs on it) and
`git` (each unit's workspace is a repository); the docker backend needs
`docker` and its daemon; the local backend needs `npm` (agents from npm
install there). `uv` is not needed first: the host gets it from PyPI when it
has none. Each refusal names what is missing and how to get it.
"""

from __future__ import annotations

from typing import Any

import attrs

from nullius_app.host import ssh
from nullius_app.host.ssh import Host, HostRefused

PYTHON_AT_LEAST = (3, 11)
APP = ".nullius/app"  # under the host user's HOME

# $1: the snapshot's content id (or -), $2: 1 when docker's daemon is to be asked
SCRIPT = r"""
say() { printf '%s=%s\n' "$1" "$2"; }
found() { command -v "$1" 2>/dev/null || true; }
p=$(found python3)
say python3 "$p"
if [ -n "$p" ]; then say python3_version "$("$p" -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])' 2>&1 | tail -n 1)"; fi
say git "$(found git)"
say npm "$(found npm)"
d=$(found docker)
say docker "$d"
if [ -n "$d" ] && [ "$2" = 1 ]; then
  if out=$(docker info --format '{{.ServerVersion}}' 2>&1); then say docker_daemon "yes $out"; else say docker_daemon "$(printf '%s' "$out" | tail -n 1)"; fi
fi
u=$(found uv)
if [ -z "$u" ] && [ -x "$HOME/.nullius/app/bin/uv" ]; then u="$HOME/.nullius/app/bin/uv"; fi
say uv "$u"
say home "$HOME"
say machine "$(uname -m)"
if [ -f "$HOME/.nullius/app/$1/snapshot.json" ]; then say snapshot present; else say snapshot absent; fi
if [ -f "$HOME/.nullius/app/$1/.venv/.nullius-ready" ]; then say venv ready; else say venv absent; fi
"""


@attrs.frozen
class Facts:
    host: Host
    found: dict[str, str]

    def get(self, name: str) -> str:
        return self.found.get(name, "")

    @property
    def python_version(self) -> tuple[int, ...] | None:
        try:
            return tuple(int(p) for p in self.get("python3_version").split("."))
        except ValueError:
            return None

    def problems(self, backend: str) -> list[str]:
        """What a run on `backend` would lack there, each with how to get it; none: it can run."""
        where, out = self.host.name, []
        if not self.get("python3"):
            out.append(f"{where} has no python3 on its PATH: Nullius runs on it there (Debian/Ubuntu: sudo apt-get install python3)")
        elif self.python_version is None or self.python_version[:2] < PYTHON_AT_LEAST:
            out.append(f"{where}'s python3 is {self.get('python3_version') or 'not runnable'}: Nullius needs "
                       f"{'.'.join(map(str, PYTHON_AT_LEAST))} or newer there")
        if not self.get("git"):
            out.append(f"{where} has no git on its PATH: each unit's workspace is a repository (Debian/Ubuntu: sudo apt-get install git)")
        if backend == "docker":
            if not self.get("docker"):
                out.append(f"{where} has no docker on its PATH: the docker backend runs units in containers there "
                           f"(Debian/Ubuntu: sudo apt-get install docker.io, and the user in the docker group)")
            elif not self.get("docker_daemon").startswith("yes"):
                out.append(f"docker's daemon does not answer on {where}: {self.get('docker_daemon')} "
                           f"(start it: sudo systemctl start docker; the user in the docker group)")
        elif backend == "local" and not self.get("npm"):
            out.append(f"{where} has no npm on its PATH: the local backend installs agents from npm there "
                       f"(Debian/Ubuntu: sudo apt-get install npm)")
        return out

    def record(self, backend: str) -> dict[str, Any]:
        return {"host": self.host.name, "backend": backend, "found": self.found, "uv": self.get("uv") or "installed from PyPI when a run needs it",
                "problems": self.problems(backend)}


def probe(host: Host, snapshot_id: str = "-", docker: bool = False) -> Facts:
    """The host's facts; HostRefused when it cannot be reached (ssh's words, explained)."""
    done = ssh.run(host, ["sh", "-c", SCRIPT, "probe", snapshot_id, "1" if docker else "0"], seconds=120)
    if done.returncode != 0:
        raise HostRefused(f"{host.name} could not be asked what it has: {done.stderr.decode(errors='replace').strip()[-500:]}")
    found = {}
    for line in done.stdout.decode(errors="replace").splitlines():
        key, sep, value = line.partition("=")
        if sep:
            found[key.strip()] = value.strip()
    return Facts(host=host, found=found)
