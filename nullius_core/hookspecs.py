"""Every hook a Nullius plugin may implement.

A plugin is a module (or object) named by an entry point in the ``nullius``
group; its hook implementations are functions named after these specifications
and marked with ``nullius_core.hookimpl`` (a function named ``nullius_*`` is
taken as an implementation even unmarked, so a misspelt name is reported at
start-up rather than silently ignored).

Hooks are called with keyword arguments only, through the typed facade
``nullius_core.plugins.Hooks``. An implementation may accept fewer arguments
than its specification names.

Registrar hooks (``nullius_register_*``) are handed a registry and add typed
things to it. They are called once per session, one plugin at a time, so that
Nullius knows which plugin registered what (``nullius plugins`` shows it) and
can set aside a plugin whose registration raises while the others load.

Observer hooks (``nullius_run_started``, ``nullius_unit_finished``,
``nullius_run_finished``) follow a run, each handed a frozen payload.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nullius_core.markers import hookspec

if TYPE_CHECKING:
    from nullius_core.contracts.events import RunFinished, RunStarted, UnitFinished
    from nullius_core.plugins.registries import (
        AgentProtocolRegistry,
        BackendRegistry,
        CatalogueRegistry,
        CommandRegistry,
        ModelApiRegistry,
        PortRegistry,
        ProviderRegistry,
        RunnerRegistry,
    )

# --- Registrars ----------------------------------------------------------------


@hookspec
def nullius_register_ports(registry: PortRegistry) -> None:
    """Register ports and their conformance kits.

    Called once per session, the first time anything needs to know the ports
    (fit, check, list, conform). Not firstresult: every plugin is called.

    A port is a named, versioned contract (``agent.workspace/v1``). Its kit,
    when it has one, is a ``standard.json`` with a ``kit`` block declaring the
    kit's ``kit_version``, its ``basic`` checks and its ``skills``.

    :param registry: call ``registry.add(Port(...))``, or
        ``registry.add_kit(folder, contract=...)`` to register a port from its
        kit folder. Registering a port name twice is a conflict naming both
        plugins.

    .. versionadded:: 0.1
    """


@hookspec
def nullius_register_catalogue(registry: CatalogueRegistry) -> None:
    """Register catalogue folders: benchmark, agent and capability definitions.

    Called once per session, when the catalogue is first read. Not
    firstresult: every plugin is called.

    A plugin ships its definitions as package data: a root folder holding
    ``benchmarks/<key>/``, ``agents/<key>/`` and ``capabilities/<key>/``
    (older ``features/<key>/`` too), or single entry folders. The user
    catalogue overlays these entries by whole folder; two plugins providing
    the same key are a conflict naming both distributions.

    :param registry: call ``registry.add_root(path)`` for a folder of entries
        or ``registry.add_entry(kind, folder)`` for one entry, where ``kind``
        is ``"benchmark"``, ``"agent"`` or ``"capability"``.

    .. versionadded:: 0.1
    """


@hookspec
def nullius_register_backends(registry: BackendRegistry) -> None:
    """Register backends: where a unit's agent or capability runs (``local``, ``docker``).

    Called once per session, before a run picks its ``--backend``. Not
    firstresult: every plugin is called. Registering a name twice is a
    conflict naming both plugins.

    :param registry: call ``registry.add(BackendSpec(name=..., summary=...,
        factory=...))``; ``factory`` is called only when a run uses the
        backend, so a plugin can check its own needs (a docker daemon) then.

    .. versionadded:: 0.1
    """


@hookspec
def nullius_register_model_apis(registry: ModelApiRegistry) -> None:
    """Register model-API adapters for the relay (OpenAI Chat Completions, Responses, Anthropic Messages).

    Called once per session, when a relay is built. Not firstresult: every
    plugin is called. An adapter names the API, the request paths it serves
    under a unit's route and how the relay reads usage and facts from its
    replies.

    :param registry: call ``registry.add(ModelApiSpec(name=..., paths=...,
        factory=...))``.

    .. versionadded:: 0.1
    """


@hookspec
def nullius_register_providers(registry: ProviderRegistry) -> None:
    """Register model providers the relay may forward to (``openai``, ``anthropic``, ``openrouter``).

    Called once per session, when a run or ``nullius relay serve`` resolves
    ``--provider``. Not firstresult: every plugin is called.

    :param registry: call ``registry.add(ProviderSpec(name=..., apis=...,
        key_env=..., base_url=...))``. The key is read from ``key_env`` in the
        environment, then the user settings; it never leaves the relay.

    .. versionadded:: 0.1
    """


@hookspec
def nullius_register_runners(registry: RunnerRegistry) -> None:
    """Register driver and capability runners: how Nullius talks to a benchmark's driver or a capability.

    Called once per session, when a run starts a driver or a capability. Not
    firstresult: every plugin is called. The standard's runner speaks JSON
    lines over stdio; a plugin may add others (a driver in a service, say).

    :param registry: call ``registry.add(RunnerSpec(name=..., kind="driver"
        or "capability", factory=...))``.

    .. versionadded:: 0.1
    """


@hookspec
def nullius_register_agent_protocols(registry: AgentProtocolRegistry) -> None:
    """Register agent protocols: how Nullius talks to an agent (ACP, the Agent Client Protocol).

    Called once per session, when a run or a conformance check starts its
    first agent. Not firstresult: every plugin is called. Runs use ``"acp"``
    today; a registered protocol is listed by ``nullius plugins``.

    :param registry: call ``registry.add(AgentProtocolSpec(name=..., summary=...,
        factory=...))``; ``factory()`` gives an object with
        ``async converse(process, conversation, records) -> AgentOutcome``
        (``nullius_core.contracts.agent``): it holds the whole conversation with a
        started agent process and records its raw transcript in ``records``.

    .. versionadded:: 0.1
    """


@hookspec
def nullius_register_commands(registry: CommandRegistry) -> None:
    """Register CLI subcommands: a plugin may add a click command or group to ``nullius``.

    Called once, when the ``nullius`` command line is built, before its
    arguments are dispatched. Not firstresult: every plugin is called. A name
    already taken by Nullius or another plugin is a conflict naming both.

    :param registry: call ``registry.add(command)`` with a ``click.Command``
        or ``click.Group``; it appears as ``nullius <name>`` and under
        ``nullius standard <name>``.

    .. versionadded:: 0.1
    """


# --- Observers of a run ----------------------------------------------------------
# Called in the run's event loop, in load order; an observer that raises is
# logged and the run goes on. Payloads are frozen: read them, never change them.


@hookspec
def nullius_run_started(event: RunStarted) -> None:
    """A run has planned its units and is about to start them.

    Called once per run (a resumed run included), after the job's config.json
    is written and ``stage=units`` is said, before the first unit starts. Not
    firstresult: every plugin is called.

    :param event: ``nullius_core.contracts.events.RunStarted``: the job's name and
        folder, the benchmark, dataset, participant (an agent, a capability,
        ``nop`` or ``oracle``), model, backend, the planned units and the
        job's config.

    .. versionadded:: 0.1
    """


@hookspec
def nullius_unit_finished(event: UnitFinished) -> None:
    """A trial (one attempt of one unit) has ended and its records are on disk.

    Called once per trial, errored and cancelled ones included, in the order
    they end. Not firstresult: every plugin is called.

    :param event: ``nullius_core.contracts.events.UnitFinished``: the trial's name
        and folder, its unit and attempt, its outcome (``passed``,
        ``failed``, ``scored``, ``error``, ``rate_limited``, ``cancelled``, ``held``), reward, the
        exception type when it errored, and how long it took.

    .. versionadded:: 0.1
    """


@hookspec
def nullius_run_finished(event: RunFinished) -> None:
    """A run has ended and its result.json is written.

    Called once per run, also after Ctrl-C (with ``state="cancelled"``). Its
    state is ``finished``, ``cancelled``, ``stopped`` (its provider failed
    three units in a row, or ``--max-cost`` tripped) or ``failed`` (every
    trial errored, unscored, for a reason not the agent's). Not firstresult:
    every plugin is called.

    :param event: ``nullius_core.contracts.events.RunFinished``: the job's name and
        folder, its state, Nullius's summary (outcomes, mean) and the job's
        result as written.

    .. versionadded:: 0.1
    """
