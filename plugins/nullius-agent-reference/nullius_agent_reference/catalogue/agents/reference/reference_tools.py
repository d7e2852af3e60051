"""The reference agent's own workspace tools: read_file, write_file, list_files, run_command.

Every path is confined to the workspace (the session's cwd): a path is
resolved, symlinks included, and refused unless it lands inside the
workspace. run_command is not confined: it runs `/bin/sh -c COMMAND` in the
workspace, and keeping it there is the backend's job (a container, or the
user's consent to an unsandboxed run).
"""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path
from typing import Any

READ_LIMIT = 100_000  # characters of a file given to the model
OUTPUT_TAIL = 20_000  # characters of a command's output given to the model
LIST_LIMIT = 1_000  # entries of a listing
SECRET_VARS = ("OPENAI_API_KEY",)  # never handed to a command


class ToolFailure(Exception):
    """A tool call that could not be done; its message goes back to the model."""


def _fn(name: str, description: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": properties, "required": required},
        },
    }


TOOL_SPECS: list[dict[str, Any]] = [
    _fn("read_file", "Read a text file of the workspace.",
        {"path": {"type": "string", "description": "Path relative to the workspace."}}, ["path"]),
    _fn("write_file", "Write a text file in the workspace, replacing it if it exists; parent folders are made.",
        {"path": {"type": "string", "description": "Path relative to the workspace."},
         "content": {"type": "string", "description": "The whole new content of the file."}}, ["path", "content"]),
    _fn("list_files", "List a folder of the workspace (folders end with '/').",
        {"path": {"type": "string", "description": "Folder relative to the workspace; default '.'."}}, []),
    _fn("run_command", "Run a shell command in the workspace; returns its exit code and the tail of its output.",
        {"command": {"type": "string", "description": "The command, run by /bin/sh -c."}}, ["command"]),
]
TOOL_NAMES = frozenset(spec["function"]["name"] for spec in TOOL_SPECS)
NEEDS_PERMISSION = frozenset({"write_file", "run_command"})
KINDS = {"read_file": "read", "write_file": "edit", "list_files": "read", "run_command": "execute"}


class Workspace:
    """The session's cwd and the tools that act in it."""

    def __init__(self, root: str | os.PathLike[str], command_timeout: float = 120.0) -> None:
        self.root = Path(root).resolve()
        self.command_timeout = command_timeout

    def confine(self, path: Any) -> Path:
        """The real path of `path` if it is inside the workspace; else ToolFailure."""
        if not isinstance(path, str) or not path.strip():
            raise ToolFailure("expected a path (a non-empty string)")
        if "\x00" in path:
            raise ToolFailure("refused: the path contains a NUL byte")
        given = Path(path)
        resolved = (given if given.is_absolute() else self.root / given).resolve()
        if resolved != self.root and self.root not in resolved.parents:
            raise ToolFailure(f"refused: {path!r} is outside the workspace")
        return resolved

    def relative(self, path: Path) -> str:
        return path.relative_to(self.root).as_posix() or "."

    def title(self, name: str, args: dict[str, Any]) -> str:
        if name == "run_command":
            command = str(args.get("command", ""))
            return f"run_command: {command[:80]}{'…' if len(command) > 80 else ''}"
        if "path" in args:
            return f"{name} {args['path']}"
        return name

    def precheck(self, name: str, args: dict[str, Any]) -> None:
        """Refuse a call that cannot succeed before the client is asked to permit it."""
        if name == "write_file":
            _only(args, "path", "content")
            self.confine(args.get("path"))
        elif name == "run_command":
            _only(args, "command")

    async def call(self, name: str, args: dict[str, Any]) -> str:
        if name == "read_file":
            return self.read_file(**_only(args, "path"))
        if name == "write_file":
            return self.write_file(**_only(args, "path", "content"))
        if name == "list_files":
            return self.list_files(**_only(args, "path"))
        if name == "run_command":
            return await self.run_command(**_only(args, "command"))
        raise ToolFailure(f"unknown tool {name!r}")

    def read_file(self, path: Any = None) -> str:
        target = self.confine(path)
        if not target.is_file():
            raise ToolFailure(f"{path!r} is not a file")
        text = target.read_bytes().decode("utf-8", errors="replace")
        if len(text) > READ_LIMIT:
            return text[:READ_LIMIT] + f"\n[truncated: the file has {len(text)} characters; showing the first {READ_LIMIT}]"
        return text

    def write_file(self, path: Any = None, content: Any = None) -> str:
        if not isinstance(content, str):
            raise ToolFailure("expected content (a string)")
        target = self.confine(path)
        if target == self.root or target.is_dir():
            raise ToolFailure(f"{path!r} is a folder")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content, encoding="utf-8")
        return f"wrote {len(content)} characters to {self.relative(target)}"

    def list_files(self, path: Any = ".") -> str:
        target = self.confine("." if path is None else path)
        if not target.is_dir():
            raise ToolFailure(f"{path!r} is not a folder")
        entries = sorted(target.iterdir(), key=lambda p: p.name)
        names = [p.name + ("/" if p.is_dir() else "") for p in entries[:LIST_LIMIT]]
        if len(entries) > LIST_LIMIT:
            names.append(f"[{len(entries) - LIST_LIMIT} more entries not shown]")
        return "\n".join(names) if names else "(empty)"

    async def run_command(self, command: Any = None) -> str:
        if not isinstance(command, str) or not command.strip():
            raise ToolFailure("expected a command (a non-empty string)")
        env = {k: v for k, v in os.environ.items() if k not in SECRET_VARS}
        proc = await asyncio.create_subprocess_exec(
            "/bin/sh", "-c", command, cwd=self.root, env=env, stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT, start_new_session=True,
        )
        buffer = bytearray()
        reader = asyncio.ensure_future(_collect(proc, buffer))
        timed_out = False
        try:
            await asyncio.wait_for(proc.wait(), self.command_timeout)
        except asyncio.TimeoutError:
            timed_out = True
        except BaseException:  # cancelled: leave nothing running
            _kill_group(proc)
            reader.cancel()
            raise
        _kill_group(proc)  # on a timeout, and whatever it left in the background
        try:
            await asyncio.wait_for(reader, 5)
        except asyncio.TimeoutError:
            pass
        if timed_out:
            await proc.wait()
        out = bytes(buffer)
        text = out.decode("utf-8", errors="replace")
        head = f"timed out after {self.command_timeout:g} s" if timed_out else f"exit code: {proc.returncode}"
        if len(text) > OUTPUT_TAIL:
            head += f"\n[output truncated: the last {OUTPUT_TAIL} of {len(text)} characters]"
            text = text[-OUTPUT_TAIL:]
        return f"{head}\n{text}"


def _only(args: dict[str, Any], *names: str) -> dict[str, Any]:
    unknown = sorted(set(args) - set(names))
    if unknown:
        raise ToolFailure(f"unknown arguments {unknown}: expected {list(names)}")
    return args


def _kill_group(proc: asyncio.subprocess.Process) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


async def _collect(proc: asyncio.subprocess.Process, buffer: bytearray) -> None:
    assert proc.stdout is not None
    while chunk := await proc.stdout.read(65536):
        buffer.extend(chunk)
        if len(buffer) > 4 * OUTPUT_TAIL:  # keep memory bounded; only the tail is shown
            del buffer[: len(buffer) - 2 * OUTPUT_TAIL]
