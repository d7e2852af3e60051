"""Choosing the provider a relay forwards to, its base URL and its key.

The provider comes from `--provider`, else the user settings; its base URL
from `--base-url`, else the provider's usual variable, else its default; its
key from the environment, then the user settings. A missing key is refused
before anything starts, naming the variable.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

from nullius_core.contracts.model_api import ModelApi
from nullius_core.relay import pins
from nullius_core.relay.upstream import Upstream
from nullius_core.session import Session

class RelayRefused(Exception):
    pass


def settings(session: Session) -> dict[str, Any]:
    try:
        data = json.loads(session.paths.settings.read_text())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise RelayRefused(f"{session.paths.settings}: not readable JSON ({exc})") from None
    return data if isinstance(data, dict) else {}


def resolve(session: Session, provider: str | None, base_url: str | None, env: Mapping[str, str] | None = None,
            keyless: bool = False) -> Upstream:
    """`keyless`: a replay whose calls no provider answers (relay/replay.py) reads no key, and needs none."""
    env = os.environ if env is None else env
    user = settings(session)
    name = provider or user.get("provider")
    if not name:
        raise RelayRefused("no provider: give --provider (" + ", ".join(session.providers.names()) + ") or set \"provider\" in " + str(session.paths.settings))
    spec = session.providers.get(name)
    if spec is None:
        raise RelayRefused(f"no provider named {name!r} (providers: {', '.join(session.providers.names())})")
    if spec.serve is not None:  # it serves its own model: the base URL is known once the run starts it
        if base_url:
            raise RelayRefused(f"provider {name!r} serves its own model on this machine: it takes no --base-url")
        return Upstream(provider=spec, base_url="", key=None)
    base = base_url or (env.get(spec.base_url_env) if spec.base_url_env else None) or spec.base_url
    if not base:
        raise RelayRefused(f"provider {name!r} has no base URL of its own: give --base-url")
    if keyless:
        return Upstream(provider=spec, base_url=base.rstrip("/"), key=None)
    keys = user.get("keys") if isinstance(user.get("keys"), dict) else {}
    key = None
    if spec.key_env:
        key = env.get(spec.key_env) or keys.get(spec.key_env)
    if not key and not spec.key_optional:
        if not spec.key_env:
            raise RelayRefused(f"provider {name!r} needs a key but names no variable to read it from (a plugin's mistake)")
        raise RelayRefused(f"provider {name!r} needs its key: set {spec.key_env} (in the environment or under \"keys\" in {session.paths.settings})")
    return Upstream(provider=spec, base_url=base.rstrip("/"), key=key or None)


def model_for(session: Session, provider: str | None, model: str | None) -> str | None:
    """`--model`, else the provider's own model (a provider that serves one), else None."""
    if model:
        return model
    try:
        name = provider or settings(session).get("provider")
    except RelayRefused:
        return None  # said when the run resolves its provider
    spec = session.providers.get(name) if isinstance(name, str) else None
    return spec.default_model if spec is not None else None


def apis(session: Session, upstream: Upstream) -> list[tuple[tuple[str, ...], ModelApi]]:
    """The model APIs this provider speaks, each with the paths it serves."""
    out = []
    for spec in session.model_apis:
        api = spec.factory()
        if api.provider_api in upstream.provider.apis:
            out.append((spec.paths, api))
    return out


def parse_served_by(values: tuple[str, ...], model: str | None, upstream: Upstream, side_models: frozenset[str] = frozenset()) -> dict[str, list[str]]:
    """`relay serve --served-by [MODEL=]SLUG[,SLUG...]`, checked as a run's are (pins.py): by model sent, its slugs in order."""
    try:
        if values:
            pins.check_provider(upstream.provider.name, upstream.provider.routes_to_several)
        given = pins.parse(values, model)
        called = ({model} | side_models) if model is not None else set(given)  # without --model, every model goes as asked
        pins.check(given, upstream.provider.name, upstream.provider.routes_to_several, called)
    except pins.PinProblem as exc:
        raise RelayRefused(str(exc)) from None
    return {name: list(pin.order) for name, pin in given.items()}
