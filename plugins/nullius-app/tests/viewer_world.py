"""Jobs for the viewer's tests, from real runs (made once a session): controls, agents on the fake model, a conversation, errors.

- `he-oracle`, `he-nop`: HumanEval's controls on 5 units.
- `gsm-a`, `gsm-b`: the reference agent on GSM8K's first 4 units against the
  fake model, priced by a user price file. In `gsm-a` the agent writes a file
  with a tool call on the Janet question (u0000); `gsm-b` runs each unit twice
  (`--repeat 2`: pass^k) with other answers, so the two differ unit by unit.
- `tool`: the fixture agent `scripted` in mode `tool` on the fixture `faulty`:
  a tool call, a permission, a notice, then the answer.
- `talk`: the fixture conversation `talk`, its simulated user and its judge on
  routes of their own.
- `limited`: `scripted` again, the fake model answering its second unit 429:
  that unit ends rate limited (run once more, then left out of the mean).
- `faulty`: the fixture `faulty`'s oracle in mode faulty: five units fail, each
  its own way (setup, score, oracle, a timeout).
- `broken`: a job whose result.json is not JSON.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from app_world import App

from nullius_core.testing import isolated_env, run_cli
from nullius_core.testing.fake_model import running_fake_model

REPO = Path(__file__).resolve().parents[3]
CATALOGUE = REPO / "tests" / "fixtures" / "catalogue"
KEY = "sk-upstream-held-by-the-relay-viewer-0123456789"
PRICE = {"input": 2.0, "output": 8.0, "cache_read": 0.5, "cache_write": 2.0, "as_of": "2026-11-15", "source": "a test's own price"}


def _answer(word: str, text: str) -> dict:
    return {"when": {"user_contains": word}, "reply": {"text": text}}


GSM_A = {"rules": [
    {"when": {"after_tool_result": ""}, "reply": {"text": "Sixteen less seven is nine, at $2 each.\n#### 18"}},
    {"when": {"user_contains": "Janet"}, "reply": {"tool_calls": [
        {"name": "write_file", "arguments": {"path": "notes.txt", "content": "16 - 3 - 4 = 9; 9 * 2 = 18\n"}}]}},
    _answer("robe", "#### 2"), _answer("Josh", "The profit is 70000.\n#### 70000"), _answer("James", "#### 5"),
], "default": {"text": "#### 0"}}
GSM_B = {"rules": [
    _answer("Janet", "#### 18"), _answer("robe", "Two and one.\n#### 3"), _answer("Josh", "#### 1"),
    _answer("James", "Three sprints of 60 m, three times: a long answer to cost more tokens.\n#### 540"),
], "default": {"text": "#### 0"}}
TALK = {"rules": [
    {"when": {"model": "sim-official"}, "reply": {"text": "Hello, I am the simulated user."}},
    {"when": {"model_regex": "^judge-"}, "reply": {"text": "PASS"}},
    {"when": {"model": "fake-1"}, "reply": {"text": "Glad to help."}},
]}

LIMITED = {"rules": [{"when": {"user_contains": "bravo"}, "reply": {"fault": {"status": 429, "retry_after": 0}}}],
           "default": {"text": "alpha"}}


def _run(env: dict, args: list[str]) -> None:
    done = run_cli(args, env)
    assert done.code == 0, done.output[-3000:]


def _catalogue(root: Path) -> Path:
    """The fixture catalogue, its scripted agent proven for conversations (as tests/test_conversations.py does)."""
    target = root / "catalogue"
    shutil.copytree(CATALOGUE, target)
    agent_file = target / "agents" / "scripted" / "agent.json"
    agent = json.loads(agent_file.read_text())
    agent["proven"]["agent.conversation/v1"] = {"passed": "2/2", "kit_version": 1, "version": "1.0", "model": "fake"}
    agent_file.write_text(json.dumps(agent))
    return target


def make_jobs(root: Path, installs: Path) -> dict:
    """The jobs folder and the environment they were run in (the app is started in it)."""
    env = {**isolated_env(root, standard_dir=installs), "OPENAI_COMPATIBLE_API_KEY": KEY,
           "NULLIUS_CATALOGUE": str(_catalogue(root))}
    prices = Path(env["XDG_CONFIG_HOME"]) / "nullius" / "prices.json"
    prices.parent.mkdir(parents=True, exist_ok=True)
    prices.write_text(json.dumps({"version": 1, "prices": {"fake-model": PRICE}}))
    _run(env, ["run", "humaneval", "oracle", "--limit", "5", "--job-name", "he-oracle"])
    _run(env, ["run", "humaneval", "nop", "--limit", "5", "--job-name", "he-nop"])
    reference = ["gsm8k", "reference", "--provider", "openai-compatible", "--unsandboxed", "--model", "fake-model", "--limit", "4"]
    for name, script, extra in (("gsm-a", GSM_A, []), ("gsm-b", GSM_B, ["--repeat", "2"])):
        with running_fake_model(script) as fake:
            _run(env, ["run", *reference, *extra, "--base-url", fake.openai_base_url, "--job-name", name])
    scripted = ["--model", "fake-1", "--provider", "openai-compatible", "--unsandboxed"]
    with running_fake_model({"default": {"text": "alpha"}}) as fake:
        _run(env, ["run", "faulty", "scripted", *scripted, "--base-url", fake.openai_base_url, "--option", "mode=tool",
                   "--limit", "3", "--job-name", "tool"])
    with running_fake_model(TALK) as fake:
        _run(env, ["run", "talk", "scripted", *scripted, "--base-url", fake.openai_base_url, "--limit", "2", "--job-name", "talk"])
    with running_fake_model(LIMITED) as fake:
        _run(env, ["run", "faulty", "scripted", *scripted, "--base-url", fake.openai_base_url, "--limit", "2", "--job-name", "limited"])
    _run(env, ["run", "faulty", "oracle", "--bench-option", "mode=faulty", "--job-name", "faulty"])
    broken = Path(env["NULLIUS_JOBS_DIR"]) / "broken"
    shutil.copytree(Path(env["NULLIUS_JOBS_DIR"]) / "he-nop", broken)
    (broken / "result.json").write_text("{ this is not JSON")
    return {"jobs": Path(env["NULLIUS_JOBS_DIR"]), "env": env}


@pytest.fixture(scope="session")
def viewer_world(tmp_path_factory: pytest.TempPathFactory, nullius_installs: Path) -> dict:
    return make_jobs(tmp_path_factory.mktemp("viewer"), nullius_installs)


@pytest.fixture(scope="session")
def viewer_app(viewer_world: dict, tmp_path_factory: pytest.TempPathFactory) -> Iterator[App]:
    """`nullius app` over those jobs, in the environment they were run in (its key included: no page may show it)."""
    running = App(viewer_world["env"], tmp_path_factory.mktemp("viewer-app"))
    yield running
    running.stop()
