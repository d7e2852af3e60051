"""What a run on a host is handed over the launcher's stdin, in memory: the benchmark's licences set here, and the provider's key.

Nothing of it is on a command line, in a file at rest or in the snapshot:
the host's launcher reads it from its stdin and gives it on, in memory, to
`nullius run --licences-stdin` (the licences, on that process's stdin) and
to that process's environment (the provider's key, by the variable its
provider reads). The host's own settings and secrets store are not read.

Also what the host cannot take from this machine's settings (which stay
here): the provider the recipe names, else the settings' one, and its base
URL from its variable, written into the host's copy of the recipe.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from typing import Any

import attrs

from nullius_core.licences import SecretStore
from nullius_core.paths import Paths
from nullius_core.plugins import Hooks, PluginControl, ProviderRegistry, load_plugins, new_manager
from nullius_core.recipes import RunRecipe

from nullius_app.host.ssh import HostRefused


@attrs.frozen
class Loaded:
    """The plugins this machine runs: their distributions, and the providers they register."""

    distributions: tuple[str, ...]
    providers: ProviderRegistry


def loaded(plugin_options: tuple[str, ...]) -> Loaded:
    """Every plugin as `nullius` loads it here (NULLIUS_PLUGINS, -p no:NAME honoured); one loaded from a module path is refused."""
    manager = new_manager()
    infos = load_plugins(manager, PluginControl.from_env(os.environ, p_options=plugin_options))
    loose = [i.module for i in infos if i.status == "loaded" and not i.distribution]
    if loose:
        raise HostRefused(f"plugin {', '.join(str(m) for m in loose)} is loaded from a module path (-p), not a distribution: "
                          "a snapshot takes distributions; install it as one to send it to a host")
    providers = ProviderRegistry()
    Hooks(manager, lambda failure: None).register_providers(registry=providers)
    return Loaded(distributions=tuple(sorted({i.distribution for i in infos if i.status == "loaded" and i.distribution})),
                  providers=providers)


def _settings(paths: Paths) -> dict[str, Any]:
    try:
        data = json.loads(paths.settings.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def benchmark_key(recipe: RunRecipe) -> str:
    return recipe.benchmark.split("@", 1)[0]


def licences(recipe: RunRecipe, paths: Paths) -> dict[str, bytes]:
    """The benchmark's declared licences that are set here (`nullius secrets list`), by name."""
    listed = subprocess.run([sys.executable, "-m", "nullius_core", "secrets", "list", recipe.benchmark, "--json"],
                            capture_output=True, text=True, timeout=300)
    if listed.returncode != 0:
        said = (listed.stderr.strip().splitlines() or ["no answer"])[-1]
        raise HostRefused(f"the licences of {recipe.benchmark} could not be listed: {said}")
    store = SecretStore(paths.secrets_dir, benchmark_key(recipe))
    out = {}
    for row in json.loads(listed.stdout):
        value = store.get(row["name"]) if row.get("set") else None
        if value is not None:
            out[row["name"]] = value
    return out


@attrs.frozen
class Handover:
    recipe: dict[str, Any]  # the host's copy: no `host`, the provider and base URL this machine would use
    licences: dict[str, bytes]
    env: dict[str, str]  # the provider's key, by its variable

    def message(self, job: str) -> bytes:
        """The launcher's stdin, one JSON document (values base64): read there whole, kept in memory."""
        return json.dumps({"recipe": self.recipe, "job": job,
                           "licences": {k: base64.b64encode(v).decode() for k, v in self.licences.items()},
                           "env": self.env}).encode()

    def values(self) -> dict[str, bytes]:
        """Every value handed over, by name: none may be in the snapshot."""
        return {**self.licences, **{k: v.encode() for k, v in self.env.items()}}

    @property
    def names(self) -> list[str]:
        return sorted(self.licences) + sorted(self.env)


def prepare(recipe: RunRecipe, raw: dict[str, Any], paths: Paths, providers: ProviderRegistry) -> Handover:
    """The host's copy of the recipe and what goes with it: the licences set here, the provider's key."""
    copy = {k: v for k, v in raw.items() if k not in ("host", "ssh")}  # there, the run is here: no host, no key file of this machine
    settings = _settings(paths)
    provider = recipe.provider or settings.get("provider")
    env: dict[str, str] = {}
    if isinstance(provider, str) and provider:
        copy["provider"] = provider
        spec = providers.get(provider)
        if spec is not None:
            keys = settings.get("keys") if isinstance(settings.get("keys"), dict) else {}
            if spec.key_env and (os.environ.get(spec.key_env) or keys.get(spec.key_env)):
                env[spec.key_env] = os.environ.get(spec.key_env) or keys[spec.key_env]
            if not recipe.base_url and spec.base_url_env and os.environ.get(spec.base_url_env):
                copy["base_url"] = os.environ[spec.base_url_env]
    for i, dataset in enumerate(recipe.datasets):
        if "/" in dataset or os.sep in dataset:
            raise HostRefused(f"the recipe's datasets[{i}] is a folder of this machine ({dataset}): a run on a host takes named datasets")
    return Handover(recipe=copy, licences=licences(recipe, paths), env=env)
