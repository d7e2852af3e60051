"""`standard.json`: a benchmark of the standard (or a port's kit), and its versions.

A benchmark pins its upstream and its data, names its driver, lists the ports
it needs and declares its controls. `versions` may keep an explicit upstream
release or a fork beside the default integration; `resolve()` gives one.
"""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Any, Literal

import attrs

from nullius_core.definitions.common import (
    KEY_NAME,
    SHA256,
    Host,
    Install,
    Issues,
    Option,
    Upstream,
    bad_download,
    bad_port,
)
from nullius_core.definitions.converter import extensions_field, renamed
from nullius_core.relay.pins import slug_problem

STANDARD_SCHEMA = "nullius.standard/v1"
HERE_PREFIX = "{here}/"  # a dataset path in the benchmark's own folder; any other is in the upstream


@attrs.frozen(kw_only=True)
class Dataset:
    """A pinned dataset: a path in the upstream (or its install), or a URL, with its digest."""

    units: int
    summary: str | None = None
    path: str | None = None
    package: str | None = None
    url: str | None = None
    sha256: str | None = None
    environment: str | None = None

    def _invariants(self) -> Issues:
        if self.units < 1:
            yield ("units",), f"expected a positive number of units, found {self.units}"
        if self.path is not None and self.url is not None:
            yield ("url",), "expected a path or a url, found both"
        elif self.url is not None and bad_download(self.url):
            yield ("url",), bad_download(self.url)
        if self.path is not None and not self.path.startswith(HERE_PREFIX):
            parts = PurePosixPath(self.path).parts
            if self.path.startswith("/") or ".." in parts:
                yield ("path",), f"expected a path inside the upstream (relative, without '..') or {HERE_PREFIX}..., found {self.path!r}"
        if self.package is not None and self.path is None:
            yield ("path",), "required key missing: expected the file's path inside the package"
        if (self.path is not None or self.url is not None) and self.sha256 is None:
            yield ("sha256",), "required key missing: expected the dataset file's sha256"
        if self.sha256 is not None and not SHA256.match(self.sha256):
            yield ("sha256",), f"expected 64 lowercase hex digits, found {self.sha256!r}"


@attrs.frozen(kw_only=True)
class DatasetFolders:
    """A benchmark that takes a user's folder as its dataset (`--dataset PATH`), pinned by the sha256 of every file in it."""

    summary: str
    environment: str | None = None


@attrs.frozen(kw_only=True)
class Driver:
    """The command that answers the driver ops, the environment it runs in, what the machine needs."""

    command: list[str]
    install: Install | None = None
    host: Host | None = None
    runner: str = "stdio"

    def _invariants(self) -> Issues:
        if not self.command:
            yield ("command",), "expected a command of at least one word, found an empty list"


@attrs.frozen(kw_only=True)
class McpServer:
    command: list[str]
    summary: str | None = None


@attrs.frozen(kw_only=True)
class Expect:
    at_least: float | None = None
    at_most: float | None = None

    def _invariants(self) -> Issues:
        if (self.at_least is None) == (self.at_most is None):
            yield (), "expected exactly one of at_least or at_most"


@attrs.frozen(kw_only=True)
class Control:
    source: Literal["official", "adapter", "nullius"]
    from_: str = renamed("from")
    expect: Expect | None = None
    in_prompt: str | None = None


@attrs.frozen(kw_only=True)
class Controls:
    nop: Control
    oracle: Control


@attrs.frozen(kw_only=True)
class Limits:
    turn_seconds: int | None = None
    score_seconds: int | None = None
    call_seconds: int | None = None
    turns: int | None = None
    attempts: int | None = None
    run_again: bool | None = None

    def _invariants(self) -> Issues:
        for name in ("turn_seconds", "score_seconds", "call_seconds", "turns", "attempts"):
            value = getattr(self, name)
            if value is not None and value < 1:
                yield (name,), f"expected a positive integer, found {value}"


@attrs.frozen(kw_only=True)
class Judge:
    model: str
    says: str | None = None
    pin: list[str] | None = None  # OpenRouter: the providers that may answer the official judge (relay/pins.py)
    when: dict[str, list[str]] | None = None  # asked only when these options hold one of these values (else never)

    def _invariants(self) -> Issues:
        problem = slug_problem(self.pin) if self.pin is not None else None
        if problem:
            yield ("pin",), f"expected provider slugs, each once: {problem}"


