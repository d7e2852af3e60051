"""`run` and `data`: a benchmark into a job, and seeding the dataset cache."""

from __future__ import annotations

import os
import sys
import tempfile
import traceback
from pathlib import Path
from typing import Any

import attrs
import click

from nullius_core.catalogue.listing import resolve_benchmark
from nullius_core.cli import variant_runs
from nullius_core.cli.base import Refused, refusals, session_for
from nullius_core.cli.resumed import job_of as _job, pairs as _pairs, resumed_spec
from nullius_core.cli.view_command import summarize
from nullius_core.definitions import DefinitionError
from nullius_core.failures import resume_command
from nullius_core.relay import upstreams
from nullius_core.run import data
from nullius_core.run.engine import Engine
from nullius_core.run.prepare import RunRefused
from nullius_core.run.scope import NoneInScope
from nullius_core.run.shard import Shard
from nullius_core.run.spec import RunSpec

CANCELLED_EXIT = 130
RUN_FAILED = 1  # the run stopped for its provider, or every unit errored for a reason not the agent's
# prove's exit statuses: 0 every check passed, 1 a check ran and failed,
# 2 refused (USAGE_ERROR: nothing ran, or not what was asked), 3 it broke.
PROVE_FAILED = 1
PROVE_BROKE = 3


def _jobs_dir(given: Path | None, default: Path) -> Path:
    """The folder jobs go in, refused before anything runs when no folder can be made there; nothing is made here."""
    path = given or default
    name = f"--jobs-dir {path}" if given is not None else f"the jobs folder {path} (nullius paths)"
    existing = path
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise Refused(f"{name}: cannot be made: {existing} is a file, not a folder")
    try:
        # Permissions do not say it (root passes every access check, a read-only
        # mount does not): making a folder there and removing it does.
        os.rmdir(tempfile.mkdtemp(prefix=".nullius-", dir=existing))
    except OSError as exc:
        raise Refused(f"{name}: cannot be made: no folder can be made in {existing} ({exc.strerror})") from None
    return path


def _licences_from_stdin() -> None:
    """The run's licences, read whole from stdin and kept in this process's memory (a run on a host: `nullius host run`)."""
    import base64
    import binascii
    import json

    from nullius_core.licences import hand_in

    expected = "--licences-stdin: expected on stdin a JSON object of NAME: base64 value"
    try:
        given = json.loads(sys.stdin.buffer.read() or b"{}")
        if not isinstance(given, dict) or not all(isinstance(v, str) for v in given.values()):
            raise Refused(expected)
        hand_in({name: base64.b64decode(value, validate=True) for name, value in given.items()})
    except (ValueError, binascii.Error) as exc:
        raise Refused(f"{expected} ({exc})") from None


def _shard(text: str | None) -> Shard | None:
    if text is None:
        return None
    try:
        return Shard.parse(text)
    except ValueError as exc:
        raise Refused(str(exc)) from None


@click.command("run")
@click.argument("benchmark", required=False)
@click.argument("participant", required=False, metavar="AGENT|original|nop|oracle")
@click.option("--dataset", help="The dataset (default: the benchmark's `dataset`, else its first).")
@click.option("--limit", type=click.IntRange(min=1), help="At most N units (after the shard).")
@click.option("-j", "--jobs", "concurrency", type=click.IntRange(min=1), default=4, show_default=True, help="Units at a time.")
@click.option("--repeat", type=click.IntRange(min=1), default=1, show_default=True, help="Run each unit K times (pass^k).")
@click.option("--shard", "shard_text", metavar="I/N", help="Run shard I of N (sha256(unit id) mod N).")
@click.option("--launch", help="Name of the launch several shards belong to (default: the UTC day, benchmark, agent, model).")
@click.option("--bench-option", "bench_options", multiple=True, metavar="NAME=VALUE", help="A benchmark option. Repeatable.")
@click.option("--model", help="The model the agent is given (agent runs): every call goes as this model.")
@click.option("--option", "agent_options", multiple=True, metavar="NAME=VALUE", help="An option of the agent's. Repeatable.")
@click.option("--provider", help="The model provider the relay forwards to (default: the user settings').")
@click.option("--base-url", help="The provider's base URL, ending at its /v1 (a local model server, a gateway).")
@click.option("--backend", default="local", show_default=True, help="Where units run.")
@click.option("--unsandboxed", is_flag=True, help="Consent to run an agent on the local backend, which is not a sandbox.")
@click.option("--jobs-dir", type=click.Path(path_type=Path), help="Where jobs go (default: nullius paths' jobs).")
@click.option("--job-name", help="The job's folder name (default: time, benchmark, participant).")
@click.option("--resume", "resume", type=click.Path(path_type=Path, exists=True, file_okay=False), help="Finish a cancelled or interrupted job.")
@click.option("--retry-errors", is_flag=True, help="With --resume: run errored trials again too.")
@click.option("--max-cost", type=click.FloatRange(min=0, min_open=True), metavar="USD",
              help="Stop the run when the relay's running cost as served passes USD (refused for a model without a price).")
