"""The Nullius reference agent: an ACP agent over stdio, a tool-calling loop over OpenAI Chat Completions.

Environment: OPENAI_BASE_URL, OPENAI_API_KEY, NULLIUS_REFERENCE_MODEL (required),
NULLIUS_REFERENCE_EFFORT (low|medium|high; unset, empty or "default" sends no
reasoning_effort), and optionally NULLIUS_REFERENCE_MAX_CALLS (model calls per
prompt, default 40), NULLIUS_REFERENCE_MAX_RETRIES (the openai SDK's retries,
default 2), NULLIUS_REFERENCE_COMMAND_TIMEOUT (run_command, default 120 s),
NULLIUS_REFERENCE_MCP_TIMEOUT (an MCP server's start, default 30 s, and each of
its tool calls, 10 x that), NULLIUS_REFERENCE_LOG (log level, default INFO).

stdout carries ACP alone: at start the agent keeps a private copy of fd 1 for
ACP and points fd 1 (and sys.stdout) at stderr, so nothing else reaches it.
See README.md for the session/update kinds it sends, its notices and errors.

It starts on the standard library alone (reference_acp, reference_http): the
mcp SDK is imported by the first session that is given MCP servers.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from reference_acp import PROTOCOL_VERSION, Connection, RequestError  # noqa: E402
from reference_loop import Turn, model_settings  # noqa: E402
from reference_tools import TOOL_NAMES, TOOL_SPECS, Workspace  # noqa: E402

VERSION = "0.1.0"
NAME = "nullius-reference"
log = logging.getLogger(NAME)


def _env_float(name: str, default: float) -> float:
    try:
        return float(os.environ.get(name) or default)
    except ValueError:
        return default


SYSTEM_PROMPT = """You are the Nullius reference agent, a careful software agent.
Your workspace is {cwd}; every path you give a tool is relative to it, and you cannot leave it.
Use the tools when they help: read, write and list files, run shell commands, and call the other tools offered.
When you are done, answer the user plainly; your last message is your answer."""


INSTRUCTIONS = "AGENTS.md"  # the workspace's instructions, as agent.json's variant.instructions declares
INSTRUCTIONS_MAX = 32 * 1024
SKILLS = Path(".agents") / "skills"  # skill folders, each with its SKILL.md (agent.json's variant.skills)


def _inside(path: Path, cwd: Path) -> bool:
    """A file of the workspace's own, not a link out of it (the agent cannot leave its workspace, nor can what it reads)."""
    return path.resolve().is_relative_to(cwd.resolve())


def _skill_line(folder: Path, cwd: Path) -> str | None:
    """`- name: description (path)` from a skill's SKILL.md front matter; None when it has no SKILL.md."""
    if not _inside(folder / "SKILL.md", cwd):
        return None
    try:
        text = (folder / "SKILL.md").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    fields = {}
    if text.startswith("---"):
        for line in text.split("\n")[1:]:
            if line.strip() == "---":
                break
            key, sep, value = line.partition(":")
            if sep:
                fields[key.strip()] = value.strip()
    name = fields.get("name") or folder.name
    return f"- {name}: {fields.get('description', '')} (read {SKILLS / folder.name / 'SKILL.md'} before using it)".replace(":  (", ": (")


def system_prompt(cwd: Path) -> str:
    """The system prompt, then the workspace's AGENTS.md and a list of its skills, when it has them."""
    parts = [SYSTEM_PROMPT.format(cwd=cwd)]
    try:
        if not _inside(cwd / INSTRUCTIONS, cwd):
            raise OSError("a link out of the workspace")
        with (cwd / INSTRUCTIONS).open("rb") as file:  # at most 32 KiB, as Codex reads a project's AGENTS.md
            instructions = file.read(INSTRUCTIONS_MAX).decode("utf-8", errors="replace").strip()
    except OSError:
        instructions = ""
    if instructions:
        parts.append(f"The workspace's {INSTRUCTIONS} says:\n{instructions}")
    skills_dir = cwd / SKILLS
    lines = [line for f in sorted(skills_dir.iterdir()) if f.is_dir() and (line := _skill_line(f, cwd))] if skills_dir.is_dir() else []
    if lines:
        parts.append("Skills in the workspace:\n" + "\n".join(lines))
    return "\n\n".join(parts)


