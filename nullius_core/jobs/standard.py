"""The `standard` blocks of a job's records, typed: what a run records of itself beside Harbor's fields.

config.json's `standard` is a `JobStandard` (the run as it was asked and
prepared); each trial's config.json repeats part of it (`TrialStandard`), and
each trial's result.json says what became of the unit (`TrialOwn`). All are
read and written through the definitions' strict converter, so a job that a
later Nullius cannot read, or a hand-edited one, is refused naming its file
and field (`JobRecordError`), never walked by hand.

The job's fields are all written, null or not, as every version so far wrote
them; the trials' are written as Harbor writes its own (an empty field left
out).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from nullius_core.definitions.converter import structure, unstructure
from nullius_core.definitions.problems import DefinitionError

if TYPE_CHECKING:
    from nullius_core.jobs.layout import JobDir


class JobRecordError(ValueError):
    """A job's record that is not one: its file, and each field that is wrong."""

    def __init__(self, file: Path, error: DefinitionError):
        self.file = file
        self.problems = [p.in_file(file) for p in error.problems]
        super().__init__("; ".join(p.render() for p in self.problems))


@attrs.frozen(kw_only=True)
class Shard:
    index: int
    of: int
    units_total: int | None = None
    partition: str | None = None  # "sha256(unit id) mod N"
    planned: list[str] | None = None  # the units this shard runs, in the driver's order
    limit: int | None = None


@attrs.frozen(kw_only=True)
class AgentRecord:
    """The agent of an agent's run, as config.json records it (the consent beside it)."""

    ref: str
    key: str
    version: str | None
    upstream: dict[str, Any]
    family: str
    options: dict[str, Any]
    protocol: str
    provider: str | None
    base_url: str | None
    permissions: str | None
    source: str
    proofs: Any


@attrs.frozen(kw_only=True)
class DriverRecord:
    command: list[str]
    install: str | None


@attrs.frozen(kw_only=True)
class MergedShard:
    """One shard job of a merged job, as `merged_from` names it."""

    job: str
    path: str
    job_id: str
    shard: Shard | None
    options: dict[str, Any] | None
    launch: str | None
    limit: int | None
    trials: int


@attrs.frozen(kw_only=True)
class VoiceRecord:
    """A model the benchmark asks besides the participant (its simulated user, its judge): the one asked, and the official one."""

    model: str
    official_model: str | None
    official: bool


@attrs.frozen(kw_only=True)
class SetupRecord:
    """No agent · Original's driver method (run/setups.py): the model asked, sent, told the upstream, and whether the paper's."""

    name: str  # "original" or "model"
    model_asked: str
    model_sent: str
    model_told: str
    comparable_with_paper: bool


@attrs.frozen(kw_only=True)
class RouteUse:
    """What a unit's simulator or judge route spent: its calls, tokens and cost, never the agent's."""

    calls: int
    input_tokens: int
    output_tokens: int
    cached_tokens: int
    cost_usd: float | None  # as served; None when a call's price is unknown
    first_run_usd: float | None


@attrs.frozen(kw_only=True)
class VariantRecord:
    """The variant a run ran (nullius_core/variants): its name, its digest (sha256 over its normalized files), its folder and scope."""

    name: str
    digest: str
    folder: str
    agent: str  # as variant.toml names it
    model: str  # variant.toml's; the run's own `model` says what ran (--model overrides it)
    tasks: list[str] = attrs.field(factory=list)  # its scope: empty, every unit
    files: list[str] = attrs.field(factory=list)  # what was staged: "workspace/AGENTS.md", "home/...", ...


@attrs.frozen(kw_only=True)
class TrialVariant:
    """result.json's note of the variant a trial ran: which configuration it belongs to."""

    name: str
    digest: str


@attrs.frozen(kw_only=True)
class PinRecord:
    """A model's serving pin (relay/pins.py): its providers' slugs in order, and where it comes from."""

    order: list[str]
    source: str  # "--served-by", "setups.original.pin" or "score.judge.pin"


