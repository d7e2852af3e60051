"""`nullius prompt BENCH UNIT...`: each unit's prompt, from the benchmark's own driver, with no run."""

from __future__ import annotations

import json
from typing import Any

import click

from nullius_core.cli.base import Refused, refusals, session_for
from nullius_core.cli.resumed import pairs
from nullius_core.run.prepare import RunRefused
from nullius_core.run.spec import RunSpec


@click.command("prompt")
@click.argument("benchmark")
@click.argument("units", nargs=-1, required=True, metavar="UNIT...")
@click.option("--dataset", help="The dataset (default: the benchmark's `dataset`, else its first).")
@click.option("--bench-option", "bench_options", multiple=True, metavar="NAME=VALUE", help="A benchmark option. Repeatable.")
@click.option("--json", "as_json", is_flag=True, help="Print {unit: prompt} as one JSON object.")
@refusals
def prompt_cmd(benchmark: str, units: tuple[str, ...], dataset: str | None, bench_options: tuple[str, ...], as_json: bool) -> None:
    """The prompt each UNIT of BENCHMARK[@VERSION] gives an agent: its driver's setup, in a scratch workspace."""
    from nullius_core.run.prompts import unit_prompts

    ctx = click.get_current_context()
    session = session_for(ctx)
    spec = RunSpec(benchmark=benchmark, participant="nop", jobs_dir=session.paths.jobs_dir, dataset=dataset,
                   bench_options=pairs(bench_options, "--bench-option"), purpose="prompt")
    try:
        prompts: dict[str, Any] = unit_prompts(session, spec, list(dict.fromkeys(units)))
    except RunRefused as exc:
        raise Refused(f"prompt refused: {exc}") from None
    if as_json:
        click.echo(json.dumps(prompts, ensure_ascii=False))
        return
    for unit, text in prompts.items():
        click.echo(f"== {unit}\n{text}\n")
