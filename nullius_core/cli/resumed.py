"""`nullius run --resume JOB`: the run a job asked, read back from its config.json; given options must agree with it.

A job's record is evidence, not an instruction: it may be someone else's. So
the consent to run an agent without a sandbox (`--unsandboxed`) comes from the
command line alone, and a model served at a base URL the job names gets this
machine's key only when the command line names that URL again (`--base-url`).
The rest of the run (its benchmark, agent, model, backend) is the job's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from nullius_core.cli.base import Refused
from nullius_core.definitions import DefinitionError
from nullius_core.jobs.layout import JobDir
from nullius_core.jobs.standard import JobRecordError, JobStandard, read_job_standard
from nullius_core.run.shard import Shard
from nullius_core.run.spec import ReplaySource, RunSpec


def pairs(values: tuple[str, ...], option: str) -> dict[str, str]:
    out = {}
    for value in values:
        name, sep, rest = value.partition("=")
        if not sep or not name:
            raise Refused(f"{option} takes NAME=VALUE, not {value!r}")
        out[name] = rest
    return out


def job_of(folder: Path, option: str) -> JobStandard:
    """The `standard` part of the config of the job in `folder`, refused when it is not a job's."""
    if not folder.is_dir():
        raise Refused(f"{option}: {folder} is not a job (no such folder)")
    job = JobDir(folder)
    if not job.config_file.is_file():
        raise Refused(f"{option}: {folder} is not a job (no config.json)")
    try:
        config = job.read_config()
    except (OSError, ValueError, RecursionError) as exc:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        raise Refused(f"{option}: {folder} is not a job (its config.json is not a job's: {exc})") from None
    if not isinstance(config, dict) or not isinstance(config.get("standard"), dict):
        raise Refused(f"{option}: {folder} is not a job (its config.json has no standard object)")
    try:
        return read_job_standard(config, job.config_file)
    except JobRecordError as exc:
        raise Refused(f"{option}: {folder} is not a job ({exc})") from None


# Options a resumed run takes from the job's config; given again, they must agree.
_RESUMED = {
    "dataset": "dataset",
    "limit": "limit",
    "concurrency": "concurrency",
    "repeat": "repeat",
    "model": "model",
    "backend": None,
    "launch": "launch",
}


def resumed_spec(ctx: click.Context, job_dir: Path, benchmark: str | None, participant: str | None) -> RunSpec:
    std = job_of(job_dir, f"--resume {job_dir}")
    differs = []
    if benchmark is not None and benchmark != std.benchmark_ref:
        differs.append(f"benchmark {benchmark} (the job's: {std.benchmark_ref})")
    if participant is not None and participant != std.participant:
        differs.append(f"participant {participant} (the job's: {std.participant})")
    for option, key in _RESUMED.items():
        if ctx.get_parameter_source(option) != click.core.ParameterSource.COMMANDLINE:
            continue
        given = ctx.params[option]
        have = std.backend_name if key is None else getattr(std, key)
        if given != have:
            flag = "-j" if option == "concurrency" else f"--{option.replace('_', '-')}"
            differs.append(f"{flag} {given} (the job's: {have})")
    shard = Shard(std.shard.index, std.shard.of) if std.shard is not None else None
    if ctx.get_parameter_source("shard_text") == click.core.ParameterSource.COMMANDLINE and str(ctx.params["shard_text"]) != str(shard):
        differs.append(f"--shard {ctx.params['shard_text']} (the job's: {shard})")
    if ctx.get_parameter_source("bench_options") == click.core.ParameterSource.COMMANDLINE:
        given_options = pairs(ctx.params["bench_options"], "--bench-option")
        if any((std.options or {}).get(k) != v for k, v in given_options.items()):
            differs.append(f"--bench-option {given_options} (the job's: {std.options})")
    if ctx.get_parameter_source("provider") == click.core.ParameterSource.COMMANDLINE and std.agent is not None \
            and ctx.params["provider"] != std.agent.provider:
        differs.append(f"--provider {ctx.params['provider']} (the job's: {std.agent.provider})")
    if differs:
        raise Refused("resuming with other settings than the job's is refused: " + "; ".join(differs))
    base_url_given(std, ctx.params["base_url"], f"--resume {job_dir}")
    return job_spec(std, job_dir, ctx.params["max_cost"], unsandboxed=ctx.params["unsandboxed"])


def base_url_given(std: JobStandard, given: str | None, what: str) -> None:
    """Refused unless the job's base URL, if it names one, is given again: a record never chooses where a key goes."""
    recorded = std.agent.base_url if std.agent is not None else None
    if recorded is not None and given != recorded:
        said = f"--base-url {given} differs" if given else "it is not given again"
        raise Refused(f"{what}: the job's model was served at {recorded} and {said}: give --base-url {recorded} to send "
                      f"this machine's key there (a job's record does not choose where a key goes)")


def job_spec(std: JobStandard, job_dir: Path, max_cost: float | None = None, *, unsandboxed: bool) -> RunSpec:
    """The run a job asked, as its config.json records it: `--resume` runs it again in place, `nullius replay` beside it.

    `unsandboxed` is the command line's consent, never the job's."""
    job = JobDir(job_dir)
    shard = Shard(std.shard.index, std.shard.of) if std.shard is not None else None
    return RunSpec(
        benchmark=std.benchmark_ref,
        participant=std.participant,
        jobs_dir=job.path.parent,
        dataset=std.dataset_folder or std.dataset,
        limit=std.limit,
        concurrency=std.concurrency,
        repeat=std.repeat,
        shard=shard,
        bench_options=dict(std.options or {}),
        job_name=job.name,
        backend=std.backend_name,
        model=std.model,
        unsandboxed=unsandboxed,
        launch=std.launch,
        purpose=std.purpose,
        agent_options=dict(std.agent.options) if std.agent is not None else {},
        provider=std.agent.provider if std.agent is not None else None,
        base_url=std.agent.base_url if std.agent is not None else None,
        # the voices the job asked: another than the official one is asked again by name
        simulator_model=std.simulator.model if std.simulator is not None and not std.simulator.official else None,
        judge_model=std.judge.model if std.judge is not None and not std.judge.official else None,
        like_leaderboard=std.like_leaderboard,
        variant=_job_variant(std, job_dir),
        effort=std.reasoning_effort or None,
        max_cost=max_cost,  # a limit on this run's spending, not a setting of the job
        served_by=tuple(f"{model}={','.join(pin.order)}" for model, pin in (std.served_by or {}).items() if pin.source == "--served-by"),
        # a resumed replay goes on answering from its source's record, never from the provider
        replay=ReplaySource(Path(std.replay_of.job), std.replay_of.live) if std.replay_of is not None else None,
    )


def _job_variant(std: JobStandard, job_dir: Path) -> Any:
    """The variant a resumed job ran, read again from its folder (the engine holds it to the job's digest)."""
    if std.variant is None:
        return None
    from nullius_core.variants import read_variant

    try:
        return read_variant(Path(std.variant.folder))
    except DefinitionError as exc:
        raise Refused(f"--resume {job_dir}: its variant {std.variant.name} cannot be read again:\n{exc.render()}") from None
