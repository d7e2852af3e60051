"""What a run records of itself in config.json: the job's standard block, and the part of it each trial repeats."""

from __future__ import annotations

import uuid
from typing import Any

import attrs

from nullius_core import __version__
from nullius_core.jobs.harbor import environment_of
from nullius_core.jobs.layout import JobDir
from nullius_core.jobs.records import iso
from nullius_core.run.prepare import Prepared
from nullius_core.run.spec import RunSpec
from nullius_core.run.unit import Work


def job_config(spec: RunSpec, versions: dict[str, Any], job: JobDir, prepared: Prepared, units: list[str], work: list[Work], started: Any,
               backend: Any) -> dict[str, Any]:
    """The job's config.json: Harbor's JobConfig fields, and all the standard records of the run in `standard`."""
    shard = None
    if spec.shard is not None:
        shard = {
            "index": spec.shard.index,
            "of": spec.shard.of,
            "units_total": len(units),
            "partition": "sha256(unit id) mod N",
            "planned": sorted({w.unit for w in work}, key=units.index),
            "limit": spec.limit,
        }
    bench = prepared.bench
    return {
        "job_name": job.name,
        "jobs_dir": str(job.path.parent),
        "n_attempts": spec.repeat,
        "n_concurrent_trials": spec.concurrency,
        "agents": [{"name": spec.participant, "model_name": spec.model}],
        "environment": environment_of(prepared.backend.name),  # else Harbor reads every job as docker
        "datasets": [{"path": str(prepared.entry.folder), "task_names": sorted({w.unit for w in work})}],
        "standard": {
            "job_id": str(uuid.uuid4()),
            "created_at": iso(started),
            "nullius": __version__,
            "benchmark": prepared.entry.key,
            "benchmark_version": bench.version,
            "benchmark_ref": bench.ref,
            "kind": bench.standard.kind,
            "dataset": prepared.dataset_name,
            "dataset_sha256": prepared.dataset.sha256,
            "units_total": len(units),
            "upstream": {k: v for k, v in attrs.asdict(bench.upstream).items() if v} if bench.upstream else None,
            "participant": spec.participant,
            "control": spec.control,
            "model": spec.model,
            "options": prepared.options,
            "backend": backend.record(),
            "unsandboxed": spec.unsandboxed,
            "consent": "--unsandboxed: the agent runs as you on this machine" if spec.unsandboxed and prepared.agent else None,
            "agent": agent_record(prepared),
            "shard": shard,
            "launch": spec.launch_name(started),
            "repeat": spec.repeat,
            "limit": spec.limit,
            "concurrency": spec.concurrency,
            "purpose": spec.purpose,
            "planned_trials": [w.trial_name for w in work],
            "driver": {"command": prepared.launch.argv, "install": str(prepared.install_dir) if prepared.install_dir else None},
            "plugins": versions,
            "source": prepared.entry.source(),
            "proofs": prepared.proofs,
        },
    }


# What each trial's config repeats of the job's (not the plan: it names every trial).
_TRIAL_KEYS = (
    "job_id", "benchmark", "benchmark_version", "benchmark_ref", "kind", "dataset", "dataset_sha256",
    "participant", "control", "model", "options", "backend", "unsandboxed", "consent", "agent", "launch", "repeat", "purpose",
)


def trial_standard(job_standard: dict[str, Any]) -> dict[str, Any]:
    out = {k: job_standard.get(k) for k in _TRIAL_KEYS}
    shard = job_standard.get("shard")
    out["shard"] = {"index": shard["index"], "of": shard["of"]} if shard else None
    return out


def agent_record(prepared: Prepared) -> dict[str, Any] | None:
    agent = prepared.agent
    if agent is None:
        return None
    resolved = agent.resolved
    return {
        "ref": resolved.ref,
        "key": resolved.key,
        "version": resolved.version,
        "upstream": {k: v for k, v in attrs.asdict(resolved.upstream).items() if v},
        "family": resolved.family,
        "options": agent.options,
        "protocol": agent.protocol.name if hasattr(agent, "protocol") else "jsonl-stdio",
        "provider": agent.upstream.provider.name if agent.upstream else None,
        "base_url": agent.upstream.base_url if agent.upstream else None,
        "permissions": "every permission request is granted (allow_once where offered) and recorded in the trial" if hasattr(agent, "protocol") else None,
        "source": agent.entry.source(),
        "proofs": getattr(agent, "proofs", None),
    }
