"""Costs from the relay, the one honest meter: each call priced from its record, per trial and per job, and --max-cost.

The relay is real and the model is the scripted fake, which reports the usage
each test scripts. The expected figures are worked out here from the scripted
token counts and the test's own prices, not by Nullius's formula.
"""

from __future__ import annotations

import json
from pathlib import Path

import anthropic
import openai
import pytest
import structlog
from conftest import ROOT
from relay_helpers import RelayThread

from nullius_core.relay.meter import CostMeter
from nullius_core.relay.prices import CORE_FILE, PriceBook
from nullius_core.relay.usage import agent_context
from nullius_core.testing import run_cli

CATALOGUE = ROOT / "tests" / "fixtures" / "catalogue"
KEY = "sk-upstream-held-by-the-relay-0123456789"
# USD per million tokens: input, output, cache read, cache write
PRICES = {"fake-1": (2.0, 10.0, 0.5, 2.5), "fake-side": (1.0, 4.0, 0.1, 1.25)}


def price_file(path: Path, prices: dict = PRICES) -> Path:
    entries = {name: {"input": p[0], "output": p[1], "cache_read": p[2], "cache_write": p[3], "as_of": "2026-12-01", "source": "this test"}
               for name, p in prices.items()}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"version": 1, "prices": entries}))
    return path


def served(model: str, tokens_in: int, cached: int, written: int, out: int) -> float:
    p = PRICES[model]
    return ((tokens_in - cached - written) * p[0] + cached * p[2] + written * p[3] + out * p[1]) / 1e6


def first_run(model: str, tokens_in: int, out: int) -> float:
    p = PRICES[model]
    return (tokens_in * p[0] + out * p[1]) / 1e6


@pytest.fixture
def env(nullius_env, tmp_path):
    env = {**nullius_env, "NULLIUS_CATALOGUE": str(CATALOGUE), "NULLIUS_JOBS_DIR": str(tmp_path / "jobs"), "OPENAI_COMPATIBLE_API_KEY": KEY}
    price_file(Path(env["XDG_CONFIG_HOME"]) / "nullius" / "prices.json")
    return env


def run_agent(env, fake_model, model="fake-1", mode="ask", *extra):
    args = ["run", "faulty", "scripted", "--model", model, "--provider", "openai-compatible", "--base-url", fake_model.openai_base_url,
            "--unsandboxed", "--option", f"mode={mode}", *extra]
    return run_cli(args, env)


def trials(job: Path) -> dict[str, dict]:
    return {p.parent.name: json.loads(p.read_text()) for p in job.glob("*/result.json")}


# --- the catalogue ---------------------------------------------------------------


def test_the_core_catalogue_prices_the_agents_models_each_with_its_date_and_source():
    book = PriceBook.load()
    named = {  # what the agents' definitions and READMEs name, and the embedded model
        ("claude-sonnet-4-6", "anthropic"), ("claude-opus-4-6", "anthropic"), ("claude-haiku-4-5", "anthropic"),
        ("claude-sonnet-4-5-20250929", "anthropic"), ("gpt-5.4", "openai"), ("gpt-5.3-codex", "openai"), ("gpt-5-mini", "openai"),
    }
    for model, provider in named:
        priced = book.lookup(model, provider)
        assert priced is not None, model
        assert priced.price.source.startswith("https://") and priced.price.as_of == "2026-12-01"
        assert priced.price.input > 0 and priced.price.output > priced.price.input and priced.price.cache_read < priced.price.input
    assert book.lookup("claude-sonnet-4-6", "openai-compatible") is None  # Anthropic's bill, not a gateway's
    embedded = book.lookup("smollm2-135m-instruct", "embedded")
    assert embedded is not None and embedded.price.source == "embedded, runs on this machine"
    assert (embedded.price.input, embedded.price.output, embedded.price.cache_read, embedded.price.cache_write) == (0, 0, 0, 0)
    assert json.loads(CORE_FILE.read_text())["version"] == 1


def test_a_users_prices_lay_over_the_cores(tmp_path):
    user = price_file(tmp_path / "prices.json", {"claude-sonnet-4-6": (1.0, 2.0, 0.1, 1.5)})
    priced = PriceBook.load(user).lookup("claude-sonnet-4-6", "openai-compatible")  # the user's entry says no provider: any
    assert priced is not None and priced.price.input == 1.0 and priced.file == user
    assert PriceBook.load(user).lookup("claude-haiku-4-5", "anthropic").file == CORE_FILE


def test_a_malformed_price_file_refuses_the_run_naming_the_file_the_entry_and_the_field(env, fake_model):
    bad = price_file(Path(env["XDG_CONFIG_HOME"]) / "nullius" / "prices.json")
    data = json.loads(bad.read_text())
    data["prices"]["fake-1"]["cache_read"] = "0.5"
    bad.write_text(json.dumps(data))
    result = run_agent(env, fake_model, "fake-1", "ask", "--limit", "1", "--job-name", "bad")
    assert result.code == 2, result.output
    assert f'{bad}: $.prices["fake-1"].cache_read: expected a number, found the string "0.5"' in result.stderr
    assert "Traceback" not in result.stderr and not (Path(env["NULLIUS_JOBS_DIR"]) / "bad").exists()


