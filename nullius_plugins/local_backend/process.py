"""An agent as a local process group: its own session, stderr to a file, ended whole.

npm wrappers start native binaries and agents start MCP servers: ending the
direct child is not enough, so the whole process group is signalled, and
what is still alive after the grace period is killed and named.
"""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

from nullius_core.run.agent import AgentLaunch

LINE_LIMIT = 64 * 1024 * 1024
GRACE = 3.0


def group_members(pgid: int) -> list[tuple[int, str]]:
    members = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry.name}/stat").read_text()
            fields = stat.rsplit(")", 1)[1].split()
            if int(fields[2]) == pgid and fields[0] != "Z":  # a zombie is already dead
                name = stat[stat.index("(") + 1 : stat.rindex(")")]
                members.append((int(entry.name), name))
        except (OSError, ValueError, IndexError):
            continue
    return members


class LocalProcess:
    def __init__(self, proc: asyncio.subprocess.Process, stderr_file: object):
        self._proc = proc
        self._stderr = stderr_file
        assert proc.stdin is not None and proc.stdout is not None
        self.stdin = proc.stdin
        self.stdout = proc.stdout
        self.pid = proc.pid

    @classmethod
    async def start(cls, launch: AgentLaunch) -> LocalProcess:
        launch.stderr.parent.mkdir(parents=True, exist_ok=True)
        stderr = open(launch.stderr, "ab")  # noqa: SIM115 - closed in end()
        try:
            proc = await asyncio.create_subprocess_exec(
                *launch.argv,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=stderr,
                cwd=str(launch.cwd),
                env=dict(launch.env),
                start_new_session=True,
                limit=LINE_LIMIT,
            )
        except OSError:
            stderr.close()
            raise
        return cls(proc, stderr)

    @property
    def returncode(self) -> int | None:
        return self._proc.returncode

    async def wait(self) -> int:
        return await self._proc.wait()

    async def end(self) -> list[str]:
        """TERM the group, then KILL what is left; name what had to be killed."""
        killed: list[str] = []
        if self._proc.stdin is not None and not self._proc.stdin.is_closing():
            self._proc.stdin.close()
        try:
            os.killpg(self.pid, signal.SIGTERM)
        except (ProcessLookupError, PermissionError):
            pass
        deadline = asyncio.get_running_loop().time() + GRACE
        while asyncio.get_running_loop().time() < deadline and group_members(self.pid):
            await asyncio.sleep(0.05)
        for pid, name in group_members(self.pid):
            try:
                os.kill(pid, signal.SIGKILL)
                killed.append(f"{pid} {name}")
            except ProcessLookupError:
                pass
        try:
            await asyncio.wait_for(self._proc.wait(), 5)
        except asyncio.TimeoutError:
            pass
        self._stderr.close()  # type: ignore[attr-defined]
        return killed
