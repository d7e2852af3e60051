"""Runs in a real browser: a long run followed live, cancelled from the page, listed again by a restarted app and resumed; the cost so far."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from app_world import App
from builder_world import (  # noqa: F401 - pytest finds fixtures by name
    choose_benchmark,
    job_row,
    jobs_dir,
    look,
    plan_settled,
    world,
    world_env,
)

ENDS = 300_000  # ms: a run of twelve slow units on a busy machine


def test_a_long_run_is_cancelled_from_the_page_and_resumed_after_the_app_restarts(world, world_env, page, tmp_path):
    choose_benchmark(page, world, "faulty")
    page.fill("#name", "slow")
    page.check('input[name="participants"][value="oracle"]')
    page.select_option("#bo-mode", "slow")
    page.fill("#bo-delay", "2")  # each unit's setup takes 2 s
    page.fill("#concurrency", "2")
    plan_settled(page)
    page.click("#run-recipe")
    page.wait_for_selector("#started li[data-run]")

    page.goto(world.url + "/runs")
    row = job_row(page, "slow-test-oracle")
    some = re.compile(r"^([1-9]|1[01]) of 12$")  # units counted as they end, the run not over
    row.locator('[data-field="done"]', has_text=some).wait_for(timeout=ENDS)
    section = page.locator("section.run", has=row)
    look(page, tmp_path, "runs-slow-running")
    section.locator("button.cancel").click()
    section.locator('header [data-field="state"]:text("cancelled")').wait_for(timeout=ENDS)
    assert row.locator('[data-field="state"]').inner_text() == "cancelled"
    assert "cancelled; finish it with: nullius run --resume" in section.locator('[data-field="said"]').inner_text()
    done = int(row.locator('[data-field="done"]').inner_text().split(" of ")[0])
    assert 0 < done < 12
    assert row.locator("[data-resume]").is_visible()
    job = jobs_dir(world) / "slow-test-oracle"
    assert json.loads((job / "result.json").read_text())["standard"]["state"] == "cancelled"
    look(page, tmp_path, "runs-slow-cancelled")

    # The app stops and starts again: what it started is still listed, and the job is resumed from the page.
    world.stop()
    again = App(world_env, tmp_path)
    try:
        page.goto(again.url + "/runs")
        row = job_row(page, "slow-test-oracle")
        assert page.locator("section.run", has=row).locator('header [data-field="state"]').inner_text() == "cancelled"
        assert row.locator('[data-field="state"]').inner_text() == "cancelled"
        row.locator("[data-resume]").click()
        resumed = page.locator("section.run:has(header strong:text-is(\"resume slow-test-oracle\"))")
        resumed.wait_for()
        assert f"nullius run --resume {job}" in resumed.locator("pre.command").inner_text()
        resumed.locator('header [data-field="state"]:text("finished")').wait_for(timeout=ENDS)
        row = resumed.locator('tr[data-job="slow-test-oracle"]')
        assert row.locator('[data-field="done"]').inner_text() == "12 of 12"
        assert row.locator('[data-field="passed"]').inner_text() == "12"
        assert row.locator("[data-resume]").is_hidden()
        look(page, tmp_path, "runs-slow-resumed")
    finally:
        again.stop()
    result = json.loads((job / "result.json").read_text())
    assert result["standard"]["state"] == "finished" and result["standard"]["passed"] == 12
    assert len(list((job / ".work" / "earlier").iterdir())) >= 1  # the cancelled trials ran again, their first records kept


PRICE = {"input": 2.0, "output": 10.0, "cache_read": 0.5, "cache_write": 2.5}  # USD per million tokens
USAGE = {"input_tokens": 1000, "cached_tokens": 600, "output_tokens": 100}


@pytest.fixture
def priced_env(world_env: dict[str, str]) -> dict[str, str]:
    """The world, with a price for the fake model and the key of the provider that reaches it (the CLI's, never a page's)."""
    prices = Path(world_env["XDG_CONFIG_HOME"]) / "nullius" / "prices.json"
    prices.parent.mkdir(parents=True, exist_ok=True)
    prices.write_text(json.dumps({"version": 1, "prices": {"fake-1": {**PRICE, "as_of": "2026-12-01", "source": "this test"}}}))
    return {**world_env, "OPENAI_COMPATIBLE_API_KEY": "sk-held-by-the-relay-0123456789"}


def test_the_cost_so_far_is_the_relays_as_served(priced_env, fake_model, page, tmp_path):
    fake_model.use({"default": {"text": "alpha", "usage": USAGE}})
    app = App(priced_env, tmp_path)
    try:
        choose_benchmark(page, app, "faulty")
        page.fill("#name", "priced")
        page.check('input[name="participants"][value="scripted"]')
        page.fill("#model", "fake-1")
        page.select_option("#provider", "openai-compatible")
        page.fill("#base-url", fake_model.openai_base_url)
        page.fill("#limit", "3")
        page.fill("#concurrency", "1")
        plan_settled(page)
        page.check('input[name="unsandboxed"]')
        plan_settled(page)
        page.click("#run-recipe")
        page.wait_for_selector("#started li[data-run]")
        page.goto(app.url + "/runs")
        section = page.locator("section.run:has(header strong:text-is(\"run priced-test-scripted\"))")
        section.locator('header [data-field="state"]:text("finished")').wait_for(timeout=ENDS)
        one = ((1000 - 600) * PRICE["input"] + 600 * PRICE["cache_read"] + 100 * PRICE["output"]) / 1e6  # worked out here
        row = job_row(page, "priced-test-scripted")
        assert row.locator('[data-field="cost"]').inner_text() == f"${3 * one:.4f}"
        assert row.locator('[data-field="done"]').inner_text() == "3 of 3"
        assert "sk-held-by-the-relay" not in page.content()
        look(page, tmp_path, "runs-priced")
    finally:
        app.stop()


def test_a_name_from_a_request_stays_in_its_folder_and_a_missing_benchmark_is_said_in_the_clis_words(world, page):
    from test_server import request, token_of

    token = token_of(world)
    own = {"Origin": world.url, "Content-Type": "application/json", "X-Nullius-Token": token}
    status, _ = request(world.url + "/runs/resume", "POST", json.dumps({"job": "../../config"}).encode(), own)
    assert status == 404
    status, _ = request(world.url + "/runs/resume", "POST", json.dumps({"job": "/etc"}).encode(), own)
    assert status == 404
    assert request(world.url + "/build?recipe=../../../etc/passwd")[0] == 404
    assert request(world.url + "/runs/..%2f..%2fx.json")[0] == 404
    refused = request(world.url + "/build/run", "POST", b"{}", {"Origin": world.url, "Content-Type": "application/json"})
    assert refused[0] == 403  # no form token: nothing starts
    page.goto(world.url + "/build?benchmark=nosuch")
    said = page.inner_text("pre.failed")
    assert said.startswith("nullius fit nosuch --json: no benchmark named 'nosuch'") and "Traceback" not in page.content()
