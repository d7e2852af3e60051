"""Choosing the provider a relay forwards to, its base URL and its key.

The provider comes from `--provider`, else the user settings; its base URL
from `--base-url`, else the provider's usual variable, else its default; its
key from the environment, then the user settings. A missing key is refused
before anything starts, naming the variable.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from typing import Any

from nullius_core.contracts.model_api import ModelApi
from nullius_core.relay.server import Upstream
from nullius_core.session import Session

SLUG = re.compile(r"^[a-z0-9][a-z0-9._-]*(/[a-z0-9][a-z0-9._-]*)?$")


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


def resolve(session: Session, provider: str | None, base_url: str | None, env: Mapping[str, str] | None = None) -> Upstream:
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
    """`--served-by [MODEL=]SLUG[,SLUG...]`, checked: refused where no provider routes a model to several."""
    pins: dict[str, list[str]] = {}
    if values and not upstream.provider.routes_to_several:
        raise RelayRefused(f"--served-by: provider {upstream.provider.name!r} routes no model to several providers")
    for value in values:
        target, sep, slugs = value.rpartition("=")
        target = target if sep else model
        if not target:
            raise RelayRefused(f"--served-by {value!r}: name the model (MODEL=SLUG) or give --model")
        order = [s.strip() for s in slugs.split(",")]
        bad = [s for s in order if not SLUG.match(s)]
        if bad or not order:
            raise RelayRefused(f"--served-by {value!r}: {bad[0] if bad else 'nothing'} is not a provider slug (lowercase, such as anthropic or deepinfra/fp8)")
        if len(set(order)) != len(order):
            raise RelayRefused(f"--served-by {value!r}: a slug is given twice")
        if target in pins:
            raise RelayRefused(f"--served-by: model {target!r} is pinned twice")
        if model is not None and target != model and target not in side_models:
            raise RelayRefused(f"--served-by: the relay never sends {target!r} (it sends {model!r} and the side models)")
        pins[target] = order
    return pins
