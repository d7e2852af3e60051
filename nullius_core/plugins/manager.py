"""Finding and loading plugins: entry points of the `nullius` group, with the user's controls.

Controls (read once, when a session starts):

* ``NULLIUS_PLUGINS=a,b``: an allowlist of third-party plugins (entry-point or
  distribution names); the bundled plugins of the ``nullius`` distribution
  load unless blocked.
* ``NULLIUS_DISABLE_PLUGINS=a,b`` and ``-p no:NAME``: a blocklist, bundled
  plugins included.
* ``NULLIUS_DISABLE_PLUGIN_AUTOLOAD=1``: third-party plugins load only when
  named in ``NULLIUS_PLUGINS``.
* ``-p MODULE``: import a module and register it as a plugin (no install needed).

A plugin that fails to import or register is recorded with its distribution
and error; the rest load. ``strict`` makes any failure fatal.
"""

from __future__ import annotations

import difflib
import importlib
import inspect
import os
import traceback
from collections.abc import Iterable, Mapping
from importlib.metadata import EntryPoint, entry_points
from typing import Any, Literal

import attrs
import pluggy

from nullius_core import hookspecs
from nullius_core.markers import ENTRY_POINT_GROUP, PROJECT

BUNDLED_DISTRIBUTION = "nullius-core"
Status = Literal["loaded", "failed", "blocked", "not allowed", "not autoloaded"]


class PluginError(Exception):
    """Plugins failed to load and the session was asked to be strict."""


@attrs.frozen(kw_only=True)
class PluginInfo:
    """One plugin as `nullius plugins` shows it."""

    name: str
    distribution: str | None
    version: str | None
    module: str | None
    bundled: bool
    status: Status
    error: str | None = None
    detail: str | None = None

    def label(self) -> str:
        dist = f"{self.distribution} {self.version}" if self.distribution else "no distribution"
        return f"{self.name!r} ({dist})"


@attrs.frozen(kw_only=True)
class PluginControl:
    allow: frozenset[str] | None = None
    block: frozenset[str] = frozenset()
    autoload: bool = True
    modules: tuple[str, ...] = ()
    strict: bool = False

    @classmethod
    def from_env(
        cls,
        env: Mapping[str, str] | None = None,
        p_options: tuple[str, ...] = (),
        strict: bool = False,
    ) -> PluginControl:
        env = os.environ if env is None else env
        allow = _names(env.get("NULLIUS_PLUGINS"))
        block = set(_names(env.get("NULLIUS_DISABLE_PLUGINS")) or ())
        modules = []
        for option in p_options:
            if option.startswith("no:"):
                block.add(option[3:])
            else:
                modules.append(option)
        autoload = env.get("NULLIUS_DISABLE_PLUGIN_AUTOLOAD", "").strip().lower() not in ("1", "true", "yes", "on")
        return cls(
            allow=frozenset(allow) if allow is not None else None,
            block=frozenset(block),
            autoload=autoload,
            modules=tuple(modules),
            strict=strict,
        )


def _names(value: str | None) -> list[str] | None:
    if value is None:
        return None
    return [n.strip() for n in value.split(",") if n.strip()]


