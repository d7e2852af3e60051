"""Pieces shared by benchmark, agent and capability definitions."""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from typing import Any, Literal

import attrs

from cattrs.errors import IterableValidationError

from nullius_core.definitions.converter import IndexNote, Mismatch, converter, renamed
from nullius_core.definitions.urls import SHA256, Prefetch, bad_download, prefetch_entry, url_file_name

# `agent.workspace/v1`, `cap.memory/v1`: family, a dotted name, a version.
PORT_NAME = re.compile(r"^(agent|cap)\.[a-z][a-z0-9_-]*/v[1-9][0-9]*$")
KEY_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]*$")
FULL_COMMIT = re.compile(r"^[0-9a-f]{40}$")
PINNED_PIP = re.compile(r"^[A-Za-z0-9._\[\],-]+==[^=<>~!*\s]+$")
PINNED_NPM = re.compile(r"^(@[a-z0-9._-]+/)?[a-z0-9._-]+@\d[^\s^~<>*|]*$")
SLOT = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")

Issues = Iterator[tuple[tuple[str | int, ...], str]]


def bad_port(name: str) -> str | None:
    """Why `name` is not a port name, or None when it is one."""
    if PORT_NAME.match(name):
        return None
    return (
        "expected a port name such as agent.workspace/v1 or cap.memory/v1, "
        f"found {name!r}"
    )


@attrs.frozen(kw_only=True)
class HostInstall:
    apt: list[str] | None = None
    npm: list[str] | None = None


@attrs.frozen(kw_only=True)
class Host:
    """What the machine must have, checked before any unit: programs on PATH (and how to get them), hardware (a CUDA GPU)."""

    summary: str
    check: list[str] = attrs.field(factory=list)
    probe: list[str] | None = None
    install: HostInstall | None = None
    gpu: Literal["cuda"] | None = None  # a CUDA GPU, found by nvidia-smi: hardware, which nothing installs

    def _invariants(self) -> Issues:
        if not self.check and self.gpu is None:
            yield ("check",), "expected the programs to look for (or a gpu), found none"


@attrs.frozen(kw_only=True)
class ValueNeeds:
    """What one value of a benchmark's option needs (`needs.VALUE`).

    ports: the ports a run with that value needs, instead of the benchmark's `needs`.
    embeddings: a model the driver (and its MCP servers) calls through the run's own relay, as OPENAI_BASE_URL.
    host: programs or hardware the machine must have, whatever the backend.
    """

    ports: list[str] | None = None
    embeddings: str | None = None
    host: Host | None = None


@attrs.frozen(kw_only=True)
class Option:
    """A setting a run may choose: of an agent's behaviour, or a benchmark's own.

    `values` or `pattern` says what is allowed; `default` must be one of them.
    The benchmark-only keys (`datasets`, `needs`, `when`, `setups`) are ignored
    for agents and capabilities.
    """

    summary: str
    default: str | None = None
    values: list[str] | None = None
    pattern: str | None = None
    about: dict[str, str] | None = None
    datasets: list[str] | None = None
    needs: dict[str, ValueNeeds] | None = None
    when: dict[str, list[str]] | None = None  # it applies only while each named option holds one of these values
    setups: list[str] | None = None  # the setups it applies to ("original", "model", "yours"); none: "yours" alone

    def allows(self, value: str) -> bool:
        if self.values is not None:
            return value in self.values
        if self.pattern is not None:
            try:
                return re.fullmatch(self.pattern, value) is not None
            except re.error:
                return False
        return True

    def _invariants(self) -> Issues:
        if self.values is not None and self.pattern is not None:
            yield ("pattern",), "expected either values or pattern, found both"
        if self.values is not None and not self.values:
            yield ("values",), "expected at least one allowed value, found an empty list"
        if self.pattern is not None:
            try:
                re.compile(self.pattern)
            except re.error as exc:
                yield ("pattern",), f"expected a regular expression, found {self.pattern!r} ({exc})"
                return
        if self.default is not None and not self.allows(self.default):
            allowed = (
                "one of " + ", ".join(repr(v) for v in self.values)
                if self.values is not None
                else f"a value matching {self.pattern!r}"
            )
            yield ("default",), f"expected {allowed}, found {self.default!r}"
        if self.about is not None and self.values is not None:
            for value in self.about:
                if value not in self.values:
                    yield ("about", value), f"expected a line about one of the values, found {value!r}, which is not one"


@attrs.frozen(kw_only=True)
class Index:
    """Packages taken from another package index."""

    url: str
    packages: list[str]


