"""`--from-run FILE`: a recipe (nullius_core/recipes.py) as the options of `run`, `prove` or `conform`.

The recipe is the one source of what runs: with `--from-run`, the command
takes no other option of what to run (only where its jobs go and, for a
recipe of several jobs, `--job-name` to say which), so what the app showed
is what runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs
import click

from nullius_core import recipes
from nullius_core.catalogue.listing import resolve_benchmark
from nullius_core.cli.base import Refused
from nullius_core.definitions import DefinitionError
from nullius_core.relay import upstreams
from nullius_core.run.prepare import RunRefused
from nullius_core.run.setups import choose
from nullius_core.run.shard import Shard
from nullius_core.run.spec import RunSpec
from nullius_core.run.voices import like_leaderboard, officials

# what a command may still be given beside --from-run: where its jobs go, and which job
BESIDE = {"from_run", "job_name", "jobs_dir", "resume", "retry_errors", "as_json", "licences_stdin"}


def refuse_others(ctx: click.Context, command: str) -> None:
    """Every option the recipe sets, given on the command line too, is refused: the recipe says it."""
    options = {p.name for p in ctx.command.params if isinstance(p, click.Option)}  # its arguments are refused apart
    given = sorted(name for name in ctx.params if name in options and name not in BESIDE
                   and ctx.get_parameter_source(name) == click.core.ParameterSource.COMMANDLINE)
    if given:
        flags = ", ".join("--" + n.replace("_", "-") for n in given)
        raise Refused(f"{command} --from-run takes what to run from the recipe alone: {flags} do not go with it")


def _read(path: Path, kind: str) -> Any:
    try:
        return recipes.read(path, kind)
    except recipes.RecipeProblem as exc:
        raise Refused(str(exc)) from None
    except DefinitionError as exc:
        raise Refused(f"the recipe is invalid:\n{exc.render()}") from None


def run_spec(session: Any, path: Path, job_name: str | None, jobs_dir: Path) -> RunSpec:
    """The RunSpec of the recipe's job named `job_name` (the only one when it has one)."""
    recipe: recipes.RunRecipe = _read(path, "run")
    try:
        job = recipes.job_named(recipe, job_name, path)
    except recipes.RecipeProblem as exc:
        raise Refused(str(exc)) from None
    if recipe.host:  # its jobs run there, never here by mistake
        raise Refused(f"{path} runs its jobs on {recipe.host}: {' '.join(job.command(path))}")
    try:
        bench = resolve_benchmark(session.catalogue, job.benchmark)[1]
    except (LookupError, DefinitionError) as exc:
        raise Refused(f"{path}: $.benchmark: {exc}") from None
    control = job.participant in ("nop", "oracle")
    spec = RunSpec(
        benchmark=job.benchmark, participant=job.participant, jobs_dir=jobs_dir, dataset=job.dataset, limit=recipe.limit,
        concurrency=recipe.concurrency, repeat=recipe.repeat, shard=Shard.parse(job.shard) if job.shard else None,
        bench_options=dict(recipe.bench_options), job_name=job.name, backend=recipe.backend,
        model=recipe.model if control else upstreams.model_for(session, recipe.provider, recipe.model), unsandboxed=recipe.unsandboxed,
        launch=job.launch, agent_options={} if control or job.participant == "original" else dict(recipe.options),
        provider=recipe.provider, base_url=recipe.base_url, max_cost=recipe.max_cost, simulator_model=recipe.simulator_model,
        judge_model=recipe.judge_model, effort=recipe.effort,
    )
    try:
        if recipe.model_choice == "leaderboard":
            spec = like_leaderboard(spec, bench, set(), RunRefused)
        elif recipe.model_choice == "paper":
            _paper(recipe, bench, job.participant, path)
        return attrs.evolve(spec, served_by=_pins(session, recipe, job, bench, spec, path))
    except RunRefused as exc:
        raise Refused(f"run refused: {exc}") from None


def _paper(recipe: recipes.RunRecipe, bench: Any, participant: str, path: Path) -> None:
    """`model_choice: paper`: a model the Original declares, with the official simulated user and judge."""
    original = (bench.standard.setups or {}).get("original")
    models = original.models if original is not None else None
    if participant == "original" and models and recipe.model not in models:
        raise Refused(f"{path}: $.model: model_choice paper runs the paper's models ({', '.join(models)}), not {recipe.model!r}")
    official = officials(bench)
    for role, asked in (("simulator", recipe.simulator_model), ("judge", recipe.judge_model)):
        if asked is not None and asked != official[role]:
            raise Refused(f"{path}: $.{role}_model: model_choice paper keeps the official {role} ({official[role]}), not {asked!r}")


def _pins(session: Any, recipe: recipes.RunRecipe, job: recipes.PlannedJob, bench: Any, spec: RunSpec, path: Path) -> tuple[str, ...]:
    """The recipe's pins by field, as `--served-by MODEL=SLUGS` by the name the run sends each model as."""
    out = []
    official = officials(bench, spec.bench_options)
    for field, slugs in job.pins:
        model = {"model": spec.model, "simulator": spec.simulator_model or official["simulator"],
                 "judge": spec.judge_model or official["judge"]}[field]
        if model is None:
            raise Refused(f"{path}: $.served_by.{field}: {job.name} calls no {field} model")
        if field == "model" and job.participant == "original":
            provider = recipe.provider or upstreams.settings(session).get("provider") or ""
            model = choose(bench, model, provider, RunRefused)[0].sent
        out.append(f"{model}={','.join(slugs)}")
    return tuple(out)


def prove_requests(path: Path) -> tuple[recipes.ProveRecipe, list[str | None]]:
    """A prove recipe, and the datasets it proves one after the other (None: every dataset)."""
    recipe: recipes.ProveRecipe = _read(path, "prove")
    return recipe, list(recipe.datasets) or [None]


def conform_recipe(path: Path) -> recipes.ConformRecipe:
    return _read(path, "conform")