def _normal(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


class NulliusPluginManager(pluggy.PluginManager):
    """pluggy's manager, taking any `nullius_*` function as an implementation.

    Unmarked `nullius_*` functions count, so that a misspelt hook name is
    reported by `unknown_hooks()` instead of being silently ignored.
    """

    def parse_hookimpl_opts(self, plugin: Any, name: str) -> Any:
        opts = super().parse_hookimpl_opts(plugin, name)
        if opts is None and name.startswith("nullius_"):
            method = getattr(plugin, name, None)
            if inspect.isroutine(method):
                return {
                    "wrapper": False,
                    "hookwrapper": False,
                    "optionalhook": False,
                    "tryfirst": False,
                    "trylast": False,
                    "specname": None,
                }
        return opts

    def unknown_hooks(self) -> dict[str, list[str]]:
        """Plugin name -> names of hooks it implements that no specification declares."""
        found: dict[str, list[str]] = {}
        for name in dir(self.hook):
            caller = getattr(self.hook, name)
            if not isinstance(caller, pluggy.HookCaller) or caller.has_spec():
                continue
            for impl in caller.get_hookimpls():
                found.setdefault(impl.plugin_name, []).append(name)
        return found


def new_manager() -> NulliusPluginManager:
    pm = NulliusPluginManager(PROJECT)
    pm.add_hookspecs(hookspecs)
    return pm


def spec_names() -> list[str]:
    return sorted(n for n in dir(hookspecs) if n.startswith("nullius_") and callable(getattr(hookspecs, n)))


def _short(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def load_plugins(
    pm: NulliusPluginManager, control: PluginControl, inline: Iterable[tuple[str, Any]] = ()
) -> list[PluginInfo]:
    """Load every allowed plugin into `pm`; return what happened to each.

    `inline` (name, object) pairs are registered last, as tests do; they are
    checked like any other plugin.
    """
    infos: list[PluginInfo] = []
    seen: dict[str, PluginInfo] = {}
    eps = list(entry_points(group=ENTRY_POINT_GROUP))
    dists = _distributions(eps)  # the entry points hold their distributions, so the ids stay theirs
    for facts, ep in sorted(((dists.get(id(ep.dist), (None, None)), ep) for ep in eps), key=lambda pair: _bundled_first(*pair)):
        info = _load_entry_point(pm, ep, facts, control, seen)
        infos.append(info)
        if info.status == "loaded":
            seen[info.name] = info
    for module in control.modules:
        infos.append(_load_module(pm, module))
    for name, plugin in inline:
        infos.append(_register_inline(pm, name, plugin))
    for plugin_name, hooks in pm.unknown_hooks().items():
        infos = [_unknown_hook_failure(pm, i, hooks) if i.name == plugin_name else i for i in infos]
    return infos


Facts = tuple[str | None, str | None]  # a distribution's name and version


def _bundled_first(facts: Facts, ep: EntryPoint) -> tuple[int, str]:
    return (0 if facts[0] == BUNDLED_DISTRIBUTION else 1, ep.name)


def _distributions(eps: list[EntryPoint]) -> dict[int, Facts]:
    """id(distribution) -> its name and version, each distribution read once, from the head of its METADATA.

    `dist.metadata` parses the whole file with the email package, and was
    asked three times an entry point: a fifth of a command's start over ~30
    plugins. The two fields sit in the first lines; entry points of one
    distribution share its object.
    """
    found: dict[int, Facts] = {}
    for ep in eps:
        if ep.dist is None or id(ep.dist) in found:
            continue
        text = ep.dist.read_text("METADATA") or ep.dist.read_text("PKG-INFO") or ""
        fields: dict[str, str] = {}
        for line in text.splitlines():
            if not line:
                break  # the headers end at the first blank line
            key, _, value = line.partition(":")
            if key in ("Name", "Version"):
                fields.setdefault(key, value.strip())
        found[id(ep.dist)] = (fields.get("Name"), fields.get("Version"))
    return found


def _load_entry_point(
    pm: NulliusPluginManager, ep: EntryPoint, facts: Facts, control: PluginControl, seen: dict[str, PluginInfo]
) -> PluginInfo:
    dist_name, version = facts
    bundled = dist_name == BUNDLED_DISTRIBUTION
    base = dict(name=ep.name, distribution=dist_name, version=version, module=ep.value, bundled=bundled)
    names = {_normal(ep.name), _normal(dist_name or "")}
    if names & {_normal(b) for b in control.block}:
        return PluginInfo(**base, status="blocked", detail="blocked by -p no: or NULLIUS_DISABLE_PLUGINS")
    if not bundled:
        named = control.allow is not None and bool(names & {_normal(a) for a in control.allow})
        if control.allow is not None and not named:
            return PluginInfo(**base, status="not allowed", detail="not in NULLIUS_PLUGINS")
        if not control.autoload and not named:
            return PluginInfo(**base, status="not autoloaded", detail="NULLIUS_DISABLE_PLUGIN_AUTOLOAD is set")
    if ep.name in seen:
        other = seen[ep.name]
        return PluginInfo(
            **base,
            status="failed",
            error=f"the plugin name {ep.name!r} is taken by {other.label()}",
        )
    try:
        plugin = ep.load()
        pm.register(plugin, name=ep.name)
    except Exception as exc:  # noqa: BLE001 - a broken plugin is reported, the rest load
        return PluginInfo(**base, status="failed", error=_short(exc), detail=traceback.format_exc())
    return PluginInfo(**base, status="loaded")


def _load_module(pm: NulliusPluginManager, module: str) -> PluginInfo:
    base = dict(name=module, distribution=None, version=None, module=module, bundled=False)
    try:
        plugin = importlib.import_module(module)
        pm.register(plugin, name=module)
    except Exception as exc:  # noqa: BLE001 - reported like any broken plugin
        return PluginInfo(**base, status="failed", error=_short(exc), detail=traceback.format_exc())
    return PluginInfo(**base, status="loaded", detail="from -p")


def _register_inline(pm: NulliusPluginManager, name: str, plugin: Any) -> PluginInfo:
    base = dict(name=name, distribution=None, version=None, module=None, bundled=False)
    try:
        pm.register(plugin, name=name)
    except Exception as exc:  # noqa: BLE001 - reported like any broken plugin
        return PluginInfo(**base, status="failed", error=_short(exc))
    return PluginInfo(**base, status="loaded", detail="inline")


def _unknown_hook_failure(pm: NulliusPluginManager, info: PluginInfo, hooks: list[str]) -> PluginInfo:
    parts = []
    for hook in hooks:
        close = difflib.get_close_matches(hook, spec_names(), n=1)
        parts.append(f"{hook} (did you mean {close[0]}?)" if close else hook)
    plugin = pm.get_plugin(info.name)
    if plugin is not None:
        pm.unregister(plugin)
    return attrs.evolve(info, status="failed", error="implements unknown hooks: " + ", ".join(parts))