class Session:
    def __init__(self, session_id: str, cwd: Path) -> None:
        self.id = session_id
        self.workspace = Workspace(cwd, _env_float("NULLIUS_REFERENCE_COMMAND_TIMEOUT", 120.0))
        self.mcp: Any = NoMcp()
        self.history: list[dict[str, Any]] = [{"role": "system", "content": system_prompt(cwd)}]
        self.turn: asyncio.Task[dict[str, Any]] | None = None
        self.cancel_requested = False
        self.tool_call_ids: set[str] = set()

    def tool_specs(self) -> list[dict[str, Any]]:
        return [*TOOL_SPECS, *self.mcp.specs]


class NoMcp:
    """A session's MCP tools when it was given no MCP server: nothing, and the mcp SDK never imported."""

    specs: list[dict[str, Any]] = []
    routes: dict[str, Any] = {}

    async def close(self) -> None:
        pass


class ReferenceAgent:
    """The ACP agent side: initialize, session/new, session/prompt, session/cancel."""

    def __init__(self) -> None:
        self.conn: Any = None
        self.sessions: dict[str, Session] = {}
        self._model: Any = None

    def methods(self) -> dict[str, Any]:
        return {"initialize": self.initialize, "authenticate": self.authenticate, "session/new": self.new_session,
                "session/prompt": self.prompt}

    async def initialize(self, params: dict[str, Any]) -> dict[str, Any]:
        client = params.get("clientInfo") or {}
        log.info("initialize: client protocol %s, client %s", params.get("protocolVersion"),
                 client.get("name", "unnamed") if isinstance(client, dict) else "unnamed")
        return {
            "protocolVersion": PROTOCOL_VERSION,
            "agentCapabilities": {
                "loadSession": False,
                "promptCapabilities": {"image": False, "audio": False, "embeddedContext": True},
                "mcpCapabilities": {"http": False, "sse": False},
            },
            "authMethods": [],
            "agentInfo": {"name": NAME, "title": "Nullius reference agent", "version": VERSION},
        }

    async def authenticate(self, params: dict[str, Any]) -> None:
        raise RequestError.invalid_params({"details": "this agent needs no authentication"})

    async def new_session(self, params: dict[str, Any]) -> dict[str, Any]:
        cwd = params.get("cwd")
        root = Path(cwd) if isinstance(cwd, str) else None
        if root is None or not root.is_absolute() or not root.is_dir():
            raise RequestError.invalid_params({"details": f"cwd must be an existing absolute folder, got {cwd!r}"})
        session = Session(uuid.uuid4().hex, root)
        servers = params.get("mcpServers") or []
        if servers:
            await self._start_mcp(session, servers, root)
        self.sessions[session.id] = session
        log.info("session %s: cwd %s, %d MCP tools", session.id, root, len(session.mcp.specs))
        return {"sessionId": session.id}

    async def _start_mcp(self, session: Session, servers: list[Any], root: Path) -> None:
        """The session's MCP servers, each started and its tools listed; the mcp SDK imported here, first."""
        from mcp import StdioServerParameters
        from mcp.types import Implementation as McpImplementation

        from reference_mcp import McpServer, McpStartError, McpTools

        session.mcp = McpTools()
        timeout = _env_float("NULLIUS_REFERENCE_MCP_TIMEOUT", 30.0)
        info = McpImplementation(name=NAME, version=VERSION)
        try:
            for entry in servers:
                if not isinstance(entry, dict) or entry.get("type", "stdio") != "stdio" or "command" not in entry:
                    name = entry.get("name", "?") if isinstance(entry, dict) else "?"
                    raise RequestError.invalid_params({"details": f"MCP server {name!r}: only stdio servers are supported"})
                env = {v["name"]: v["value"] for v in entry.get("env") or []}
                params = StdioServerParameters(command=entry["command"], args=list(entry.get("args") or []), env=env, cwd=str(root))
                server = McpServer(entry.get("name", ""), params, info, call_timeout=10 * timeout)
                await session.mcp.add(server, timeout, set(TOOL_NAMES))
        except McpStartError as exc:
            log.warning("session/new refused: %s", exc)
            await session.mcp.close()
            raise RequestError(-32603, f"Internal error: {exc}",
                               {"kind": "mcp_server_failed", "server": exc.server, "message": exc.detail}) from None
        except BaseException:
            await session.mcp.close()
            raise

    def _session(self, session_id: Any) -> Session:
        session = self.sessions.get(session_id)
        if session is None:
            raise RequestError.invalid_params({"details": f"unknown session {session_id!r}"})
        return session

    async def prompt(self, params: dict[str, Any]) -> dict[str, Any]:
        session_id = params.get("sessionId")
        session = self._session(session_id)
        if session.turn is not None and not session.turn.done():
            raise RequestError.invalid_request({"details": "a prompt is already running in this session"})
        if self._model is None:
            self._model = model_settings()
        session.cancel_requested = False
        turn = Turn(self.conn, session, self._model)
        session.turn = asyncio.create_task(turn.run(params.get("prompt") or []), name=f"turn:{session_id}")
        try:
            return await session.turn
        except asyncio.CancelledError:
            me = asyncio.current_task()
            if session.cancel_requested and me is not None and not me.cancelling():
                log.info("session %s: turn cancelled", session_id)
                return {"stopReason": "cancelled"}
            raise

    async def cancel(self, params: dict[str, Any]) -> None:
        session = self.sessions.get(params.get("sessionId"))
        if session is None or session.turn is None or session.turn.done():
            return
        session.cancel_requested = True
        session.turn.cancel()

    async def shutdown(self) -> None:
        for session in list(self.sessions.values()):
            if session.turn is not None and not session.turn.done():
                session.turn.cancel()
            await session.mcp.close()
        self.sessions.clear()


