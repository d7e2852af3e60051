"""`nullius improve`: the front door (BENCH AGENT --tasks ...), and the kernel's two commands, `rollout` and `judge`."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import click

START = "start"  # the front door's command: `nullius improve BENCH AGENT ...` is `nullius improve start BENCH AGENT ...`


class ImproveGroup(click.Group):
    """A group whose first word, when not one of its commands, is the front door's BENCH."""

    def resolve_command(self, ctx: click.Context, args: list[str]) -> tuple[str | None, click.Command | None, list[str]]:
        if args and args[0] not in self.commands:
            return START, self.commands[START], args
        return super().resolve_command(ctx, args)

    def format_usage(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        formatter.write_usage("nullius improve", "BENCH AGENT --tasks ID,ID --model M [OPTIONS] | rollout | judge")


@click.group("improve", cls=ImproveGroup)
def improve() -> None:
    """Improve an agent's harness on a benchmark's tasks with nanoRSI, each rollout a Nullius run."""


def _write(path_var: str, data: dict[str, Any]) -> None:
    target = os.environ.get(path_var)
    if not target:
        click.echo(f"nullius improve: {path_var} is not set: this command is run by the nanorsi kernel", err=True)
        sys.exit(2)
    Path(target).write_text(json.dumps(data, indent=2, ensure_ascii=False), encoding="utf-8")


@improve.command("rollout")
def rollout_cmd() -> None:
    """One rollout (NANORSI_REQUEST -> NANORSI_RESULT): the harness as a variant, a one-unit run, its score held."""
    from nullius_rsi.rollout import failed, rollout

    try:
        result = rollout(os.environ.get("NANORSI_REQUEST"))
    except Exception as exc:  # noqa: BLE001 - a rollout that broke is a failed rollout that says why, never a crash of evolve
        result = failed(f"nullius improve rollout broke: {type(exc).__name__}: {exc}")
    _write("NANORSI_RESULT", result)
    click.echo(f"ok={result['ok']} delivered={result['delivered']} job={result['job']}" + (f" error={result['error']}" if result["error"] else ""))


@improve.command("judge")
def judge_cmd() -> None:
    """Score one rollout's job after the freeze (NANORSI_JUDGE_REQUEST -> NANORSI_JUDGE_RESULT); no result when it cannot be scored."""
    from nullius_rsi.judging import Ungraded, judge

    try:
        result = judge(os.environ.get("NANORSI_JUDGE_REQUEST"))
    except Ungraded as exc:
        click.echo(f"nullius improve judge: ungraded: {exc}", err=True)
        sys.exit(1)
    _write("NANORSI_JUDGE_RESULT", result)
    click.echo(f"{result['n_passed']}/{result['n_criteria']}")
