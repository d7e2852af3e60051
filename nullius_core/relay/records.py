"""The relay's record of a unit: `calls.jsonl`, `bodies.jsonl`, `gateway.log`, and the `stop` file.

A record line is written whole with one call, or not at all: a relay killed
mid-run leaves files every line of which parses. What is recorded is cleaned
first: a value under a credential's name, the relay's own keys and tokens,
and any string shaped like a key are removed. Header names of credentials
are kept, never their values.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

REMOVED = "[removed]"

# A name is a credential's by its last part: `OPENAI_API_KEY`, `x-api-key`,
# `access_token`, `client_secret`; never `max_tokens` or `tokenizer`.
_CREDENTIAL_LAST = frozenset({"token", "secret", "password", "passwd", "credential", "credentials", "authorization", "cookie", "apikey"})
_KEY_BEFORE = frozenset({"api", "secret", "private", "access", "session", "signing", "encryption"})
# Strings shaped like keys, whoever issued them.
_KEY_SHAPES = re.compile(
    r"sk-[A-Za-z0-9_\-]{16,}"  # OpenAI, Anthropic (sk-ant-), OpenRouter (sk-or-)
    r"|Bearer\s+[A-Za-z0-9._~+/\-]{8,}=*"
    r"|AIza[0-9A-Za-z_\-]{30,}"
    r"|gh[pousr]_[A-Za-z0-9]{30,}"
    r"|xox[abprs]-[A-Za-z0-9\-]{10,}"
    r"|AKIA[0-9A-Z]{16}"
    r"|nlr-[A-Za-z0-9_\-]{16,}"  # the relay's own unit tokens
)


def credential_name(name: str) -> bool:
    parts = [p for p in re.split(r"[-_.\s]+", name.lower()) if p]
    if not parts:
        return False
    if parts[-1] in _CREDENTIAL_LAST:
        return True
    return parts[-1] == "key" and (len(parts) == 1 or parts[-2] in _KEY_BEFORE)


class Cleaner:
    """Removes credentials from whatever is about to be recorded."""

    def __init__(self, secrets: Iterable[str] = ()):
        self.secrets = [s for s in secrets if s and len(s) >= 6]

    def add(self, secret: str | None) -> None:
        if secret and len(secret) >= 6 and secret not in self.secrets:
            self.secrets.append(secret)

    def text(self, value: str) -> str:
        for secret in self.secrets:
            if secret in value:
                value = value.replace(secret, REMOVED)
        return _KEY_SHAPES.sub(REMOVED, value)

    def __call__(self, obj: Any) -> Any:
        if isinstance(obj, dict):
            return {
                self.text(str(k)): (REMOVED if credential_name(str(k)) and v not in (None, "", [], {}) else self(v))
                for k, v in obj.items()
            }
        if isinstance(obj, list):
            return [self(v) for v in obj]
        if isinstance(obj, str):
            return self.text(obj)
        return obj


def append_line(path: Path, record: dict[str, Any]) -> None:
    line = (json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n").encode()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


class Recorder:
    """One unit's record folder."""

    def __init__(self, folder: Path, cleaner: Cleaner, keep_bodies: bool = True):
        folder.mkdir(parents=True, exist_ok=True)
        self.folder = folder
        self.cleaner = cleaner
        self.keep_bodies = keep_bodies
        self.calls = folder / "calls.jsonl"
        self.bodies = folder / "bodies.jsonl"
        self.gateway = folder / "gateway.log"
        self.stop = folder / "stop"

    def call(self, record: dict[str, Any]) -> None:
        append_line(self.calls, self.cleaner(record))

    def body(self, call_id: str, request: Any, response: Any) -> None:
        if self.keep_bodies:
            append_line(self.bodies, self.cleaner({"id": call_id, "request": request, "response": response}))

    def log(self, line: str) -> None:
        with open(self.gateway, "a", encoding="utf-8") as handle:
            handle.write(self.cleaner.text(line.rstrip("\n")) + "\n")

    def stopped(self) -> str | None:
        """A guard's line in the stop file refuses the agent's later calls; the relay's own notes do not."""
        try:
            lines = self.stop.read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            return None
        guard = [line for line in lines if line.strip() and not line.startswith("relay:")]
        return guard[-1] if guard else None

    def note_stop(self, note: str) -> None:
        with open(self.stop, "a", encoding="utf-8") as handle:
            handle.write(f"relay: {note}\n")
