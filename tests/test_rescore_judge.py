"""`nullius rescore --judge-model`: a judged benchmark's trials scored again by another judge, on routes of the rescore's own.

The fixture benchmark `talk` (a simulated user and a judge) with the fixture
agent `scripted`, on the fake model: its official judge says PASS, the
stricter one FAIL, so the rewards say which judge scored.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import ROOT

from nullius_core.testing import run_cli

CATALOGUE = ROOT / "tests" / "fixtures" / "catalogue"
KEY = "sk-upstream-held-by-the-relay-talk-0123456789"
VOICES = [
    {"when": {"model": "judge-strict"}, "reply": {"text": "FAIL"}},
    {"when": {"model_regex": "^sim-"}, "reply": {"text": "Hello, I am the simulated user."}},
    {"when": {"model_regex": "^judge-"}, "reply": {"text": "PASS"}},
    {"when": {"model": "fake-1"}, "reply": {"text": "Glad to help."}},
]


@pytest.fixture
def env(nullius_env, tmp_path, fake_model):
    catalogue = tmp_path / "catalogue"
    shutil.copytree(CATALOGUE, catalogue)
    agent = json.loads((catalogue / "agents" / "scripted" / "agent.json").read_text())
    agent["proven"]["agent.conversation/v1"] = {"passed": "2/2", "kit_version": 1, "version": "1.0", "model": "fake"}
    (catalogue / "agents" / "scripted" / "agent.json").write_text(json.dumps(agent))
    fake_model.use({"rules": VOICES})
    return {**nullius_env, "NULLIUS_CATALOGUE": str(catalogue), "NULLIUS_JOBS_DIR": str(tmp_path / "jobs"), "OPENAI_COMPATIBLE_API_KEY": KEY}


def rewards(job: Path) -> dict[str, float | None]:
    out = {}
    for path in sorted(job.glob("u*/result.json")):
        result = json.loads(path.read_text())
        out[path.parent.name] = ((result.get("verifier_result") or {}).get("rewards") or {}).get("reward")
    return out


def test_rescore_asks_another_judge_on_its_own_routes_and_names_it(env, fake_model, tmp_path):
    ran = run_cli(["run", "talk", "scripted", "--model", "fake-1", "--unsandboxed", "--job-name", "talk", "--provider", "openai-compatible",
                   "--base-url", fake_model.openai_base_url], env)
    assert ran.code == 0, ran.output
    job = tmp_path / "jobs" / "talk"
    assert rewards(job) == {"u0000": 1.0, "u0001": 1.0}
    fake_model.clear()
    out = tmp_path / "strict"
    unnamed = run_cli(["rescore", str(job), "-o", str(out), "--judge-model", "judge-strict"], env)
    assert unnamed.code == 2 and f"give --base-url {fake_model.openai_base_url} to send this machine's key" in unnamed.stderr
    assert fake_model.requests == [] and not out.exists()
    result = run_cli(["rescore", str(job), "-o", str(out), "--judge-model", "judge-strict", "--base-url", fake_model.openai_base_url], env)
    assert result.code == 0, result.output
    assert rewards(out) == {"u0000": 0.0, "u0001": 0.0} and rewards(job) == {"u0000": 1.0, "u0001": 1.0}
    asked = [r.body["model"] for r in fake_model.requests]
    assert asked == ["judge-strict", "judge-strict"]  # the judge alone: no agent, no simulated user ran again
    assert all(r.headers.get("authorization") == f"Bearer {KEY}" for r in fake_model.requests)
    for name in ("u0000", "u0001"):
        calls = [json.loads(line) for line in (out / name / "judge" / "calls.jsonl").read_text().splitlines()]
        assert [c["model_sent"] for c in calls] == ["judge-strict"] and calls[0]["kind"] == "judge"
    config = json.loads((out / "config.json").read_text())["standard"]
    assert config["judge"] == {"model": "judge-strict", "official_model": "judge-official", "official": False}
    assert config["rescore_of"]["job"] == str(job.resolve())
