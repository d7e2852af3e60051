"""What a run is asked to do, as the command line (or prove, or resume) says it."""

from __future__ import annotations

import re
from datetime import datetime, timezone
from pathlib import Path

import attrs

from nullius_core.run.shard import Shard
from nullius_core.variants import Variant

CONTROLS = ("nop", "oracle")


def _plain(part: str) -> str:
    """A part of a folder name: `agent.task/v1` -> `agent.task-v1`, `codex@2.2.2` -> `codex-2.2.2`."""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", part).strip("-") or "x"


@attrs.frozen
class ReplaySource:
    """`nullius replay`: the job whose record answers the calls, and whether a divergence goes on against the real model."""

    job: Path
    live: bool = False


@attrs.frozen(kw_only=True)
class RunSpec:
    benchmark: str
    participant: str
    jobs_dir: Path
    dataset: str | None = None
    limit: int | None = None
    concurrency: int = 4
    repeat: int = 1
    shard: Shard | None = None
    bench_options: dict[str, str] = attrs.field(factory=dict)
    job_name: str | None = None
    backend: str = "local"
    model: str | None = None
    unsandboxed: bool = False
    launch: str | None = None
    purpose: str | None = None
    agent_options: dict[str, str] = attrs.field(factory=dict)
    provider: str | None = None
    base_url: str | None = None
    kit: str | None = None  # a port: run its kit (nullius conform), not a catalogue benchmark
    max_cost: float | None = None  # USD: the run stops when the relay's running cost as served passes it
    simulator_model: str | None = None  # the simulated user asked as another model than the definition's
    judge_model: str | None = None  # the judge asked as another model than the definition's
    like_leaderboard: bool = False  # the leaderboard's simulator, judge, options and attempts (voices.like_leaderboard)
    variant: Variant | None = None  # a variant folder's files, staged into every unit (nullius_core/variants)
    effort: str | None = None  # an explicit reasoning effort (--effort, else the variant's); None: the agent's own default
    hold_score: bool = False  # --hold-score: no unit is scored by the run; `nullius score JOB` scores them later (run/held.py)
    replay: ReplaySource | None = None  # nullius replay: the relay answers from this job's record (relay/replay.py)
    served_by: tuple[str, ...] = ()  # --served-by [MODEL=]SLUG[,SLUG...]: the providers that may answer a model (run/serving.py)

    @property
    def control(self) -> str | None:
        return self.participant if self.participant in CONTROLS else None

    def default_job_name(self, started: datetime | None = None) -> str:
        stamp = (started or datetime.now(timezone.utc)).strftime("%Y-%m-%d__%H-%M-%S")
        parts = [stamp, self.benchmark, self.purpose or self.participant]
        if self.variant is not None:
            parts.append(self.variant.name)
        if self.model:
            parts.append(self.model)
        if self.shard is not None:
            parts.append(f"shard-{self.shard.index}of{self.shard.of}")
        return "__".join(_plain(p) for p in parts)

    def launch_name(self, started: datetime | None = None) -> str:
        """One launch of several shards: `--launch`, else the UTC day, benchmark, participant and model."""
        if self.launch:
            return self.launch
        day = (started or datetime.now(timezone.utc)).strftime("%Y-%m-%d")
        variant = self.variant.name if self.variant is not None else ""
        return "__".join(p for p in (day, self.benchmark, self.participant, variant, self.model or "") if p)