@click.option("--simulator-model", help="Ask the benchmark's simulated user as this model, not its official one (recorded).")
@click.option("--judge-model", help="Ask the benchmark's judge as this model, not its official one (recorded).")
@click.option("--like-leaderboard", is_flag=True,
              help="Run as the benchmark's leaderboard does: its simulator, judge, options and at least its attempts.")
@click.option("--variant", "variant_dir", type=click.Path(path_type=Path), metavar="DIR",
              help="Run a variant (DIR/variant.toml): its agent and model, its instruction file and skills in every unit.")
@click.option("--all-variants", "all_variants", multiple=True, type=click.Path(path_type=Path), metavar="DIR",
              help="One job per variant, one after the other: DIR is a variant folder or a folder of them. Repeatable.")
@click.option("--hold-score", "hold_score", is_flag=True,
              help="Score no unit now: each keeps its answer and workspace, held (ScoreHeld), for `nullius score JOB`.")
@click.option("--effort", help="The reasoning effort (over the variant's reasoning_effort), given the agent the way its definition declares.")
@click.option("--served-by", "served_by", multiple=True, metavar="[MODEL=]SLUG[,SLUG...]",
              help="OpenRouter: the providers that may answer a model (the run's, without MODEL=), in order and no other. Repeatable.")
@click.option("--from-run", "from_run", type=click.Path(path_type=Path, dir_okay=False), metavar="RECIPE",
              help="Run a job of a recipe (the app's builder writes them): with several, the one --job-name names.")
@click.option("--licences-stdin", "licences_stdin", is_flag=True,
              help="Take the run's licences from stdin (a JSON object, NAME: base64 value), in memory; SECRETS_DIR is not read.")
@refusals
def run(benchmark: str | None, participant: str | None, **options: Any) -> None:
    """Run BENCHMARK[@VERSION] with an agent, the upstream's own answerer (original), or a control (nop, oracle), into a job."""
    ctx = click.get_current_context()
    session = session_for(ctx)
    if options["licences_stdin"]:
        _licences_from_stdin()
    # absolute: a backend hands the job's folders to what it starts elsewhere (docker's mounts), whatever the cwd there
    resume: Path | None = options["resume"].resolve() if options["resume"] is not None else None
    variants = []
    if options["from_run"] is not None:
        from nullius_core.cli import from_run

        from_run.refuse_others(ctx, "run")
        if benchmark is not None or participant is not None or resume is not None:
            raise Refused("run --from-run takes the benchmark and the participant from the recipe: give neither, nor --resume")
        spec = from_run.run_spec(session, options["from_run"], options["job_name"], _jobs_dir(options["jobs_dir"], session.paths.jobs_dir))
        _run_job(session, spec, None, False)
        return
    if resume is not None:
        if options["variant_dir"] is not None or options["all_variants"] or options["effort"]:
            raise Refused("--resume runs the job's own variant and effort: --variant, --all-variants and --effort do not go with it")
        if options["served_by"]:
            raise Refused("--resume runs the job's own serving pins: --served-by does not go with it")
        spec = attrs.evolve(resumed_spec(ctx, resume, benchmark, participant), hold_score=options["hold_score"])
    else:
        if options["variant_dir"] is not None or options["all_variants"]:
            variants = variant_runs.variants_given(options["variant_dir"], options["all_variants"])
            variant_runs.check_fit(session, variants, participant, options["effort"])
            participant = participant or variants[0].toml.agent
        if benchmark is None or participant is None:
            raise Refused("run needs BENCHMARK and AGENT|original|nop|oracle (or --variant DIR, or --resume JOB_DIR)")
        if options["retry_errors"]:
            raise Refused("--retry-errors goes with --resume")
        spec = RunSpec(
            benchmark=benchmark,
            participant=participant,
            jobs_dir=_jobs_dir(options["jobs_dir"], session.paths.jobs_dir),
            dataset=options["dataset"],
            limit=options["limit"],
            concurrency=options["concurrency"],
            repeat=options["repeat"],
            shard=_shard(options["shard_text"]),
            bench_options=_pairs(options["bench_options"], "--bench-option"),
            job_name=options["job_name"],
            backend=options["backend"],
            # a provider that serves its own model (embedded) names it when --model is not given
            model=options["model"] if participant in ("nop", "oracle") else upstreams.model_for(session, options["provider"], options["model"]),
            unsandboxed=options["unsandboxed"],
            launch=options["launch"],
            agent_options=_pairs(options["agent_options"], "--option"),
            provider=options["provider"],
            base_url=options["base_url"],
            max_cost=options["max_cost"],
            simulator_model=options["simulator_model"],
            judge_model=options["judge_model"],
            effort=options["effort"],
            served_by=tuple(options["served_by"]),
            hold_score=options["hold_score"],
        )
        if options["like_leaderboard"]:
            spec = _like_leaderboard(ctx, session, spec)
    if not variants:
        _run_job(session, spec, resume, options["retry_errors"])
        return
    variant_runs.run_all(session, spec, variants, options, _run_job)


