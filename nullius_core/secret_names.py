"""Which variables look like secrets: never handed to installers, drivers or agents unasked."""

from __future__ import annotations

import re
from collections.abc import Mapping

_SECRET_PARTS = frozenset(
    {"KEY", "APIKEY", "TOKEN", "SECRET", "SECRETS", "PASSWORD", "PASSWD", "PASS", "CREDENTIAL", "CREDENTIALS", "COOKIE", "PAT"}
)


def looks_secret(name: str) -> bool:
    """OPENAI_API_KEY, GH_TOKEN, DB_PASSWORD: a part of the name says secret. SSH_AUTH_SOCK does not."""
    return any(part in _SECRET_PARTS for part in re.split(r"[_\-.]+", name.upper()))


def without_secrets(env: Mapping[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if not looks_secret(k)}
