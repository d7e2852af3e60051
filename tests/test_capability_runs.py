"""Capabilities at run time: a capability benchmark with its controls, and a real BM25 memory read through the relay."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from conftest import ROOT

from nullius_core.testing import run_cli
from nullius_core.testing.fake_model import FakeRequest, Reply

CATALOGUE = ROOT / "tests" / "fixtures" / "catalogue"
KEY = "sk-upstream-held-by-the-relay-0123456789"


def reader(request: FakeRequest) -> Reply:
    """A model reading a memory: the code the memory gives for the depot asked about."""
    prompt = request.last_user_message or ""
    depot = re.search(r"for the (\w+) depot\?", prompt)
    code = re.search(rf"the gate code for the {depot.group(1)} depot is (\S+)\.", prompt) if depot else None
    return Reply(text=code.group(1) if code else "I cannot find it.")


@pytest.fixture
def env(env_shared_installs, tmp_path):
    return {**env_shared_installs, "NULLIUS_CATALOGUE": str(CATALOGUE), "NULLIUS_JOBS_DIR": str(tmp_path / "jobs"), "OPENAI_COMPATIBLE_API_KEY": KEY}


def results(job: Path) -> dict[str, dict]:
    return {p.parent.name: json.loads(p.read_text()) for p in job.glob("*/result.json")}


def test_a_capability_benchmark_proves_itself_with_its_controls(env, tmp_path):
    for control, reward in (("oracle", 1.0), ("nop", 0.0)):
        result = run_cli(["run", "recall", control, "--job-name", control], env)
        assert result.code == 0, result.output
        assert {t["verifier_result"]["rewards"]["reward"] for t in results(tmp_path / "jobs" / control).values()} == {reward}


def test_a_capability_runs_a_benchmark_its_recall_read_with_the_model(env, tmp_path, fake_model):
    fake_model.use(reader)
    args = ["run", "recall", "bm25", "--model", "fake-reader", "--provider", "openai-compatible", "--base-url", fake_model.openai_base_url, "--job-name", "bm25"]
    result = run_cli(args, env)  # no --unsandboxed: capabilities are not asked
    assert result.code == 0, result.output
    found = results(tmp_path / "jobs" / "bm25")
    assert {k: v["standard"]["outcome"] for k, v in found.items()} == {f"u000{i}": "passed" for i in range(4)}
    trial = tmp_path / "jobs" / "bm25" / "u0000"
    exchanges = [json.loads(line) for line in (trial / "agent" / "capability.jsonl").read_text().splitlines()]
    ops = [e["msg"]["op"] for e in exchanges if e["dir"] == "out"]
    assert ops == ["add"] * 6 + ["recall"]
    recall = next(e["msg"] for e in exchanges if e["dir"] == "in" and "memory" in e["msg"])
    assert recall["trace"]["hits"]  # the capability's trace is recorded whole
    steps = json.loads((trial / "agent" / "trajectory.json").read_text())["steps"]
    assert [s["source"] for s in steps] == ["user"] + ["system"] * 6 + ["agent", "agent"]
    record = found["u0000"]
    assert record["agent_info"]["name"] == "bm25" and record["agent_result"]["n_input_tokens"] > 0  # the driver's reading went through the relay
    assert KEY not in (trial / "agent" / "capability.jsonl").read_text()
    # the relay's record of the trial sits in agent/, as an agent's trial keeps it: the produce call, and its gateway line
    calls = [json.loads(line) for line in (trial / "agent" / "calls.jsonl").read_text().splitlines()]
    assert len(calls) == 1 and calls[0]["status"] == 200 and calls[0]["model_sent"] == "fake-reader"
    assert (trial / "agent" / "calls.jsonl").read_bytes() == (trial / ".work" / "relay" / "calls.jsonl").read_bytes()
    gateway = (trial / "agent" / "gateway.log").read_text().splitlines()
    assert len(gateway) == 1 and " u0000 openai-chat 200 fake-reader " in gateway[0]
    assert KEY not in (trial / "agent" / "calls.jsonl").read_text() + (trial / "agent" / "gateway.log").read_text()


def test_fit_for_a_benchmark_that_needs_a_skill_lists_exactly_the_agents_that_showed_it(nullius_env, tmp_path):
    catalogue = tmp_path / "catalogue" / "benchmarks" / "office"
    catalogue.mkdir(parents=True)
    source = CATALOGUE / "benchmarks" / "faulty"
    for name in ("benchmark.json", "upstream-settings.json", "driver.py"):
        (catalogue / name).write_text((source / name).read_text())
    standard = json.loads((source / "standard.json").read_text())
    standard["needs"] = ["agent.tools/v1"]
    standard["needs_skills"] = {"agent.tools/v1": ["decoys"]}
    shutil.copytree(source / "data", catalogue / "data")
    (catalogue / "standard.json").write_text(json.dumps(standard))
    fit = json.loads(run_cli(["fit", "office", "--json"], {**nullius_env, "NULLIUS_CATALOGUE": str(tmp_path / "catalogue")}, in_process=True).stdout)
    assert fit["fits"] == ["claude", "codex", "fast-agent", "gemini", "kilo", "kimi", "opencode", "qwen", "reference",
                           "vibe"]  # those whose proofs show decoys
    refused = {r["participant"]: r["reasons"] for r in fit["refused"]}
    assert refused["copilot"] == ["missing port agent.tools/v1"]  # Copilot's ACP mode takes no stdio MCP server