@attrs.frozen(kw_only=True)
class Wheel:
    """A wheel served by URL only, refused unless its sha256 matches."""

    url: str
    sha256: str

    def _invariants(self) -> Issues:
        why = bad_download(self.url)
        if why:
            yield ("url",), why
        elif not url_file_name(self.url).endswith(".whl"):  # pip reads the wheel's tags from its file's name
            yield ("url",), f"expected a URL whose path ends in a wheel's file name (.whl), found {self.url!r}"
        if not SHA256.match(self.sha256):
            yield ("sha256",), f"expected 64 lowercase hex digits, found {self.sha256!r}"


@attrs.frozen(kw_only=True)
class Project:
    """The upstream itself, installed from its clone."""

    locked: bool = False
    path: str = "."


@attrs.frozen(kw_only=True)
class Install:
    """An environment installed once per digest under STANDARD_DIR.

    Drivers and capabilities use the Python keys; agents from npm use `npm`.
    """

    python: str | None = None
    pip: list[str] | None = None
    no_deps: list[str] | None = None
    npm: list[str] | None = None
    indexes: list[Index] | None = None
    wheels: list[Wheel] | None = None
    project: Project | None = None
    extras: list[str] | None = None
    prefetch: list[str] | None = None

    def _invariants(self) -> Issues:
        for i, req in enumerate(self.pip or []):
            if not PINNED_PIP.match(req):
                yield ("pip", i), f"expected a pinned requirement (name==version), found {req!r}"
        for i, req in enumerate(self.no_deps or []):
            if not PINNED_PIP.match(req):
                yield ("no_deps", i), f"expected a pinned requirement (name==version), found {req!r}"
        for i, req in enumerate(self.npm or []):
            if not PINNED_NPM.match(req):
                yield ("npm", i), f"expected a pinned package (name@version), found {req!r}"
        for i, index in enumerate(self.indexes or []):
            for j, req in enumerate(index.packages):
                if not PINNED_PIP.match(req):
                    yield ("indexes", i, "packages", j), f"expected a pinned requirement (name==version), found {req!r}"
        if self.python is not None and not re.match(r"^3\.\d+(\.\d+)?$", self.python):
            yield ("python",), f"expected a Python version such as 3.12, found {self.python!r}"
        yield from self._prefetch_issues()

    def _prefetch_issues(self) -> Issues:
        names: dict[str, int] = {}
        for i, entry in enumerate(self.prefetch or []):
            found = prefetch_entry(entry)
            if isinstance(found, str):
                yield ("prefetch", i), found
            elif found.name in names:
                yield ("prefetch", i), f"expected a file name of its own, found {found.name!r}, which prefetch[{names[found.name]}] has too"
            else:
                names[found.name] = i

    def prefetch_files(self) -> list[Prefetch]:
        """The files of `prefetch`; ValueError for a malformed entry (a definition once read has none)."""
        for where, why in self._prefetch_issues():
            raise ValueError(f"prefetch[{where[1]}]: {why}")
        return [f for f in map(prefetch_entry, self.prefetch or []) if isinstance(f, Prefetch)]


@attrs.frozen(kw_only=True)
class Upstream:
    """Where a definition's code comes from, pinned.

    A benchmark pins a repository at a full commit (`tested`, the commit of
    `tag` when there is a release); an agent or capability pins a package.
    `core` is the core an adapter runs (`@openai/codex@0.137.0` for codex-acp),
    pinned too: a name and no version would say nothing of what ran.
    """

    repository: str | None = None
    tag: str | None = None
    tested: str | None = None
    npm: str | None = None
    pypi: str | None = None
    version: str | None = None
    core: str | None = None
    homepage: str | None = None
    licence: str | None = None

    def _invariants(self) -> Issues:
        if self.tested is not None and not FULL_COMMIT.match(self.tested):
            yield ("tested",), f"expected a full commit (40 lowercase hex digits), found {self.tested!r}"
        if self.npm is not None and self.pypi is not None:
            yield ("pypi",), "expected one package source (npm or pypi), found both"
        if (self.npm or self.pypi) and not self.version:
            yield ("version",), "required key missing: expected the package's pinned version"
        if self.core is not None and not (PINNED_NPM.match(self.core) or PINNED_PIP.match(self.core)):
            yield ("core",), f"expected the core it runs as a pinned package (name@version or name==version), found {self.core!r}"

    @property
    def package(self) -> str | None:
        return self.npm or self.pypi


@attrs.frozen(kw_only=True)
class SkillProof:
    passed: str
    ok: bool


