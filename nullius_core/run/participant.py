"""Preparing an agent for a run: which version, does it fit, consent, options, its model's way; then its install.

Everything here happens before the first unit; a refusal names what is
missing (a port, `--unsandboxed`, `--model`, a provider's key). The checks
(`check_participant`) come before anything is installed; the install and
the provider's own server (`make_ready`) after every check of the run.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import attrs

from nullius_core.catalogue.catalogue import Entry, split_ref
from nullius_core.definitions import DefinitionError, Resolved, ResolvedBenchmark
from nullius_core.plugins.registries import AgentProtocolSpec, BackendSpec, ProviderRefused, ProviderServer, RunnerSpec, ServeContext
from nullius_core.ports.fit import fit
from nullius_core.relay import upstreams
from nullius_core.relay.upstream import Upstream
from nullius_core.run import install
from nullius_core.run.checks import refuse_folder, resolve_options
from nullius_core.run.progress import Progress
from nullius_core.run.spec import RunSpec
from nullius_core.session import Session
from nullius_core.variants.fit import Fitted, fit as fit_variant
from nullius_core.variants.stage import StagedVariant


@attrs.frozen(kw_only=True)
class PreparedCapability:
    """A capability for a run: a JSON-lines process started fresh for each unit."""

    entry: Entry
    resolved: Resolved
    options: dict[str, str]
    install_dir: object  # Path | None
    runner: RunnerSpec
    upstream: Upstream | None  # for the driver's produce, when the run has a model
    proofs: dict[str, Any] | None = None  # where its proofs come from (catalogue.Standing.as_json)
    served: ProviderServer | None = None  # the provider's own model server, started with the run's relay


@attrs.frozen(kw_only=True)
class PreparedAgent:
    entry: Entry
    resolved: Resolved
    options: dict[str, str]
    install_dir: object  # Path | None
    upstream: Upstream
    protocol: AgentProtocolSpec
    proofs: dict[str, Any] | None = None  # where its proofs come from (catalogue.Standing.as_json)
    served: ProviderServer | None = None  # the provider's own model server, started with the run's relay
    staged: StagedVariant | None = None  # the variant's files, written into every unit before the agent starts
    effort_env: dict[str, str] = attrs.field(factory=dict)  # the effort, where the agent takes it as a variable


@attrs.frozen(kw_only=True)
class CheckedParticipant:
    """An agent or capability whose every check that needs no install has passed: what `make_ready` then installs.

    A run checks all it can before anything is installed, cloned or
    downloaded (prepare.py), so that a run that cannot go (a missing key, a
    pair that does not fit) is refused in a second, not after minutes of
    installs.
    """

    entry: Entry
    resolved: Resolved
    options: dict[str, str]
    upstream: Upstream | None  # an agent's always; a capability's when the run has a model
    server: ProviderServer | None = None  # the provider's own model server: checked, prepared (installed) by make_ready
    protocol: AgentProtocolSpec | None = None  # an agent's
    runner: RunnerSpec | None = None  # a capability's
    fitted: Fitted | None = None  # an agent's variant and effort

    @property
    def capability(self) -> bool:
        return self.resolved.family == "capability"


def check_participant(
    session: Session, spec: RunSpec, bench: ResolvedBenchmark, backend: BackendSpec, progress: Progress, refused: type[Exception],
    scratch: Path | None = None,
) -> CheckedParticipant:
    """Everything about the agent (or capability) that needs no install: it exists, it fits, consent, model, options, provider, key."""
    key, version = split_ref(spec.participant)
    try:
        entry, definition = session.catalogue.participant(key)
    except LookupError as exc:
        raise refused(str(exc.args[0])) from None
    except DefinitionError as exc:
        raise refused(f"the definition of {key!r} is invalid:\n{exc.render()}") from None
    refuse_folder(entry, f"the definition of {key!r} is invalid", refused)
    try:
        resolved = definition.resolve(key, version)
    except KeyError:
        names = ", ".join(definition.version_names()) or "none: it has no versions"
        raise refused(f"{key!r} has no version {version!r} (versions: {names})") from None
    if spec.kit is None:
        result = fit(bench, resolved, {p.name: p for p in session.ports}, spec.bench_options)
        if not result.ok:
            raise refused(f"{resolved.ref} cannot run {bench.ref}: {'; '.join(result.reasons)}")
    if resolved.family == "capability":
        if spec.variant is not None or spec.effort:
            raise refused(f"{resolved.ref} is a capability: a variant or a reasoning effort is an agent's")
        return _check_capability(session, spec, entry, resolved, progress, refused)
    if not backend.isolates and not spec.unsandboxed:
        isolating = sorted(b.name for b in session.backends if b.isolates)
        other = (f"use --backend {' or --backend '.join(isolating)}" if isolating
                 else "install a backend that isolates (pip install nullius-backend-docker)")
        raise refused(f"an agent runs as you on the {backend.name} backend, which is not a sandbox: give --unsandboxed to consent, or {other}")
    if not spec.model:
        raise refused("an agent run needs --model (the model the relay sends every call as)")
    fitted = _fit_variant(spec, resolved, scratch, refused)
    options = resolve_options(resolved.options, {**spec.agent_options, **fitted.options}, "", resolved.ref, what="option")
    protocol = session.agent_protocols.get("acp")
    if protocol is None:
        raise refused("no agent protocol 'acp' is registered (is the bundled plugin acp-client blocked?)")
    upstream = _upstream(session, spec, refused)
    api = resolved.model.api if resolved.model else "openai-chat"
    wanted = api if api in ("anthropic", "gemini") else "openai"
    if wanted not in upstream.provider.apis:
        raise refused(f"{resolved.ref} speaks {api}, which provider {upstream.provider.name!r} does not serve")
    return CheckedParticipant(entry=entry, resolved=resolved, options=options, upstream=upstream, protocol=protocol, fitted=fitted,
                              server=None if _keyless(spec) else checked_server(session, spec, upstream, progress, refused))


def make_ready(session: Session, checked: CheckedParticipant, progress: Progress, refused: type[Exception]) -> PreparedAgent | PreparedCapability:
    """The checked participant installed (once per version) and its provider's own server prepared: the slow part, after every check."""
    served = _prepared_server(checked.server, refused)
    kind, label = ("capabilities", "capability") if checked.capability else ("agents", "agent")
    install_dir = _install(session, checked.resolved, progress, refused, kind=kind, label=label)
    proofs = _proofs(session, checked.entry, checked.resolved)
    if checked.capability:
        assert checked.runner is not None
        return PreparedCapability(entry=checked.entry, resolved=checked.resolved, options=checked.options, install_dir=install_dir,
                                  runner=checked.runner, upstream=checked.upstream, proofs=proofs, served=served)
    assert checked.upstream is not None and checked.protocol is not None and checked.fitted is not None
    return PreparedAgent(entry=checked.entry, resolved=checked.resolved, options=checked.options, install_dir=install_dir,
                         upstream=checked.upstream, protocol=checked.protocol, proofs=proofs, served=served,
                         staged=checked.fitted.staged, effort_env=checked.fitted.env)


