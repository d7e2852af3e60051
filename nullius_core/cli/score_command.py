"""`nullius score JOB`: the trials a run held (--hold-score) scored now, from their kept answer and workspace."""

from __future__ import annotations

import json
from pathlib import Path

import click

from nullius_core.cli.base import Refused, refusals, session_for
from nullius_core.run.prepare import RunRefused

SCORE_FAILED = 1  # a held trial could not be scored: it stays held, and the line says why


@click.command("score")
@click.argument("job_dir", type=click.Path(path_type=Path, exists=True, file_okay=False), metavar="JOB")
@click.option("--json", "as_json", is_flag=True, help="Print each trial's score as a JSON line.")
@refusals
def score_cmd(job_dir: Path, as_json: bool) -> None:
    """Score the held trials of JOB (a run with --hold-score) with the benchmark's own score; the job's result.json follows."""
    from nullius_core.run.held import score_held

    session = session_for(click.get_current_context())
    try:
        scored = score_held(session, job_dir)
    except RunRefused as exc:
        raise Refused(f"score refused: {exc}") from None
    echo_scored(scored, as_json, unscored="still held")
    if not scored:
        click.echo(f"{job_dir}: no held trial to score", err=True)
    if any(one.reward is None for one in scored):
        raise SystemExit(SCORE_FAILED)


def echo_scored(scored: list, as_json: bool, unscored: str, err: bool = False) -> None:
    """Each trial scored: a JSON line, or `TRIAL  OUTCOME  reward R` (`UNSCORED: why` for one that was not)."""
    for one in scored:
        if as_json:
            click.echo(json.dumps({"trial": one.trial, "outcome": one.outcome, "reward": one.reward, "passed": one.passed, "error": one.error}))
        else:
            said = f"reward {one.reward:g}" if one.reward is not None else f"{unscored}: {one.error}"
            click.echo(f"{one.trial}  {one.outcome}  {said}", err=err)
