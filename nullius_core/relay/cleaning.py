"""What is recorded is cleaned first: values under a credential's name, the relay's own secrets, key-shaped strings.

Header names of credentials are kept, never their values. Cleaning a big text
is cut into slices at characters no removal can span, so that no one regex
call holds the interpreter long (the record is written off the event loop,
by a thread that shares the interpreter's lock with it).
"""

from __future__ import annotations

import codecs
import functools
import json
import re
import threading
import time
from collections.abc import Iterable, Iterator
from typing import Any

from nullius_core import jsonfast
from nullius_core.relay.shield import REMOVED, SHORTEST, Shield

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
# A character no key shape's token holds: a slice cut just before one leaves every match whole on one
# side, unless it is the whitespace after `Bearer`.
_CUT = re.compile(r"[^A-Za-z0-9_\-.~+/=]")
SLICE = 64 * 1024  # what one regex or codec call is given at most, where the text allows
_WINDOW = 4096  # how far past a slice's end a cut is looked for, a window at a time


def breathe() -> None:
    """Between two slices of a long text: the interpreter's lock, given up long enough for the event loop to take it.

    A thread holding the lock gives it up only when another has waited for
    it 5 ms (sys.getswitchinterval()); each slice would cost every wake of
    the loop that much. A sleep hands it over at once.
    """
    if time.monotonic() - getattr(_breath, "last", 0.0) >= BREATH:
        time.sleep(0.0001)
        _breath.last = time.monotonic()


BREATH = 0.002  # at most this much work between two breaths
_breath = threading.local()

# The keys of a record's JSON text: when none is a credential's, the record is
# cleaned as text, in one pass, without walking it.
_JSON_KEY = re.compile(r'"((?:[^"\\]|\\.)*)":')
# How a credential's key ends in JSON text; a text with none of these has no such key.
_CREDENTIAL_ENDINGS = tuple(f'{end}":' for end in (*_CREDENTIAL_LAST, "key"))
_HEAD = 4  # secrets are looked for by their first characters: route tokens all begin `nlr-`


def _maybe_credential(text: str) -> bool:
    if len(text) <= SLICE:
        lowered = text.lower()
        for ending in _CREDENTIAL_ENDINGS:
            if ending in lowered:
                return True
        return False
    overlap = max(map(len, _CREDENTIAL_ENDINGS))
    for start in range(0, len(text), SLICE):
        if start:
            breathe()
        lowered = text[max(0, start - overlap) : start + SLICE].lower()
        if any(ending in lowered for ending in _CREDENTIAL_ENDINGS):
            return True
    return False


@functools.lru_cache(maxsize=4096)
def credential_name(name: str) -> bool:
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name)  # accessToken -> access_Token
    parts = [p for p in re.split(r"[-_.\s]+", spaced.lower()) if p]
    if not parts:
        return False
    if parts[-1] in _CREDENTIAL_LAST:
        return True
    return parts[-1] == "key" and (len(parts) == 1 or parts[-2] in _KEY_BEFORE)


def _shape_slices(value: str) -> Iterator[str]:
    start = 0
    while start < len(value):
        if start:
            breathe()
        end = _cut_after(value, start + SLICE)
        yield value[start:end]
        start = end


def _cut_after(value: str, at: int) -> int:
    """The first place from `at` where no key shape spans the cut (the text's end when there is none)."""
    while at < len(value):
        for match in _CUT.finditer(value, at, min(len(value), at + _WINDOW)):
            i = match.start()
            if not value[i].isspace():
                return i
            j = i  # whitespace: a cut unless it follows `Bearer`
            while j > 0 and i - j < 64 and value[j - 1].isspace():
                j -= 1
            if (j == 0 or not value[j - 1].isspace()) and value[max(0, j - 6) : j] != "Bearer":
                return i
        at += _WINDOW
    return len(value)


def decode(chunks: Iterable[bytes], errors: str = "replace") -> str:
    """UTF-8 bytes as text, a slice at a time (a character cut between slices is whole again)."""
    if isinstance(chunks, list) and len(chunks) == 1 and len(chunks[0]) <= SLICE:
        return chunks[0].decode("utf-8", errors)
    decoder = codecs.getincrementaldecoder("utf-8")(errors)
    out = []
    for chunk in chunks:
        view = memoryview(chunk)
        for i in range(0, len(view), SLICE):
            if out:
                breathe()
            out.append(decoder.decode(view[i : i + SLICE]))
    out.append(decoder.decode(b"", final=True))
    return "".join(out)