def _upstream(session: Session, spec: RunSpec, refused: type[Exception]) -> Upstream:
    """The provider, its base URL and its key (none read for a replay that never goes live)."""
    try:
        return upstreams.resolve(session, spec.provider, spec.base_url, keyless=_keyless(spec))
    except upstreams.RelayRefused as exc:
        raise refused(str(exc)) from None


def _fit_variant(spec: RunSpec, resolved: Resolved, scratch: Path | None, refused: type[Exception]) -> Fitted:
    """The variant's files staged for this agent and its effort's way in (variants/fit.py); a variant's file error refuses the run."""
    if spec.variant is None and not spec.effort:
        return Fitted(options={}, env={}, staged=None)
    if scratch is None:
        raise refused("a variant or an effort needs a run's scratch folder")
    try:
        return fit_variant(spec.variant, spec.effort, resolved, spec.agent_options, scratch, refused)
    except DefinitionError as exc:
        raise refused(f"the variant {spec.variant.name if spec.variant else ''} is invalid:\n{exc.render()}") from None


def _keyless(spec: RunSpec) -> bool:
    """A replay that never goes live: no provider answers it, so no key is read."""
    return spec.replay is not None and not spec.replay.live


def checked_server(session: Session, spec: RunSpec, upstream: Upstream, progress: Progress, refused: type[Exception]) -> ProviderServer | None:
    """The provider's own model server, its cheap checks passed (its `check()`, where it has one); None for a remote provider."""
    if upstream.provider.serve is None:
        return None
    context = ServeContext(paths=session.paths, model=spec.model, concurrency=spec.concurrency, progress=progress)
    try:
        server = upstream.provider.serve(context)
        check = getattr(server, "check", None)  # optional: a server without one is checked by its prepare()
        if callable(check):
            check()
    except ProviderRefused as exc:
        raise refused(str(exc)) from None
    return server