class _WritePipeProtocol(asyncio.BaseProtocol):
    """Flow control for the ACP stdout pipe (what asyncio.StreamWriter needs)."""

    def __init__(self) -> None:
        self._paused = False
        self._waiter: asyncio.Future[None] | None = None

    def pause_writing(self) -> None:
        self._paused = True

    def resume_writing(self) -> None:
        self._paused = False
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)
        self._waiter = None

    async def _drain_helper(self) -> None:
        if self._paused:
            self._waiter = self._waiter or asyncio.get_running_loop().create_future()
            await self._waiter


async def _acp_streams() -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """stdin, and a private copy of stdout for ACP; fd 1 itself then points at stderr."""
    acp_out = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=50 * 1024 * 1024)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    protocol = _WritePipeProtocol()
    transport, _ = await loop.connect_write_pipe(lambda: protocol, acp_out)
    return reader, asyncio.StreamWriter(transport, protocol, None, loop)


async def main() -> None:
    agent = ReferenceAgent()
    me = asyncio.current_task()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, me.cancel)
    reader, writer = await _acp_streams()
    agent.conn = Connection(reader, writer, agent.methods(), {"session/cancel": agent.cancel})
    try:
        await agent.conn.serve()
    except asyncio.CancelledError:
        log.info("stopping on a signal")
    finally:
        await agent.shutdown()


if __name__ == "__main__":
    logging.basicConfig(stream=sys.stderr, level=os.environ.get("NULLIUS_REFERENCE_LOG", "INFO").upper(),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    asyncio.run(main())