def _holds(value: str, part: str) -> bool:
    if len(value) <= SLICE:
        return part in value
    for start in range(0, len(value), SLICE):
        if start:
            breathe()
        if value.find(part, max(0, start - len(part) + 1), start + SLICE) >= 0:
            return True
    return False


class Cleaner:
    """Removes credentials from whatever is about to be recorded.

    `add(secret)`: the record never holds it (a route's token). `hide(secret)`:
    nor does any reply (the provider's key); `shield` takes those out of
    what goes back to the caller.
    """

    def __init__(self, secrets: Iterable[str] = (), hidden: Iterable[str] = ()):
        self.secrets: list[str] = []
        self._by_head: dict[str, list[str]] = {}  # first characters -> the forms of secrets that begin so, longest first
        self.shield = Shield()
        for secret in secrets:
            self.add(secret)
        for secret in hidden:
            self.hide(secret)

    def add(self, secret: str | None) -> None:
        if not secret or len(secret) < SHORTEST or secret in self.secrets:
            return
        self.secrets.append(secret)
        escaped = json.dumps(secret)[1:-1]
        for form in {secret, escaped, json.dumps(secret, ensure_ascii=False)[1:-1]}:
            group = self._by_head.setdefault(form[:_HEAD], [])
            group.append(form)
            group.sort(key=len, reverse=True)

    def hide(self, secret: str | None) -> None:
        self.add(secret)
        self.shield.add(secret)

    def exact(self, value: str) -> str:
        """The relay's own secrets removed, each looked for only where its first characters are."""
        small = len(value) <= SLICE
        for head, forms in self._by_head.items():
            if not (head in value if small else _holds(value, head)):
                continue
            for form in forms:
                if form in value:
                    value = value.replace(form, REMOVED)
        return value

    def text(self, value: str) -> str:
        return "".join(self.pieces(value))

    def pieces(self, value: str, quoted: bool = False) -> list[str]:
        """`value` cleaned (as a JSON string when `quoted`), in pieces: a long text is never joined whole again."""
        value = self.exact(value)
        if len(value) <= SLICE:
            cleaned = _KEY_SHAPES.sub(REMOVED, value)
            return [jsonfast.dumps_text(cleaned)] if quoted else [cleaned]
        out = []
        for part in _shape_slices(value):
            cleaned = _KEY_SHAPES.sub(REMOVED, part)
            out.append(jsonfast.dumps_text(cleaned)[1:-1] if quoted else cleaned)  # escaping is character by character
        return ['"', *out, '"'] if quoted else out

    def dumps(self, obj: Any) -> str:
        """The cleaned JSON text of `obj`, on one line."""
        if isinstance(obj, str):
            return "".join(self.pieces(obj, quoted=True))
        text = jsonfast.dumps_text(obj)
        if _maybe_credential(text) and any(credential_name(key) for key in _JSON_KEY.findall(text)):
            return jsonfast.dumps_text(self(obj))
        return self.text(text)

    def raw(self, data: bytes | str | None, is_json: bool = False) -> list[str]:
        """Bytes received, as one JSON value in pieces: JSON kept as it came (cleaned), anything else as a string.

        `is_json`: the bytes are known to parse (the relay read them already).
        """
        if data is None:
            return ["null"]
        if isinstance(data, str):
            return self.pieces(data, quoted=True)
        try:
            text = decode([data], errors="strict")
        except UnicodeDecodeError:
            return self.pieces(decode([data]), quoted=True)
        stripped = text.strip()
        if stripped[:1] in ("{", "[") and "\n" not in stripped and "\r" not in stripped:
            if not is_json:
                try:
                    jsonfast.loads(stripped)
                except ValueError:
                    return self.pieces(text, quoted=True)
            if _maybe_credential(stripped):
                return [self.dumps(jsonfast.loads(stripped))]
            return self.pieces(stripped)
        try:
            return [self.dumps(jsonfast.loads(text))]
        except ValueError:
            return self.pieces(text, quoted=True)

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
