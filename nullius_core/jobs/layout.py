"""Where a job's files lie: Harbor's layout, with Nullius's working files under `.work/`.

    <job>/config.json  result.json  progress.jsonl  events.jsonl
    <job>/<trial>/config.json  result.json  trial.log  exception.txt
    <job>/<trial>/agent/trajectory.json
    <job>/<trial>/verifier/reward.txt  score.json
    <job>/<trial>/.work/workspace/  home/   (the unit's own git repository and HOME)
    <job>/.work/relay-benchmark/calls.jsonl  (the run's own relay, for a driver that embeds: the benchmark's cost)
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import attrs

from nullius_core.fsutil import append_line, write_json_atomic, write_text_atomic


BENCH_RECORD = Path(".work") / "relay-benchmark"  # inside a job: its own relay's record (needs.embeddings)


@attrs.frozen
class TrialDir:
    path: Path

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def agent(self) -> Path:
        return self.path / "agent"

    @property
    def verifier(self) -> Path:
        return self.path / "verifier"

    @property
    def work(self) -> Path:
        return self.path / ".work"

    @property
    def workspace(self) -> Path:
        return self.work / "workspace"

    @property
    def home(self) -> Path:
        return self.work / "home"

    @property
    def result_file(self) -> Path:
        return self.path / "result.json"

    def make(self) -> None:
        for folder in (self.agent, self.verifier, self.work):
            folder.mkdir(parents=True, exist_ok=True)

    def log(self, data: bytes | str) -> None:
        with open(self.path / "trial.log", "ab") as handle:
            handle.write(data.encode() if isinstance(data, str) else data)

    def write_json(self, relative: str, data: Any) -> None:
        write_json_atomic(self.path / relative, data)

    def write_text(self, relative: str, text: str) -> None:
        write_text_atomic(self.path / relative, text)

    def read_result(self) -> dict[str, Any] | None:
        try:
            return json.loads(self.result_file.read_text())
        except (FileNotFoundError, json.JSONDecodeError):
            return None


@attrs.frozen
class JobDir:
    path: Path

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def config_file(self) -> Path:
        return self.path / "config.json"

    @property
    def result_file(self) -> Path:
        return self.path / "result.json"

    def trial(self, name: str) -> TrialDir:
        return TrialDir(self.path / name)

    def trials(self) -> list[TrialDir]:
        return sorted(
            (TrialDir(p) for p in self.path.iterdir() if p.is_dir() and not p.name.startswith(".") and (p / "config.json").exists()),
            key=lambda t: t.name,
        )

    def event(self, record: dict[str, Any]) -> None:
        append_line(self.path / "events.jsonl", record)

    def read_config(self) -> dict[str, Any]:
        return json.loads(self.config_file.read_text())

    def write_config(self, data: dict[str, Any]) -> None:
        write_json_atomic(self.config_file, data)

    def write_result(self, data: dict[str, Any]) -> None:
        write_json_atomic(self.result_file, data)
