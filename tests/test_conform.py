"""`nullius conform`: kits run as jobs against the fake model; proofs written, failed claims taken back."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import ROOT

from nullius_core.testing import run_cli

FIXTURES = ROOT / "tests" / "fixtures"
PLAYER = "nullius_agent_reference.player"  # shipped in the reference agent's distribution
KEY = "sk-upstream-held-by-the-relay-0123456789"


@pytest.fixture
def catalogue(tmp_path):
    target = tmp_path / "catalogue"
    shutil.copytree(FIXTURES / "catalogue", target)
    return target


@pytest.fixture
def env(env_shared_installs, tmp_path, catalogue):
    return {**env_shared_installs, "NULLIUS_CATALOGUE": str(catalogue), "NULLIUS_JOBS_DIR": str(tmp_path / "jobs"), "OPENAI_COMPATIBLE_API_KEY": KEY}


def conform(env, fake_model, participant, *extra):
    return run_cli(
        ["conform", participant, "--model", "fake-model", "--provider", "openai-compatible", "--base-url", fake_model.openai_base_url,
         "--unsandboxed", "--json", *extra],
        env,
    )


def test_a_model_only_agent_proves_the_task_port_and_no_other(env, fake_model, catalogue):
    fake_model.use(f"{PLAYER}:respond")
    result = conform(env, fake_model, "scripted")
    assert result.code == 1, result.output  # some port not proven
    ports = {r["port"]: r for r in json.loads(result.stdout)}
    assert ports["agent.task/v1"]["proven"] and ports["agent.task/v1"]["passed"] == "3/3"
    assert not ports["agent.workspace/v1"]["proven"]  # it has no tools: no file is ever written
    assert not ports["agent.conversation/v1"]["proven"]  # it keeps no history: turn 2 finds nothing
    assert not ports["agent.tools/v1"]["proven"]  # it offers the model no tools: nothing reaches the office
    assert ports["agent.browser/v1"]["skipped"]
    proven = json.loads((catalogue / "agents" / "scripted" / "agent.json").read_text())["proven"]
    assert set(proven) == {"agent.task/v1"}
    record = proven["agent.task/v1"]
    assert record["model"] == "fake-model" and record["kit_version"] == 1 and record["backend"] == "local" and record["version"] == "1.0"
    assert (Path(env["NULLIUS_JOBS_DIR"]) / record["job"] / "result.json").exists()


def test_a_model_that_answers_wrongly_takes_the_claim_back(env, fake_model, catalogue):
    fake_model.use(f"{PLAYER}:respond_wrongly")
    result = conform(env, fake_model, "scripted", "--port", "agent.task/v1")
    assert result.code == 1
    [row] = json.loads(result.stdout)
    assert row["passed"] == "0/3" and not row["proven"]
    agent = json.loads((catalogue / "agents" / "scripted" / "agent.json").read_text())
    assert "proven" not in agent  # the fixture's earlier claim is taken back


def test_repeat_counts_each_check_and_holds_it_by_majority(env, fake_model, catalogue):
    fake_model.use(f"{PLAYER}:respond")
    result = conform(env, fake_model, "scripted", "--port", "agent.task/v1", "--repeat", "3")
    assert result.code == 0, result.output
    [row] = json.loads(result.stdout)
    assert row["repeat"] == 3 and row["checks"] == {"word-1": "3/3", "word-2": "3/3", "word-3": "3/3"}
    job = Path(env["NULLIUS_JOBS_DIR"]) / row["job"]
    assert sorted(p.name for p in job.iterdir() if p.name.startswith("word")) == [f"word-{i}r{k}" for i in (1, 2, 3) for k in (1, 2, 3)]


def test_conform_needs_consent_on_the_local_backend(env, fake_model):
    result = run_cli(["conform", "scripted", "--model", "m", "--provider", "openai-compatible", "--base-url", fake_model.openai_base_url], env)
    assert result.code == 2 and "--unsandboxed" in result.stderr
