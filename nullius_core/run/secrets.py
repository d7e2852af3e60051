"""Which variables look like secrets: never handed to installers, drivers or agents unasked."""

from __future__ import annotations

import re
from collections.abc import Mapping

_SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH|COOKIE|SESSION)", re.IGNORECASE)


def looks_secret(name: str) -> bool:
    return bool(_SECRET_NAME.search(name))


def without_secrets(env: Mapping[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if not looks_secret(k)}