# --- the relay prices each call ------------------------------------------------------


def test_each_call_is_priced_from_its_record_cache_reads_and_writes_at_their_own_rates(fake_model, nullius_env, tmp_path):
    relay = RelayThread(fake_model.openai_base_url, tmp_path / "relay", nullius_env)
    relay.relay.meter = CostMeter(PriceBook.load(price_file(tmp_path / "prices.json")), "openai-compatible")
    try:
        fake_model.use({"rules": [
            {"when": {"model_regex": "^fake-1$"}, "reply": {"text": "a", "usage": {"input_tokens": 1000, "cached_tokens": 600, "cache_write_tokens": 300, "output_tokens": 50}}},
            {"when": {"model_regex": "^fake-side$"}, "reply": {"text": "b", "usage": {"input_tokens": 400, "cached_tokens": 100, "output_tokens": 20}}},
        ], "default": {"text": "c", "usage": {"input_tokens": 10, "output_tokens": 1}}})
        messages = anthropic.Anthropic(base_url=relay.url()[: -len("/v1")], api_key=relay.token(), max_retries=0)
        chat = openai.OpenAI(base_url=relay.url(), api_key=relay.token(), max_retries=0)
        msgs = [{"role": "user", "content": "hi"}]
        messages.messages.create(model="fake-1", max_tokens=50, messages=msgs)  # Messages reports cache writes
        chat.chat.completions.create(model="fake-side", messages=msgs)
        with structlog.testing.capture_logs() as logs:
            chat.chat.completions.create(model="unpriced-model", messages=msgs)
            chat.chat.completions.create(model="unpriced-model", messages=msgs)
            records = relay.records()
    finally:
        relay.close()
    first, side, unpriced = records[0], records[1], records[2:]
    assert first["usage"] == {"input": 1000, "cached_input": 600, "cache_write": 300, "output": 50}
    assert first["cost"]["as_served_usd"] == pytest.approx(served("fake-1", 1000, 600, 300, 50))
    assert first["cost"]["first_run_usd"] == pytest.approx(first_run("fake-1", 1000, 50))
    assert first["cost"]["as_served_usd"] < first["cost"]["first_run_usd"]  # the cache's discount, in the served figure only
    assert first["cost"]["priced_as"] == "fake-1" and first["cost"]["price_as_of"] == "2026-12-01"
    assert side["cost"]["as_served_usd"] == pytest.approx(served("fake-side", 400, 100, 0, 20))
    assert [c["cost"]["as_served_usd"] for c in unpriced] == [None, None]  # never 0
    assert [c["cost"]["first_run_usd"] for c in unpriced] == [None, None]
    warned = [e for e in logs if e.get("model") == "unpriced-model"]
    assert len(warned) == 1 and warned[0]["log_level"] == "warning"  # once per model
    context = agent_context(records[:2])
    assert context["cost_usd"] == pytest.approx(served("fake-1", 1000, 600, 300, 50) + served("fake-side", 400, 100, 0, 20))
    assert context["model_usage"]["fake-side"]["cost_usd"] == pytest.approx(served("fake-side", 400, 100, 0, 20))
    assert agent_context(records)["cost_usd"] is None  # one unknown call: the sum is unknown, not smaller
    assert agent_context(records)["model_usage"]["fake-1"]["cost_usd"] == pytest.approx(served("fake-1", 1000, 600, 300, 50))


# --- per trial, per job, in Harbor's fields --------------------------------------------


USAGE = {"input_tokens": 1000, "cached_tokens": 600, "output_tokens": 100}


def test_a_runs_cost_per_trial_and_per_job_in_result_json_and_harbors_fields(env, fake_model, tmp_path):
    fake_model.use({"default": {"text": "alpha", "usage": USAGE}})
    result = run_agent(env, fake_model, "fake-1", "costly", "--limit", "3", "--job-name", "c")
    assert result.code == 0, result.output
    job = tmp_path / "jobs" / "c"
    found = trials(job)
    one = served("fake-1", 1000, 600, 0, 100)
    for trial in found.values():
        calls = [json.loads(line) for line in (job / trial["trial_name"] / "agent" / "calls.jsonl").read_text().splitlines()]
        assert len(calls) == 1 and calls[0]["cost"]["as_served_usd"] == pytest.approx(one)
        agent = trial["agent_result"]
        assert agent["cost_usd"] == pytest.approx(one)  # Harbor's field: as served
        assert agent["model_usage"]["openai-compatible/fake-1"]["cost_usd"] == pytest.approx(one)
        assert agent["metadata"]["cost"]["first_run_usd"] == pytest.approx(first_run("fake-1", 1000, 100))
        assert agent["metadata"]["cost"]["agent_reported_usd"] == 0.5  # the agent's own word, beside, as a cross-check
        trajectory = json.loads((job / trial["trial_name"] / "agent" / "trajectory.json").read_text())
        assert trajectory["final_metrics"]["total_cost_usd"] == pytest.approx(one)
    outcome = json.loads((job / "result.json").read_text())
    assert outcome["stats"]["cost_usd"] == pytest.approx(3 * one)
    assert (outcome["stats"]["n_input_tokens"], outcome["stats"]["n_cache_tokens"], outcome["stats"]["n_output_tokens"]) == (3000, 1800, 300)
    cost = outcome["standard"]["cost"]
    assert cost["as_served_usd"] == pytest.approx(3 * one) and cost["first_run_usd"] == pytest.approx(3 * first_run("fake-1", 1000, 100))
    assert cost["unknown_trials"] == [] and cost["priced_as"] == {"fake-1": "2026-12-01"} and cost["agent_reported_usd"] == 1.5


