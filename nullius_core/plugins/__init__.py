"""Plugins: the manager over entry points, the typed hook facade, the registries."""

from nullius_core.plugins.hooks import Hooks, RegistrationFailure
from nullius_core.plugins.manager import (
    PluginControl,
    PluginError,
    PluginInfo,
    load_plugins,
    new_manager,
    spec_names,
)
from nullius_core.plugins.registries import (
    AgentProtocolRegistry,
    AgentProtocolSpec,
    BackendRegistry,
    BackendSpec,
    CatalogueRegistry,
    CommandRegistry,
    ModelApiRegistry,
    ModelApiSpec,
    PortRegistry,
    ProviderRegistry,
    ProviderSpec,
    Registries,
    RegistrationConflict,
    RunnerRegistry,
    RunnerSpec,
)

__all__ = [
    "AgentProtocolRegistry",
    "AgentProtocolSpec",
    "BackendRegistry",
    "BackendSpec",
    "CatalogueRegistry",
    "CommandRegistry",
    "Hooks",
    "ModelApiRegistry",
    "ModelApiSpec",
    "PluginControl",
    "PluginError",
    "PluginInfo",
    "PortRegistry",
    "ProviderRegistry",
    "ProviderSpec",
    "Registries",
    "RegistrationConflict",
    "RegistrationFailure",
    "RunnerRegistry",
    "RunnerSpec",
    "load_plugins",
    "new_manager",
    "spec_names",
]
