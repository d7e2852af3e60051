"""`nullius merge`: the shard jobs of one launch into one job.

Trials are hard-linked, never copied (a merge costs no space), `result.json`
is recomputed over all of them, and `config.json` says `merged_from`. Shards
that differ in launch, benchmark version, dataset, participant, model,
backend, N or serving pins are refused unless forced; two trials of one unit
always are; a trial whose record names another job, benchmark (or version),
dataset, control or participant is refused unless forced. Shards may differ
in benchmark options: each keeps its own in `merged_from`. A launch of at
most 1,000 shards says which of its shards the merge lacks (`absent_shards`):
its merged job is incomplete.
"""

from __future__ import annotations

import copy
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs

from nullius_core import handed
from nullius_core.jobs.job_result import tallied
from nullius_core.jobs.replay_proof import proof_tally
from nullius_core.jobs.tally import Tally
from nullius_core.fsutil import read_json_lines
from nullius_core.jobs.layout import BENCH_RECORD, JobDir
from nullius_core.jobs.locks import write_job_lock
from nullius_core.jobs.merge_links import link_trials
from nullius_core.jobs.merge_reads import own_fields, read_results
from nullius_core.jobs.records import iso, utcnow
from nullius_core.jobs.standard import JobRecordError, JobStandard, MergedShard, read_job_standard, written

# config key -> how a refusal names it
SAME = {
    "launch": "launch",
    "benchmark_ref": "benchmark version",
    "dataset": "dataset",
    "participant": "agent",
    "model": "model",
}


class MergeRefused(Exception):
    pass


def _shard_of(std: JobStandard) -> int | None:
    return std.shard.of if std.shard is not None else None


def _standards(jobs: list[JobDir]) -> list[JobStandard]:
    return _standards_of(jobs, [j.read_config() for j in jobs])


def _standards_of(jobs: list[JobDir], configs: list[dict[str, Any]]) -> list[JobStandard]:
    try:
        return [read_job_standard(config, j.config_file) for j, config in zip(jobs, configs, strict=True)]
    except JobRecordError as exc:
        raise MergeRefused(f"refused: {exc}") from None


def _configuration(std: JobStandard) -> tuple[str | None, str]:
    return (std.variant.digest if std.variant is not None else None, std.reasoning_effort)


def _same_configuration(jobs: list[JobDir], configs: list[JobStandard]) -> None:
    """Jobs of another variant (digest) or effort are another configuration: never merged, --force or not."""
    first = configs[0]
    for job, std in zip(jobs[1:], configs[1:], strict=True):
        if _configuration(std) != _configuration(first):
            def said(s: JobStandard) -> str:
                variant = f"variant {s.variant.name} (digest {s.variant.digest[:12]})" if s.variant is not None else "no variant"
                return f"{variant}, reasoning effort {s.reasoning_effort or 'not set'}"
            raise MergeRefused(f"refused: {job.name} ran {said(std)}, {jobs[0].name} {said(first)}: another configuration, "
                               "never merged (not even with --force)")


def _pins(std: JobStandard) -> dict[str, list[str]]:
    return {model: list(pin.order) for model, pin in (std.served_by or {}).items()}


def _participant(std: JobStandard) -> str:
    """The name a trial's agent_info gives its participant: a control's, the agent's key, or the Original's."""
    return std.control or (std.agent.key if std.agent is not None else std.participant)


def absent_shards(stds: list[JobStandard]) -> list[int] | None:
    """The shards of a launch of at most 1,000 that no job given holds; None when the jobs are not shards of one N."""
    ofs = {s.shard.of for s in stds if s.shard is not None}
    if len(ofs) != 1 or any(s.shard is None for s in stds) or next(iter(ofs)) > MAX_LISTED:
        return None
    held = {s.shard.index for s in stds if s.shard is not None}
    return [i for i in range(1, next(iter(ofs)) + 1) if i not in held]


MAX_LISTED = 1000


def check(jobs: list[JobDir], force: bool, tally: Tally | None = None, names: list[list[str]] | None = None,
          configs: list[JobStandard] | None = None) -> list[str]:
    """Every reason to refuse; raises at once for what --force cannot allow. Each trial's result read goes into `tally`.

    `names` are each job's trials (`JobDir.trial_names()`) and `configs` their standards, when the caller has them."""
    configs = configs if configs is not None else _standards(jobs)
    names = names if names is not None else [job.trial_names() for job in jobs]
    problems = _differences(jobs, configs)
    seen: dict[str, str] = {}
    for job, std, held in zip(jobs, configs, names, strict=True):
        problems.extend(_trial_problems(job, std, held, seen, tally))
    if problems and not force:
        raise MergeRefused("refused (--force merges anyway):\n  " + "\n  ".join(problems))
    return problems


def _differences(jobs: list[JobDir], configs: list[JobStandard]) -> list[str]:
    """How the jobs differ where a merge needs them alike (a configuration: raised at once)."""
    problems: list[str] = []
    first = configs[0]
    _same_configuration(jobs, configs)
    for job, std in zip(jobs[1:], configs[1:], strict=True):
        for key, label in SAME.items():
            if getattr(std, key) != getattr(first, key):
                problems.append(f"{job.name}: another {label} ({getattr(std, key)!r}, not {getattr(first, key)!r})")
        if std.backend_name != first.backend_name:
            problems.append(f"{job.name}: another backend ({std.backend_name!r}, not {first.backend_name!r})")
        if _shard_of(std) != _shard_of(first):
            problems.append(f"{job.name}: another N ({_shard_of(std)}, not {_shard_of(first)})")
        if _pins(std) != _pins(first):
            problems.append(f"{job.name}: other serving pins ({_pins(std) or 'none'}, not {_pins(first) or 'none'})")
    for job, std in zip(jobs, configs, strict=True):
        if std.merged_despite:
            problems.append(f"{job.name}: it was itself merged despite differences ({'; '.join(std.merged_despite)})")
    return problems