def test_an_unpriced_model_is_cost_null_and_one_warning_never_zero(env, fake_model, tmp_path):
    fake_model.use({"default": {"text": "alpha", "usage": USAGE}})
    result = run_agent(env, fake_model, "fake-unpriced", "ask", "--limit", "3", "--job-name", "u")
    assert result.code == 0, result.output
    assert result.stderr.count("cost unknown") == 1 and "model=fake-unpriced" in result.stderr
    job = tmp_path / "jobs" / "u"
    assert all(t["agent_result"]["cost_usd"] is None for t in trials(job).values())
    outcome = json.loads((job / "result.json").read_text())
    assert outcome["stats"]["cost_usd"] is None and outcome["stats"]["n_input_tokens"] == 3000
    assert sorted(outcome["standard"]["cost"]["unknown_trials"]) == ["u0000", "u0001", "u0002"]


# --- --max-cost -------------------------------------------------------------------------


def test_max_cost_refuses_an_unpriced_model_before_any_unit(env, fake_model, tmp_path):
    result = run_agent(env, fake_model, "fake-unpriced", "ask", "--max-cost", "1", "--job-name", "m")
    assert result.code == 2, result.output
    assert "--max-cost 1: no price for fake-unpriced (provider openai-compatible)" in result.stderr
    assert not (tmp_path / "jobs" / "m").exists() and fake_model.requests == []
    control = run_cli(["run", "faulty", "oracle", "--max-cost", "1", "--job-name", "o"], env)
    assert control.code == 2 and "--max-cost needs a run that calls a model" in control.stderr


def test_max_cost_stops_the_run_cancels_units_in_flight_and_the_job_resumes(env, fake_model, tmp_path):
    # u0000's call costs $2 at once; u0001's waits; u0002 would start only when one of them ends
    fake_model.use({"rules": [{"when": {"contains": "Say alpha"}, "reply": {"text": "alpha", "usage": {"input_tokens": 1_000_000, "output_tokens": 1}}}],
                    "default": {"text": "slow", "fault": {"first_byte_delay": 120}}})
    result = run_agent(env, fake_model, "fake-1", "ask", "-j", "2", "--limit", "3", "--max-cost", "0.5", "--job-name", "s")
    assert result.code == 1, result.output  # stopped for a reason, as a provider's stop is: not a Ctrl-C
    assert "stopped: --max-cost 0.5: the relay's running cost as served, $2.000010, passed the limit of $0.5" in result.stderr
    job = tmp_path / "jobs" / "s"
    found = trials(job)
    assert "u0002" not in found  # no new unit started
    assert found["u0001"]["exception_info"]["exception_type"] == "CancelledError"
    assert "--max-cost 0.5" in found["u0001"]["exception_info"]["exception_message"]
    outcome = json.loads((job / "result.json").read_text())
    assert outcome["standard"]["state"] == "stopped" and outcome["standard"]["cost"]["stopped"].startswith("--max-cost 0.5")
    assert outcome["standard"]["reason"].startswith("--max-cost 0.5")
    assert outcome["standard"]["cost"]["max_cost_usd"] == 0.5 and outcome["stats"]["n_pending_trials"] >= 1
    fake_model.use({"default": {"text": "bravo", "usage": {"input_tokens": 10, "output_tokens": 1}}})
    resumed = run_cli(["run", "--resume", str(job)], env)  # the job's record consents to nothing, and sends no key
    assert resumed.code == 2 and f"give --base-url {fake_model.openai_base_url} to send this machine's key" in resumed.stderr
    resumed = run_cli(["run", "--resume", str(job), "--base-url", fake_model.openai_base_url], env)
    assert resumed.code == 2 and "give --unsandboxed to consent" in resumed.stderr, resumed.output
    resumed = run_cli(["run", "--resume", str(job), "--base-url", fake_model.openai_base_url, "--unsandboxed"], env)
    assert resumed.code == 0, resumed.output
    assert set(trials(job)) == {"u0000", "u0001", "u0002"}
    assert all(t.get("exception_info") is None for t in trials(job).values())
