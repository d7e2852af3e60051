"""The real driver and the real MCP server, spoken to as Nullius and an agent's session speak to them."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import tempfile
import threading
from pathlib import Path

from nullius_core.testing.drivers import driver_environment

HERE = Path(__file__).resolve().parents[1] / "nullius_bench_bfcl" / "catalogue" / "benchmarks" / "bfcl"
STANDARD = json.loads((HERE / "standard.json").read_text())
WAIT = 120  # no reply of these tests comes near it: one that does not come is a failure, not a hang


def install(standard_dir: Path) -> Path:
    """{install}: driver.install's pins, bfcl-eval with --no-deps; as a run on `standard_dir` installs it (once)."""
    return driver_environment("bfcl", STANDARD["driver"]["install"], standard_dir)


def dataset_file(env_root: Path, category: str) -> str:
    declared = {**STANDARD["datasets"], **STANDARD["versions"]["2026.3.23-irrelevance"]["datasets"]}[category]
    code = "import importlib.resources as r, sys; print(r.files(sys.argv[1]).joinpath(sys.argv[2]))"
    return subprocess.run([str(env_root / ".venv/bin/python"), "-c", code, declared["package"], declared["path"]],
                          capture_output=True, text=True, check=True).stdout.strip()


def argv_of(command: list[str], env_root: Path) -> list[str]:
    return [p.replace("{install}", str(env_root)).replace("{here}", str(HERE)) for p in command]


class Lines:
    """A process's stdout, a JSON object a line, read by a thread: a test waits for a line, never sleeps."""

    def __init__(self, stream) -> None:
        self.queue: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, args=(stream,), daemon=True).start()

    def _read(self, stream) -> None:
        for line in stream:
            self.queue.put(json.loads(line))
        self.queue.put(None)

    def next(self) -> dict:
        got = self.queue.get(timeout=WAIT)
        assert got is not None, "the process ended"
        return got


class Driver:
    def __init__(self, env_root: Path, category: str, cwd: Path) -> None:
        self.category, self.err = category, tempfile.TemporaryFile()
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(cwd), "PYTHONUNBUFFERED": "1",
               "NULLIUS_DATASET": dataset_file(env_root, category)}
        self.proc = subprocess.Popen(argv_of(STANDARD["driver"]["command"], env_root), stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self.err, env=env, cwd=cwd, text=True, bufsize=1)
        self.lines = Lines(self.proc.stdout)

    def call(self, op: str, **fields) -> dict:
        self.proc.stdin.write(json.dumps({"op": op, "dataset": self.category, **fields}) + "\n")
        self.proc.stdin.flush()
        return self.lines.next()

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=30)
        self.err.close()


class Mcp:
    """The benchmark's MCP server, started with its standard.json command and the env setup's mcp entry gives."""

    def __init__(self, env_root: Path, entry: dict) -> None:
        argv = argv_of(STANDARD["mcp_servers"][entry["server"]]["command"], env_root)
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **entry.get("env", {})}
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     env=env, text=True, bufsize=1)
        self.lines, self.ident, self.notes = Lines(self.proc.stdout), 0, []
        self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                    "clientInfo": {"name": "bfcl-tests", "version": "0"}})

    def request(self, method: str, params: dict | None = None) -> dict:
        self.ident += 1
        self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": self.ident, "method": method, "params": params or {}}) + "\n")
        self.proc.stdin.flush()
        while True:
            message = self.lines.next()
            if "id" in message and message["id"] == self.ident:
                return message
            self.notes.append(message)  # a notification between replies

    def next_notification(self) -> dict:
        return self.notes.pop(0) if self.notes else self.lines.next()

    def tools(self) -> list[str]:
        return [t["name"] for t in self.request("tools/list")["result"]["tools"]]

    def call(self, name: str, arguments: dict) -> tuple[str, bool]:
        result = self.request("tools/call", {"name": name, "arguments": arguments})["result"]
        return result["content"][0]["text"], result["isError"]

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=30)
