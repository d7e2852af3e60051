"""Remove every container, network and volume labelled with a job: the end of every run, and `nullius docker sweep`."""

from __future__ import annotations

import hashlib
import time
from pathlib import Path

from nullius_backend_docker import dockercli

SWEEP_SECONDS = 60
SETTLE_SECONDS = 2.0


def folder_label(job_dir: Path) -> str:
    """The label value naming one job folder: two jobs of one name in two jobs folders never sweep each other."""
    return hashlib.sha256(str(job_dir.resolve()).encode()).hexdigest()[:16]


def leftovers(job: str | None, folder: str | None = None) -> dict[str, list[str]]:
    """What carries the label (`nullius.job=<job>`, or any `nullius.job` when job is None), by kind.

    With folder, only what also carries `nullius.folder=<folder>` (one job folder's run).
    """
    filters = ["--filter", f"label=nullius.job={job}" if job else "label=nullius.job"]
    if folder:
        filters += ["--filter", f"label=nullius.folder={folder}"]
    return {
        "containers": dockercli.run(["ps", "-aq", *filters], timeout=60).split(),
        "networks": dockercli.run(["network", "ls", "-q", *filters], timeout=60).split(),
        "volumes": dockercli.run(["volume", "ls", "-q", *filters], timeout=60).split(),
    }


def _quietly(argv: list[str]) -> None:
    # one that is already going (a container removing itself, --rm) or gone is not an error: the next look decides
    try:
        dockercli.run(argv, timeout=120)
    except dockercli.DockerError:
        pass


def sweep(job: str | None, settle: float = SETTLE_SECONDS, folder: str | None = None) -> dict[str, list[str]]:
    """Remove them (containers first: a network in use cannot go) until none is left for `settle` seconds.

    What was found, by kind. A DockerError names what is still there after
    SWEEP_SECONDS. The run's own sweep at its end has nothing in flight and
    passes settle=0.
    """
    found: dict[str, list[str]] = {"containers": [], "networks": [], "volumes": []}
    deadline = time.monotonic() + SWEEP_SECONDS
    empty_since: float | None = None
    while True:
        left = leftovers(job, folder)
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
            raise dockercli.DockerError(f"still there after {SWEEP_SECONDS} s: {left}")
        for container in left["containers"]:
            _quietly(["rm", "-f", "-v", container])
        for network in left["networks"]:
            _quietly(["network", "rm", network])
        if left["volumes"]:
            _quietly(["volume", "rm", "-f", *left["volumes"]])
        if any(left.values()):
            time.sleep(0.2)