def _prepared_server(server: ProviderServer | None, refused: type[Exception]) -> ProviderServer | None:
    """The server prepared for the run (what it needs installed); a failure refuses the run."""
    if server is None:
        return None
    try:
        server.prepare()
    except ProviderRefused as exc:
        raise refused(str(exc)) from None
    return server


def _check_capability(session: Session, spec: RunSpec, entry: Entry, resolved: Resolved, progress: Progress,
                      refused: type[Exception]) -> CheckedParticipant:
    """Capabilities are not asked for consent: they are libraries, run as the driver is."""
    options = resolve_options(resolved.options, spec.agent_options, "", resolved.ref, what="option")
    runner = session.runners.get("capability:stdio")
    if runner is None:
        raise refused("no capability runner 'stdio' is registered (is the bundled plugin stdio-runner blocked?)")
    upstream = server = None
    if spec.model:
        upstream = _upstream(session, spec, refused)
        server = None if _keyless(spec) else checked_server(session, spec, upstream, progress, refused)
    return CheckedParticipant(entry=entry, resolved=resolved, options=options, upstream=upstream, server=server, runner=runner)


def _proofs(session: Session, entry: Entry, resolved: Resolved) -> dict[str, Any]:
    return session.catalogue.standing(entry, resolved.version if resolved.has_versions else None).as_json()


def _install(session: Session, resolved: Resolved, progress: Progress, refused: type[Exception], kind: str, label: str):
    """The participant's install folder (made once per version), None when it installs nothing; a failure refuses the run."""
    if resolved.install is None:
        return None
    try:
        return install.ensure(
            session.paths, f"{resolved.key}/{resolved.version or 'default'}", resolved.install, progress, kind=kind, label=label
        )
    except install.InstallError as exc:
        raise refused(f"{resolved.ref} cannot be installed: {exc}") from None


async def start_served(prepared: Any, served: ProviderServer, model: str | None, progress: Progress, refused: type[Exception]) -> Any:
    """The provider's own server started (said as `stage=serve`); the prepared run with the agent's upstream at its URL."""
    agent = prepared.agent
    timer = time.monotonic()
    progress.stage("serve", provider=agent.upstream.provider.name, model=model, state="start")
    try:
        base_url = await served.start()
    except ProviderRefused as exc:
        raise refused(str(exc)) from None
    progress.stage("serve", provider=agent.upstream.provider.name, state="done", url=base_url, seconds=round(time.monotonic() - timer, 2))
    agent = attrs.evolve(agent, upstream=attrs.evolve(agent.upstream, base_url=base_url))
    return attrs.evolve(prepared, agent=agent)
