"""Remove every container, network and volume labelled with a job: the end of every run, and `nullius docker sweep`."""

from __future__ import annotations

from nullius_backend_docker import dockercli


def leftovers(job: str | None) -> dict[str, list[str]]:
    """What carries the label (`nullius.job=<job>`, or any `nullius.job` when job is None), by kind."""
    label = f"label=nullius.job={job}" if job else "label=nullius.job"
    return {
        "containers": dockercli.run(["ps", "-aq", "--filter", label], timeout=60).split(),
        "networks": dockercli.run(["network", "ls", "-q", "--filter", label], timeout=60).split(),
        "volumes": dockercli.run(["volume", "ls", "-q", "--filter", label], timeout=60).split(),
    }


def sweep(job: str | None) -> dict[str, list[str]]:
    """Remove them (containers first: a network in use cannot go); what was removed, by kind."""
    found = leftovers(job)
    if found["containers"]:
        dockercli.run(["rm", "-f", "-v", *found["containers"]], timeout=120)
    if found["networks"]:
        dockercli.run(["network", "rm", *found["networks"]], timeout=120)
    if found["volumes"]:
        dockercli.run(["volume", "rm", "-f", *found["volumes"]], timeout=120)
    return found
