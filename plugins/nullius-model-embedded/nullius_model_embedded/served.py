"""The embedded model's server for one run: node server.mjs on a free loopback port, ended with the run.

It starts through the run's `start_process` (its own process group, the
run's marker, watched), so even a SIGKILLed run leaves no server behind, and
`stop()` ends it with `end_process`. Settings, from the environment:
NULLIUS_EMBEDDED_THREADS (default 1: llama.cpp's threads wait on each other
at every token, and on a loaded two-core machine two threads were 8 to 16
times slower than one; see benchmarks/README.md), NULLIUS_EMBEDDED_CONTEXT
(tokens per sequence, default 4096), NULLIUS_EMBEDDED_MAX_TOKENS (a reply's
default cap, default 512). It answers as many calls at once as the run's -j,
at most 4.
"""

from __future__ import annotations

import asyncio
import collections
import json
import os
from pathlib import Path
from typing import Any


from nullius_core.plugins import ProviderRefused, ServeContext
from nullius_core.logs import get_logger
from nullius_core.processes import end_process, start_process
from nullius_model_embedded import runtime
from nullius_model_embedded.plugin import MODEL

SERVER = Path(__file__).parent / "server" / "server.mjs"
START_SECONDS = 120.0  # the model loads in about 2 s; a loaded machine gets room
MAX_PARALLEL = 4
log = get_logger("nullius.embedded")


def _setting(name: str, default: int) -> int:
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    if not text.isdigit() or int(text) < 1:
        raise ProviderRefused(f"provider 'embedded': {name} must be a positive whole number, found {text!r}")
    return int(text)


class EmbeddedServer:
    """A ProviderServer: `prepare()` before the run, `start()` in its loop, `stop()` at its end."""

    def __init__(self, context: ServeContext) -> None:
        self.context = context
        self.proc: asyncio.subprocess.Process | None = None
        self.facts: dict[str, Any] = {}  # the server's ready line: url, load seconds, context, threads
        self.stderr: collections.deque[str] = collections.deque(maxlen=20)
        self._drain: asyncio.Task[None] | None = None
        self._argv: list[str] = []

    def check(self) -> tuple[str, Path, list[str]]:
        """What needs no install, asked before the run installs anything: the model asked, its wheel, Node.js, the settings."""
        model = self.context.model
        if model is not None and model != MODEL:
            raise ProviderRefused(f"provider 'embedded' serves {MODEL} alone, not {model!r}: give --model {MODEL}, or no --model")
        gguf = runtime.gguf()
        node = runtime.node()
        runtime.installable(self.context.paths.standard_dir)
        settings = ["--threads", str(_setting("NULLIUS_EMBEDDED_THREADS", 1)), "--context", str(_setting("NULLIUS_EMBEDDED_CONTEXT", 4096)),
                    "--max-tokens", str(_setting("NULLIUS_EMBEDDED_MAX_TOKENS", 512))]
        return node, gguf, settings

    def prepare(self) -> None:
        """After every check of the run: node-llama-cpp installed once (npm), the server's command made."""
        node, gguf, settings = self.check()
        folder = runtime.ensure_runtime(self.context.paths.standard_dir, self.context.progress)
        parallel = max(1, min(self.context.concurrency, MAX_PARALLEL))
        self._argv = [node, str(SERVER), "--runtime", str(folder), "--gguf", str(gguf), "--name", MODEL, "--parallel", str(parallel), *settings]

    async def start(self) -> str:
        if not self._argv:
            self.prepare()
        # nothing of the run's environment (a provider's key) is handed to the server
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.environ.get("HOME", "/"), "LANG": "C.UTF-8"}
        self.proc = await start_process(
            *self._argv, env=env, cwd=self._argv[3],  # the runtime folder
            stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )
        self._drain = asyncio.create_task(self._read_stderr(self.proc.stderr))
        try:
            line = await asyncio.wait_for(self.proc.stdout.readline(), START_SECONDS)
        except asyncio.TimeoutError:
            raise ProviderRefused(f"provider 'embedded': the model server did not listen within {START_SECONDS:g} s{self._said()}") from None
        try:
            self.facts = json.loads(line)
            url = self.facts["listening"]
        except (ValueError, KeyError, TypeError):
            code = await self._exit_code()
            why = f"ended (exit {code})" if code is not None else f"printed {line[:200]!r}"
            raise ProviderRefused(f"provider 'embedded': the model server {why} before it listened{self._said()}") from None
        log.info("embedded model server listening", **self.facts)
        return str(url)

    async def stop(self) -> None:
        if self.proc is not None:
            await end_process(self.proc)
            self.proc = None
        if self._drain is not None:
            self._drain.cancel()
            await asyncio.gather(self._drain, return_exceptions=True)
            self._drain = None

    async def _read_stderr(self, stream: asyncio.StreamReader | None) -> None:
        """Kept (its last lines, for a failure's message) and logged: llama.cpp's errors land here."""
        if stream is None:
            return
        while line := await stream.readline():
            text = line.decode("utf-8", "replace").rstrip()
            self.stderr.append(text)
            log.debug("embedded model server", line=text)

    async def _exit_code(self) -> int | None:
        assert self.proc is not None
        try:
            code = await asyncio.wait_for(self.proc.wait(), 5)
        except asyncio.TimeoutError:
            return None
        if self._drain is not None:  # its last words, read to the end
            await asyncio.wait([self._drain], timeout=2)
        return code

    def _said(self) -> str:
        lines = [line for line in self.stderr if line.strip()]
        return f": {lines[-1][:300]}" if lines else ""
