"""Where a job's files lie: Harbor's layout, with Nullius's working files under `.work/`.

    <job>/config.json  result.json  progress.jsonl  events.jsonl
    <job>/<trial>/config.json  result.json  trial.log  exception.txt
    <job>/<trial>/agent/trajectory.json
    <job>/<trial>/verifier/reward.txt  score.json
    <job>/<trial>/.work/workspace/  home/   (the unit's own git repository and HOME)
    <job>/.work/relay-benchmark/calls.jsonl  (the run's own relay, for a driver that embeds: the benchmark's cost)
"""

from __future__ import annotations

import functools
import json
import os
from pathlib import Path
from typing import Any

import attrs

from nullius_core.fsutil import append_line, write_record, write_text_atomic


BENCH_RECORD = Path(".work") / "relay-benchmark"  # inside a job: its own relay's record (needs.embeddings)


@functools.lru_cache(maxsize=64)
def real_folder(folder: Path) -> Path:
    """A job's folder resolved, once a run: a trial's own names in it are no links, so a trial's paths need no resolving each."""
    return folder.resolve()


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

    def make(self, folders: bool = True) -> None:
        """The trial's folder; with `folders`, its agent/, verifier/ and .work/ too (an agent's unit, whose processes write
        there). A control's trial gets each folder with its first file: it keeps no empty one."""
        self.path.mkdir(parents=True, exist_ok=True)
        if folders:
            for folder in (self.agent, self.verifier, self.work):
                folder.mkdir(exist_ok=True)

    def log(self, data: bytes | str) -> None:
        with open(self.path / "trial.log", "ab") as handle:
            handle.write(data.encode() if isinstance(data, str) else data)

    def write_json(self, relative: str, data: Any) -> None:
        write_record(self.path / relative, data)

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
        return [TrialDir(self.path / name) for name in self.trial_names()]

    def trial_names(self) -> list[str]:
        """The names of the job's trials (a folder with a config.json), sorted: one scan of the job's folder."""
        names = []
        with os.scandir(self.path) as entries:
            for entry in entries:
                if entry.name.startswith(".") or not entry.is_dir():
                    continue
                if os.path.exists(f"{entry.path}/config.json"):
                    names.append(entry.name)
        return sorted(names)

    def event(self, record: dict[str, Any]) -> None:
        append_line(self.path / "events.jsonl", record)

    def read_config(self) -> dict[str, Any]:
        return json.loads(self.config_file.read_text())

    def write_config(self, data: dict[str, Any]) -> None:
        write_record(self.config_file, data)

    def write_result(self, data: dict[str, Any]) -> None:
        write_record(self.result_file, data)
