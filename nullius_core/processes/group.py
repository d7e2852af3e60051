"""An agent as a process group of the run: its own session, its stderr capped into a file, ended whole.

The local backend's agent, and the bubblewrap backend's (whose command is bwrap's).

npm wrappers start native binaries and agents start MCP servers: ending the
direct child is not enough. The agent starts as every process of a run
does (`lifetime.start_process`: its own session, the run's marker), and its
end ends its group, whatever left the group still carrying its marker, and
their descendants; what is still alive after the grace period is killed
and named.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from pathlib import Path

from nullius_core.contracts.agent import AgentLaunch
from nullius_core.processes.capped import CappedCopy, CappedLog
from nullius_core.processes.lifetime import end_process, start_process

LINE_LIMIT = 64 * 1024 * 1024
GRACE = 3.0


class GroupProcess:
    def __init__(self, proc: asyncio.subprocess.Process, stderr: CappedCopy):
        self._proc = proc
        self._stderr = stderr
        assert proc.stdin is not None and proc.stdout is not None
        self.stdin = proc.stdin
        self.stdout = proc.stdout
        self.pid = proc.pid

    @classmethod
    async def start(cls, launch: AgentLaunch, pass_fds: Sequence[int] = ()) -> GroupProcess:
        """`pass_fds`: descriptors the process keeps (bwrap's --info-fd and --block-fd); every other is closed in it."""
        proc, stderr = await cls.spawn(launch.argv, launch.env, launch.stderr, cwd=launch.cwd, pass_fds=pass_fds)
        return cls(proc, stderr)

    @staticmethod
    async def spawn(argv: Sequence[str], env: Mapping[str, str], stderr_path: Path,
                    cwd: Path | None = None, pass_fds: Sequence[int] = ()) -> tuple[asyncio.subprocess.Process, CappedCopy]:
        """A process of the run, its stdio piped and its stderr copied (capped) into `stderr_path`, there even when it cannot start."""
        log = CappedLog.to_file(stderr_path, what="the agent's stderr")
        try:
            proc = await start_process(
                *argv,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                cwd=None if cwd is None else str(cwd),
                env=dict(env),
                limit=LINE_LIMIT,
                pass_fds=tuple(pass_fds),
            )
        except BaseException:
            log.close()
            raise
        assert proc.stderr is not None
        return proc, CappedCopy(proc.stderr, log)

    @property
    def returncode(self) -> int | None:
        return self._proc.returncode

    async def wait(self) -> int:
        return await self._proc.wait()

    async def end(self) -> list[str]:
        """TERM every process of the agent, then KILL what is left; name what had to be killed."""
        killed = await end_process(self._proc, GRACE)
        await self._stderr.close()
        return killed
