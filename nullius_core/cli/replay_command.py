"""`nullius replay JOB`: every unit run again, the relay answering from the job's own record; `nullius rescore JOB`: score only."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import attrs
import click

from nullius_core.cli.base import Refused, refusals, session_for
from nullius_core.cli.resumed import base_url_given, job_of, job_spec
from nullius_core.run.spec import ReplaySource


SANDBOX = "bwrap"  # bundled, and the lightest sandbox: a replay's default when the job ran on one that is not


def _out(source: Path, out: Path | None, what: str) -> Path:
    """The new job's folder: `-o OUT`, else beside the source, named after it."""
    if out is None:
        stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d__%H-%M-%S")
        out = source.parent / f"{source.name}__{what}-{stamp}"
    if out.exists() and any(out.iterdir()):
        raise Refused(f"{what}: {out} exists and is not empty: give another -o OUT")
    return out


@click.command("replay")
@click.argument("job_dir", type=click.Path(path_type=Path), metavar="JOB")
@click.option("-o", "--out", type=click.Path(path_type=Path), help="The new job's folder (default: beside JOB, named after it).")
@click.option("--live-after-divergence", "live", is_flag=True,
              help="Hand a diverged call, and the rest of its unit, to the run's real model (its key needed as for a run).")
@click.option("-j", "--concurrency", type=click.IntRange(min=1), help="Units at once (default: the job's).")
@click.option("--backend", help="Where the units run (default: the job's backend when it is a sandbox, else bwrap).")
@click.option("--unsandboxed", is_flag=True, help="Consent to run the agent on a backend that is not a sandbox (the job's "
              "record never consents for you).")
@click.option("--base-url", help="With --live-after-divergence: the job's base URL, given again to send this machine's key there.")
@refusals
def replay_cmd(job_dir: Path, out: Path | None, live: bool, concurrency: int | None, backend: str | None, unsandboxed: bool,
               base_url: str | None) -> None:
    """Run every unit of JOB again with its agent, benchmark, model and options, the relay answering from JOB's record."""
    from nullius_core.cli.run_commands import _run_job
    from nullius_core.relay.replay import unreplayable

    session = session_for(click.get_current_context())
    std = job_of(job_dir, "replay")
    if std.control is not None or std.agent is None:
        raise Refused(f"replay: {job_dir} ran {std.participant}, which calls no model: there is nothing to replay")
    why = unreplayable(job_dir, list(std.planned_trials))
    if why is not None:
        raise Refused(f"replay refused: {why}")
    if live:  # a diverged call goes to the model: where this machine's key goes is the command line's to say
        base_url_given(std, base_url, "replay --live-after-divergence")
    out = _out(job_dir.resolve(), out, "replay")
    spec = attrs.evolve(job_spec(std, job_dir, unsandboxed=unsandboxed), jobs_dir=out.parent.resolve(), job_name=out.name,
                        launch=None, concurrency=concurrency or std.concurrency, replay=ReplaySource(job_dir.resolve(), live),
                        backend=_backend(session, std.backend_name, backend, unsandboxed))
    _run_job(session, spec, None, False)


def _backend(session: Any, recorded: str, given: str | None, unsandboxed: bool) -> str:
    """--backend; else the job's when it isolates (or --unsandboxed consents to it); else bwrap, said on stderr."""
    if given is not None:
        return given
    kinds = {b.name: b for b in session.backends}
    if recorded in kinds and (kinds[recorded].isolates or unsandboxed):
        return recorded
    if SANDBOX in kinds:
        click.echo(f"replay: the job ran on {recorded}, which is not a sandbox: replaying on {SANDBOX} "
                   f"(--unsandboxed replays it on {recorded}, as you)", err=True)
        return SANDBOX
    return recorded  # the run's own check refuses it, naming --unsandboxed and the backends that isolate


@click.command("rescore")
@click.argument("job_dir", type=click.Path(path_type=Path), metavar="JOB")
@click.option("-o", "--out", type=click.Path(path_type=Path), help="The new job's folder (default: beside JOB, named after it).")
@click.option("--bench-option", "bench_options", multiple=True, metavar="NAME=VALUE", help="A benchmark option changed for the score.")
@click.option("--judge-model", help="Score with this judge model (a benchmark whose score asks a judge); default: the job's.")
@click.option("--json", "as_json", is_flag=True, help="Print each trial's new score as a JSON line.")
@click.option("--base-url", help="A judged benchmark: the job's base URL, given again to send this machine's key there.")
@refusals
def rescore_cmd(job_dir: Path, out: Path | None, bench_options: tuple[str, ...], judge_model: str | None, as_json: bool,
                base_url: str | None) -> None:
    """Score every trial of JOB again from what it recorded (its answer, transcript and workspace), into a new job; nothing runs again."""
    from nullius_core.cli.resumed import pairs
    from nullius_core.cli.score_command import echo_scored
    from nullius_core.cli.view_command import summarize
    from nullius_core.run.prepare import RunRefused
    from nullius_core.run.rescore import rescore

    session = session_for(click.get_current_context())
    std = job_of(job_dir, "rescore")
    out = _out(job_dir.resolve(), out, "rescore")
    try:
        scored = rescore(session, job_dir.resolve(), std, out, pairs(bench_options, "--bench-option"), judge_model,
                         base_url=base_url)
    except RunRefused as exc:
        raise Refused(f"rescore refused: {exc}") from None
    echo_scored(scored, as_json, unscored="not rescored", err=True)
    click.echo(str(out))
    summarize(out)
