"""The `nullius` commands the substrate runs: in a subprocess, as a user would, so the plugin needs no engine internals."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from nullius_rsi.keys import run_env

COMMAND_SECONDS = 3600.0  # only so that a hung command ends; a run's own limits decide before it


def kernel_request(path: str | None, variable: str, command: str) -> Any:
    """The JSON the kernel handed a command in the file `variable` names; ValueError saying why it cannot be had."""
    if not path:
        raise ValueError(f"{variable} is not set: `nullius improve {command}` is run by the nanorsi kernel")
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path}: cannot be read as JSON: {exc}") from None


class CommandFailed(Exception):
    """A `nullius` command exited non-zero: the message is its last lines."""


def nullius_argv(*args: str) -> list[str]:
    """`nullius ARGS` on this interpreter: the same install as the command running now."""
    return [sys.executable, "-m", "nullius_core", *args]


def run_nullius(args: list[str], *, log: Path | None = None, seconds: float = COMMAND_SECONDS) -> str:
    """Its stdout; CommandFailed with the last lines of what it said. With `log`, its output goes there too."""
    done = subprocess.run(nullius_argv(*args), stdin=subprocess.DEVNULL, capture_output=True, text=True, env=run_env(os.environ),
                          timeout=seconds)
    if log is not None:
        with log.open("a", encoding="utf-8") as out:
            out.write(f"$ nullius {' '.join(args)}\n{done.stdout}{done.stderr}(exit {done.returncode})\n")
    if done.returncode != 0:
        said = (done.stderr.strip() or done.stdout.strip()).splitlines()[-3:]
        raise CommandFailed(f"nullius {args[0]} exited {done.returncode}: " + " / ".join(said))
    return done.stdout


def agent_places(agent: str) -> dict[str, Any] | None:
    """The agent's `variant` places (`nullius list --json`): where its instruction file and skills go; None when it declares none."""
    key = agent.split("@", 1)[0]
    listing = json.loads(run_nullius(["list", "--json"]))
    for row in listing.get("agents") or []:
        if row.get("ref") == agent or row.get("ref", "").split("@", 1)[0] == key:
            return row.get("variant")
    raise CommandFailed(f"no agent {agent!r} in the catalogue (nullius list)")
