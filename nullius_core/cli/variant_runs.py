"""`nullius run BENCH --variant DIR` and `--all-variants DIR...`: a variant's agent and model, one job per variant.

Every variant is read and checked against its agent's definition before the
first job starts: a malformed variant.toml is exit 2 naming file and field;
a file of a variant that its agent has no place for refuses the whole run.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import attrs
import click

from nullius_core.catalogue.catalogue import split_ref
from nullius_core.cli.base import Refused
from nullius_core.definitions import DefinitionError
from nullius_core.relay import upstreams
from nullius_core.run.scope import NoneInScope
from nullius_core.variants import Variant, read_variant
from nullius_core.variants.fit import missing as missing_places
from nullius_core.variants.folder import TOML


def variants_given(one: Path | None, many: tuple[Path, ...]) -> list[Variant]:
    """--variant DIR, or each --all-variants DIR (a variant folder, or a folder of them); DefinitionError for a malformed one."""
    if one is not None and many:
        raise Refused("--variant and --all-variants: give one of them")
    if one is not None:
        return [read_variant(one)]
    folders: list[Path] = []
    for given in many:
        if (given / TOML).is_file() or not given.is_dir():
            folders.append(given)
            continue
        inside = sorted(p for p in given.iterdir() if p.is_dir() and (p / TOML).is_file())
        if not inside:
            raise Refused(f"--all-variants {given}: neither a variant folder (no {TOML}) nor a folder of variants")
        folders.extend(inside)
    problems = []
    variants = []
    for folder in folders:
        try:
            variants.append(read_variant(folder))
        except DefinitionError as exc:
            problems.extend(exc.problems)
    if problems:
        raise DefinitionError(problems)
    names = [v.name for v in variants]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise Refused(f"--all-variants: two variants named {', '.join(twice)}: a job is named after its variant")
    return variants


def check_fit(session: Any, variants: list[Variant], participant: str | None, effort: str | None) -> None:
    """Every variant's agent has a place for what it holds, and a way to take its effort: refused before any job."""
    reasons = []
    for variant in variants:
        if participant is not None and participant != variant.toml.agent:
            reasons.append(f"{variant.name}: its variant.toml names agent {variant.toml.agent!r}, the command line {participant!r}")
            continue
        key, version = split_ref(variant.toml.agent)
        try:
            resolved = session.catalogue.participant(key)[1].resolve(key, version)
        except (LookupError, KeyError, DefinitionError) as exc:
            reasons.append(f"{variant.name}: its agent {variant.toml.agent!r} cannot be had: {exc}")
            continue
        wanted = effort or variant.toml.reasoning_effort
        if wanted and (resolved.variant is None or resolved.variant.effort is None):
            reasons.append(f"{variant.name}: reasoning effort {wanted!r} cannot reach {resolved.ref}: it declares no way to take one "
                           "(agent.json variant.effort)")
        reasons.extend(f"{variant.name}: {r}" for r in missing_places(variant, resolved))
    if reasons:
        raise Refused("run refused: " + "; ".join(reasons))


def spec_of(base: Any, variant: Variant, model: str | None, effort: str | None, many: bool) -> Any:
    """The run of one variant: its agent, its model unless --model, its effort unless --effort; named after it."""
    name = base.job_name
    if name is not None and many:
        name = f"{name}__{variant.name}"
    return attrs.evolve(base, participant=variant.toml.agent, model=model or variant.toml.model, variant=variant,
                        effort=effort or variant.toml.reasoning_effort, job_name=name)


def skipped_variant(variant: Variant, reason: str) -> None:
    click.echo(f"skipped: variant {variant.name}: {reason}", err=True)


def end_table(jobs: list[Path]) -> None:
    """After the last job of a run over several configurations: one row per configuration, ± inter-trial std."""
    from nullius_core.cli import summary_table
    from nullius_core.jobs.configurations import configurations

    if len(jobs) < 2:
        return
    try:
        summary_table.draw_configurations(configurations(jobs), sys.stderr)
    except (OSError, ValueError) as exc:
        click.echo(f"nullius: the configurations table could not be read: {exc}", err=True)


def run_all(session: Any, base: Any, variants: list[Variant], options: dict[str, Any], run_job: Any) -> None:
    """One job per variant, one after the other; the configurations table after the last."""
    many = len(variants) > 1 or bool(options["all_variants"])
    jobs: list[Path] = []
    failed = False
    for variant in variants:
        model = options["model"] or upstreams.model_for(session, options["provider"], variant.toml.model)
        spec = spec_of(base, variant, model, options["effort"], many)
        try:
            outcome = run_job(session, spec, None, False, go_on=True)
        except NoneInScope as exc:
            if not many:
                raise Refused(f"run refused: {exc}") from None
            skipped_variant(variant, str(exc))  # --all-variants: this variant has nothing to run here
            continue
        jobs.append(outcome.job_dir)
        failed = failed or outcome.state in ("stopped", "failed")
    end_table(jobs)
    if failed:
        sys.exit(1)  # run_commands.RUN_FAILED