@attrs.frozen(kw_only=True)
class BenchRelayRecord:
    """The run's own relay for a driver that embeds (an option value's needs.embeddings): where it forwards, as what, its record."""

    provider: str
    model: str
    record: str  # inside the job: .work/relay-benchmark


@attrs.frozen(kw_only=True)
class SourceJob:
    """The job a replay or a rescore was made from (`nullius replay`, `nullius rescore`): its folder and id."""

    job: str
    job_id: str
    live: bool  # a replay's --live-after-divergence (always false for a rescore)


@attrs.frozen(kw_only=True)
class FieldDiff:
    """One field of a diverged request: its path (`messages[3].content`), the recorded value and the new one, cut short."""

    path: str
    old: str
    new: str


@attrs.frozen(kw_only=True)
class Divergence:
    """A replay's first call whose request differs from the recorded one (relay/replay.py)."""

    route: str
    index: int  # the call's index on its route, from 0
    call: str  # the new call's id in the trial's calls.jsonl
    source_call: str | None  # the recorded call it was held to (None: the record had no more calls)
    why: str
    diff: list[FieldDiff] = attrs.field(factory=list)
    differing: int = 0  # how many fields differ in all (diff shows the first ones)


@attrs.frozen(kw_only=True)
class TrialReplay:
    """result.json's note of a replayed trial: its calls answered from the record, those the real model answered, its divergence."""

    replayed: int
    live: int = 0
    diverged: Divergence | None = None


@attrs.frozen(kw_only=True)
class JobStandard:
    """config.json's `standard`: the run as it was asked and prepared."""

    job_id: str
    created_at: str
    nullius: str
    benchmark: str
    benchmark_version: str | None
    benchmark_ref: str
    kind: str  # "pass" or "score"
    dataset: str
    dataset_sha256: str | None
    units_total: int
    upstream: dict[str, Any] | None
    participant: str
    control: str | None
    model: str | None
    options: dict[str, Any] | None  # None: a merged job's shards differed in them (each keeps its own in merged_from)
    backend: dict[str, Any]  # the backend's own record: its `name`, and what it adds (its image)
    unsandboxed: bool
    consent: str | None
    agent: AgentRecord | None
    shard: Shard | None
    launch: str
    repeat: int
    limit: int | None
    concurrency: int
    purpose: str | None
    planned_trials: list[str]  # a run holds it as jobs.names.Names (engine._set_out): ~10 bytes a trial, not ~70
    driver: DriverRecord
    plugins: dict[str, Any]
    source: str
    proofs: Any
    simulator: VoiceRecord | None
    judge: VoiceRecord | None
    like_leaderboard: bool
    setup: SetupRecord | None
    dataset_folder: str | None = None  # a folder as the dataset (--dataset PATH): where it was; its files are the job's dataset.sha256
    merged_from: list[MergedShard] | None = None  # a merged job's shards (nullius merge)
    merged_despite: list[str] | None = None  # what differed between them, merged with --force
    variant: VariantRecord | None = None  # --variant / --all-variants: the variant every trial ran
    reasoning_effort: str = ""  # only an explicit one (--effort, the variant's); "" when none was set, never a family default
    out_of_scope: list[str] | None = None  # a scoped variant's units left out of the run: skipped, not errors
    served_by: dict[str, PinRecord] | None = None  # model sent -> its serving pin, on every route of the run
    benchmark_relay: BenchRelayRecord | None = None  # the run's own relay, for a driver that embeds
    replay_of: SourceJob | None = None  # nullius replay: the job whose record answered the calls
    rescore_of: SourceJob | None = None  # nullius rescore: the job whose trials were scored again

    @property
    def backend_name(self) -> str:
        return str(self.backend.get("name"))


@attrs.frozen(kw_only=True)
class TrialShard:
    index: int
    of: int


