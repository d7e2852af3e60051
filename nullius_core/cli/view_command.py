"""`view`, and the summary every run ends with: a job read back for a person, from its own files."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from nullius_core.cli import summary_table
from nullius_core.cli.base import Refused, refusals
from nullius_core.jobs.layout import JobDir
from nullius_core.jobs.report import pick_trial, report, transcript


def job_folder(folder: Path, option: str) -> None:
    """Refused unless `folder` holds a job (its config.json)."""
    if not folder.is_dir() or not JobDir(folder).config_file.is_file():
        raise Refused(f"{option}: {folder} is not a job (no config.json there)")


def summarize(job_dir: Path) -> None:
    """The run's summary table on stderr (stdout says the job's folder alone, for scripts)."""
    try:
        summary_table.draw(report(job_dir), sys.stderr)
    except (OSError, ValueError) as exc:  # the job is whole on disk whatever this says; say what could not be read
        click.echo(f"nullius: the job's summary could not be read: {exc}", err=True)


@click.command("view")
@click.argument("job_dir", type=click.Path(path_type=Path))
@click.option("--trial", "trial_name", help="The trial whose conversation is shown (default: the first errored, else failed, else first).")
@refusals
def view(job_dir: Path, trial_name: str | None) -> None:
    """A job's summary, and one trial's conversation, in the terminal."""
    job_folder(job_dir, "view")
    try:
        summary_table.draw(report(job_dir), sys.stdout)
    except (OSError, ValueError) as exc:
        raise Refused(f"view: {job_dir}: {exc}") from None
    try:
        trial = pick_trial(job_dir, trial_name)
        if trial is None:
            if trial_name is not None:
                raise Refused(f"view: {job_dir} has no trial {trial_name!r}")
            click.echo("(no trial has run yet)")
            return
        lines = transcript(trial)
    except (OSError, ValueError) as exc:  # a record leading out of the job, or past the bound (nullius_core.handed)
        raise Refused(f"view: {job_dir}: {exc}") from None
    summary_table.draw_transcript(trial.name, lines, sys.stdout)
