"""A benchmark's own options: which apply (setups, when), and what a chosen value needs (its own relay for embeddings, a host)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import ROOT

from nullius_core.testing import run_cli

CATALOGUE = ROOT / "tests" / "fixtures" / "catalogue"
KEY = "sk-openai-held-by-the-benchmarks-relay-0123456789"


@pytest.fixture
def env(nullius_env, tmp_path):
    catalogue = tmp_path / "catalogue"
    shutil.copytree(CATALOGUE, catalogue)
    return {**nullius_env, "NULLIUS_CATALOGUE": str(catalogue), "NULLIUS_JOBS_DIR": str(tmp_path / "jobs")}


def options(env, **added) -> None:
    """Add options to the faulty fixture's standard.json."""
    path = Path(env["NULLIUS_CATALOGUE"]) / "benchmarks" / "faulty" / "standard.json"
    standard = json.loads(path.read_text())
    standard["options"].update(added)
    path.write_text(json.dumps(standard))


RETRIEVAL = {"summary": "Whether setup embeds the question.", "values": ["none", "embed"], "default": "none",
             "needs": {"embed": {"embeddings": "text-embedding-3-small"}}}


def test_a_value_that_embeds_gets_the_runs_own_relay_before_the_driver_its_cost_the_benchmarks(env, fake_model, tmp_path):
    options(env, retrieval=RETRIEVAL)
    env = {**env, "OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": fake_model.openai_base_url}
    ran = run_cli(["run", "faulty", "oracle", "--limit", "2", "--bench-option", "retrieval=embed", "--job-name", "embeds"], env)
    assert ran.code == 0, ran.output
    job = tmp_path / "jobs" / "embeds"
    assert "stage=relay role=benchmark provider=openai model=text-embedding-3-small" in ran.stderr
    sent = [r for r in fake_model.requests if r.api == "embeddings"]
    assert len(sent) == 2 and {r.body["model"] for r in sent} == {"text-embedding-3-small"}  # pinned on its route
    assert {r.headers["authorization"] for r in sent} == {f"Bearer {KEY}"}  # the key is the relay's to put in
    for trial in ("u0000", "u0001"):
        detail = json.loads((job / trial / "verifier" / "score.json").read_text())["detail"]
        assert detail["embedded"]["dimensions"] == 8 and detail["embedded"]["base_url"].endswith("/benchmark/v1")
    calls = [json.loads(line) for line in (job / ".work" / "relay-benchmark" / "calls.jsonl").read_text().splitlines()]
    assert [(c["kind"], c["api"], c["model_sent"], c["status"]) for c in calls] == [("benchmark", "openai-embeddings", "text-embedding-3-small", 200)] * 2
    config = json.loads((job / "config.json").read_text())["standard"]
    assert config["benchmark_relay"] == {"provider": "openai", "model": "text-embedding-3-small", "record": ".work/relay-benchmark"}
    routes = json.loads((job / "result.json").read_text())["standard"]["routes"]
    assert routes["benchmark"]["calls"] == 2 and routes["benchmark"]["input_tokens"] > 0
    assert [p for p in job.rglob("*") if p.is_file() and KEY in p.read_text(errors="replace")] == []
    # without the OpenAI provider's key the run is refused before any unit, and leaves no job
    env.pop("OPENAI_API_KEY")
    refused = run_cli(["run", "faulty", "oracle", "--bench-option", "retrieval=embed", "--job-name", "nokey"], env)
    assert refused.code == 2 and "wants the OpenAI provider" in refused.stderr and "OPENAI_API_KEY" in refused.stderr
    assert not (tmp_path / "jobs" / "nokey").exists()


def test_the_benchmarks_own_mcp_servers_get_its_relay_as_the_driver_does(env, fake_model, tmp_path):
    options(env, retrieval=RETRIEVAL)
    path = Path(env["NULLIUS_CATALOGUE"]) / "benchmarks" / "faulty" / "standard.json"
    standard = json.loads(path.read_text())
    standard["mcp_servers"] = {"lookup": {"command": ["python3", "-c", "pass"], "summary": "A lookup that embeds."}}
    path.write_text(json.dumps(standard))
    fake_model.use({"rules": [{"when": {"contains": "Say alpha"}, "reply": {"text": "alpha"}}]})
    env = {**env, "OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": fake_model.openai_base_url, "OPENAI_COMPATIBLE_API_KEY": "sk-agents-key-0123456789abcdef"}
    ran = run_cli(["run", "faulty", "scripted", "--model", "fake-1", "--provider", "openai-compatible", "--base-url", fake_model.openai_base_url,
                   "--unsandboxed", "--limit", "1", "--bench-option", "retrieval=embed", "--job-name", "mcp"], env)
    assert ran.code == 0, ran.output
    acp = [json.loads(line) for line in (tmp_path / "jobs" / "mcp" / "u0000" / "agent" / "acp.jsonl").read_text().splitlines()]
    [new] = [m["msg"] for m in acp if m["dir"] == "out" and m["msg"].get("method") == "session/new"]
    [server] = new["params"]["mcpServers"]
    given = {e["name"]: e["value"] for e in server["env"]}
    assert given["OPENAI_BASE_URL"].endswith("/benchmark/v1") and given["OPENAI_API_KEY"] != KEY