@attrs.frozen(kw_only=True)
class Score:
    judge: Judge | None = None


@attrs.frozen(kw_only=True)
class Simulator:
    model: str
    says: str | None = None


@attrs.frozen(kw_only=True)
class Leaderboard:
    says: str
    simulator: str | None = None
    judge: str | None = None
    bench_options: dict[str, str] | None = None
    repeat: int | None = None


@attrs.frozen(kw_only=True)
class Setup:
    summary: str | None = None
    models: list[str] | None = None
    default: str | None = None
    served_as: dict[str, str] | None = None
    providers: dict[str, str] | None = None
    units: dict[str, str] | None = None
    turn_seconds: int | None = None
    runs_as: str | None = None
    pin: dict[str, list[str]] | None = None  # OpenRouter: a model of `models` -> the providers that may answer it

    def _invariants(self) -> Issues:
        for model, slugs in (self.pin or {}).items():
            if self.models is not None and model not in self.models:
                yield ("pin", model), f"expected a model of models ({', '.join(self.models)}), found {model!r}"
            problem = slug_problem(slugs)
            if problem:
                yield ("pin", model), f"expected provider slugs, each once: {problem}"


@attrs.frozen(kw_only=True)
class Secret:
    name: str
    to: Literal["agent", "driver"]
    kind: Literal["value", "file", "server"] = "value"
    path: str | None = None
    env: str | None = None
    summary: str | None = None

    def _invariants(self) -> Issues:
        if self.kind == "file":
            if not self.path or not self.path.startswith("/"):
                yield ("path",), f"expected an absolute path for a licence file, found {self.path!r}"
            elif self.path.split("/")[1] in ("proc", "sys", "dev"):
                yield ("path",), f"expected a path outside /proc, /sys and /dev, found {self.path!r}"


@attrs.frozen(kw_only=True)
class Environment:
    summary: str | None = None
    dockerfile: str | None = None
    files: list[str] | None = None
    needs_secrets: list[Secret] | None = None
    local_ok: bool = False
    image: Literal["own"] | None = None

    def _invariants(self) -> Issues:
        if self.image is None and self.dockerfile is None:
            yield (), "expected a dockerfile or \"image\": \"own\""
        if self.image == "own" and (self.dockerfile is not None or self.files):
            yield ("image",), "expected either a dockerfile (a layer on the base) or \"image\": \"own\" (each unit's setup names its image), not both"
        if self.image == "own" and self.local_ok:
            yield ("local_ok",), "expected false: a task's own image never runs an agent on the local backend"


@attrs.frozen(kw_only=True)
class Kit:
    """What makes a standard.json a port's conformance kit."""

    port: str
    basic: list[str]
    kit_version: int = 1
    skills: dict[str, str] = attrs.field(factory=dict)

    def _invariants(self) -> Issues:
        why = bad_port(self.port)
        if why:
            yield ("port",), why
        if self.kit_version < 1:
            yield ("kit_version",), f"expected a version from 1 up, found {self.kit_version}"
        for name in self.skills:
            if name in self.basic:
                yield ("skills", name), f"expected a check to be basic or a skill, found {name!r} as both"


@attrs.frozen(kw_only=True)
class BenchmarkVersion:
    """What a benchmark version may change; unset keys come from the top."""

    upstream: Upstream | None = None
    datasets: dict[str, Dataset] | None = None
    driver: Driver | None = None
    mcp_servers: dict[str, McpServer] | None = None
    score: Score | None = None
    limits: Limits | None = None
    controls: Controls | None = None
    environments: dict[str, Environment] | None = None
    proven: dict[str, dict[str, Any]] = attrs.field(factory=dict)


@attrs.frozen(kw_only=True)
class BenchmarkVersions:
    default: str
    blocks: dict[str, BenchmarkVersion]


