"""`nullius host ...`: a recipe's job run on another machine over SSH, mirrored back here (the app runs these too).

    nullius host check USER@HOST [--backend local|docker]    what the host has, and what a run there would lack
    nullius host run [USER@HOST] --from-run RECIPE [--job-name NAME]
    nullius host mirror JOB_DIR [--once]                      follow a run on a host again (after this machine lost it)
    nullius host cancel JOB_DIR                               SIGINT to the run there

Each takes the connection's options: --port, --identity FILE, --known-hosts
FILE, --accept-new (a host whose key is not yet known is accepted and
remembered; without it, refused).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from nullius_core.paths import Paths

from nullius_app.host import ssh
from nullius_app.host.ssh import Host, HostRefused

# `launch` and `probe` (the snapshot, packaging's markers) are imported by the commands that use them: every `nullius`
# command loads this group, and none of them but `host ...` should pay for them.


def _refuse(why: str) -> None:
    click.echo(f"nullius: {why}", err=True)
    sys.exit(2)


def connection(func: Any) -> Any:
    for option in reversed([
        click.option("--port", type=click.IntRange(1, 65535), help="The host's SSH port (default: ssh's, 22 or your ~/.ssh/config's)."),
        click.option("--identity", type=click.Path(path_type=Path, dir_okay=False, exists=True), help="The private key to log in with."),
        click.option("--known-hosts", type=click.Path(path_type=Path, dir_okay=False),
                     help="The known_hosts file that holds the host's key (default: ~/.ssh/known_hosts)."),
        click.option("--accept-new", is_flag=True,
                     help="A host whose key is not known yet: accept it (its fingerprint said) and remember it in known_hosts."),
    ]):
        func = option(func)
    return func


def _host(destination: str | None, options: dict[str, Any]) -> Host | None:
    if destination is None:
        return None
    return Host(destination=destination, port=options["port"], identity=options["identity"], known_hosts=options["known_hosts"],
                accept_new=options["accept_new"])


@click.group("host")
def host_group() -> None:
    """Run a recipe's job on another machine over SSH, its job mirrored back here every 10 s."""


@host_group.command("check")
@click.argument("destination", metavar="USER@HOST")
@click.option("--backend", type=click.Choice(["local", "docker"]), default="local", show_default=True, help="The backend a run there would use.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@connection
def check_command(destination: str, backend: str, as_json: bool, **options: Any) -> None:
    """What USER@HOST has (python3, git, npm, docker, uv), and what a run there would lack. Exit status 2 when it lacks something."""
    host = _host(destination, options)
    assert host is not None
    from nullius_app.host import launch, probe
    try:
        facts = probe.probe(host, docker=backend == "docker")
    except HostRefused as exc:
        if as_json:
            click.echo(json.dumps({"host": host.name, "backend": backend, "reachable": False, "problems": [str(exc)]}))
            sys.exit(2)
        _refuse(str(exc))
    record = facts.record(backend)
    if host.accept_new:
        record["key"] = ssh.fingerprint(host)
        click.echo(f"host key {record['key'] or 'not found'} (in {host.known_hosts or '~/.ssh/known_hosts'}): check it is the host's", err=True)
    if as_json:
        click.echo(json.dumps({**record, "reachable": True}, indent=2))
    else:
        for name in ("python3", "python3_version", "git", "npm", "docker", "docker_daemon", "uv", "machine", "home"):
            if name in facts.found:
                click.echo(f"{name:16} {facts.found[name] or 'missing'}")
        if not facts.get("uv"):
            click.echo(f"{'':16} uv is installed from PyPI (uv=={launch.UV_VERSION}) when a run needs it")
    if record["problems"]:
        if not as_json:
            for problem in record["problems"]:
                click.echo(f"nullius: {problem}", err=True)
        sys.exit(2)


@host_group.command("run")
@click.argument("destination", metavar="[USER@HOST]", required=False)
@click.option("--from-run", "from_run", type=click.Path(path_type=Path, dir_okay=False, exists=True), required=True, metavar="RECIPE",
              help="The run recipe (the app's builder writes them); its `host` is where it runs, unless USER@HOST is given.")
@click.option("--job-name", help="The recipe's job to run (a recipe of one job needs none).")
@click.option("--jobs-dir", type=click.Path(path_type=Path, file_okay=False), help="Where the job is mirrored (default: nullius paths' jobs).")
@click.option("--json", "as_json", is_flag=True, help="At the end, print what happened as JSON (the snapshot, the setup, each mirror).")
@connection
@click.pass_context
def run_command(ctx: click.Context, destination: str | None, from_run: Path, job_name: str | None, jobs_dir: Path | None,
                as_json: bool, **options: Any) -> None:
    """Run a recipe's job on a host over SSH: the running Nullius and your catalogue sent once, the job mirrored back every 10 s."""
    plugin_options = tuple(ctx.find_root().params.get("plugin_options") or ())
    from nullius_app.host import launch
    try:
        report = launch.run(_host(destination, options), from_run, job_name, jobs_dir or Paths.from_env().jobs_dir, plugin_options)
    except HostRefused as exc:
        _refuse(str(exc))
    _finish(report, as_json)


@host_group.command("mirror")
@click.argument("job", type=click.Path(path_type=Path, file_okay=False, exists=True), metavar="JOB_DIR")
@click.option("--once", is_flag=True, help="Mirror once and stop, whether or not the run has ended.")
@click.option("--json", "as_json", is_flag=True, help="At the end, print what happened as JSON.")
def mirror_command(job: Path, once: bool, as_json: bool) -> None:
    """Follow a job run on a host again: mirror it every 10 s until it has ended there."""
    from nullius_app.host import launch
    try:
        report = launch.follow_again(job, once)
    except HostRefused as exc:
        _refuse(str(exc))
    _finish({"job": str(job), **report}, as_json, once)


@host_group.command("cancel")
@click.argument("job", type=click.Path(path_type=Path, file_okay=False, exists=True), metavar="JOB_DIR")
def cancel_command(job: Path) -> None:
    """Send SIGINT to the run of JOB_DIR on its host: it ends cancelled there, its records whole (a mirror brings them)."""
    from nullius_app.host import launch
    try:
        if not launch.cancel_again(job):
            _refuse(f"the host of {job} could not be told")
    except HostRefused as exc:
        _refuse(str(exc))


def _finish(report: dict[str, Any], as_json: bool, once: bool = False) -> None:
    if as_json:
        click.echo(json.dumps(report, indent=2))
    code = report.get("code")
    if code is None:
        sys.exit(0 if once else 1)
    sys.exit(int(code))
