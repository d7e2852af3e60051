"""The registries handed to registrar hooks, and the typed things they hold.

Each registry remembers which plugin added each item (the session calls one
plugin at a time and sets `owner`), so a conflict names both plugins and
`nullius plugins` shows what each registered.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Generic, Literal, Protocol, TypeVar, runtime_checkable

import attrs
import click

from nullius_core.ports.model import Port

T = TypeVar("T")

KINDS = ("benchmark", "agent", "capability")


class RegistrationConflict(Exception):
    """Two plugins registered the same name."""


@attrs.frozen
class Registered(Generic[T]):
    name: str
    item: T
    plugin: str


class Registry(Generic[T]):
    """Named things, each with the plugin that registered it."""

    what = "item"

    def __init__(self) -> None:
        self._items: dict[str, Registered[T]] = {}
        self.owner = "<unknown>"

    def _add(self, name: str, item: T) -> None:
        if name in self._items:
            first = self._items[name].plugin
            raise RegistrationConflict(
                f"{self.what} {name!r} is registered by plugin {first!r} and by plugin {self.owner!r}"
            )
        self._items[name] = Registered(name, item, self.owner)

    def get(self, name: str) -> T | None:
        found = self._items.get(name)
        return found.item if found else None

    def __contains__(self, name: object) -> bool:
        return name in self._items

    def __iter__(self) -> Iterator[T]:
        return (r.item for r in self._items.values())

    def __len__(self) -> int:
        return len(self._items)

    def names(self) -> list[str]:
        return list(self._items)

    def entries(self) -> list[Registered[T]]:
        return list(self._items.values())

    def by_plugin(self, plugin: str) -> list[str]:
        return [r.name for r in self._items.values() if r.plugin == plugin]

    def drop_plugin(self, plugin: str) -> None:
        """Forget what `plugin` registered (its registration failed part-way)."""
        self._items = {k: r for k, r in self._items.items() if r.plugin != plugin}


class PortRegistry(Registry[Port]):
    what = "port"

    def add(self, port: Port) -> None:
        self._add(port.name, port)

    def add_kit(self, folder: Path | str, contract: str) -> Port:
        port = Port.from_kit(Path(folder), contract)
        self.add(port)
        return port


@attrs.frozen
class CatalogueSource:
    """A folder a plugin ships: a root of entries, or one entry of `kind`."""

    path: Path
    kind: str | None = None


class CatalogueRegistry(Registry[CatalogueSource]):
    what = "catalogue folder"

    def add_root(self, path: Path | str) -> None:
        path = Path(path)
        self._add(str(path), CatalogueSource(path))

    def add_entry(self, kind: str, folder: Path | str) -> None:
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {', '.join(KINDS)}, not {kind!r}")
        folder = Path(folder)
        self._add(str(folder), CatalogueSource(folder, kind))


@attrs.frozen(kw_only=True)
class BackendSpec:
    """Where units run. `factory()` builds the backend when a run uses it."""

    name: str
    summary: str
    factory: Callable[..., Any]
    isolates: bool = False
    boxes: bool = False  # runs a task's own image (its backend has open_box): a control's unit may borrow it
    # Asked before anything is installed, cloned or downloaded: why the backend cannot run here (its daemon does not answer,
    # the kernel refuses its namespaces), or None. It may raise instead. It must be cheap: it builds nothing.
    check: Callable[[], str | None] | None = None


class BackendRegistry(Registry[BackendSpec]):
    what = "backend"

    def add(self, spec: BackendSpec) -> None:
        self._add(spec.name, spec)


@attrs.frozen(kw_only=True)
class ModelApiSpec:
    """A model API the relay passes through: its request paths and its reader.

    A path may name the model as `{model}` (one segment, no `/` or `:`), as
    Gemini's `/v1beta/models/{model}:generateContent` does: the relay reads
    the model asked from it and sends the run's model in its place.
    """

    name: str
    summary: str
    paths: tuple[str, ...]
    factory: Callable[..., Any]


class ModelApiRegistry(Registry[ModelApiSpec]):
    what = "model API"

    def add(self, spec: ModelApiSpec) -> None:
        self._add(spec.name, spec)


@attrs.frozen(kw_only=True)
class ProviderSpec:
    """A model provider: the APIs it speaks, where its key and base URL come from.

    `base_url` ends at the API's version (`https://api.openai.com/v1`): the
    relay appends the caller's path after its unit's `/v1` (`/chat/completions`,
    `/responses`, `/messages`).
    """

    name: str
    summary: str
    apis: tuple[Literal["openai", "anthropic", "gemini"], ...]
    key_env: str | None
    base_url: str | None
    base_url_env: str | None = None
    key_header: Literal["authorization", "x-api-key", "x-goog-api-key"] = "authorization"  # authorization: as a Bearer token
    key_optional: bool = False
    routes_to_several: bool = False
    # headers that ask for the routing facts of a pinned call (who served it), where the provider has them
    routing_facts: tuple[tuple[str, str], ...] = ()
    # A provider that serves its model itself (a model on this machine): the run's model when
    # --model is not given, and `serve(ServeContext)`, which gives the ProviderServer a run starts.
    default_model: str | None = None
    serve: Callable[[ServeContext], ProviderServer] | None = None


class ProviderRefused(Exception):
    """A served provider that cannot serve here: one line naming what is missing and the fix."""


@attrs.frozen(kw_only=True)
class ServeContext:
    """What a served provider's `serve` is told: where Nullius keeps things, the run's model and its -j."""

    paths: Any  # nullius_core.paths.Paths: STANDARD_DIR and the rest, for a cache of the provider's own
    model: str | None
    concurrency: int
    progress: Any  # has .stage(name, **fields): say a long install as stage=install


@runtime_checkable
class ProviderServer(Protocol):
    """A provider's model server for one run (or one `relay serve`): nothing of it outlives the run."""

    def prepare(self) -> None:
        """Before the run starts (synchronous): install what is missing, check; raise ProviderRefused."""

    async def start(self) -> str:
        """Start serving, in the run's event loop; the base URL, ending at /v1, that the relay forwards to."""

    async def stop(self) -> None:
        """End everything `start` started (awaited once, however the run ended)."""