def _refusing(results: Iterator[tuple[str, dict[str, Any] | None]]) -> Iterator[tuple[str, dict[str, Any] | None]]:
    """The records as read, a refused one (a link, past the bound: handed.Refused) the merge's refusal."""
    try:
        yield from results
    except handed.Refused as exc:
        raise MergeRefused(f"refused: {exc}") from None


def _trial_problems(job: JobDir, std: JobStandard, names: list[str], seen: dict[str, str], tally: Tally | None) -> list[str]:
    """One job's trials held to it, each result.json read once (merge_reads.py): the same checks, in the same order, as a
    trial-by-trial loop over `TrialDir.read_result()` and `read_trial_own()`."""
    problems: list[str] = []
    participant = _participant(std)
    wants = (("job", job.name), ("benchmark", std.benchmark_ref), ("dataset", std.dataset), ("control", std.control))
    folder = str(job.path)
    links = [name for name in names if os.path.islink(f"{folder}/{name}")]
    if links:  # a trial folder that is a link: its files are not the job's to merge (someone else's job, say)
        raise MergeRefused(f"refused: {folder}/{links[0]}: a trial folder that is a link (expected a folder of the job)")
    for name, result in _refusing(read_results(folder, names)):
        if result is None:
            continue
        if tally is not None:
            tally.add(result)
        if name in seen:  # the trial's name is its unit and attempt
            raise MergeRefused(f"refused: two trials of one unit: {name} is in {seen[name]} and in {job.name}")
        seen[name] = job.name
        try:
            own = own_fields(result, f"{folder}/{name}/result.json")
        except JobRecordError as exc:
            raise MergeRefused(f"refused: {exc}") from None
        for key, want in wants:
            have = own[key] if own is not None else None
            if have != want:
                problems.append(f"{job.name}/{name}: its record names {key} {have!r}, not {want!r}")
        agent = (result.get("agent_info") or {}).get("name")
        if agent != participant:
            problems.append(f"{job.name}/{name}: its record names participant {agent!r}, not {participant!r}")
    return problems


def merge(paths: list[Path], out: Path, force: bool = False) -> dict[str, Any]:
    jobs = [JobDir(p) for p in paths]
    for job in jobs:
        if not job.config_file.exists():
            raise MergeRefused(f"refused: {job.path} is not a job (no config.json)")
    if out.exists():
        raise MergeRefused(f"refused: {out} exists already")
    configs = [j.read_config() for j in jobs]
    stds = _standards_of(jobs, configs)
    names = [job.trial_names() for job in jobs]  # one scan of each job's folder, for the checks and the links alike
    tally = Tally(stds[0].kind, per_unit=any(s.repeat > 1 for s in stds), proof=proof_tally(stds[0]))  # one attempt a unit: trial names are units, unique
    despite = check(jobs, force, tally, names, stds)
    std = _merged_standard(jobs, stds, despite)
    merged = _merged_config(configs, std, out)
    target = JobDir(out)
    out.mkdir(parents=True)
    locked = link_trials([(str(job.path), name) for job, held in zip(jobs, names, strict=True) for name in held], str(out))
    target.write_config(merged)
    write_job_lock(target, merged.get("n_concurrent_trials") or 1, names=sorted(locked))
    planned = len(std.planned_trials)
    absent = absent_shards(stds)
    # the shards' trials, summed as a run's are: a merge of every planned trial of every shard is a finished run's
    whole = tally.completed == planned and not absent
    bench_calls = [c for job in jobs for c in read_json_lines(job.path / BENCH_RECORD / "calls.jsonl")]
    result = tallied(std, tally, planned, final=True, state="finished" if whole else "incomplete",
                     started_at=min(s.created_at for s in stds), bench_calls=bench_calls or None)
    if absent:
        result["standard"]["absent_shards"] = absent
    target.write_result(result)
    return result


def _merged_standard(jobs: list[JobDir], stds: list[JobStandard], despite: list[str]) -> JobStandard:
    """The merged job's `standard`: the first shard's, with each shard in `merged_from` and every shard's planned trials."""
    options = [s.options for s in stds]
    return attrs.evolve(
        stds[0],
        job_id=str(uuid.uuid4()),
        created_at=iso(utcnow()),
        merged_from=[
            MergedShard(job=job.name, path=str(job.path.resolve()), job_id=s.job_id, shard=s.shard, options=s.options,
                        launch=s.launch, limit=s.limit, trials=len(s.planned_trials))
            for job, s in zip(jobs, stds, strict=True)
        ],
        merged_despite=despite or None,
        shard=None,
        limit=None,  # each shard's own is in merged_from
        options=options[0] if all(o == options[0] for o in options) else None,
        planned_trials=[t for s in stds for t in s.planned_trials],
    )


def _merged_config(configs: list[dict[str, Any]], std: JobStandard, out: Path) -> dict[str, Any]:
    """The merged job's config.json: the first shard's, with the merged `standard`, every shard's task names, its own name."""
    # `standard` is replaced whole (in its place among the keys): the rest is copied, not its 100,000 planned trials
    merged = {key: copy.deepcopy(value) if key != "standard" else None for key, value in configs[0].items()}
    merged["standard"] = written(std)
    merged["datasets"] = [
        {**merged["datasets"][0], "task_names": sorted({t for cfg in configs for t in cfg["datasets"][0].get("task_names", [])})}
    ]
    merged["job_name"] = out.name
    merged["jobs_dir"] = str(out.parent)
    return merged