def _run_job(session: Any, spec: RunSpec, resume: Path | None, retry_errors: bool, go_on: bool = False) -> Any:
    """One job run, its folder and summary said; a cancelled one exits; a stopped or failed one exits unless `go_on` (more jobs follow)."""
    try:
        outcome = Engine(session, spec).run(resume=resume, retry_errors=retry_errors)
    except NoneInScope:
        raise
    except RunRefused as exc:
        raise Refused(f"run refused: {exc}") from None
    except KeyboardInterrupt:
        # before any unit (an install, a download): nothing of the job exists yet
        click.echo("cancelled before the units started", err=True)
        sys.exit(CANCELLED_EXIT)
    click.echo(str(outcome.job_dir))
    summarize(outcome.job_dir)
    if outcome.state == "cancelled":
        click.echo(f"cancelled; finish it with: nullius run --resume {outcome.job_dir}", err=True)
        sys.exit(CANCELLED_EXIT)
    if outcome.state in ("stopped", "failed"):
        then = "finish it with" if outcome.state == "stopped" else "when it is fixed"
        again = resume_command(outcome.job_dir, outcome.summary.get("errors"))
        click.echo(f"{outcome.state}: {outcome.summary.get('reason')}; {then}: {again}", err=True)
        if not go_on:
            sys.exit(RUN_FAILED)
    return outcome


def _like_leaderboard(ctx: click.Context, session: Any, spec: RunSpec) -> RunSpec:
    from nullius_core.run.voices import like_leaderboard

    try:
        bench = resolve_benchmark(session.catalogue, spec.benchmark)[1]
    except (LookupError, DefinitionError) as exc:
        raise Refused(f"run refused: {exc}") from None
    given = {name for name in ("repeat",) if ctx.get_parameter_source(name) == click.core.ParameterSource.COMMANDLINE}
    try:
        return like_leaderboard(spec, bench, given, RunRefused)
    except RunRefused as exc:
        raise Refused(f"run refused: {exc}") from None


@click.group("data")
def data_group() -> None:
    """The dataset cache."""


@data_group.command("add")
@click.argument("target", metavar="BENCH[/DATASET]")
@click.argument("file", type=click.Path(path_type=Path, dir_okay=False))
@refusals
def data_add(target: str, file: Path) -> None:
    """Seed the cache with FILE, checked against the benchmark's pin."""
    session = session_for(click.get_current_context())
    ref, _, name = target.partition("/")
    entry, bench = resolve_benchmark(session.catalogue, ref)
    name = name or bench.default_dataset
    dataset = bench.datasets.get(name)
    if dataset is None:
        raise Refused(f"{bench.ref} has no dataset {name!r} (datasets: {', '.join(bench.datasets)})")
    try:
        stored = data.add(session.paths, entry.key, name, dataset, file)
    except data.DataError as exc:
        raise Refused(str(exc)) from None
    click.echo(f"{entry.key}/{name}: {stored} (sha256 {dataset.sha256})")


NAMED = ("leaked", "passing", "failing", "errored")  # the units a failed check names


