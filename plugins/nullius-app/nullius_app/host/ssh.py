"""The system's `ssh` client (OpenSSH), the host's key always checked.

Every call is one `ssh` process: `BatchMode` (a key or an agent, never a
password prompt), `StrictHostKeyChecking=yes` against the user's known_hosts
or the file given: a host whose key is not known is refused, saying how to
accept it; `--accept-new` (trust on first use, asked for by name) adds it.
Never `StrictHostKeyChecking=no`. What runs there is a command line of plain
words (quoted here): no key or licence value is ever on it.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Any

import attrs

CONNECT_SECONDS = 20
CALL_SECONDS = 600  # a call that hangs ends; none is meant to come near it


class HostRefused(Exception):
    """The host cannot be used as asked: one line, naming what is missing and how to get it."""


@attrs.frozen
class Host:
    destination: str  # USER@HOST, or a name of the user's ~/.ssh/config
    port: int | None = None
    identity: Path | None = None
    known_hosts: Path | None = None  # default: the user's own (~/.ssh/known_hosts)
    accept_new: bool = False  # a host not yet known is added to known_hosts (its key said), as ssh's accept-new

    @property
    def name(self) -> str:
        return f"{self.destination}:{self.port}" if self.port else self.destination

    def options(self) -> list[str]:
        """This host as `nullius host ...` options after the destination (the builder shows them)."""
        out = []
        if self.port:
            out += ["--port", str(self.port)]
        if self.identity:
            out += ["--identity", str(self.identity)]
        if self.known_hosts:
            out += ["--known-hosts", str(self.known_hosts)]
        if self.accept_new:
            out.append("--accept-new")
        return out

    def record(self) -> dict[str, Any]:
        return {"destination": self.destination, "port": self.port, "identity": str(self.identity) if self.identity else None,
                "known_hosts": str(self.known_hosts) if self.known_hosts else None}

    @classmethod
    def from_record(cls, data: dict[str, Any]) -> Host:
        return cls(destination=data["destination"], port=data.get("port"),
                   identity=Path(data["identity"]) if data.get("identity") else None,
                   known_hosts=Path(data["known_hosts"]) if data.get("known_hosts") else None)

    def argv(self, command: list[str]) -> list[str]:
        """The ssh command line that runs `command` (quoted for the host's shell) there."""
        out = [ssh_binary(), "-T", "-o", "BatchMode=yes", "-o", f"ConnectTimeout={CONNECT_SECONDS}",
               "-o", "ServerAliveInterval=15", "-o", "ServerAliveCountMax=4", "-o", "Compression=yes", "-o", "LogLevel=ERROR",
               "-o", "StrictHostKeyChecking=" + ("accept-new" if self.accept_new else "yes"), "-o", "UpdateHostKeys=no"]
        if self.known_hosts:
            out += ["-o", f"UserKnownHostsFile={self.known_hosts}", "-o", "GlobalKnownHostsFile=/dev/null"]
        if self.identity:
            out += ["-i", str(self.identity), "-o", "IdentitiesOnly=yes"]
        if self.port:
            out += ["-p", str(self.port)]
        return [*out, "--", self.destination, shlex.join(command)]


def ssh_binary() -> str:
    found = shutil.which("ssh")
    if found is None:
        raise HostRefused("this machine has no ssh client: install OpenSSH's (Debian/Ubuntu: sudo apt-get install openssh-client)")
    return found


def run(host: Host, command: list[str], stdin: bytes | None = None, seconds: float = CALL_SECONDS) -> subprocess.CompletedProcess[bytes]:
    """`command` run on the host, its output whole; HostRefused when ssh itself could not (its own exit status 255)."""
    try:
        done = subprocess.run(host.argv(command), input=stdin if stdin is not None else b"", capture_output=True, timeout=seconds)
    except subprocess.TimeoutExpired:
        raise HostRefused(f"{host.name} did not answer within {seconds:.0f} s") from None
    if done.returncode == 255:
        raise HostRefused(explain(host, done.stderr.decode(errors="replace")))
    return done


def popen(host: Host, command: list[str], **kwargs: Any) -> subprocess.Popen[bytes]:
    return subprocess.Popen(host.argv(command), **kwargs)


def explain(host: Host, said: str) -> str:
    """What ssh's own words mean for the user, and what to do."""
    lines = [line.strip() for line in said.strip().splitlines() if line.strip()]
    last = lines[-1] if lines else "ssh ended without a word"
    known = str(host.known_hosts) if host.known_hosts else "~/.ssh/known_hosts"
    if "REMOTE HOST IDENTIFICATION HAS CHANGED" in said or "Host key for" in said and "has changed" in said:
        return (f"{host.name} shows another key than the one {known} holds for it: refused (someone may be in between); "
                f"if the host was reinstalled, remove its old key (ssh-keygen -R HOST) and check the new one's fingerprint")
    if "Host key verification failed" in said or "No ED25519 host key is known" in said or "host key is known" in said:
        return (f"the key of {host.name} is not known here ({known}): check its fingerprint, then accept it once with "
                f"`nullius host check {host.destination}{' --port ' + str(host.port) if host.port else ''} --accept-new`, "
                f"or add it to {known} yourself (ssh-keyscan)")
    if "Permission denied" in said:
        return (f"{host.name} refused this machine's key ({last}): give --identity FILE, or add the key's .pub "
                f"to the host's ~/.ssh/authorized_keys")
    if any(w in said for w in ("Connection refused", "timed out", "Could not resolve", "No route to host", "Connection closed",
                               "Connection reset", "Network is unreachable")):
        return f"cannot reach {host.name}: {last}"
    return f"ssh to {host.name} failed: {last}"


def fingerprint(host: Host) -> str | None:
    """The host's key as known_hosts holds it now (`ED25519 SHA256:...`), for the user to check."""
    name = host.destination.rsplit("@", 1)[-1]
    known = host.known_hosts or Path.home() / ".ssh" / "known_hosts"
    done = subprocess.run(["ssh-keygen", "-l", "-F", f"[{name}]:{host.port}" if host.port else name, "-f", str(known)],
                          capture_output=True, text=True, timeout=60)
    for line in done.stdout.splitlines():
        if not line.startswith("#") and "SHA256:" in line:
            return " ".join(line.split()[1:3])
    return None
