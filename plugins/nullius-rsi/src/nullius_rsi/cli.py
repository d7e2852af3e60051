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


@improve.command(START)
@click.argument("benchmark")
@click.argument("agent")
@click.option("--tasks", required=True, metavar="ID,ID,...", help="The units to improve on, by id (u0001, a task folder's name).")
@click.option("--model", required=True, help="The frozen model: the agent's in every rollout, and the improver's unless --improver-model.")
@click.option("--provider", help="The model provider (the relays hold its key: the agent's run's and the improver's route).")
@click.option("--base-url", help="The provider's base URL, ending at its /v1.")
@click.option("--improver-model", help="The improver's model (propose, contrast, compose, select, experience), if not --model.")
@click.option("--mode", type=click.Choice(["agg", "seq"]), default="agg", show_default=True, help="k pairs in parallel, or k rounds in sequence.")
@click.option("--k", "k", type=click.IntRange(1, 32), default=2, show_default=True, help="Candidate pairs (agg) or rounds (seq) per task.")
@click.option("--final-repeats", type=click.IntRange(1, 16), default=1, show_default=True, help="Rollouts that must confirm an adopted harness.")
@click.option("--workspace", "-w", type=click.Path(path_type=Path, file_okay=False),
              help="The kernel's workspace (default: improve__BENCH__AGENT__MODEL); one that holds an experiment goes on with it.")
@click.option("--option", "options", multiple=True, metavar="NAME=VALUE", help="An option of the agent's, in every rollout. Repeatable.")
@click.option("--bench-option", "bench_options", multiple=True, metavar="NAME=VALUE", help="A benchmark option. Repeatable.")
@click.option("--dataset", help="The benchmark's dataset (default: its own).")
@click.option("--backend", default="local", show_default=True, help="Where each rollout's unit runs.")
@click.option("--unsandboxed", is_flag=True, help="Consent to run the agent on the local backend, which is not a sandbox.")
@click.option("--max-rollouts", type=click.IntRange(min=0), help="The budget's rollouts ([budget] max_rollouts).")
@click.option("--max-proposer-calls", type=click.IntRange(min=0), help="The budget's improver calls ([budget] max_proposer_calls).")
@click.option("--assess-judge", metavar="AGENT", help="Add the rubric assessment (nullius assess, where installed) by this judge agent to each score.")
@click.option("--assess-model", help="The assessment judge's model (default: --model).")
@click.option("--rubric", type=click.Path(path_type=Path, dir_okay=False, exists=True), help="The assessment's assessment_dimensions.json.")
@click.option("--criteria-dir", type=click.Path(path_type=Path, file_okay=False, exists=True), help="The assessment's criteria per unit.")
@click.option("--assess-repetitions", type=click.IntRange(min=1), default=1, show_default=True, help="Evaluations per judged rollout.")
def start_cmd(benchmark: str, agent: str, tasks: str, workspace: Path | None, **options: Any) -> None:
    """Improve AGENT's harness on TASKS of BENCH: nanoRSI's recursion, each rollout a one-unit Nullius run, then freeze, judge, report."""
    from nullius_rsi.front import CommandFailed, Experiment, FrontRefused, start

    ids = tuple(dict.fromkeys(t.strip() for t in tasks.split(",") if t.strip()))
    if not ids:
        raise click.UsageError("--tasks names no task")
    folder = workspace or Path("__".join(("improve", benchmark, agent, options["model"])).replace("/", "-").replace("@", "-"))
    exp = Experiment(benchmark=benchmark, agent=agent, tasks=ids, workspace=folder.resolve(), options=tuple(options.pop("options")),
                     bench_options=tuple(options.pop("bench_options")), **options)
    try:
        code = start(exp, lambda line: click.echo(line, err=True))
    except (FrontRefused, CommandFailed) as exc:
        click.echo(f"nullius: improve refused: {exc}", err=True)
        sys.exit(2)
    sys.exit(code)
