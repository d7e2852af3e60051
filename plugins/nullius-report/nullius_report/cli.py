"""The click commands. Each turns a ReportError into one line on stderr and exit status 2, never a traceback."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from nullius_report.records import ReportError


def _refuse(exc: Exception) -> None:
    click.echo(f"nullius: {exc}", err=True)
    sys.exit(2)


@click.command("compare")
@click.argument("jobs", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--out", "out", type=click.Path(path_type=Path), default=None,
              help="Folder for the Pareto picture (pareto.png, pareto.svg) and compare.json. Default: ./compare")
@click.option("--json", "as_json", is_flag=True, help="Print the comparison as JSON instead of the table.")
def compare_command(jobs: tuple[Path, ...], out: Path | None, as_json: bool) -> None:
    """Compare jobs on the same units: a table per (job, agent, model, effort, variant), a Pareto front, paired stats."""
    from nullius_report import compare, plot, table

    try:
        result = compare.compare(list(jobs))
    except ReportError as exc:
        _refuse(exc)
    folder = out or Path("compare")
    pictures = [str(p) for p in plot.draw(result.rows, folder)]
    data = compare.as_json(result, pictures)
    (folder / "compare.json").write_text(json.dumps(data, indent=2, default=str) + "\n")
    if as_json:
        click.echo(json.dumps(data, indent=2, default=str))
        return
    from rich.console import Console  # this module is imported by every command that loads plugins: rich only here

    console = Console(width=200 if not sys.stdout.isatty() else None)
    table.show(result, console)
    console.print("pictures: " + ", ".join(pictures))


@click.command("export")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--to", "to", required=True, type=click.Path(path_type=Path), help="The destination folder.")
@click.option("--otel", "otel", default=None, help="Also write each trial's trace as OpenTelemetry spans: "
              "a FILE (OTLP JSON) or an http(s):// URL of an OTLP/HTTP endpoint.")
def export_command(paths: tuple[Path, ...], to: Path, otel: str | None) -> None:
    """Export each trial's essence to a flat folder: metrics, assessments, trajectory, changes.patch, verifier output."""
    from nullius_report import export

    try:
        done = export.export(list(paths), to)
        for row in done:
            click.echo(f"{row.name}: {'exported' if row.copied else 'skipped'}"
                       + (f" ({', '.join(row.copied)})" if row.copied else " (nothing new)"))
        click.echo(f"{sum(1 for r in done if r.copied)} of {len(done)} trial(s) exported to {to}")
        for row in done:
            if row.warning:
                click.echo(f"nullius: warning: {row.warning} (metrics.json: cost_usd null)", err=True)
        if otel:
            from nullius_report import otel as otel_export

            spans = otel_export.export_traces([r.folder for r in done], otel)
            click.echo(f"{spans} span(s) written to {otel}")
    except ReportError as exc:
        _refuse(exc)


@click.group("calibrate")
def calibrate_group() -> None:
    """Publish trials for human review of the judge's rubric (the git layer; PRs through gh or glab)."""


@calibrate_group.command("publish")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--repo", "repo", required=True, help="The sink repository: a URL, or a local path (a bare repository).")
@click.option("--open-prs", "open_prs", is_flag=True, help="Also open a pull request per branch (gh for github.com, "
              "glab for GitLab), after the platform's preflight.")
@click.option("--rubric", type=click.Path(path_type=Path), default=None,
              help="assessment_dimensions.json for .calibration/, when the trials keep none.")
@click.option("--criteria", type=click.Path(path_type=Path), default=None,
              help="assessment_criteria.md for .calibration/, when the trials keep none.")
def publish_command(paths: tuple[Path, ...], repo: str, open_prs: bool, rubric: Path | None, criteria: Path | None) -> None:
    """Per trial: an orphan base (the workspace's first commit, seeded once), the agent's patch and .calibration/."""
    from nullius_report.calibrate import publish

    try:
        for line in publish.publish(list(paths), repo, open_prs=open_prs, rubric=rubric, criteria=criteria):
            click.echo(line)
    except ReportError as exc:
        _refuse(exc)
