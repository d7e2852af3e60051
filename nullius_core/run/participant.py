"""Preparing an agent for a run: which version, does it fit, consent, options, its install, its model's way.

Everything here happens before the first unit; a refusal names what is
missing (a port, `--unsandboxed`, `--model`, a provider's key).
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


def prepare_agent(
    session: Session, spec: RunSpec, bench: ResolvedBenchmark, backend: BackendSpec, progress: Progress, refused: type[Exception],
    scratch: Path | None = None,
) -> PreparedAgent:
    key, version = split_ref(spec.participant)
    try:
        entry, definition = session.catalogue.participant(key)
    except LookupError as exc:
        raise refused(str(exc.args[0])) from None
    except DefinitionError as exc:
        raise refused(f"the definition of {key!r} is invalid:\n{exc.render()}") from None
    from nullius_core.run.prepare import refuse_folder

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
        return _capability(session, spec, entry, resolved, progress, refused)
    if not backend.isolates and not spec.unsandboxed:
        isolating = sorted(b.name for b in session.backends if b.isolates)
        other = (f"use --backend {' or --backend '.join(isolating)}" if isolating
                 else "install a backend that isolates (pip install nullius-backend-docker)")
        raise refused(f"an agent runs as you on the {backend.name} backend, which is not a sandbox: give --unsandboxed to consent, or {other}")
    if not spec.model:
        raise refused("an agent run needs --model (the model the relay sends every call as)")
    from nullius_core.run.prepare import resolve_options

    fitted = _fit_variant(spec, resolved, scratch, refused)
    options = resolve_options(resolved.options, {**spec.agent_options, **fitted.options}, "", resolved.ref, what="option")
    protocol = session.agent_protocols.get("acp")
    if protocol is None:
        raise refused("no agent protocol 'acp' is registered (is the bundled plugin acp-client blocked?)")
    keyless = _keyless(spec)
    try:
        upstream = upstreams.resolve(session, spec.provider, spec.base_url, keyless=keyless)
    except upstreams.RelayRefused as exc:
        raise refused(str(exc)) from None
    api = resolved.model.api if resolved.model else "openai-chat"
    wanted = api if api in ("anthropic", "gemini") else "openai"
    if wanted not in upstream.provider.apis:
        raise refused(f"{resolved.ref} speaks {api}, which provider {upstream.provider.name!r} does not serve")
    served = None if keyless else served_by(session, spec, upstream, progress, refused)
    install_dir = _install(session, resolved, progress, refused, kind="agents", label="agent")
    return PreparedAgent(entry=entry, resolved=resolved, options=options, install_dir=install_dir, upstream=upstream, protocol=protocol,
                         proofs=_proofs(session, entry, resolved), served=served, staged=fitted.staged, effort_env=fitted.env)


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


def served_by(session: Session, spec: RunSpec, upstream: Upstream, progress: Progress, refused: type[Exception]) -> ProviderServer | None:
    """The provider's own model server, prepared (installed, checked) before the run; None for a remote provider."""
    if upstream.provider.serve is None:
        return None
    context = ServeContext(paths=session.paths, model=spec.model, concurrency=spec.concurrency, progress=progress)
    try:
        server = upstream.provider.serve(context)
        server.prepare()
    except ProviderRefused as exc:
        raise refused(str(exc)) from None
    return server


def _capability(session: Session, spec: RunSpec, entry: Entry, resolved: Resolved, progress: Progress, refused: type[Exception]) -> PreparedCapability:
    """Capabilities are not asked for consent: they are libraries, run as the driver is."""
    from nullius_core.run.prepare import resolve_options

    options = resolve_options(resolved.options, spec.agent_options, "", resolved.ref, what="option")
    runner = session.runners.get("capability:stdio")
    if runner is None:
        raise refused("no capability runner 'stdio' is registered (is the bundled plugin stdio-runner blocked?)")
    upstream = served = None
    keyless = _keyless(spec)
    if spec.model:
        try:
            upstream = upstreams.resolve(session, spec.provider, spec.base_url, keyless=keyless)
        except upstreams.RelayRefused as exc:
            raise refused(str(exc)) from None
        served = None if keyless else served_by(session, spec, upstream, progress, refused)
    install_dir = _install(session, resolved, progress, refused, kind="capabilities", label="capability")
    return PreparedCapability(entry=entry, resolved=resolved, options=options, install_dir=install_dir, runner=runner, upstream=upstream,
                              proofs=_proofs(session, entry, resolved), served=served)


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