class ProviderRegistry(Registry[ProviderSpec]):
    what = "provider"

    def add(self, spec: ProviderSpec) -> None:
        self._add(spec.name, spec)


@attrs.frozen(kw_only=True)
class RunnerSpec:
    """How Nullius talks to a driver or a capability process."""

    name: str
    summary: str
    kind: Literal["driver", "capability"]
    factory: Callable[..., Any]


class RunnerRegistry(Registry[RunnerSpec]):
    what = "runner"

    def add(self, spec: RunnerSpec) -> None:
        self._add(f"{spec.kind}:{spec.name}", spec)


@attrs.frozen(kw_only=True)
class AgentProtocolSpec:
    """How Nullius talks to an agent (ACP). `factory()` gives an `AgentProtocol`."""

    name: str
    summary: str
    factory: Callable[..., Any]


class AgentProtocolRegistry(Registry[AgentProtocolSpec]):
    what = "agent protocol"

    def add(self, spec: AgentProtocolSpec) -> None:
        self._add(spec.name, spec)


class CommandRegistry(Registry[click.Command]):
    what = "command"

    def add(self, command: click.Command) -> None:
        if not command.name:
            raise ValueError("a command needs a name")
        self._add(command.name, command)


@attrs.define
class Registries:
    """Every registry of a session."""

    ports: PortRegistry = attrs.field(factory=PortRegistry)
    catalogue: CatalogueRegistry = attrs.field(factory=CatalogueRegistry)
    backends: BackendRegistry = attrs.field(factory=BackendRegistry)
    model_apis: ModelApiRegistry = attrs.field(factory=ModelApiRegistry)
    providers: ProviderRegistry = attrs.field(factory=ProviderRegistry)
    runners: RunnerRegistry = attrs.field(factory=RunnerRegistry)
    agent_protocols: AgentProtocolRegistry = attrs.field(factory=AgentProtocolRegistry)
    commands: CommandRegistry = attrs.field(factory=CommandRegistry)

    def named(self) -> dict[str, Registry[Any]]:
        return {a.name: getattr(self, a.name) for a in attrs.fields(type(self))}
