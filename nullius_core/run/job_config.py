"""What a run records of itself in config.json: the job's standard block (jobs/standard.py's JobStandard)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import attrs

from nullius_core import __version__
from nullius_core.jobs.harbor import environment_of
from nullius_core.jobs.layout import JobDir
from nullius_core.jobs.records import iso
from nullius_core.jobs.layout import BENCH_RECORD
from nullius_core.jobs.standard import (AgentRecord, BenchRelayRecord, DriverRecord, JobStandard, PinRecord, SetupRecord, Shard, SourceJob,
                                        VariantRecord, VoiceRecord, written)
from nullius_core.contracts.backend import Backend
from nullius_core.run.prepare import Prepared
from nullius_core.run.spec import RunSpec
from nullius_core.run.plan import PlannedTrials
from nullius_core.variants import StagedVariant


def job_config(spec: RunSpec, versions: dict[str, Any], job: JobDir, prepared: Prepared, units: Sequence[str], work: PlannedTrials, started: datetime,
               backend: Backend, out_of_scope: list[str] | None = None) -> dict[str, Any]:
    """The job's config.json: Harbor's JobConfig fields, and all the standard records of the run in `standard`."""
    bench = prepared.bench
    return {
        "job_name": job.name,
        "jobs_dir": str(job.path.parent),
        "n_attempts": spec.repeat,
        "n_concurrent_trials": spec.concurrency,
        "agents": [{"name": spec.participant, "model_name": spec.model}],
        "environment": environment_of(prepared.backend.name),  # else Harbor reads every job as docker
        "datasets": [{"path": str(prepared.folder.path if prepared.folder else prepared.entry.folder), "task_names": sorted(work.units())}],
        "standard": written(JobStandard(
            job_id=str(uuid.uuid4()),
            created_at=iso(started),
            nullius=__version__,
            benchmark=prepared.entry.key,
            benchmark_version=bench.version,
            benchmark_ref=bench.ref,
            kind=bench.standard.kind,
            dataset=prepared.dataset_name,
            dataset_sha256=prepared.dataset.sha256,
            units_total=len(units),
            upstream={k: v for k, v in attrs.asdict(bench.upstream).items() if v} if bench.upstream else None,
            participant=spec.participant,
            control=spec.control,
            model=spec.model,
            options=prepared.options,
            backend=backend.record(),
            unsandboxed=spec.unsandboxed,
            consent="--unsandboxed: the agent runs as you on this machine" if spec.unsandboxed and prepared.agent else None,
            agent=agent_record(prepared),
            shard=_shard(spec, units, work),
            launch=spec.launch_name(started),
            repeat=spec.repeat,
            limit=spec.limit,
            concurrency=spec.concurrency,
            purpose=spec.purpose,
            planned_trials=[w.trial_name for w in work],
            driver=DriverRecord(command=list(prepared.launch.argv), install=str(prepared.install_dir) if prepared.install_dir else None),
            plugins=versions,
            source=prepared.entry.source(),
            proofs=prepared.proofs,
            simulator=_voice(prepared, "simulator"),
            judge=_voice(prepared, "judge"),
            like_leaderboard=spec.like_leaderboard,
            setup=SetupRecord(**prepared.original.setup.record()) if prepared.original is not None else None,
            dataset_folder=str(prepared.folder.path) if prepared.folder is not None else None,
            variant=variant_record(getattr(prepared.agent, "staged", None)),
            reasoning_effort=spec.effort or "",
            out_of_scope=out_of_scope or None,
            served_by={model: PinRecord(order=list(pin.order), source=pin.source) for model, pin in prepared.pins.items()} or None,
            benchmark_relay=BenchRelayRecord(provider=prepared.bench_upstream.provider.name, model=prepared.embeddings,
                                             record=str(BENCH_RECORD)) if prepared.bench_upstream and prepared.embeddings else None,
            replay_of=replay_source(spec.replay),
        )),
    }


def replay_source(replay: Any) -> SourceJob | None:
    """A replay's source job, named by its folder and its id (jobs/replay_proof.py reads its rewards at the end)."""
    if replay is None:
        return None
    config = JobDir(replay.job).read_config()
    return SourceJob(job=str(Path(replay.job).resolve()), job_id=str(config["standard"]["job_id"]), live=replay.live)


def variant_record(staged: StagedVariant | None) -> VariantRecord | None:
    if staged is None:
        return None
    variant = staged.variant
    return VariantRecord(name=variant.name, digest=staged.digest, folder=str(variant.folder), agent=variant.toml.agent, model=variant.toml.model,
                         tasks=list(variant.toml.tasks), files=list(staged.files))


def _voice(prepared: Prepared, role: str) -> VoiceRecord | None:
    voice = prepared.voices.get(role)
    return VoiceRecord(**voice.record()) if voice is not None else None


def _shard(spec: RunSpec, units: Sequence[str], work: PlannedTrials) -> Shard | None:
    if spec.shard is None:
        return None
    return Shard(index=spec.shard.index, of=spec.shard.of, units_total=len(units), partition="sha256(unit id) mod N",
                 planned=list(work.units()), limit=spec.limit)  # the plan keeps the driver's order


def agent_record(prepared: Prepared) -> AgentRecord | None:
    agent = prepared.agent
    if agent is None:
        return None
    resolved = agent.resolved
    acp = hasattr(agent, "protocol")  # a capability has no agent protocol: the runner speaks JSON lines to it
    return AgentRecord(
        ref=resolved.ref,
        key=resolved.key,
        version=resolved.version,
        upstream={k: v for k, v in attrs.asdict(resolved.upstream).items() if v},
        family=resolved.family,
        options=agent.options,
        protocol=agent.protocol.name if acp else "jsonl-stdio",
        provider=agent.upstream.provider.name if agent.upstream else None,
        base_url=agent.upstream.base_url if agent.upstream else None,
        permissions="every permission request is granted (allow_once where offered) and recorded in the trial" if acp else None,
        source=agent.entry.source(),
        proofs=getattr(agent, "proofs", None),
    )
