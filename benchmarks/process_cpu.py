"""Where a run's CPU goes, by kind of process: a sampler of /proc and the table of kinds (suite_time.py prints it).

The sampler reads every process's CPU (user + system) every `period`
seconds and keeps the last figure seen; a process that lives less than one
period may be missed (a short one costs little). Kinds are one table, each
marked ours (Nullius's code: its CLI, watcher, kits, reference agent, the
test workers) or not (agents from npm and PyPI, docker, the browser, Ray,
ssh, and the benchmark drivers, whose CPU is mostly their upstream's).
"""

from __future__ import annotations

import os
import re
import threading
from collections import defaultdict
from pathlib import Path

HZ = os.sysconf("SC_CLK_TCK")

# (kind, ours, pattern on the command line); the first that matches names the process.
KINDS: list[tuple[str, bool, re.Pattern[str]]] = [(kind, ours, re.compile(pattern)) for kind, ours, pattern in [
    # a worker by its own command line alone: a test's folder (/tmp/pytest-of-...) is in many others' arguments
    ("pytest workers", True, r"exec\(eval\(sys\.stdin\.readline|-m pytest\b"),
    ("nullius watcher", True, r"nullius_core\.processes\.watcher"),
    ("nullius CLI", True, r"-m nullius_core\b|/bin/nullius\b"),
    # a driver is ours, but its CPU is mostly the upstream's (tau2's import alone is 5 s)
    ("benchmark drivers (the upstream's loader and scorer inside)", False, r"/benchmarks/[^/ ]+/driver\.py"),
    ("conformance kits", True, r"/kits/[^/ ]+/|mcp_kit\.py"),
    ("reference agent", True, r"/agents/reference/|nullius_agent_reference"),
    ("agents from npm and PyPI", False,
     r"\b(node|kilo|opencode|vibe-acp|kimi|copilot|fast-agent|codex-acp|claude|gemini|qwen)\b"),
    ("docker", False, r"\b(dockerd|containerd|containerd-shim\S*|runc|docker|docker-compose|docker-proxy|libnetwork-setkey)\b"),
    ("browser (chromium)", False, r"chrom"),
    ("ray", False, r"\b(raylet|gcs_server|default_worker\.py|dashboard|log_monitor\.py|ray)\b"),
    ("ssh", False, r"\bssh"),
    ("harbor (the peer)", False, r"\bharbor\b"),
    ("installs (uv, pip, npm)", False, r"\b(uv|pip|npm|compileall)\b"),
]]
OTHER = "other (shells, git, short tools)"


def kind_of(command: str) -> tuple[str, bool]:
    for kind, ours, pattern in KINDS:
        if pattern.search(command):
            return kind, ours
    return OTHER, False


class Sampler:
    """Samples every process but `skip` (the sampler's own, the busy loops) in a thread until stop()."""

    def __init__(self, skip: set[int], period: float = 0.2):
        self.skip, self.period = skip | {os.getpid()}, period
        self.seen: dict[tuple[int, int], list] = {}  # (pid, start tick) -> [command, cpu seconds, cpu before the run]
        self._first = True  # what runs before start() counts only from then on
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def start(self) -> None:
        self._sweep()
        self._first = False
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def _loop(self) -> None:
        while not self._stop.wait(self.period):
            self._sweep()

    def _sweep(self) -> None:
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit() and int(entry.name) not in self.skip:
                self._read(entry)

    def _read(self, entry: Path) -> None:
        try:
            stat = (entry / "stat").read_text()
            fields = stat[stat.rindex(")") + 2:].split()
            key = (int(entry.name), int(fields[19]))
            cpu = (int(fields[11]) + int(fields[12])) / HZ
            if key not in self.seen:
                command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                self.seen[key] = [command or stat[stat.index("(") + 1:stat.rindex(")")], cpu, cpu if self._first else 0.0]
            self.seen[key][1] = cpu
        except (OSError, ValueError, IndexError):
            pass  # gone between listing and reading

    def by_kind(self) -> dict[tuple[str, bool], tuple[float, int]]:
        """CPU seconds and processes per (kind, ours)."""
        cpu: dict[tuple[str, bool], float] = defaultdict(float)
        count: dict[tuple[str, bool], int] = defaultdict(int)
        for command, seconds, before in self.seen.values():
            kind = kind_of(command)
            cpu[kind] += seconds - before
            count[kind] += 1
        return {kind: (cpu[kind], count[kind]) for kind in sorted(cpu, key=lambda k: -cpu[k])}


def report(sampler: Sampler) -> list[str]:
    kinds = {kind: figures for kind, figures in sampler.by_kind().items() if figures[0] >= 0.5}
    total = sum(seconds for seconds, _ in kinds.values()) or 1.0
    ours = sum(seconds for (_, mine), (seconds, _) in kinds.items() if mine)
    lines = [f"  {seconds:7.0f} s {seconds / total:4.0%} {count:6d} processes  {kind}{'' if mine else '  (not ours)'}"
             for (kind, mine), (seconds, count) in kinds.items()]
    lines.append(f"  {total:7.0f} s in all: Nullius's own processes {ours:.0f} s ({ours / total:.0%}), "
                 f"the rest {total - ours:.0f} s ({(total - ours) / total:.0%})")
    return lines