def test_a_value_that_needs_the_host_refuses_the_run_saying_the_install_or_the_hardware(env, tmp_path):
    options(env, tooling={"summary": "Which tool checks the answer.", "values": ["plain", "special", "gpu"], "default": "plain",
                          "needs": {"special": {"host": {"summary": "the special checker", "check": ["no-such-checker-xyz"],
                                                         "install": {"apt": ["special-checker"], "npm": ["special-checker-js@1.0.0"]}}},
                                    "gpu": {"host": {"summary": "the model runs on a GPU", "gpu": "cuda"}}}})
    plain = run_cli(["run", "faulty", "oracle", "--limit", "1", "--job-name", "plain"], env)
    assert plain.code == 0, plain.output  # the default value needs nothing
    special = run_cli(["run", "faulty", "oracle", "--bench-option", "tooling=special", "--job-name", "special"], env)
    assert special.code == 2, special.output
    assert ("faulty with tooling=special needs no-such-checker-xyz on PATH (the special checker); install with: "
            "apt-get install -y special-checker && npm install -g special-checker-js@1.0.0") in special.stderr
    gpu = run_cli(["run", "faulty", "oracle", "--bench-option", "tooling=gpu", "--job-name", "gpu"], env)
    assert gpu.code == 2 and "faulty with tooling=gpu needs a CUDA GPU (the model runs on a GPU); nvidia-smi finds none" in gpu.stderr
    assert "hardware, which no command installs" in gpu.stderr
    assert not (tmp_path / "jobs" / "special").exists() and not (tmp_path / "jobs" / "gpu").exists()


def test_an_option_applies_only_under_its_when_and_its_setups(env, tmp_path):
    options(env, depth={"summary": "How deep the slow mode sleeps.", "values": ["1", "2"], "default": "1", "when": {"mode": ["slow"]}},
            temperature={"summary": "The paper's answerer's temperature.", "pattern": "[0-9.]+", "default": "0", "setups": ["original"]})
    standard_path = Path(env["NULLIUS_CATALOGUE"]) / "benchmarks" / "faulty" / "standard.json"
    standard = json.loads(standard_path.read_text())
    standard["setups"] = {"original": {"summary": "The fixture's own answerer.", "models": ["m"]}}
    standard_path.write_text(json.dumps(standard))
    clean = run_cli(["run", "faulty", "oracle", "--limit", "1", "--job-name", "clean"], env)
    assert clean.code == 0, clean.output
    recorded = json.loads((tmp_path / "jobs" / "clean" / "config.json").read_text())["standard"]["options"]
    assert recorded == {"mode": "clean", "delay": "0.5"}  # depth only under mode=slow; temperature only in the original setup
    slow = run_cli(["run", "faulty", "oracle", "--limit", "1", "--bench-option", "mode=slow", "--bench-option", "delay=0", "--job-name", "slow"], env)
    assert slow.code == 0, slow.output
    assert json.loads((tmp_path / "jobs" / "slow" / "config.json").read_text())["standard"]["options"]["depth"] == "1"
    given = run_cli(["run", "faulty", "oracle", "--bench-option", "depth=2", "--job-name", "given"], env)
    assert given.code == 2 and "option 'depth' of faulty applies only when mode is slow (it is 'clean')" in given.stderr
    paper = run_cli(["run", "faulty", "oracle", "--bench-option", "temperature=0.5", "--job-name", "paper"], env)
    assert paper.code == 2 and "option 'temperature' of faulty is a setting of the original setup(s), not of this run's (yours)" in paper.stderr


def test_check_refuses_an_options_when_or_setups_that_name_nothing(env):
    options(env, depth={"summary": "x", "values": ["1"], "default": "1", "when": {"mode": ["sideways"]}, "setups": ["paper"]})
    checked = run_cli(["check"], env, in_process=True)
    assert checked.code == 2 and "Traceback" not in checked.output
    assert "$.options.depth.when.mode[0]: expected a value option 'mode' allows, found 'sideways'" in checked.stderr
    assert "$.options.depth.setups[0]: expected one of yours (yours, or a setup this benchmark declares), found 'paper'" in checked.stderr
