"""`nullius merge`: the shard jobs of one launch into one job.

Trials are hard-linked, never copied (a merge costs no space), `result.json`
is recomputed over all of them, and `config.json` says `merged_from`. Shards
that differ in launch, benchmark version, dataset, participant, model,
backend or N are refused unless forced; two trials of one unit always are;
a trial whose record names another job, benchmark, dataset or participant is
refused unless forced. Shards may differ in benchmark options: each keeps
its own in `merged_from`.
"""

from __future__ import annotations

import copy
import os
import shutil
import uuid
from pathlib import Path
from typing import Any

from nullius_core.jobs import costs, stats
from nullius_core.jobs.layout import JobDir
from nullius_core.jobs.records import iso, utcnow

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


def _shard_of(std: dict[str, Any]) -> int | None:
    return (std.get("shard") or {}).get("of")


def check(jobs: list[JobDir], force: bool) -> list[str]:
    """Every reason to refuse; raises at once for what --force cannot allow."""
    configs = [j.read_config()["standard"] for j in jobs]
    problems: list[str] = []
    first = configs[0]
    for job, std in zip(jobs[1:], configs[1:], strict=True):
        for key, label in SAME.items():
            if std.get(key) != first.get(key):
                problems.append(f"{job.name}: another {label} ({std.get(key)!r}, not {first.get(key)!r})")
        if std["backend"]["name"] != first["backend"]["name"]:
            problems.append(f"{job.name}: another backend ({std['backend']['name']!r}, not {first['backend']['name']!r})")
        if _shard_of(std) != _shard_of(first):
            problems.append(f"{job.name}: another N ({_shard_of(std)}, not {_shard_of(first)})")
    for job, std in zip(jobs, configs, strict=True):
        if std.get("merged_despite"):
            problems.append(f"{job.name}: it was itself merged despite differences ({'; '.join(std['merged_despite'])})")
    seen: dict[str, str] = {}
    for job, std in zip(jobs, configs, strict=True):
        for trial in job.trials():
            result = trial.read_result()
            if result is None:
                continue
            unit_attempt = trial.name
            if unit_attempt in seen:
                raise MergeRefused(f"refused: two trials of one unit: {unit_attempt} is in {seen[unit_attempt]} and in {job.name}")
            seen[unit_attempt] = job.name
            own = result.get("standard") or {}
            for key, want in (("job", job.name), ("benchmark", std["benchmark_ref"]), ("dataset", std["dataset"])):
                if own.get(key) != want:
                    problems.append(f"{job.name}/{trial.name}: its record names {key} {own.get(key)!r}, not {want!r}")
            name = (result.get("agent_info") or {}).get("name")
            if name != (std["control"] or "agent"):
                problems.append(f"{job.name}/{trial.name}: its record names participant {name!r}")
    if problems and not force:
        raise MergeRefused("refused (--force merges anyway):\n  " + "\n  ".join(problems))
    return problems


def merge(paths: list[Path], out: Path, force: bool = False) -> dict[str, Any]:
    jobs = [JobDir(p) for p in paths]
    for job in jobs:
        if not job.config_file.exists():
            raise MergeRefused(f"refused: {job.path} is not a job (no config.json)")
    if out.exists():
        raise MergeRefused(f"refused: {out} exists already")
    despite = check(jobs, force)
    configs = [j.read_config() for j in jobs]
    merged = copy.deepcopy(configs[0])
    std = merged["standard"]
    std["job_id"] = str(uuid.uuid4())
    std["created_at"] = iso(utcnow())
    std["merged_from"] = [
        {
            "job": job.name,
            "path": str(job.path.resolve()),
            "job_id": cfg["standard"]["job_id"],
            "shard": cfg["standard"].get("shard"),
            "options": cfg["standard"].get("options"),
            "launch": cfg["standard"].get("launch"),
            "limit": cfg["standard"].get("limit"),
            "trials": len(cfg["standard"].get("planned_trials", [])),
        }
        for job, cfg in zip(jobs, configs, strict=True)
    ]
    if despite:
        std["merged_despite"] = despite
    std["shard"] = None
    std["limit"] = None  # each shard's own is in merged_from
    options = [cfg["standard"].get("options") for cfg in configs]
    std["options"] = options[0] if all(o == options[0] for o in options) else None
    merged["datasets"] = [
        {**merged["datasets"][0], "task_names": sorted({t for cfg in configs for t in cfg["datasets"][0].get("task_names", [])})}
    ]
    std["planned_trials"] = [t for cfg in configs for t in cfg["standard"].get("planned_trials", [])]
    merged["job_name"] = out.name
    merged["jobs_dir"] = str(out.parent)
    target = JobDir(out)
    out.mkdir(parents=True)
    results = []
    for job in jobs:
        for trial in job.trials():
            _link_tree(trial.path, out / trial.name)
            result = trial.read_result()
            if result is not None:
                results.append(result)
    target.write_config(merged)
    summary = stats.summary(results, len(std["planned_trials"]), std["kind"])
    summary["state"] = "finished" if len(results) == len(std["planned_trials"]) else "incomplete"
    summary["cost"] = costs.job_cost(results)  # the shards' trials' costs, summed as a run's are
    result = {
        "id": std["job_id"],
        "started_at": min(c["standard"]["created_at"] for c in configs),
        "updated_at": iso(utcnow()),
        "finished_at": iso(utcnow()),
        "n_total_trials": len(std["planned_trials"]),
        "stats": stats.job_stats(results, len(std["planned_trials"]), kind=std["kind"]),
        "standard": summary,
    }
    target.write_result(result)
    return result


def _link_tree(source: Path, target: Path) -> None:
    for folder, _, files in os.walk(source):
        rel = Path(folder).relative_to(source)
        (target / rel).mkdir(parents=True, exist_ok=True)
        for name in files:
            src = Path(folder) / name
            dst = target / rel / name
            if src.is_symlink():
                dst.symlink_to(os.readlink(src))
                continue
            try:
                os.link(src, dst)
            except OSError:  # another filesystem: a copy is the only way
                shutil.copy2(src, dst)
