"""Recipes: what the app's builder (or a person) asks of a run, a proof or a conformance run, in one file; and its jobs.

A recipe is the single source of a command run with `--from-run FILE`:
`nullius run`, `nullius prove` and `nullius conform` read it as their
options, so the app and the command line never disagree. A run recipe names
datasets, participants (agents, capabilities, and `others`: `original`,
`nop`, `oracle`) and machines; it compiles to one job per dataset and
participant, and per machine a shard of it, named as the standard says:
`<name>-<dataset>-<participant>`, with `-shard-<I>of<N>` for a machine
(`compile_run`). `nullius run --from-run FILE --job-name NAME` runs the one
job of that name; a recipe of one job needs no name. Read strictly: a
malformed recipe names its file, the field and what was expected.

`model_choice` says how the model is chosen: `any` (a provider's model ID,
any simulator and judge), `paper` (one of the Original's declared models,
with the official simulator and judge) or `leaderboard` (any model, run as
the benchmark's leaderboard fixes the rest: `--like-leaderboard`).
`served_by` pins the providers of each model field (`model`, `simulator`,
`judge`) and compiles to `--served-by MODEL=SLUGS` by the name the run sends
that model as.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

import attrs

from nullius_core.definitions.common import Issues
from nullius_core.definitions.files import load
from nullius_core.relay.pins import slug_problem

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
HOST = re.compile(r"^([A-Za-z0-9._][A-Za-z0-9._-]*@)?[A-Za-z0-9._][A-Za-z0-9._-]*$")  # never an ssh option
OTHERS = ("original", "nop", "oracle")
FIELDS = ("model", "simulator", "judge")


@attrs.frozen(kw_only=True)
class HostLogin:
    """How the recipe's host is reached over SSH, beyond its USER@HOST: what `nullius host run` is given as options."""

    port: int | None = None
    identity: str | None = None  # the private key file to log in with (absolute)
    known_hosts: str | None = None  # the known_hosts file holding the host's key (absolute); none: ~/.ssh/known_hosts

    def _invariants(self) -> Issues:
        if self.port is not None and not 0 < self.port < 65536:
            yield ("port",), f"expected a TCP port (1 to 65535), found {self.port}"
        for name in ("identity", "known_hosts"):
            value = getattr(self, name)
            if value is not None and not Path(value).is_absolute():
                yield (name,), f"expected an absolute path, found {value!r}"


@attrs.frozen(kw_only=True)
class RunRecipe:
    kind: Literal["run"] = "run"
    name: str
    benchmark: str
    datasets: list[str] = attrs.field(factory=list)  # none: the benchmark's default
    agents: list[str] = attrs.field(factory=list)
    capabilities: list[str] = attrs.field(factory=list)
    others: list[Literal["original", "nop", "oracle"]] = attrs.field(factory=list)
    model: str | None = None
    provider: str | None = None
    base_url: str | None = None
    model_choice: Literal["any", "paper", "leaderboard"] = "any"
    simulator_model: str | None = None
    judge_model: str | None = None
    served_by: dict[Literal["model", "simulator", "judge"], list[str]] = attrs.field(factory=dict)
    bench_options: dict[str, str] = attrs.field(factory=dict)
    options: dict[str, str] = attrs.field(factory=dict)  # the agents' own options
    limit: int | None = None
    repeat: int = 1
    concurrency: int = 4
    backend: str = "local"
    machines: int = 1
    unsandboxed: bool = False
    effort: str | None = None
    max_cost: float | None = None
    host: str | None = None  # the app's: a machine reached over SSH that runs the jobs (user@host)
    ssh: HostLogin | None = None  # how that host is reached (port, key, known_hosts), where ssh's defaults do not do

    def _invariants(self) -> Issues:
        if not NAME.match(self.name):
            yield ("name",), f"expected a name of letters, digits, '.', '_' or '-', found {self.name!r}"
        if not (self.agents or self.capabilities or self.others):
            yield ("agents",), "expected a participant: an agent, a capability, or one of others (original, nop, oracle)"
        for field, slugs in self.served_by.items():
            problem = slug_problem(slugs)
            if problem:
                yield ("served_by", field), f"expected provider slugs, each once: {problem}"
        for name, low in (("repeat", 1), ("concurrency", 1), ("machines", 1), ("limit", 1)):
            value = getattr(self, name)
            if value is not None and value < low:
                yield (name,), f"expected a positive integer, found {value}"
        if self.max_cost is not None and self.max_cost <= 0:
            yield ("max_cost",), f"expected a positive number of USD, found {self.max_cost}"
        if self.host is not None and not HOST.match(self.host):
            yield ("host",), f"expected USER@HOST or a name of ~/.ssh/config (letters, digits, '.', '_', '-', one '@'), found {self.host!r}"
        if self.ssh is not None and not self.host:
            yield ("ssh",), "expected a \"host\" beside it: ssh says how the recipe's host is reached"