@attrs.frozen(kw_only=True)
class TrialStandard:
    """A trial's config.json `standard`: what it repeats of the job's, and which unit and attempt it is."""

    job_id: str
    benchmark: str
    benchmark_version: str | None
    benchmark_ref: str
    kind: str
    dataset: str
    dataset_sha256: str | None
    participant: str
    control: str | None
    model: str | None
    options: dict[str, Any] | None
    backend: dict[str, Any]
    unsandboxed: bool
    consent: str | None
    agent: AgentRecord | None
    launch: str
    repeat: int
    purpose: str | None
    simulator: VoiceRecord | None
    judge: VoiceRecord | None
    setup: SetupRecord | None
    shard: TrialShard | None
    unit: str
    position: int
    attempt: int
    variant: VariantRecord | None = None
    reasoning_effort: str = ""

    @classmethod
    def of(cls, job: JobStandard, unit: str, position: int, attempt: int) -> TrialStandard:
        shard = TrialShard(index=job.shard.index, of=job.shard.of) if job.shard is not None else None
        repeated = {f.name: getattr(job, f.name) for f in attrs.fields(cls) if f.name not in ("shard", "unit", "position", "attempt")}
        return cls(**repeated, shard=shard, unit=unit, position=position, attempt=attempt)


@attrs.frozen(kw_only=True)
class TrialAgent:
    """What became of an agent's unit: how its session ended, its turns, its grants."""

    ref: str
    stop_reason: str | None = None
    turns: int = 0
    permissions_granted: int = 0
    killed_at_end: list[str] = attrs.field(factory=list)  # processes of its group that had to be killed
    info: dict[str, Any] = attrs.field(factory=dict)  # what the agent says of itself (agentInfo)
    runtime: dict[str, Any] | None = None  # what the backend started it on, when it says (a task's own image: the standalone Python)


@attrs.frozen(kw_only=True)
class TrialOwn:
    """A trial's result.json `standard`: its unit, its outcome (failures.OUTCOMES), and where it ran."""

    unit: str
    position: int
    attempt: int
    outcome: str
    job: str
    benchmark: str
    dataset: str
    control: str | None = None
    passed: bool | None = None
    parts: dict[str, Any] | None = None
    environment: str | None = None
    image: str | None = None
    agent: TrialAgent | None = None
    routes: dict[str, RouteUse] | None = None  # "simulator", "judge": what each of the unit's other routes spent
    variant: TrialVariant | None = None
    reasoning_effort: str = ""  # an explicit effort alone; "" when none was set
    served: dict[str, Any] | None = None  # the unit's answered calls by serving provider; a pinned model's `held` (relay/pins.py)
    stopped: str | None = None  # a benchmark guard's line in the stop file: scored, its later calls refused (run/unit_end.py)
    replay: TrialReplay | None = None  # nullius replay: how the unit's calls were answered, and where it diverged
    scored_later: str | None = None  # when `nullius score` or `nullius rescore` scored it (run/held.py)
    not_rescored: str | None = None  # nullius rescore: why this trial kept its source's record (run/rescore.py)


def read_job_standard(config: Any, file: Path) -> JobStandard:
    """config.json's `standard` as a JobStandard; JobRecordError names the file and each wrong field."""
    block = config.get("standard") if isinstance(config, dict) else None
    try:
        return structure(block, JobStandard, "$.standard")
    except DefinitionError as exc:
        raise JobRecordError(file, exc) from None


def standard_of(job: JobDir) -> JobStandard:
    """The job's config.json `standard`, read from its folder."""
    return read_job_standard(job.read_config(), job.config_file)


def read_trial_own(result: Any, file: Path | str = "result.json") -> TrialOwn | None:
    """A trial's result.json `standard` as a TrialOwn; None for a trial with no result yet (a resumed job's)."""
    block = result.get("standard") if isinstance(result, dict) else None
    if block is None:
        return None
    try:
        return structure(block, TrialOwn, "$.standard")
    except DefinitionError as exc:
        raise JobRecordError(Path(file), exc) from None


def written(record: JobStandard) -> dict[str, Any]:
    """A JobStandard as config.json holds it: every field, null or not."""
    out = unstructure(record)
    for field in attrs.fields(JobStandard):
        if field.default is attrs.NOTHING or field.name in ("variant", "reasoning_effort", "out_of_scope", "served_by", "benchmark_relay",
                                                                           "replay_of", "rescore_of"):
            out.setdefault(field.name, None if field.name != "reasoning_effort" else "")
    return out
