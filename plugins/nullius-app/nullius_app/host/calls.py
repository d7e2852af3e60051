"""What the app's builder calls to run a recipe's job on a host. The one call that runs it is `start`.

    from nullius_app.host.calls import Host, check, command, start

    host = Host("runner@build-box", port=2222, identity=Path("~/.ssh/id_ed25519").expanduser())
    checked = await check(state, host, backend="local")     # before Run: what the host lacks, in its own words
    command(recipe_file, job_name, host)                    # the exact command, to show
    started = await start(state, recipe_file, job_name, host)   # runs it: the one call

Each is a `nullius host ...` command run as the app runs every action (the
command line does the same): `start` goes through the app's RunBook, so the
run is listed with the others, its log is the command's output (the host's
run's lines among them), and its cancel (SIGINT) is sent on to the host.
`host` may be left out when the recipe names its own (`"host": "USER@HOST"`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import attrs

from nullius_app.host.ssh import Host
from nullius_app.runbook import Started

__all__ = ["Checked", "Host", "check", "command", "start"]


@attrs.frozen
class Checked:
    ok: bool
    problems: list[str]  # each names what is missing and how to get it (the command's own words)
    found: dict[str, str]  # python3, git, npm, docker, uv, ... as the host answered


def command(recipe_file: Path | str, job_name: str, host: Host | None = None) -> list[str]:
    """The exact command that runs the job on the host (the builder shows it before it runs)."""
    where = [host.destination, *host.options()] if host is not None else []
    return ["nullius", "host", "run", *where, "--from-run", str(recipe_file), "--job-name", job_name]


async def check(state: Any, host: Host, backend: str = "local") -> Checked:
    """`nullius host check --json`: whether a run on `backend` can go to the host, and what it lacks."""
    done = await state.nullius.run("host", "check", host.destination, *host.options(), "--backend", backend, "--json", seconds=300)
    try:
        answer = json.loads(done.stdout)
    except ValueError:
        return Checked(ok=False, problems=[done.said or f"nullius host check exited {done.code}"], found={})
    return Checked(ok=done.code == 0 and not answer.get("problems"), problems=list(answer.get("problems") or []),
                   found=dict(answer.get("found") or {}))


async def start(state: Any, recipe_file: Path | str, job_name: str, host: Host | None = None) -> Started:
    """Run the recipe's job on the host: `nullius host run`, started and followed by the app's RunBook. The one call."""
    where = host.name if host is not None else "its host"
    return await state.runs.start(f"{job_name} on {where}", command(recipe_file, job_name, host)[1:], jobs=[job_name])