def _prove_requests(ctx: click.Context, session: Any, benchmark: str | None, options: dict[str, Any]) -> list[Any]:
    """What prove is asked: one request from the command line, or one per dataset of a prove recipe (--from-run)."""
    from nullius_core.run.prove import ProveRequest

    jobs_dir = _jobs_dir(options["jobs_dir"], session.paths.jobs_dir)
    if options["from_run"] is not None:
        from nullius_core.cli import from_run

        from_run.refuse_others(ctx, "prove")
        if benchmark is not None:
            raise Refused("prove --from-run takes the benchmark from the recipe: give none")
        recipe, datasets = from_run.prove_requests(options["from_run"])
        resolve_benchmark(session.catalogue, recipe.benchmark)
        return [ProveRequest(benchmark=recipe.benchmark, jobs_dir=jobs_dir, dataset=dataset, limit=recipe.limit,
                             bench_options=dict(recipe.bench_options), concurrency=recipe.concurrency) for dataset in datasets]
    if benchmark is None:
        raise Refused("prove needs BENCHMARK (or --from-run RECIPE)")
    resolve_benchmark(session.catalogue, benchmark)  # an unknown or invalid benchmark is refused here, not taken for a break below
    jobs = {}
    for name, value in _pairs(options["jobs"], "--job").items():
        if name not in ("nop", "oracle"):
            raise Refused(f"--job names a control, nop or oracle, not {name!r}")
        _job(Path(value), f"--job {name}={value}")
        jobs[name] = Path(value)
    return [ProveRequest(benchmark=benchmark, jobs_dir=jobs_dir, dataset=options["dataset"], limit=options["limit"],
                         shard=_shard(options["shard_text"]), bench_options=_pairs(options["bench_options"], "--bench-option"),
                         jobs=jobs, concurrency=options["concurrency"])]


@click.command("prove")
@click.argument("benchmark", required=False)
@click.option("--dataset", help="Prove this dataset only (default: every dataset).")
@click.option("--limit", type=click.IntRange(min=1), help="At most N units for the leak check and the controls.")
@click.option("--shard", "shard_text", metavar="I/N", help="The leak check and the controls on shard I of N.")
@click.option("--bench-option", "bench_options", multiple=True, metavar="NAME=VALUE", help="A benchmark option. Repeatable.")
@click.option("--job", "jobs", multiple=True, metavar="nop=DIR|oracle=DIR", help="Hold an existing (merged) control job to its bound instead of running it.")
@click.option("-j", "--jobs-at-once", "concurrency", type=click.IntRange(min=1), default=4, show_default=True, help="Units at a time.")
@click.option("--jobs-dir", type=click.Path(path_type=Path), help="Where the control jobs go.")
@click.option("--json", "as_json", is_flag=True, help="Print the checks as JSON.")
@click.option("--from-run", "from_run", type=click.Path(path_type=Path, dir_okay=False), metavar="RECIPE",
              help="Prove as a prove recipe says (the app's Run control checks writes one): its benchmark, datasets, limit and options.")
@refusals
def prove_cmd(benchmark: str | None, **options: Any) -> None:
    """Prove BENCHMARK: units, leak, nop and oracle checks per dataset; record what passed."""
    from nullius_core.run.progress import Progress
    from nullius_core.run.prove import as_json, prove

    ctx = click.get_current_context()
    session = session_for(ctx)
    requests = _prove_requests(ctx, session, benchmark, options)
    result: dict[str, Any] = {}
    try:
        for request in requests:
            result.update(prove(session, request, Progress()))
    except RunRefused as exc:
        raise Refused(f"prove refused: {exc}") from None
    except DefinitionError:
        raise
    except Exception:  # noqa: BLE001 - exit 1 says a check failed; a break of ours must not say that
        traceback.print_exc()
        click.echo("nullius: prove broke (the traceback above is Nullius's own error); exit 3, not 1: no check failed", err=True)
        sys.exit(PROVE_BROKE)
    if options["as_json"]:
        click.echo(as_json(result))
    else:
        for dataset, checks in result.items():
            for check in checks:
                verdict = {"passed": "passed", "failed": "FAILED", "not checked": "NOT CHECKED"}[check.state]
                detail = check.record.get("passed") or check.record.get("failed") or check.record.get("not_checked") or ""
                named = "; ".join(f"{key}: {', '.join(check.record[key])}" for key in NAMED if check.record.get(key))
                click.echo(f"{requests[0].benchmark}/{dataset} {check.name}: {verdict} {detail} {named}".rstrip())
    if any(c.state == "failed" for checks in result.values() for c in checks):
        sys.exit(PROVE_FAILED)  # a check not checked failed nothing: its line says so, and it is not recorded as a pass


