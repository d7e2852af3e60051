"""The relay's record of a unit: `calls.jsonl`, `bodies.jsonl`, `gateway.log`, and the `stop` file.

A record line is written whole with one call, or not at all: a relay killed
mid-run leaves files every line of which parses. What is recorded is cleaned
first: a value under a credential's name, the relay's own keys and tokens,
and any string shaped like a key are removed. Header names of credentials
are kept, never their values.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from nullius_core import jsonfast

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


# The keys of a record's JSON text: when none is a credential's, the record is
# cleaned as text, in one pass, without walking it.
_JSON_KEY = re.compile(r'"((?:[^"\\]|\\.)*)":')
# How a credential's key ends in JSON text; a text with none of these has no such key.
_CREDENTIAL_ENDINGS = tuple(f'{end}":' for end in (*_CREDENTIAL_LAST, "key"))


def _maybe_credential(text: str) -> bool:
    lowered = text.lower()
    return any(ending in lowered for ending in _CREDENTIAL_ENDINGS)


@functools.lru_cache(maxsize=4096)
def credential_name(name: str) -> bool:
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name)  # accessToken -> access_Token
    parts = [p for p in re.split(r"[-_.\s]+", spaced.lower()) if p]
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

    def dumps(self, obj: Any) -> str:
        """The cleaned JSON text of `obj`, on one line."""
        text = jsonfast.dumps_text(obj)
        if _maybe_credential(text) and any(credential_name(key) for key in _JSON_KEY.findall(text)):
            return jsonfast.dumps_text(self(obj))
        return self.text(text)

    def raw(self, data: bytes | str | None, is_json: bool = False) -> str:
        """Bytes received, as one line of JSON: JSON kept as it came (cleaned), anything else as a string.

        `is_json`: the bytes are known to parse (the relay read them already).
        """
        if data is None:
            return "null"
        if isinstance(data, bytes):
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError:
                return self.dumps(data.decode("utf-8", "replace"))
            stripped = text.strip()
            if stripped[:1] in ("{", "[") and "\n" not in stripped and "\r" not in stripped:
                if not is_json:
                    try:
                        jsonfast.loads(stripped)
                    except ValueError:
                        return self.dumps(text)
                if _maybe_credential(stripped):
                    return self.dumps(jsonfast.loads(stripped))
                return self.text(stripped)
            try:
                return self.dumps(jsonfast.loads(text))
            except ValueError:
                return self.dumps(text)
        return self.dumps(data)

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


class Appender:
    """A file kept open for appending; each line goes in one write() call, whole."""

    def __init__(self, path: Path):
        self.path = path
        self._fd: int | None = None

    def line(self, text: str) -> None:
        if self._fd is None:
            self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        os.write(self._fd, (text + "\n").encode())

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


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
        self._calls = Appender(self.calls)
        self._bodies = Appender(self.bodies)
        self._gateway = Appender(self.gateway)
        self._stop_stamp: tuple[int, int] | None = None
        self._stop_guard: str | None = None

    def call(self, record: dict[str, Any]) -> None:
        self._calls.line(self.cleaner.dumps(record))

    def body(self, call_id: str, request: bytes, response: bytes | str | None) -> None:
        """The request as the caller sent it and the reply as the provider sent it (a stream as its text)."""
        if self.keep_bodies:
            parts = (self.cleaner.raw(request, is_json=True), self.cleaner.raw(response))
            self._bodies.line(f'{{"id":"{call_id}","request":{parts[0]},"response":{parts[1]}}}')

    def log(self, line: str) -> None:
        self._gateway.line(self.cleaner.text(line.rstrip("\n")))

    def close(self) -> None:
        for appender in (self._calls, self._bodies, self._gateway):
            appender.close()

    def stopped(self) -> str | None:
        """A guard's line in the stop file refuses the agent's later calls; the relay's own notes do not."""
        try:
            info = os.stat(self.stop)
            stamp = (info.st_mtime_ns, info.st_size)  # a line appended in the same tick still changes the size
        except FileNotFoundError:
            return None
        if stamp != self._stop_stamp:  # read again only when the file changed
            lines = self.stop.read_text(encoding="utf-8").splitlines()
            guard = [line for line in lines if line.strip() and not line.startswith("relay:")]
            self._stop_guard, self._stop_stamp = (guard[-1] if guard else None), stamp
        return self._stop_guard

    def note_stop(self, note: str) -> None:
        with open(self.stop, "a", encoding="utf-8") as handle:
            handle.write(f"relay: {note}\n")
