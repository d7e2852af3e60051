"""A standard-library chat-completions client and the one reply grammar every kernel call is answered in.

The grammar: the reply's first line that starts with "{" is a JSON object (the header); after it come zero or more
fenced bodies, each opened by a fence of three or more backticks followed by the body's name and closed by the same
fence alone on a line.
"""

import json
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from . import NanoError


class ModelError(NanoError):
    """The model could not be asked, or its reply broke the grammar."""


@dataclass(frozen=True)
class Reply:
    text: str
    usage: dict = field(default_factory=dict)


def zero_usage() -> dict:
    return {"calls": 0, "input_tokens": 0, "output_tokens": 0}


def add_usage(total: dict, more: dict) -> dict:
    return {k: int(total.get(k, 0)) + int(more.get(k, 0)) for k in zero_usage()}


class Client:
    """Calls {base_url}/chat/completions. The key is read from api_key_file at each call and kept nowhere."""

    def __init__(self, model_cfg: dict, key_file: Path):
        self.cfg = model_cfg
        self.key_file = Path(key_file)

    def chat(self, messages: list[dict]) -> Reply:
        body = json.dumps({"model": self.cfg["name"], "messages": messages,
                           "temperature": self.cfg["temperature"], "max_tokens": self.cfg["max_tokens"]}).encode()
        last = "no attempt"
        for attempt in range(self.cfg["retries"] + 1):
            if attempt:
                time.sleep(min(0.5 * 2 ** (attempt - 1), 8.0))  # back off before a retry, bounded
            try:
                return _parse_completion(self._post(body))
            except _Retryable as exc:
                last = str(exc)
        raise ModelError(f"model call failed after {self.cfg['retries'] + 1} attempt(s): {last}")

    def _post(self, body: bytes) -> dict:
        try:
            key = self.key_file.read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise ModelError(f"[model] api_key_file: cannot read it ({exc.strerror})") from None
        url = self.cfg["base_url"].rstrip("/") + "/chat/completions"
        req = urllib.request.Request(url, data=body, method="POST", headers={
            "Content-Type": "application/json", "Authorization": f"Bearer {key}"})
        try:
            with _OPENER.open(req, timeout=self.cfg["timeout"]) as resp:
                return json.loads(resp.read().decode("utf-8"))
        except urllib.error.HTTPError as exc:
            if exc.code in (408, 409, 429) or exc.code >= 500:
                raise _Retryable(f"HTTP {exc.code}") from None
            raise ModelError(f"model call refused: HTTP {exc.code} from {url}") from None
        except (urllib.error.URLError, TimeoutError, ConnectionError, json.JSONDecodeError) as exc:
            raise _Retryable(f"{type(exc).__name__}: {getattr(exc, 'reason', exc)}") from None


class _Retryable(Exception):
    pass


# No proxy taken from the environment: the core reads no ambient variables.
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def _parse_completion(data: dict) -> Reply:
    try:
        content = data["choices"][0]["message"]["content"] or ""
    except (KeyError, IndexError, TypeError):
        raise _Retryable(f"no choices[0].message in the reply: {json.dumps(data)[:200]}") from None
    usage = data.get("usage") or {}
    return Reply(content, {"calls": 1, "input_tokens": int(usage.get("prompt_tokens") or 0),
                           "output_tokens": int(usage.get("completion_tokens") or 0)})


def parse_reply(text: str) -> tuple[dict, dict[str, str]]:
    """(header, {body name: body}) or ModelError saying what the reply lacked."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.lstrip().startswith("{")), None)
    if start is None:
        raise ModelError("the reply has no JSON header line")
    try:
        header = json.loads(lines[start])
    except json.JSONDecodeError as exc:
        raise ModelError(f"the header line is not JSON: {exc.msg}") from None
    if not isinstance(header, dict):
        raise ModelError("the header line is not a JSON object")
    return header, _bodies(lines[start + 1:])


def _bodies(lines: list[str]) -> dict[str, str]:
    bodies, i = {}, 0
    while i < len(lines):
        line = lines[i].strip()
        fence = line[:len(line) - len(line.lstrip("`"))]
        name = line[len(fence):].strip()
        if len(fence) < 3 or not name:
            i += 1
            continue
        end = next((j for j in range(i + 1, len(lines)) if lines[j].strip() == fence), None)
        if end is None:
            raise ModelError(f"the body {name!r} has no closing fence")
        bodies[name] = "\n".join(lines[i + 1:end]) + ("\n" if end > i + 1 else "")
        i = end + 1
    return bodies


def fence(name: str, body: str) -> str:
    """A body in the grammar, its fence longer than any run of backticks inside."""
    longest = max((len(run) for run in body.split("\n") if set(run.strip()) == {"`"}), default=0)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}{name}\n{body.rstrip(chr(10))}\n{ticks}"


def ask(client: Client, system: str, user: str) -> tuple[dict, dict[str, str], dict]:
    """One grammar call: (header, bodies, usage). A grammar break raises ModelError carrying the usage spent."""
    reply = client.chat([{"role": "system", "content": system}, {"role": "user", "content": user}])
    try:
        header, bodies = parse_reply(reply.text)
    except ModelError as exc:
        exc.usage = reply.usage
        raise
    return header, bodies, reply.usage