@attrs.frozen(kw_only=True)
class ResolvedBenchmark:
    """One version of a benchmark, as a run sees it."""

    key: str
    version: str | None
    standard: Standard
    upstream: Upstream | None
    datasets: dict[str, Dataset]
    driver: Driver | None
    mcp_servers: dict[str, McpServer]
    score: Score | None
    limits: Limits
    controls: Controls | None
    environments: dict[str, Environment]
    proven: dict[str, dict[str, Any]]
    dataset_folders: DatasetFolders | None = None

    @property
    def ref(self) -> str:
        return f"{self.key}@{self.version}" if self.version else self.key

    @property
    def default_dataset(self) -> str | None:
        """The dataset a run takes when it names none; None for a benchmark whose datasets are folders only."""
        if self.standard.dataset and self.standard.dataset in self.datasets:
            return self.standard.dataset
        return next(iter(self.datasets), None)


@attrs.frozen(kw_only=True)
class Standard:
    """A benchmark of the standard, or a port's kit when `kit` is set."""

    datasets: dict[str, Dataset] = attrs.field(factory=dict)
    schema: Literal["nullius.standard/v1"] = STANDARD_SCHEMA
    name: str | None = None
    summary: str | None = None
    family: Literal["agent", "capability"] = "agent"
    kind: Literal["pass", "score"] = "pass"
    gated: bool = False  # a unit's failure the relay's records explain says its status and class alone in result.json
    needs: list[str] = attrs.field(factory=list)
    needs_skills: dict[str, list[str]] = attrs.field(factory=dict)
    upstream: Upstream | None = None
    dataset: str | None = None
    driver: Driver | None = None
    mcp_servers: dict[str, McpServer] | None = None
    score: Score | None = None
    simulator: Simulator | None = None
    leaderboard: Leaderboard | None = None
    limits: Limits | None = None
    controls: Controls | None = None
    options: dict[str, Option] | None = None
    environments: dict[str, Environment] | None = None
    dataset_folders: DatasetFolders | None = None
    setups: dict[str, Setup] | None = None
    kit: Kit | None = None
    proven: dict[str, dict[str, Any]] = attrs.field(factory=dict)
    versions: BenchmarkVersions | None = None
    extensions: dict[str, Any] = extensions_field()

    def version_names(self) -> list[str]:
        return list(self.versions.blocks) if self.versions else []

    def _option_ports(self) -> Issues:
        """Each option value's `needs.VALUE.ports`: a list of this family's ports, for a value the option allows."""
        family_prefix = "agent." if self.family == "agent" else "cap."
        for name, option in (self.options or {}).items():
            for value, needed in (option.needs or {}).items():
                if not option.allows(value):
                    yield ("options", name, "needs", value), f"expected a value the option allows, found {value!r}"
                if needed.ports is None:
                    continue
                at = ("options", name, "needs", value, "ports")
                ports = needed.ports
                if not ports:
                    yield at, f"expected a non-empty list of port names, found {ports!r}"
                    continue
                for i, port in enumerate(ports):
                    why = bad_port(port) or (None if port.startswith(family_prefix)
                                             else f"expected a port of the {self.family} family ({family_prefix}*), found {port!r}")
                    if why:
                        yield (*at, i), why

    def resolve(self, key: str, version: str | None = None) -> ResolvedBenchmark:
        block = BenchmarkVersion()
        if self.versions is not None:
            version = version or self.versions.default
            if version not in self.versions.blocks:
                raise KeyError(version)
            block = self.versions.blocks[version]
        elif version is not None:
            raise KeyError(version)
        return ResolvedBenchmark(
            key=key,
            version=version,
            standard=self,
            upstream=block.upstream or self.upstream,
            datasets=dict(block.datasets or self.datasets),
            driver=block.driver or self.driver,
            mcp_servers=dict(block.mcp_servers or self.mcp_servers or {}),
            score=block.score or self.score,
            limits=block.limits or self.limits or Limits(),
            controls=block.controls or self.controls,
            environments=dict(block.environments or self.environments or {}),
            proven=dict(block.proven) if self.versions is not None else dict(self.proven),
            dataset_folders=self.dataset_folders,
        )

    def _upstreams(self) -> list[tuple[tuple[str, ...], Upstream | None]]:
        """Each version's upstream (the top's where a version sets none)."""
        if self.versions is None:
            return [((), self.upstream)]
        return [
            (("versions", name) if block.upstream else (), block.upstream or self.upstream)
            for name, block in self.versions.blocks.items()
        ]

    def _invariants(self) -> Issues:
        if not self.datasets and self.dataset_folders is None:
            yield ("datasets",), "expected at least one dataset (or dataset_folders: a folder as the dataset), found none"
        for name in self.datasets:
            if not KEY_NAME.match(name):
                yield ("datasets", name), f"expected a dataset name of lowercase letters, digits, '.', '-' or '_', found {name!r}"
        if self.dataset is not None and self.dataset not in self.datasets:
            yield ("dataset",), f"expected one of the datasets ({', '.join(self.datasets)}), found {self.dataset!r}"
        family_prefix = "agent." if self.family == "agent" else "cap."
        for i, port in enumerate(self.needs):
            why = bad_port(port)
            if why:
                yield ("needs", i), why
            elif not port.startswith(family_prefix):
                yield ("needs", i), f"expected a port of the {self.family} family ({family_prefix}*), found {port!r}"
        for port in self.needs_skills:
            if port not in self.needs:
                yield ("needs_skills", port), f"expected a port listed in needs, found {port!r}"
        if self.kit is None:
            for where, upstream in self._upstreams():
                if upstream is None:
                    yield (*where, "upstream"), (
                        "required key missing: expected the upstream, pinned "
                        "(repository and tested, or a package and its version)"
                    )
                elif upstream.package is None and (upstream.repository is None or upstream.tested is None):
                    missing = "repository" if upstream.repository is None else "tested"
                    yield (*where, "upstream", missing), (
                        "required key missing: expected the upstream repository and its full tested commit "
                        "(or a pypi or npm package and its version)"
                    )
            if self.driver is None:
                yield ("driver",), "required key missing: expected the driver's command"
            if self.controls is None:
                yield ("controls",), "required key missing: expected the nop and oracle controls"
        judge = self.score.judge if self.score is not None else None
        for name, values in ((judge.when or {}) if judge is not None else {}).items():
            option = (self.options or {}).get(name)
            if option is None:
                yield ("score", "judge", "when", name), f"expected an option's name, found {name!r}"
            elif option.values is not None:
                for i, value in enumerate(values):
                    if value not in option.values:
                        yield ("score", "judge", "when", name, i), f"expected one of {option.values!r}, found {value!r}"
        if self.simulator is not None and "agent.conversation/v1" not in self.needs:
            yield ("simulator",), "expected a simulator only with agent.conversation/v1 in needs"
        dataset_names = set(self.datasets)
        for name, option in (self.options or {}).items():
            for i, ds in enumerate(option.datasets or []):
                if ds not in dataset_names:
                    yield ("options", name, "datasets", i), f"expected a dataset of this benchmark, found {ds!r}"
            for other, values in (option.when or {}).items():
                named = (self.options or {}).get(other)
                if named is None or other == name:
                    yield ("options", name, "when", other), f"expected another option's name, found {other!r}"
                    continue
                for i, value in enumerate(values):
                    if not named.allows(value):
                        yield ("options", name, "when", other, i), f"expected a value option {other!r} allows, found {value!r}"
            for i, setup in enumerate(option.setups or []):
                if setup not in ("yours", *(self.setups or {})):
                    declared = ", ".join(["yours", *(self.setups or {})])
                    yield ("options", name, "setups", i), f"expected one of {declared} (yours, or a setup this benchmark declares), found {setup!r}"
        if self.versions is not None and self.versions.default not in self.versions.blocks:
            names = ", ".join(sorted(self.versions.blocks)) or "none"
            yield ("versions", "default"), f"expected the name of a version ({names}), found {self.versions.default!r}"
        yield from self._option_ports()
        yield from self._dataset_environments()

    def _dataset_environments(self) -> Issues:
        environments = set(self.environments or {})
        named = [(("datasets", name, "environment"), ds.environment) for name, ds in self.datasets.items()]
        if self.dataset_folders is not None:
            named.append((("dataset_folders", "environment"), self.dataset_folders.environment))
        for where, environment in named:
            if environment is not None and environment not in environments:
                yield where, f"expected a declared environment, found {environment!r}"
