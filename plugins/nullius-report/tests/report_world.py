"""Fixture jobs from real runs (the `jobs` fixture of conftest.py makes them once per session): GSM8K with the reference agent on the fake model, and oracles.

Two agent jobs on the same four units with different outcomes (job `a` passes
u0000 and u0002, job `b`, run twice a unit, passes u0000, u0001 and u0003), both
priced by a user price file; job `c` on an unpriced model; two oracle jobs on
disjoint shards. In job `a`, u0000's agent writes notes.txt into its workspace
(an untracked file: the patch must carry it).
"""

from __future__ import annotations

import json
from pathlib import Path

from nullius_core.testing import isolated_env, run_cli
from nullius_core.testing.fake_model import running_fake_model

REPO = Path(__file__).resolve().parents[3]
KEY = "sk-upstream-held-by-the-relay-0123456789"
PRICE = {"input": 2.0, "output": 8.0, "cache_read": 0.5, "cache_write": 2.0, "as_of": "2026-11-15",
         "source": "a test's own price"}


def _answer(word: str, text: str) -> dict:
    return {"when": {"user_contains": word}, "reply": {"text": text}}


SCRIPT_A = {"rules": [
    {"when": {"after_tool_result": ""}, "reply": {"text": "Sixteen less seven is nine, at $2 each.\n#### 18"}},
    {"when": {"user_contains": "Janet"}, "reply": {"tool_calls": [
        {"name": "write_file", "arguments": {"path": "notes.txt", "content": "16 - 3 - 4 = 9; 9 * 2 = 18\n"}}]}},
    _answer("robe", "#### 2"), _answer("Josh", "The profit is 70000.\n#### 70000"), _answer("James", "#### 5"),
], "default": {"text": "#### 0"}}
SCRIPT_B = {"rules": [
    _answer("Janet", "#### 18"), _answer("robe", "Two and one.\n#### 3"), _answer("Josh", "#### 1"),
    _answer("James", "Three sprints of 60 m, three times, three... a long answer to cost more tokens.\n#### 540"),
], "default": {"text": "#### 0"}}


def _run(env: dict, args: list[str]) -> None:
    result = run_cli(args, env)
    assert result.code == 0, result.output[-3000:]


def make_jobs(root: Path, installs: Path) -> dict:
    """The jobs by name (a, b, c, odd, even), and `env`, the home they were run in."""
    env = {**isolated_env(root, standard_dir=installs), "OPENAI_COMPATIBLE_API_KEY": KEY}
    prices = Path(env["XDG_CONFIG_HOME"]) / "nullius" / "prices.json"
    prices.parent.mkdir(parents=True, exist_ok=True)
    prices.write_text(json.dumps({"version": 1, "prices": {"fake-model": PRICE}}))
    agent = ["gsm8k", "reference", "--provider", "openai-compatible", "--unsandboxed"]
    for name, script, extra in (("a", SCRIPT_A, ["--model", "fake-model", "--limit", "4"]),
                                ("b", SCRIPT_B, ["--model", "fake-model", "--limit", "4", "--repeat", "2"]),
                                ("c", SCRIPT_A, ["--model", "fake-unpriced", "--limit", "2"])):
        with running_fake_model(script) as fake:
            _run(env, ["run", *agent, *extra, "--base-url", fake.openai_base_url, "--job-name", name])
    _run(env, ["run", "gsm8k", "oracle", "--shard", "1/2", "--limit", "2", "--job-name", "odd"])
    _run(env, ["run", "gsm8k", "oracle", "--shard", "2/2", "--limit", "2", "--job-name", "even"])
    out = {name: Path(env["NULLIUS_JOBS_DIR"]) / name for name in ("a", "b", "c", "odd", "even")}
    out["env"] = env  # type: ignore[assignment]
    return out
