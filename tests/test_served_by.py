"""Serving pins (`--served-by`, a definition's own) through the fake model's OpenRouter mode, end to end through the relay.

The fake model plays OpenRouter: each model served by several providers, a
pin honoured or refused with a 404, routing facts when asked. Everything else
is real: the run, the relay on every route, the records.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import ROOT

from nullius_core.testing import run_cli

CATALOGUE = ROOT / "tests" / "fixtures" / "catalogue"
KEY = "sk-or-v1-upstream-held-by-the-relay-0123456789"
ENDPOINTS = [{"slug": "deepinfra/fp8", "name": "DeepInfra"}, {"slug": "anthropic", "name": "Anthropic"},
             {"slug": "google-vertex", "name": "Google"}]
WORDS = [{"when": {"contains": f"Say {w}"}, "reply": {"text": w}} for w in ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot")]


def openrouter(**extra) -> dict:
    return {"rules": WORDS, "openrouter": {"models": {"fake-1": ENDPOINTS}, **extra}}


@pytest.fixture
def env(nullius_env, tmp_path):
    catalogue = tmp_path / "catalogue"
    shutil.copytree(CATALOGUE, catalogue)
    return {**nullius_env, "NULLIUS_CATALOGUE": str(catalogue), "NULLIUS_JOBS_DIR": str(tmp_path / "jobs"), "OPENROUTER_API_KEY": KEY,
            "OPENAI_COMPATIBLE_API_KEY": KEY}


def run_agent(env, fake_model, name, *extra, provider="openrouter"):
    return run_cli(["run", "faulty", "scripted", "--model", "fake-1", "--provider", provider, "--base-url", fake_model.openai_base_url,
                    "--unsandboxed", "--job-name", name, *extra], env)


def calls(job: Path) -> list[dict]:
    return [json.loads(line) for path in sorted(job.glob("*/agent/calls.jsonl")) for line in path.read_text().splitlines()]


def test_a_pin_goes_on_every_call_and_the_records_say_it_held(env, fake_model, tmp_path):
    fake_model.use(openrouter())
    ran = run_agent(env, fake_model, "pinned", "--limit", "3", "--served-by", "anthropic")
    assert ran.code == 0, ran.output
    job = tmp_path / "jobs" / "pinned"
    sent = [r for r in fake_model.requests if r.api == "chat"]
    assert len(sent) == 3
    for request in sent:
        assert request.body["provider"] == {"order": ["anthropic"], "allow_fallbacks": False}
        assert request.headers["x-openrouter-metadata"] == "enabled"  # the routing facts, asked
    recorded = calls(job)
    assert len(recorded) == 3
    for call in recorded:
        assert call["routing_sent"] == {"order": ["anthropic"], "allow_fallbacks": False}
        assert call["served_by"] == "Anthropic" and call["held"] is True
    config = json.loads((job / "config.json").read_text())["standard"]
    assert config["served_by"] == {"fake-1": {"order": ["anthropic"], "source": "--served-by"}}
    for trial in job.glob("*/result.json"):
        served = json.loads(trial.read_text())["standard"]["served"]
        assert served == {"answered": 1, "by_provider": {"Anthropic": 1},
                          "pinned": {"fake-1": {"order": ["anthropic"], "source": "--served-by", "answered": 1, "held": True}}}
    summary = json.loads((job / "result.json").read_text())["standard"]["served"]
    assert summary["by_provider"] == {"Anthropic": 3} and summary["pinned"]["fake-1"]["held"] is True


def test_without_a_pin_a_request_goes_on_as_before(env, fake_model, tmp_path):
    fake_model.use(openrouter())
    ran = run_agent(env, fake_model, "free", "--limit", "1")
    assert ran.code == 0, ran.output
    [request] = [r for r in fake_model.requests if r.api == "chat"]
    assert "provider" not in request.body and "x-openrouter-metadata" not in request.headers
    [call] = calls(tmp_path / "jobs" / "free")
    assert "routing_sent" not in call and "held" not in call
    assert call["served_by"] == "DeepInfra"  # OpenRouter names its provider all the same: counted, nothing to hold
    config = json.loads((tmp_path / "jobs" / "free" / "config.json").read_text())["standard"]
    assert config["served_by"] is None


def test_a_provider_that_ignores_the_pin_reads_as_not_held_and_a_name_not_its_slug_as_unknown(env, fake_model, tmp_path):
    fake_model.use(openrouter(ignore_pins=True))  # DeepInfra answers whatever the pin says
    ran = run_agent(env, fake_model, "missed", "--limit", "2", "--served-by", "fake-1=anthropic")
    assert ran.code == 0, ran.output
    assert {c["held"] for c in calls(tmp_path / "jobs" / "missed")} == {False}
    summary = json.loads((tmp_path / "jobs" / "missed" / "result.json").read_text())["standard"]["served"]
    assert summary["pinned"]["fake-1"]["held"] is False
    # Google serves google-vertex: its name is not its slug, so whether the pin held cannot be told, never a miss
    fake_model.use(openrouter())
    ran = run_agent(env, fake_model, "vertex", "--limit", "2", "--served-by", "google-vertex")
    assert ran.code == 0, ran.output
    assert {(c["served_by"], c["held"]) for c in calls(tmp_path / "jobs" / "vertex")} == {("Google", None)}
    summary = json.loads((tmp_path / "jobs" / "vertex" / "result.json").read_text())["standard"]["served"]
    assert summary["pinned"]["fake-1"]["held"] is None


def test_a_pin_no_endpoint_serves_fails_each_unit_and_stops_the_run_after_three(env, fake_model, tmp_path):
    fake_model.use(openrouter())
    ran = run_agent(env, fake_model, "nowhere", "--limit", "6", "-j", "1", "--served-by", "together")
    assert ran.code == 1, ran.output  # stopped
    job = tmp_path / "jobs" / "nowhere"
    results = [json.loads(p.read_text()) for p in sorted(job.glob("*/result.json"))]
    assert len(results) == 3  # the fourth unit never started
    for result in results:
        assert result["exception_info"]["exception_type"] == "ApiProviderRouteError"
        assert "no endpoint of its pin (together) serves fake-1" in result["exception_info"]["exception_message"]
        assert "No allowed providers are available" in result["exception_info"]["exception_message"]  # the provider's words
    summary = json.loads((job / "result.json").read_text())["standard"]
    assert summary["state"] == "stopped" and "ApiProviderRouteError" in summary["reason"]
    assert "stopped:" in ran.stderr


@pytest.mark.parametrize("args,why", [
    (["--provider", "openai-compatible", "--served-by", "anthropic"], "provider 'openai-compatible' routes no model to several providers"),
    (["--served-by", "other-model=anthropic"], "the run never sends 'other-model'"),
    (["--served-by", "Anthropic"], "Anthropic is not a provider slug"),
    (["--served-by", "anthropic,anthropic"], "a slug is given twice"),
    (["--served-by", "anthropic", "--served-by", "fake-1=deepinfra"], "model 'fake-1' is pinned twice"),
])
def test_a_pin_the_run_cannot_honour_is_refused_before_any_unit(env, fake_model, tmp_path, args, why):
    provider = args[1] if args[0] == "--provider" else "openrouter"
    extra = args[2:] if args[0] == "--provider" else args
    ran = run_agent(env, fake_model, "refused", *extra, provider=provider)
    assert ran.code == 2 and why in ran.stderr, ran.output
    assert not (tmp_path / "jobs" / "refused").exists() and fake_model.requests == []


def test_a_control_is_refused_a_pin_on_a_model_it_never_calls(env, fake_model, tmp_path):
    ran = run_cli(["run", "faulty", "nop", "--served-by", "fake-1=anthropic", "--job-name", "n"], env)
    assert ran.code == 2 and "nop calls no model here" in ran.stderr, ran.output


def test_a_definitions_pins_join_the_runs_and_win_for_their_model(env, fake_model, tmp_path):
    """The Original's models and the official judge go to the providers the definition names, on their own routes."""
    talk = Path(env["NULLIUS_CATALOGUE"]) / "benchmarks" / "talk" / "standard.json"
    standard = json.loads(talk.read_text())
    standard["setups"]["original"]["providers"] = {"openrouter": ""}
    standard["setups"]["original"]["pin"] = {"paper-model": ["anthropic"]}
    standard["score"]["judge"]["pin"] = ["google-vertex"]
    talk.write_text(json.dumps(standard))
    fake_model.use({"rules": [{"when": {"model": "sim-official"}, "reply": {"text": "Hello, I am the user."}},
                              {"when": {"model": "judge-official"}, "reply": {"text": "PASS"}}],
                    "default": {"text": "The upstream's own answer."}, "openrouter": {"default": ENDPOINTS}})
    ran = run_cli(["run", "talk", "original", "--model", "paper-model", "--provider", "openrouter", "--base-url", fake_model.openai_base_url,
                   "--served-by", "judge-official=deepinfra", "--served-by", "sim-official=deepinfra/fp8", "--job-name", "orig", "-j", "1"], env)
    assert ran.code == 0, ran.output
    job = tmp_path / "jobs" / "orig"
    config = json.loads((job / "config.json").read_text())["standard"]
    assert config["served_by"] == {"judge-official": {"order": ["google-vertex"], "source": "score.judge.pin"},  # the definition's wins
                                   "sim-official": {"order": ["deepinfra/fp8"], "source": "--served-by"},
                                   "paper-model-v2": {"order": ["anthropic"], "source": "setups.original.pin"}}  # the model sent
    routed = {r.body["model"]: r.body["provider"]["order"] for r in fake_model.requests}
    assert routed == {"paper-model-v2": ["anthropic"], "sim-official": ["deepinfra/fp8"], "judge-official": ["google-vertex"]}
    served = json.loads((job / "u0000" / "result.json").read_text())["standard"]["served"]
    assert served["by_provider"] == {"Anthropic": 1, "DeepInfra": 1, "Google": 1}  # the judge's and the simulator's routes count too
    assert {m: p["held"] for m, p in served["pinned"].items()} == {"paper-model-v2": True, "sim-official": True, "judge-official": None}
    # on a provider that routes no model to several, the definition's pins have nothing to pin: left out, never refused
    plain = run_cli(["run", "talk", "nop", "--provider", "openai-compatible", "--base-url", fake_model.openai_base_url, "--job-name", "plain",
                     "--limit", "1"], env)
    assert plain.code == 0, plain.output
    assert json.loads((tmp_path / "jobs" / "plain" / "config.json").read_text())["standard"]["served_by"] is None


