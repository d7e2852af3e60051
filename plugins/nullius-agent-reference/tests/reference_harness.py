"""Start the reference agent as a real subprocess and drive it with the ACP SDK's client side.

The agent runs on this interpreter (the dev venv), whose packages are the
versions agent.json pins (test_reference_definition checks that), or on
NULLIUS_REFERENCE_TEST_PYTHON, e.g. a venv built from agent.json's pip list. Its stdout is
teed: every line it wrote must be a JSON-RPC message.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import acp
import pytest
from acp import schema

HERE = Path(__file__).resolve().parent
AGENT_DIR = HERE.parent / "nullius_agent_reference" / "catalogue" / "agents" / "reference"
AGENT = AGENT_DIR / "agent.py"
ECHO_SERVER = HERE / "mcp_echo_server.py"
# The interpreter the agent runs on: this one, or a venv built from agent.json's `install` block.
PYTHON = os.environ.get("NULLIUS_REFERENCE_TEST_PYTHON") or sys.executable


class Recorder:
    """The client side: records every session/update and answers permission requests as told."""

    def __init__(self, permit: str = "allow") -> None:
        self.permit = permit
        self.updates: list[Any] = []
        self.permissions: list[Any] = []
        self.changed = asyncio.Event()

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append(update)
        self.changed.set()

    async def request_permission(self, session_id: str, tool_call: Any, options: list[Any],
                                 **kwargs: Any) -> schema.RequestPermissionResponse:
        self.permissions.append((tool_call, options))
        self.changed.set()
        if self.permit == "hang":
            await asyncio.Event().wait()
        option = "allow_once" if self.permit == "allow" else "reject_once"
        return schema.RequestPermissionResponse(outcome=schema.AllowedOutcome(outcome="selected", option_id=option))

    def of(self, kind: str) -> list[Any]:
        return [u for u in self.updates if u.session_update == kind]

    def text(self) -> str:
        return "".join(u.content.text for u in self.of("agent_message_chunk"))

    async def wait_for(self, predicate: Any, timeout: float = 10.0) -> None:
        async def loop() -> None:
            while not predicate():
                self.changed.clear()
                await self.changed.wait()
        await asyncio.wait_for(loop(), timeout)


class Agent:
    def __init__(self, conn: Any, client: Recorder, proc: Any, workspace: Path, stderr: Path) -> None:
        self.conn, self.client, self.proc, self.workspace, self.stderr = conn, client, proc, workspace, stderr

    async def start_session(self, mcp_servers: list[Any] | None = None) -> str:
        init = await self.conn.initialize(
            protocol_version=1,
            client_capabilities=schema.ClientCapabilities(
                fs=schema.FileSystemCapabilities(read_text_file=False, write_text_file=False), terminal=False),
            client_info=schema.Implementation(name="reference-tests", version="0"),
        )
        assert init.protocol_version == 1
        session = await self.conn.new_session(cwd=str(self.workspace), mcp_servers=mcp_servers or [])
        return session.session_id

    async def prompt(self, session_id: str, text: str) -> Any:
        return await self.conn.prompt(session_id=session_id, prompt=[acp.text_block(text)])


def alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


@asynccontextmanager
async def running_agent(tmp_path: Path, fake_model: Any, permit: str = "allow",
                        env: dict[str, str] | None = None) -> AsyncIterator[Agent]:
    workspace = tmp_path / "workspace"
    workspace.mkdir(exist_ok=True)
    (tmp_path / "home").mkdir(exist_ok=True)
    stderr_path = tmp_path / "agent.stderr"
    child_env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path / "home"), "LANG": "C.UTF-8",
        "OPENAI_BASE_URL": fake_model.openai_base_url, "OPENAI_API_KEY": "relay-token",
        "NULLIUS_REFERENCE_MODEL": "fake-model", "NULLIUS_REFERENCE_EFFORT": "default",
        "NULLIUS_REFERENCE_MAX_RETRIES": "0", **(env or {}),
    }
    with open(stderr_path, "wb") as stderr:
        proc = await asyncio.create_subprocess_exec(
            PYTHON, str(AGENT), stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=stderr, env=child_env, cwd=str(workspace), start_new_session=True, limit=50 * 1024 * 1024)
    raw: list[bytes] = []
    tee = asyncio.StreamReader(limit=50 * 1024 * 1024)

    async def pump() -> None:
        assert proc.stdout is not None
        while line := await proc.stdout.readline():
            raw.append(line)
            tee.feed_data(line)
        tee.feed_eof()

    pumping = asyncio.create_task(pump())
    client = Recorder(permit)
    conn = acp.connect_to_agent(client, proc.stdin, tee)
    try:
        yield Agent(conn, client, proc, workspace, stderr_path)
    finally:
        await conn.close()
        if proc.stdin is not None:
            proc.stdin.close()
        try:
            await asyncio.wait_for(proc.wait(), 10)  # stdin closed: the agent ends, and its MCP servers with it
        except asyncio.TimeoutError:
            os.killpg(proc.pid, signal.SIGKILL)
            await proc.wait()
            pytest.fail("the agent did not exit when its stdin closed")
        finally:
            await asyncio.wait_for(pumping, 5)
        for line in raw:
            message = json.loads(line)  # stdout carries ACP alone
            assert message.get("jsonrpc") == "2.0", line
        for _ in range(50):
            if not alive(proc.pid):
                break
            await asyncio.sleep(0.1)
        assert not alive(proc.pid), "a process of the agent's group survived it"