def _conform_request(session: Any, participant: str, options: dict[str, Any]) -> Any:
    from nullius_core.run.conform import ConformRequest

    return ConformRequest(
        participant=participant,
        model=upstreams.model_for(session, options["provider"], options["model"]),
        jobs_dir=_jobs_dir(options["jobs_dir"], session.paths.jobs_dir),
        repeat=options["repeat"],
        agent_options=_pairs(options["agent_options"], "--option"),
        provider=options["provider"],
        base_url=options["base_url"],
        backend=options["backend"],
        unsandboxed=options["unsandboxed"],
        concurrency=options["concurrency"],
        ports=tuple(options["ports"]),
    )


def _conform_from_run(ctx: click.Context, session: Any, participant: str | None, options: dict[str, Any]) -> Any:
    """A conform recipe (--from-run) as the request, nothing else of what to run given."""
    from nullius_core.cli import from_run
    from nullius_core.run.conform import ConformRequest

    from_run.refuse_others(ctx, "conform")
    if participant is not None:
        raise Refused("conform --from-run takes the participant from the recipe: give none")
    recipe = from_run.conform_recipe(options["from_run"])
    return ConformRequest(participant=recipe.participant, model=upstreams.model_for(session, recipe.provider, recipe.model),
                          jobs_dir=_jobs_dir(options["jobs_dir"], session.paths.jobs_dir), repeat=recipe.repeat,
                          agent_options=dict(recipe.options), provider=recipe.provider, base_url=recipe.base_url, backend=recipe.backend,
                          unsandboxed=recipe.unsandboxed, concurrency=recipe.concurrency, ports=tuple(recipe.ports))


@click.command("conform")
@click.argument("participant", metavar="KEY[@VERSION]", required=False)
@click.option("--model", help="The model the agent is given; its proofs name it. A capability whose kit reads no model needs none.")
@click.option("--repeat", type=click.IntRange(min=1), default=1, show_default=True, help="Run each check K times; a check holds when a majority pass.")
@click.option("--option", "agent_options", multiple=True, metavar="NAME=VALUE", help="An option of the agent's. Repeatable.")
@click.option("--port", "ports", multiple=True, help="Prove only this port. Repeatable.")
@click.option("--provider", help="The model provider the relay forwards to.")
@click.option("--base-url", help="The provider's base URL, ending at its /v1.")
@click.option("--backend", default="local", show_default=True)
@click.option("--unsandboxed", is_flag=True, help="Consent to run the agent on the local backend, which is not a sandbox.")
@click.option("-j", "--jobs", "concurrency", type=click.IntRange(min=1), default=2, show_default=True, help="Checks at a time.")
@click.option("--jobs-dir", type=click.Path(path_type=Path), help="Where the kits' jobs go.")
@click.option("--json", "as_json", is_flag=True)
@click.option("--from-run", "from_run", type=click.Path(path_type=Path, dir_okay=False), metavar="RECIPE",
              help="Conform as a conform recipe says (the app's Prove its ports writes one).")
@refusals
def conform_cmd(participant: str | None, **options: Any) -> None:
    """Run the kits of every port KEY could offer; record what is proven."""
    import json

    from nullius_core.run.conform import ConformCancelled, ConformRefused, conform
    from nullius_core.run.progress import Progress

    ctx = click.get_current_context()
    session = session_for(ctx)
    if options["from_run"] is not None:
        request = _conform_from_run(ctx, session, participant, options)
    elif participant is None:
        raise Refused("conform needs KEY (or --from-run RECIPE)")
    else:
        request = _conform_request(session, participant, options)
    participant = request.participant
    try:
        results = conform(session, request, Progress())
    except (RunRefused, ConformRefused) as exc:
        raise Refused(f"conform refused: {exc}") from None
    except ConformCancelled as exc:
        click.echo(f"cancelled: {exc}; the kits before it are recorded, that one is not", err=True)
        sys.exit(CANCELLED_EXIT)
    except KeyError as exc:
        raise Refused(f"conform refused: {participant}: no such version ({exc.args[0]})") from None
    if options["as_json"]:
        click.echo(json.dumps([{"port": r.port, "proven": r.proven, "skipped": r.skipped, **r.record} for r in results], indent=2))
    else:
        for r in results:
            if r.skipped:
                click.echo(f"{participant} {r.port}: not tested ({r.skipped})")
            else:
                skills = r.record.get("skills") or {}
                shown = [s for s, v in skills.items() if v["ok"]]
                extra = f"; skills shown: {', '.join(shown) or 'none'}" if skills else ""
                click.echo(f"{participant} {r.port}: {'proven' if r.proven else 'NOT proven'} {r.record['passed']}{extra}")
    if any(not r.proven and not r.skipped for r in results):
        sys.exit(1)