@attrs.frozen(kw_only=True)
class Proof:
    """A port proven by its kit, as `nullius conform` writes it.

    `passed` counts the basic checks that held ("2/2"); `skills` says which
    skills were shown; `version` is the upstream version the proof was made on.
    """

    passed: str
    date: str | None = None
    score: float | None = None
    model: str | None = None
    kit_version: int | None = None
    skills: dict[str, SkillProof] | None = None
    job: str | None = None
    backend: str | None = None
    version: str | None = None
    repeat: int | None = None
    checks: dict[str, str] | None = None
    ok: bool | None = None
    extensions: dict[str, Any] = attrs.field(factory=dict, kw_only=True)

    def _invariants(self) -> Issues:
        if fraction(self.passed) is None:
            yield ("passed",), f"expected a count such as \"3/3\", found {self.passed!r}"
        for name, skill in (self.skills or {}).items():
            if fraction(skill.passed) is None:
                yield ("skills", name, "passed"), f"expected a count such as \"1/1\", found {skill.passed!r}"

    @property
    def held(self) -> bool:
        """All basic checks passed (an explicit `ok` wins)."""
        if self.ok is not None:
            return self.ok
        counts = fraction(self.passed)
        return counts is not None and counts[1] > 0 and counts[0] == counts[1]


def fraction(text: str) -> tuple[int, int] | None:
    match = re.fullmatch(r"(\d+)/(\d+)", text)
    if not match:
        return None
    done, total = int(match.group(1)), int(match.group(2))
    return (done, total) if done <= total else None


@attrs.frozen(kw_only=True)
class Fidelity:
    """How to run an agent's own CLI for `nullius fidelity`.

    `command` is one shell-like line (split as a shell would, never run by
    one) carrying `{prompt}`; `install` is what the CLI needs besides the
    agent's own install (Codex's CLI is a package of its own), installed
    once, its `node_modules/.bin` and `.venv/bin` put first on PATH.
    """

    command: str
    install: Install | None = None

    def _invariants(self) -> Issues:
        try:
            words = shlex.split(self.command)
        except ValueError as exc:
            yield ("command",), f"expected a command line, found {self.command!r} ({exc})"
            return
        if not words or "{prompt}" not in words:
            yield ("command",), f"expected a command carrying {{prompt}} as a word of its own, found {self.command!r}"
        for slot in template_slots(self.command):
            if slot not in FIDELITY_SLOTS:
                known = ", ".join("{" + s + "}" for s in sorted(FIDELITY_SLOTS))
                yield ("command",), f"expected a slot among {known}, found {{{slot}}}"


# The slots of a `fidelity.command`.
FIDELITY_SLOTS = frozenset({"prompt", "model", "home", "install", "cli", "here", "workspace"})

# The key `nullius fidelity` writes its verdict under, in a version's `proven` beside the ports.
FIDELITY_KEY = "fidelity"


@attrs.frozen(kw_only=True)
class FidelityProof:
    """`nullius fidelity`'s verdict, kept in `proven` as `fidelity`.

    `fields` names what differed between the two ways (none when `same`);
    `noise`, the fields that differed between two runs of one way and so
    were not compared; `passed`, each way's runs that did the unit's work.
    """

    verdict: Literal["same", "differs"]
    fields: list[str] = attrs.field(factory=list)
    noise: list[str] = attrs.field(factory=list)
    passed: dict[str, str] | None = None
    date: str | None = None
    model: str | None = None
    version: str | None = None
    record: str | None = None
    backend: str | None = None
    extensions: dict[str, Any] = attrs.field(factory=dict, kw_only=True)


def _proven_structure(value: Any, _: Any) -> dict[str, Any]:
    """A participant's `proven`: each port's Proof, and `fidelity` a FidelityProof."""
    if not isinstance(value, dict):
        raise Mismatch("an object of objects", value)
    out, errors = {}, []
    for key, item in value.items():
        cls = FidelityProof if key == FIDELITY_KEY else Proof
        try:
            out[key] = converter.structure(item, cls)
        except Exception as exc:  # noqa: BLE001 - collected, reported with its path
            exc.__notes__ = [*getattr(exc, "__notes__", []), IndexNote(key, cls)]
            errors.append(exc)
    if errors:
        raise IterableValidationError("While structuring proven", errors, dict)
    return out


PROVEN = dict[str, Proof]
converter.register_structure_hook_func(lambda t: t == PROVEN, _proven_structure)
converter.register_unstructure_hook_func(lambda t: t == PROVEN, lambda value: {k: converter.unstructure(v, type(v)) for k, v in value.items()})


def ports_of(proven: dict[str, Any]) -> dict[str, Proof]:
    """The ports' proofs of a `proven`, without the fidelity verdict beside them."""
    return {k: v for k, v in proven.items() if k != FIDELITY_KEY}


def template_slots(text: str) -> list[str]:
    return SLOT.findall(text)


__all__ = [
    "FIDELITY_KEY",
    "Fidelity",
    "FidelityProof",
    "Index",
    "Install",
    "Option",
    "Prefetch",
    "Project",
    "Proof",
    "SkillProof",
    "Upstream",
    "Wheel",
    "bad_download",
    "bad_port",
    "fraction",
    "ports_of",
    "prefetch_entry",
    "renamed",
    "template_slots",
    "url_file_name",
]
