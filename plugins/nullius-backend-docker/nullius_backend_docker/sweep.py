"""Remove every container, network and volume labelled with a job: the end of every run, and `nullius docker sweep` (through the daemon's API)."""

from __future__ import annotations

import hashlib
import time
from pathlib import Path

from nullius_backend_docker import engine
from nullius_backend_docker.calls import CallLog
from nullius_backend_docker.dockercli import DockerError

SWEEP_SECONDS = 60
SETTLE_SECONDS = 2.0


def folder_label(job_dir: Path) -> str:
    """The label value naming one job folder: two jobs of one name in two jobs folders never sweep each other."""
    return hashlib.sha256(str(job_dir.resolve()).encode()).hexdigest()[:16]


def leftovers(job: str | None, folder: str | None = None, calls: CallLog | None = None) -> dict[str, list[str]]:
    """What carries the label (`nullius.job=<job>`, or any `nullius.job` when job is None), by kind.

    With folder, only what also carries `nullius.folder=<folder>` (one job folder's run).
    """
    labels = [f"nullius.job={job}" if job else "nullius.job"] + ([f"nullius.folder={folder}"] if folder else [])
    daemon = engine.Sync(calls, "sweep")
    query = {"filters": {"label": labels}}
    return {  # as `docker ps -aq` and `docker network ls -q` name them
        "containers": [c["Id"][:12] for c in daemon.call("GET", "/containers/json", query={**query, "all": "1"}) or []],
        "networks": [n["Id"][:12] for n in daemon.call("GET", "/networks", query=query) or []],
        "volumes": [v["Name"] for v in (daemon.call("GET", "/volumes", query=query) or {}).get("Volumes") or []],
    }


def _quietly(daemon: engine.Sync, path: str, ident: str, query: dict[str, str]) -> None:
    # one that is already going (a container removing itself, --rm) or gone is not an error: the next look decides
    try:
        daemon.raw("DELETE", path, ident, query=query, timeout=120)
    except DockerError:
        pass


def sweep(job: str | None, settle: float = SETTLE_SECONDS, folder: str | None = None, calls: CallLog | None = None) -> dict[str, list[str]]:
    """Remove them (containers first: a network in use cannot go) until none is left for `settle` seconds.

    What was found, by kind. A DockerError names what is still there after
    SWEEP_SECONDS. The run's own sweep at its end has nothing in flight and
    passes settle=0.
    """
    found: dict[str, list[str]] = {"containers": [], "networks": [], "volumes": []}
    deadline = time.monotonic() + SWEEP_SECONDS
    empty_since: float | None = None
    daemon = engine.Sync(calls, "sweep")
    while True:
        left = leftovers(job, folder, calls)
        for kind, ids in left.items():
            found[kind] += [i for i in ids if i not in found[kind]]
        if not any(left.values()):
            # a killed run's last requests may still be landing in the daemon (a network being made): look again
            if settle <= 0 or (empty_since is not None and time.monotonic() - empty_since >= settle):
                return found
            empty_since = empty_since or time.monotonic()
            time.sleep(0.5)
            continue
        empty_since = None
        if time.monotonic() > deadline:
            raise DockerError(f"still there after {SWEEP_SECONDS} s: {left}")
        for container in left["containers"]:
            _quietly(daemon, "/containers/{}", container, {"force": "1", "v": "1"})
        for network in left["networks"]:
            _quietly(daemon, "/networks/{}", network, {})
        for volume in left["volumes"]:
            _quietly(daemon, "/volumes/{}", volume, {"force": "1"})
        if any(left.values()):
            time.sleep(0.2)
