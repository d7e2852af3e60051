"""What the run engine needs to run an agent: a process the backend starts, a protocol that talks to it.

The backend's room for the unit starts the agent (`AgentRoom.start_agent`) in the unit's workspace with its
own HOME, and ends its whole process group when asked. The protocol adapter
(ACP, a plugin's, through `nullius_register_agent_protocols`) holds the
conversation: the first prompt, the driver's further turns, the time limit,
the permission requests; it records the raw transcript and gives back the
answer and the steps of a trajectory.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any, Protocol

import attrs


@attrs.frozen(kw_only=True)
class AgentLaunch:
    argv: list[str]
    env: Mapping[str, str]
    cwd: Path
    home: Path
    stderr: Path
    label: str
    reads: tuple[Path, ...] = ()  # folders it reads at their paths here: its install and definition folder
    licence_files: tuple[tuple[Path, str], ...] = ()  # (the 0600 file here, the path a container mounts it at)
    # A variant's workspace files (nullius_core/variants): already in the workspace; a backend whose agent works elsewhere
    # (a task's own image, a box) puts them into the agent's working folder before the agent starts.
    workdir_files: Path | None = None


class AgentProcess(Protocol):
    stdin: asyncio.StreamWriter
    stdout: asyncio.StreamReader
    pid: int

    @property
    def returncode(self) -> int | None: ...

    async def wait(self) -> int: ...

    async def end(self) -> list[str]:
        """End the whole process group (TERM, then KILL); the processes that had to be killed."""


@attrs.frozen(kw_only=True)
class McpServerEntry:
    """A stdio MCP server for the agent's session, as ACP's session/new takes it."""

    name: str
    command: str
    args: list[str]
    env: dict[str, str]
    on_machine: bool = False  # a benchmark's own server (standard.json mcp_servers): it stays on this machine


# The driver's next turn: the transcript so far -> the next user message,
# None when the conversation is done, or ("restart", message) for a new session.
NextTurn = Callable[[list[dict[str, str]]], Awaitable["str | None | tuple[str, str]"]]


@attrs.frozen(kw_only=True)
class Conversation:
    prompt: str
    workspace: Path
    mcp_servers: list[McpServerEntry]
    seconds: float
    next_turn: NextTurn | None = None
    max_turns: int = 20
    notices: tuple[str, ...] = ()  # whole message chunks matching one of these are the adapter's warnings


@attrs.define(kw_only=True)
class AgentOutcome:
    answer: str = ""
    transcript: list[dict[str, str]] = attrs.field(factory=list)
    steps: list[dict[str, Any]] = attrs.field(factory=list)  # ATIF steps, ids not yet numbered
    tool_spans: list[dict[str, Any]] = attrs.field(factory=list)
    grants: list[dict[str, Any]] = attrs.field(factory=list)
    stop_reason: str | None = None
    failure: str | None = None  # an exception type name, Harbor's where Harbor has one
    message: str | None = None
    timed_out: bool = False
    info: dict[str, Any] = attrs.field(factory=dict)  # what the agent says of itself (agentInfo)
    prompted_at: float | None = None  # when the first prompt was sent (epoch s): the agent's setup ends there
    reported_cost_usd: float | None = None  # what the agent says it cost (a cross-check only: the relay's figure counts)


class AgentProtocol(Protocol):
    name: str

    async def converse(self, process: AgentProcess, conversation: Conversation, records: Path) -> AgentOutcome: ...
