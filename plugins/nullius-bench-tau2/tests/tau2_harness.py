"""The real driver process and the real MCP server process, spoken to as Nullius and an agent speak to them."""

from __future__ import annotations

import hashlib
import json
import os
import queue
import subprocess
import tempfile
import threading
from pathlib import Path

from nullius_core.testing.drivers import driver_environment

HERE = Path(__file__).resolve().parents[1] / "nullius_bench_tau2" / "catalogue" / "benchmarks" / "tau2"
STANDARD = json.loads((HERE / "standard.json").read_text())
OP_SECONDS = 120  # no op of these tests comes near it: a reply that does not come is a failure, not a hang


def install(standard_dir: Path) -> Path:
    """{install}: driver.install's environment, as a run on `standard_dir` installs it (once)."""
    return driver_environment("tau2", STANDARD["driver"]["install"], standard_dir)


def dataset_file(env_root: Path, dataset: str) -> str:
    """NULLIUS_DATASET: the package's file, found and checked as Nullius does (package + path, sha256)."""
    declared = STANDARD["datasets"][dataset]
    code = "import importlib.resources as r, sys; print(r.files(sys.argv[1]).joinpath(sys.argv[2]))"
    found = subprocess.run([str(env_root / ".venv/bin/python"), "-c", code, declared["package"], declared["path"]],
                           capture_output=True, text=True, check=True).stdout.strip()
    assert hashlib.sha256(Path(found).read_bytes()).hexdigest() == declared["sha256"]
    return found


class Lines:
    """A process's stdout, a line at a time, read by a thread: a test waits for a line, never sleeps."""

    def __init__(self, stream) -> None:
        self.queue: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, args=(stream,), daemon=True).start()

    def _read(self, stream) -> None:
        for line in stream:
            self.queue.put(line)
        self.queue.put(None)

    def next(self, timeout: float) -> str | None:
        return self.queue.get(timeout=timeout)


class Driver:
    """One driver process: a request per line in, a reply per line out."""

    def __init__(self, env_root: Path, dataset: str, cwd: Path, options: dict | None = None) -> None:
        self.dataset = dataset
        self.err = tempfile.TemporaryFile()
        argv = [p.replace("{install}", str(env_root)).replace("{here}", str(HERE)) for p in STANDARD["driver"]["command"]]
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(cwd), "PYTHONUNBUFFERED": "1",
               "NULLIUS_DATASET": dataset_file(env_root, dataset), "NULLIUS_UPSTREAM": "", "NULLIUS_VERSION": "",
               **{f"NULLIUS_OPTION_{k.upper()}": v for k, v in (options or {}).items()}}
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.err,
                                     env=env, cwd=cwd, text=True, bufsize=1)
        self.lines = Lines(self.proc.stdout)

    def log(self) -> str:
        self.err.seek(0)
        return self.err.read().decode("utf-8", "replace")[-4000:]

    def send(self, text: str, timeout: float = OP_SECONDS) -> dict:
        self.proc.stdin.write(text + "\n")
        self.proc.stdin.flush()
        line = self.lines.next(timeout)
        assert line is not None, f"the driver died; its stderr:\n{self.log()}"
        reply = json.loads(line)
        assert isinstance(reply, dict), line
        return reply

    def call(self, op: str, timeout: float = OP_SECONDS, **fields) -> dict:
        return self.send(json.dumps({"op": op, "dataset": self.dataset, "dir": ".", **fields}), timeout)

    def close(self) -> None:
        if not self.proc.stdin.closed:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.err.close()


class Mcp:
    """The benchmark's MCP server, started as an agent's session starts it: its command, the setup's env."""

    def __init__(self, env_root: Path, entry: dict) -> None:
        server = STANDARD["mcp_servers"][entry["server"]]
        argv = [p.replace("{install}", str(env_root)).replace("{here}", str(HERE)) for p in server["command"]]
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **entry.get("env", {})}
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     env=env, text=True, bufsize=1)
        self.lines = Lines(self.proc.stdout)
        self.ids = iter(range(1, 10**6))
        got = self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                          "clientInfo": {"name": "tau2-tests", "version": "0"}})
        assert got["result"]["capabilities"]["tools"] is not None, got
        self.notify("notifications/initialized")

    def notify(self, method: str) -> None:
        self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", "method": method}) + "\n")
        self.proc.stdin.flush()

    def request(self, method: str, params: dict | None = None) -> dict:
        ident = next(self.ids)
        self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": ident, "method": method, "params": params or {}}) + "\n")
        self.proc.stdin.flush()
        line = self.lines.next(OP_SECONDS)
        assert line is not None, "the MCP server died"
        reply = json.loads(line)
        assert reply["id"] == ident, reply
        return reply

    def tools(self) -> list[dict]:
        return self.request("tools/list")["result"]["tools"]

    def call(self, name: str, arguments: dict) -> tuple[str, bool]:
        result = self.request("tools/call", {"name": name, "arguments": arguments})["result"]
        return result["content"][0]["text"], result["isError"]

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=10)
