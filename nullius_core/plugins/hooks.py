"""The typed facade over `pm.hook`: one method per hook, keyword arguments only.

Registrar hooks are called one plugin at a time so that each registration is
attributed to its plugin, and a plugin whose registrar raises is set aside
(its partial registrations dropped) while the others go on.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs
import pluggy

from nullius_core.contracts.events import RunFinished, RunStarted, UnitFinished
from nullius_core.logs import get_logger
from nullius_core.plugins.registries import (
    AgentProtocolRegistry,
    BackendRegistry,
    CatalogueRegistry,
    CommandRegistry,
    ModelApiRegistry,
    PortRegistry,
    ProviderRegistry,
    Registry,
    RunnerRegistry,
)

log = get_logger("nullius.plugins")


@attrs.frozen
class RegistrationFailure:
    plugin: str
    hook: str
    error: str


class Hooks:
    """Call hooks by name with typed keyword arguments."""

    def __init__(self, pm: pluggy.PluginManager, on_failure: Callable[[RegistrationFailure], None]):
        self._pm = pm
        self._on_failure = on_failure

    def _register_each(self, hook: str, registry: Registry[Any]) -> None:
        caller = getattr(self._pm.hook, hook)
        # In load order (pluggy's own call would go last-registered first), so
        # that the first plugin to claim a name keeps it.
        for impl in caller.get_hookimpls():
            registry.owner = impl.plugin_name
            kwargs = {"registry": registry}
            try:
                impl.function(*[kwargs[name] for name in impl.argnames])
            except Exception as exc:  # noqa: BLE001 - the plugin is set aside, the rest go on
                registry.drop_plugin(impl.plugin_name)
                self._on_failure(RegistrationFailure(impl.plugin_name, hook, f"{type(exc).__name__}: {exc}"))
        registry.owner = "<unknown>"

    def register_ports(self, *, registry: PortRegistry) -> None:
        self._register_each("nullius_register_ports", registry)

    def register_catalogue(self, *, registry: CatalogueRegistry) -> None:
        self._register_each("nullius_register_catalogue", registry)

    def register_backends(self, *, registry: BackendRegistry) -> None:
        self._register_each("nullius_register_backends", registry)

    def register_model_apis(self, *, registry: ModelApiRegistry) -> None:
        self._register_each("nullius_register_model_apis", registry)

    def register_providers(self, *, registry: ProviderRegistry) -> None:
        self._register_each("nullius_register_providers", registry)

    def register_runners(self, *, registry: RunnerRegistry) -> None:
        self._register_each("nullius_register_runners", registry)

    def register_agent_protocols(self, *, registry: AgentProtocolRegistry) -> None:
        self._register_each("nullius_register_agent_protocols", registry)

    def register_commands(self, *, registry: CommandRegistry) -> None:
        self._register_each("nullius_register_commands", registry)

    def _observe(self, hook: str, event: Any) -> None:
        caller = getattr(self._pm.hook, hook)
        for impl in caller.get_hookimpls():
            try:
                impl.function(*[{"event": event}[name] for name in impl.argnames])
            except Exception as exc:  # noqa: BLE001 - an observer never stops a run
                log.warning("observer failed; the run goes on", plugin=impl.plugin_name, hook=hook, error=f"{type(exc).__name__}: {exc}")

    def run_started(self, *, event: RunStarted) -> None:
        self._observe("nullius_run_started", event)

    def unit_finished(self, *, event: UnitFinished) -> None:
        self._observe("nullius_unit_finished", event)

    def run_finished(self, *, event: RunFinished) -> None:
        self._observe("nullius_run_finished", event)

    def implemented_by(self, plugin: object) -> list[str]:
        callers = self._pm.get_hookcallers(plugin) or []
        return sorted(c.name for c in callers)
