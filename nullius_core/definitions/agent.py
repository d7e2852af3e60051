"""`agent.json` (schema `nullius.agent/v1`) and `capability.json` (`nullius.capability/v1`).

Both may keep several versions in one file. `versions` maps each version's
name to its block and `default` to the name offered; a file without
`versions` is one version. `resolve()` gives the effective view of one
version: its block laid over the top of the file.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any, Literal

import attrs

from nullius_core.definitions.common import (
    FIDELITY_KEY,
    KEY_NAME,
    Fidelity,
    FidelityProof,
    Install,
    Issues,
    Option,
    Proof,
    Upstream,
    bad_port,
    ports_of,
    template_slots,
)
from nullius_core.definitions.converter import extensions_field
from nullius_core.definitions.variant_places import VariantPlaces

AGENT_SCHEMA = "nullius.agent/v1"
CAPABILITY_SCHEMA = "nullius.capability/v1"

# Slots every template may use besides `{opt_<name>}`.
MODEL_SLOTS = frozenset({"base_url", "token", "model", "home", "install", "here", "workspace"})


@attrs.frozen(kw_only=True)
class ModelWiring:
    """How the relay's URL, token and model name reach the agent.

    `api` is the model API the agent speaks; `env` and `files` are templates
    (`files` maps a path under the agent's HOME to the text written there).
    `side_models` are models the agent asks besides the run's, sent as asked.
    """

    api: Literal["openai-chat", "openai-responses", "anthropic", "gemini"]
    env: dict[str, str] = attrs.field(factory=dict)
    files: dict[str, str] = attrs.field(factory=dict)
    side_models: list[str] = attrs.field(factory=list)


@attrs.frozen(kw_only=True)
class VersionBlock:
    """What one version of an agent or capability sets; unset keys come from the top."""

    upstream: Upstream | None = None
    install: Install | None = None
    start: list[str] | None = None
    model: ModelWiring | None = None
    env: dict[str, str] | None = None
    options: dict[str, Option] | None = None
    proven: dict[str, Proof] = attrs.field(factory=dict)
    fidelity: Fidelity | None = None
    notices: list[str] | None = None


@attrs.frozen(kw_only=True)
class Versions:
    """`{"default": NAME, NAME: {...}, ...}` as one object."""

    default: str
    blocks: dict[str, VersionBlock]


@attrs.frozen(kw_only=True)
class Resolved:
    """One version of an agent or capability, as a run sees it."""

    key: str
    version: str | None
    upstream: Upstream
    install: Install | None
    start: list[str]
    model: ModelWiring | None
    env: dict[str, str]
    options: dict[str, Option]
    proven: dict[str, Proof]
    has_versions: bool
    family: str = "agent"
    notices: tuple[str, ...] = ()
    fidelity: Fidelity | None = None  # how to run its own CLI (`nullius fidelity`)
    fidelity_proof: FidelityProof | None = None  # `proven.fidelity`: what `nullius fidelity` found
    variant: VariantPlaces | None = None  # where a variant's files go and how its effort reaches the agent

    @property
    def ref(self) -> str:
        """`codex@2.2.2` for a version of a file with versions, else the bare key."""
        return f"{self.key}@{self.version}" if self.has_versions and self.version else self.key


def _check_slots(where: tuple[str | int, ...], text: str, options: dict[str, Option]) -> Issues:
    for slot in template_slots(text):
        if slot.startswith("opt_"):
            if slot[4:] not in options:
                known = ", ".join(sorted(options)) or "none declared"
                yield where, f"expected {{opt_<name>}} to name an option ({known}), found {{{slot}}}"
        elif slot not in MODEL_SLOTS:
            yield where, (
                "expected a slot among "
                + ", ".join("{" + s + "}" for s in sorted(MODEL_SLOTS))
                + f" or {{opt_<name>}}, found {{{slot}}}"
            )


@attrs.frozen(kw_only=True)
class _Participant:
    """The fields agent.json and capability.json share."""

    schema: str
    name: str | None = None
    summary: str | None = None
    upstream: Upstream | None = None
    install: Install | None = None
    start: list[str] | None = None
    env: dict[str, str] | None = None
    options: dict[str, Option] | None = None
    proven: dict[str, Proof] = attrs.field(factory=dict)
    versions: Versions | None = None
    # Messages the agent's adapter sends as text that are its warnings: whole
    # chunks matching one of these are notices, never part of the answer.
    notices: list[str] | None = None
    extensions: dict[str, Any] = extensions_field()

    family = "agent"

    def version_names(self) -> list[str]:
        return list(self.versions.blocks) if self.versions else []

    def resolve(self, key: str, version: str | None = None) -> Resolved:
        """The effective definition of `version` (the default when None)."""
        block = VersionBlock()
        if self.versions is not None:
            version = version or self.versions.default
            if version not in self.versions.blocks:
                raise KeyError(version)
            block = self.versions.blocks[version]
        elif version is not None and (self.upstream is None or version != self.upstream.version):
            raise KeyError(version)
        upstream = block.upstream or self.upstream or Upstream()
        options = {**(self.options or {}), **(block.options or {})}
        proven = dict(block.proven) if self.versions is not None else dict(self.proven)
        return Resolved(
            key=key,
            version=version if self.versions is not None else upstream.version,
            upstream=upstream,
            install=block.install or self.install,
            start=list(block.start or self.start or []),
            model=block.model or getattr(self, "model", None),
            env={**(self.env or {}), **(block.env or {})},
            options=options,
            proven=ports_of(proven),
            has_versions=self.versions is not None,
            family=self.family,
            notices=tuple(block.notices if block.notices is not None else self.notices or ()),
            fidelity=block.fidelity or getattr(self, "fidelity", None),
            fidelity_proof=proven.get(FIDELITY_KEY),
            variant=getattr(self, "variant", None),
        )

    def _common_issues(self) -> Iterator[tuple[tuple[str | int, ...], str]]:
        blocks: list[tuple[tuple[str | int, ...], Any]] = [((), self)]
        if self.versions is not None:
            if self.versions.default not in self.versions.blocks:
                names = ", ".join(sorted(self.versions.blocks)) or "none"
                yield ("versions", "default"), f"expected the name of a version ({names}), found {self.versions.default!r}"
            for name, blk in self.versions.blocks.items():
                if not KEY_NAME.match(name):
                    yield ("versions", name), f"expected a version name of letters, digits, '.', '-' or '_', found {name!r}"
                blocks.append((("versions", name), blk))
        elif self.upstream is None:
            yield ("upstream",), "required key missing: expected the pinned package it runs"
        for where, blk in blocks:
            for i, pattern in enumerate(blk.notices or []):
                try:
                    re.compile(pattern)
                except re.error as exc:
                    yield (*where, "notices", i), f"expected a regular expression, found {pattern!r} ({exc})"
            for port in blk.proven:
                if port == FIDELITY_KEY:
                    if self.family != "agent":
                        yield (*where, "proven", port), "expected a capability port (cap.*): fidelity is an agent's"
                    continue
                why = bad_port(port)
                if why:
                    yield (*where, "proven", port), why
        for name in (self.versions.blocks if self.versions else {None: None}):
            resolved = self.resolve("_", name)
            where = ("versions", name) if name is not None else ()
            if not resolved.start:
                yield (*where, "start"), "required key missing: expected the command that starts it"
            for i, arg in enumerate(resolved.start):
                yield from _check_slots((*where, "start", i), arg, resolved.options)
            for var, text in resolved.env.items():
                yield from _check_slots((*where, "env", var), text, resolved.options)
            if resolved.model is not None:
                for var, text in resolved.model.env.items():
                    yield from _check_slots((*where, "model", "env", var), text, resolved.options)
                for path, text in resolved.model.files.items():
                    yield from _check_slots((*where, "model", "files", path), text, resolved.options)


@attrs.frozen(kw_only=True)
class Agent(_Participant):
    """An ACP agent: how to install and start it and how it reaches its model."""

    schema: Literal["nullius.agent/v1"]
    model: ModelWiring | None = None
    fidelity: Fidelity | None = None
    variant: VariantPlaces | None = None

    def _invariants(self) -> Issues:
        yield from self._common_issues()
        effort = self.variant.effort if self.variant is not None else None
        if effort is not None and effort.option is not None and effort.option not in (self.options or {}):
            known = ", ".join(sorted(self.options or {})) or "none declared"
            yield ("variant", "effort", "option"), f"expected one of the agent's options ({known}), found {effort.option!r}"
        for port in ports_of(self.proven):
            if port.startswith("cap."):
                yield ("proven", port), f"expected an agent port (agent.*), found {port!r}"


@attrs.frozen(kw_only=True)
class Capability(_Participant):
    """A library speaking JSON lines over stdio (`add`, `recall`)."""

    schema: Literal["nullius.capability/v1"]
    kind: str | None = None

    family = "capability"

    def _invariants(self) -> Issues:
        yield from self._common_issues()
        for port in self.proven:
            if port.startswith("agent."):
                yield ("proven", port), f"expected a capability port (cap.*), found {port!r}"