def test_agent_shards_merge_and_shards_of_other_pins_are_refused_unless_forced(env, fake_model, tmp_path):
    fake_model.use(openrouter())
    for i, pin in ((1, "anthropic"), (2, "anthropic"), (3, "deepinfra")):
        ran = run_agent(env, fake_model, f"s{i}", "--shard", f"{min(i, 2)}/2", "--limit", "1", "--launch", "L", "--served-by", pin)
        assert ran.code == 0, ran.output
    jobs = tmp_path / "jobs"
    same = run_cli(["merge", str(jobs / "s1"), str(jobs / "s2"), "-o", str(jobs / "m12")], env)
    assert same.code == 0, same.output  # an agent's trials name their participant by its key
    other = run_cli(["merge", str(jobs / "s1"), str(jobs / "s3"), "-o", str(jobs / "m13")], env)
    assert other.code == 2 and "other serving pins" in other.stderr, other.output
    forced = run_cli(["merge", str(jobs / "s1"), str(jobs / "s3"), "-o", str(jobs / "m13"), "--force"], env)
    assert forced.code == 0, forced.output
    served = json.loads((jobs / "m13" / "result.json").read_text())["standard"]["served"]
    assert served["pinned"]["fake-1"]["held"] is None  # no one pin to hold across shards of other pins
