"""A session: the plugins loaded for one command, and what they registered.

Built explicitly (never as an import side effect): the CLI makes one per
invocation, tests make isolated ones. Registrar hooks are called lazily, the
first time their registry is asked for, so `nullius plugins` or `nullius
paths` never read a catalogue.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from nullius_core.catalogue.catalogue import Catalogue
from nullius_core.logs import get_logger, settle
from nullius_core.paths import Paths
from nullius_core.plugins.hooks import Hooks, RegistrationFailure
from nullius_core.plugins.manager import (
    PluginControl,
    PluginError,
    PluginInfo,
    load_plugins,
    new_manager,
)
from nullius_core.plugins.registries import (
    AgentProtocolRegistry,
    BackendRegistry,
    CatalogueRegistry,
    CommandRegistry,
    ModelApiRegistry,
    PortRegistry,
    ProviderRegistry,
    Registries,
    Registry,
    RunnerRegistry,
)

log = get_logger("nullius.plugins")

_REGISTRARS = {
    "ports": "register_ports",
    "catalogue": "register_catalogue",
    "backends": "register_backends",
    "model_apis": "register_model_apis",
    "providers": "register_providers",
    "runners": "register_runners",
    "agent_protocols": "register_agent_protocols",
    "commands": "register_commands",
}


class Session:
    def __init__(
        self,
        control: PluginControl | None = None,
        env: Mapping[str, str] | None = None,
        paths: Paths | None = None,
        plugins: Iterable[tuple[str, Any]] = (),
    ):
        """Load plugins as `control` says; `plugins` adds (name, object) pairs inline (tests)."""
        self.paths = paths or Paths.from_env(env)
        self.control = control or PluginControl.from_env(env)
        self.pm = new_manager()
        self.infos: list[PluginInfo] = load_plugins(self.pm, self.control, inline=plugins)
        settle()  # a plugin that imported structlog itself logs in the command's format
        self.hooks = Hooks(self.pm, self._registration_failed)
        self._registries = Registries()
        self._called: set[str] = set()
        self._catalogue: Catalogue | None = None
        for info in self.infos:
            if info.status == "failed":
                self._report(info)

    # --- plugins ---------------------------------------------------------

    def _report(self, info: PluginInfo) -> None:
        if self.control.strict:
            raise PluginError(f"plugin {info.label()} failed: {info.error}")
        log.warning(
            "plugin failed; the others are loaded",
            plugin=info.name,
            distribution=info.distribution,
            version=info.version,
            error=info.error,
        )

    def _registration_failed(self, failure: RegistrationFailure) -> None:
        self.set_aside(failure.plugin, f"{failure.hook}: {failure.error}")

    def set_aside(self, plugin: str, why: str) -> bool:
        """Mark a loaded plugin failed for `why` (once); True when it was newly marked."""
        for i, info in enumerate(self.infos):
            if info.name == plugin and info.status != "failed":
                self.infos[i] = attrs.evolve(info, status="failed", error=why)
                self._report(self.infos[i])
                return True
        return False

    def info(self, name: str) -> PluginInfo | None:
        return next((i for i in self.infos if i.name == name), None)

    def loaded(self) -> list[PluginInfo]:
        return [i for i in self.infos if i.status == "loaded"]

    def versions(self) -> dict[str, str | None]:
        """Every loaded plugin's distribution and version, for a job's record."""
        out: dict[str, str | None] = {}
        for info in self.loaded():
            out[info.distribution or info.name] = info.version
        return out

    # --- registries ------------------------------------------------------

    def registry(self, name: str) -> Registry[Any]:
        if name not in self._called:
            self._called.add(name)
            getattr(self.hooks, _REGISTRARS[name])(registry=getattr(self._registries, name))
        return getattr(self._registries, name)

    @property
    def ports(self) -> PortRegistry:
        return self.registry("ports")  # type: ignore[return-value]

    @property
    def catalogue_sources(self) -> CatalogueRegistry:
        return self.registry("catalogue")  # type: ignore[return-value]

    @property
    def backends(self) -> BackendRegistry:
        return self.registry("backends")  # type: ignore[return-value]

    @property
    def model_apis(self) -> ModelApiRegistry:
        return self.registry("model_apis")  # type: ignore[return-value]

    @property
    def providers(self) -> ProviderRegistry:
        return self.registry("providers")  # type: ignore[return-value]

    @property
    def runners(self) -> RunnerRegistry:
        return self.registry("runners")  # type: ignore[return-value]

    @property
    def agent_protocols(self) -> AgentProtocolRegistry:
        return self.registry("agent_protocols")  # type: ignore[return-value]

    @property
    def commands(self) -> CommandRegistry:
        return self.registry("commands")  # type: ignore[return-value]

    def all_registries(self) -> dict[str, Registry[Any]]:
        return {name: self.registry(name) for name in _REGISTRARS}

    @property
    def catalogue(self) -> Catalogue:
        if self._catalogue is None:
            plugins = {i.name: i for i in self.infos}
            self._catalogue = Catalogue(self.catalogue_sources.entries(), plugins, self.paths.catalogue)
        return self._catalogue

    def forget_catalogue(self) -> None:
        """Read the catalogue again next time (after a command wrote into it)."""
        self._catalogue = None
