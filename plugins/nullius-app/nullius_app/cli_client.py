"""The app's one way to act: the `nullius` command, run as a process of this machine, its output read.

Every action the app offers is a command a person could type, so the app and
the command line never disagree. The command runs with the app's own
environment (its user's settings and keys), or with less: `keys=False`
leaves out every variable named like a secret, for a command that must
never be handed one (a control run of a benchmark that is not judged).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any

import attrs

from nullius_core.secret_names import without_secrets

SECONDS = 600


@attrs.frozen
class Done:
    code: int
    stdout: str
    stderr: str

    @property
    def said(self) -> str:
        """The command's own last words: its refusal or its summary, for a page."""
        return (self.stderr.strip().splitlines() or self.stdout.strip().splitlines() or [""])[-1]


class CommandFailed(Exception):
    def __init__(self, argv: list[str], done: Done):
        self.argv = argv
        self.done = done
        super().__init__(f"nullius {' '.join(argv)} exited {done.code}: {done.said}")


@attrs.define
class Nullius:
    """`nullius ...` as this Python runs it (the app's own installation)."""

    python: str = sys.executable

    def argv(self, *args: str) -> list[str]:
        return [self.python, "-m", "nullius_core", *args]

    def env(self, keys: bool = True) -> dict[str, str]:
        return dict(os.environ) if keys else without_secrets(os.environ)

    async def run(self, *args: str, stdin: bytes | None = None, keys: bool = True, seconds: float = SECONDS) -> Done:
        proc = await asyncio.create_subprocess_exec(
            *self.argv(*args), stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=self.env(keys))
        try:
            out, err = await asyncio.wait_for(proc.communicate(stdin), seconds)
        except asyncio.TimeoutError:
            proc.kill()
            await proc.wait()
            raise
        return Done(proc.returncode or 0, out.decode(errors="replace"), err.decode(errors="replace"))

    async def json(self, *args: str) -> Any:
        """A command's JSON output (`--json`); CommandFailed when it refuses or breaks."""
        done = await self.run(*args)
        if done.code != 0:
            raise CommandFailed(list(args), done)
        return json.loads(done.stdout)