@attrs.frozen(kw_only=True)
class ProveRecipe:
    kind: Literal["prove"] = "prove"
    benchmark: str
    datasets: list[str] = attrs.field(factory=list)  # none: every dataset
    limit: int | None = None
    bench_options: dict[str, str] = attrs.field(factory=dict)
    concurrency: int = 4


@attrs.frozen(kw_only=True)
class ConformRecipe:
    kind: Literal["conform"] = "conform"
    participant: str
    model: str | None = None
    provider: str | None = None
    base_url: str | None = None
    repeat: int = 1
    options: dict[str, str] = attrs.field(factory=dict)
    ports: list[str] = attrs.field(factory=list)
    backend: str = "local"
    unsandboxed: bool = False
    concurrency: int = 2


Recipe = RunRecipe | ProveRecipe | ConformRecipe
KINDS: dict[str, type] = {"run": RunRecipe, "prove": ProveRecipe, "conform": ConformRecipe}


class RecipeProblem(Exception):
    """A recipe that cannot be run as asked: one line naming the file and why."""


def read(path: Path, kind: str) -> Any:
    """The recipe in `path`, read strictly as a recipe of `kind` (run, prove, conform)."""
    from nullius_core.definitions import DefinitionError
    from nullius_core.definitions.files import read_json

    raw = read_json(path)
    said = raw.get("kind", "run") if isinstance(raw, dict) else None
    if said != kind:
        raise RecipeProblem(f"{path}: $.kind: expected a {kind} recipe, found {said!r}")
    try:
        return load(path, KINDS[kind])
    except DefinitionError:
        raise


@attrs.frozen(kw_only=True)
class PlannedJob:
    """One job a run recipe compiles to: its name, and what `nullius run` is asked."""

    name: str
    benchmark: str
    dataset: str | None
    participant: str
    shard: str | None  # I/N
    launch: str  # the shards of one job are one launch
    pins: tuple[tuple[str, tuple[str, ...]], ...]  # (model field, slugs): the fields this participant's run calls
    host: str | None = None  # the recipe's: the machine reached over SSH that runs it (the app's `nullius host run`)

    def command(self, recipe_file: Path | str) -> list[str]:
        """The exact command that runs this job: here, or on the recipe's host."""
        if self.host:
            return ["nullius", "host", "run", "--from-run", str(recipe_file), "--job-name", self.name]
        return ["nullius", "run", "--from-run", str(recipe_file), "--job-name", self.name]


def _plain(part: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", part).strip("-") or "x"


def compile_run(recipe: RunRecipe) -> list[PlannedJob]:
    """Every job of a run recipe, in order: each dataset, each participant, each machine."""
    jobs = []
    for dataset in recipe.datasets or [None]:
        for participant in [*recipe.agents, *recipe.capabilities, *recipe.others]:
            base = "-".join(_plain(p) for p in (recipe.name, dataset or "default", participant))
            calls = ("judge",) if participant in ("nop", "oracle") else FIELDS  # a control calls no model but its judge
            pins = tuple((field, tuple(slugs)) for field, slugs in recipe.served_by.items() if field in calls)
            for i in range(1, recipe.machines + 1):
                shard = f"{i}/{recipe.machines}" if recipe.machines > 1 else None
                jobs.append(PlannedJob(name=f"{base}-shard-{i}of{recipe.machines}" if shard else base, benchmark=recipe.benchmark,
                                       dataset=dataset, participant=participant, shard=shard, launch=base, pins=pins,
                                       host=recipe.host))
    return jobs


def job_named(recipe: RunRecipe, name: str | None, path: Path) -> PlannedJob:
    jobs = compile_run(recipe)
    if name is None:
        if len(jobs) == 1:
            return jobs[0]
        raise RecipeProblem(f"{path} compiles to {len(jobs)} jobs: give --job-name, one of {', '.join(j.name for j in jobs)}")
    for job in jobs:
        if job.name == name:
            return job
    raise RecipeProblem(f"{path} compiles to no job named {name!r} (its jobs: {', '.join(j.name for j in jobs)})")
