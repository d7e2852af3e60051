"""`nullius merge`: the shard jobs of one launch into one job.

A command of its own module, not run_commands's: a merge needs no engine, no
relay, no catalogue resolution, and importing them was a third of a second of
every merge (the start-up counts against a merge's seconds per 10,000 units).
"""

from __future__ import annotations

from pathlib import Path

import click

from nullius_core.cli.base import Refused, refusals


@click.command("merge")
@click.argument("jobs", nargs=-1, required=True, type=click.Path(path_type=Path, exists=True, file_okay=False))
@click.option("-o", "--out", type=click.Path(path_type=Path), required=True, help="The merged job's folder.")
@click.option("--force", is_flag=True, help="Merge shards that differ (the merge records how).")
@refusals
def merge_cmd(jobs: tuple[Path, ...], out: Path, force: bool) -> None:
    """Merge the shard jobs of one launch into one job."""
    from nullius_core.jobs.merge import MergeRefused, merge

    try:
        result = merge(list(jobs), out, force=force)
    except MergeRefused as exc:
        raise Refused(f"merge {exc}") from None  # "merge refused: ..."
    summary = result["standard"]
    click.echo(f"{out}: {summary['trials']} trials of {result['n_total_trials']}, mean {summary['mean']:.4f}")
    if summary.get("absent_shards"):
        click.echo(f"absent shards of the launch: {', '.join(map(str, summary['absent_shards']))}: the merged job is incomplete", err=True)
