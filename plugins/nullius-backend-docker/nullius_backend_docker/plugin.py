"""The docker backend's hooks: the backend itself, and `nullius docker` (build the base image, sweep a job)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import click

from nullius_core import hookimpl
from nullius_core.paths import Paths
from nullius_core.plugins import BackendRegistry, BackendSpec, CommandRegistry

# dockercli, image and sweep (asyncio, hashing the base image's files) are
# imported by what uses them: every command that loads plugins loads this one.


def _factory():  # type: ignore[no-untyped-def]
    from nullius_backend_docker.backend import DockerBackend

    return DockerBackend()


def _check() -> str | None:
    """Before a run installs anything: the daemon answers (its version asked, nothing built), else why not and how to get docker."""
    from nullius_backend_docker import dockercli

    try:
        dockercli.check_daemon()
    except dockercli.DockerError as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


@hookimpl
def nullius_register_backends(registry: BackendRegistry) -> None:
    registry.add(
        BackendSpec(
            name="docker",
            summary="Each unit's agent in its own container on an internal network, the run's relay its one way out; checks in throwaway containers.",
            factory=_factory,
            isolates=True,
            boxes=True,
            check=_check,
        )
    )


@click.group("docker")
def docker_group() -> None:
    """The docker backend: its base image, and sweeping what a job left."""


@docker_group.command("base")
def base_command() -> None:
    """Build the base image (nullius/base:<hash>) if it is not there; print its tag."""
    from nullius_backend_docker import dockercli, image

    paths = Paths.from_env(os.environ)
    try:
        tag = image.ensure_base(paths.standard_dir / "images", _say_base)
    except dockercli.DockerError as exc:
        click.echo(f"nullius: {exc}", err=True)
        sys.exit(2)
    click.echo(tag)


def _say_base(state: str, fields: dict[str, object]) -> None:
    """`nullius docker base`'s progress: a line as a run's, without the record."""
    more = "".join(f" {k}={v}" for k, v in fields.items() if k in ("seconds", "log"))
    click.echo(f"[nullius] stage=install base_image={fields.get('image', '')} state={state}{more}", err=True)


@docker_group.command("sweep")
@click.argument("job", required=False)
@click.option("--all", "every", is_flag=True, help="Every job's leftovers, not one job's.")
@click.option("--json", "as_json", is_flag=True, help="What was removed, as JSON.")
def sweep_command(job: str | None, every: bool, as_json: bool) -> None:
    """Remove the containers, networks and volumes of job JOB: its folder's, or, by name, those of every folder of that name."""
    if not job and not every:
        click.echo("nullius: name the job (its name or its folder), or give --all", err=True)
        sys.exit(2)
    from nullius_backend_docker import dockercli, sweep

    name = job.rstrip("/").rsplit("/", 1)[-1] if job else None
    folder = sweep.folder_label(Path(job)) if job and not every and Path(job).is_dir() else None
    try:
        removed = sweep.sweep(None if every else name, folder=folder)
    except dockercli.DockerError as exc:
        click.echo(f"nullius: {exc}", err=True)
        sys.exit(2)
    if as_json:
        click.echo(json.dumps(removed))
    else:
        click.echo(", ".join(f"{len(v)} {k}" for k, v in removed.items()) + " removed")


@hookimpl
def nullius_register_commands(registry: CommandRegistry) -> None:
    registry.add(docker_group)
