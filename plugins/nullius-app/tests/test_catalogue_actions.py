"""The catalogue's actions from their pages, in a real browser: Run control checks (prove --from-run), Prove its ports (conform --from-run).

Each is a command the app starts through its RunBook, from a recipe it
writes; the page shows what the command recorded once it ends, a failed
check as failed. A control run is handed no key unless the benchmark is
judged under the options chosen.
"""

from __future__ import annotations

import asyncio
import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from aiohttp import ClientSession
from aiohttp.test_utils import TestServer
from app_world import shot
from catalogue_world import app_dir, catalogue, catalogue_app, catalogue_env, listed, started, wait_reloaded  # noqa: F401

PLAYER = "nullius_agent_reference.player"  # the fake model's script that plays the kits


def states(page, dataset: str) -> dict[str, str]:
    rows = page.locator(f'table[data-dataset="{dataset}"] tbody tr')
    return dict(rows.evaluate_all("rows => rows.map(r => [r.dataset.check, r.dataset.state])"))


def test_run_control_checks_proves_a_benchmark_from_its_page_and_a_failed_check_shows_failed(catalogue_app, page, tmp_path):
    page.goto(f"{catalogue_app.url}/benchmarks/faulty")
    assert states(page, "test") == {"units": "not proven", "leak": "not proven", "nop": "not proven", "oracle": "not proven"}
    form = page.locator("#control-checks form")
    form.locator('input[name="dataset.test"]').check()
    form.locator("#limit").fill("3")
    form.locator("button[type=submit]").click()
    wait_reloaded(page, 'table[data-dataset="test"] tr[data-check="oracle"][data-state="passed"]')
    # every answer of faulty is under 12 characters: the leak check looks for nothing, which is not a pass
    assert states(page, "test") == {"units": "passed", "leak": "not checked", "nop": "passed", "oracle": "passed"}
    records = next(b for b in listed(catalogue_app.env)["benchmarks"] if b["ref"] == "faulty")["records"]["test"]
    oracle = page.locator('table[data-dataset="test"] tr[data-check="oracle"]')
    assert oracle.locator("td").nth(2).inner_text() == "3/3" and oracle.locator("td").nth(5).inner_text() == "3"
    assert oracle.locator("a.cat-job").get_attribute("href") == f"/jobs/{records['oracle']['job']}"
    assert (Path(catalogue_app.env["NULLIUS_JOBS_DIR"]) / records["oracle"]["job"] / "result.json").is_file()
    [record] = started(catalogue_app.env)
    assert record["title"] == "Run control checks: faulty" and record["code"] == 0
    assert record["args"][:2] == ["prove", "--from-run"]
    recipe = Path(record["args"][2])
    assert recipe.parent == app_dir(catalogue_app.env) / "recipes" / "actions"
    assert json.loads(recipe.read_text()) == {"kind": "prove", "benchmark": "faulty", "datasets": ["test"], "limit": 3}
    assert "faulty/test oracle: passed 3/3" in page.locator(".cat-started").inner_text()  # the command's own last words
    shot(page, tmp_path, "proven")

    form = page.locator("#control-checks form")
    form.locator("#limit").fill("6")
    form.locator("#option-mode").select_option("faulty")  # its oracle fails, on purpose
    form.locator("button[type=submit]").click()
    wait_reloaded(page, 'table[data-dataset="test"] tr[data-check="oracle"][data-state="failed"]')
    assert states(page, "test") == {"units": "passed", "leak": "failed", "nop": "failed", "oracle": "failed"}
    oracle = page.locator('table[data-dataset="test"] tr[data-check="oracle"]')
    assert "u0003 (OracleError)" in oracle.inner_text() and oracle.locator("td").nth(2).inner_text() == "1/6"
    assert page.locator(".cat-dshead .cat-failed").inner_text() == "a check failed"
    newest = json.loads(Path(started(catalogue_app.env)[-1]["args"][2]).read_text())
    assert newest["bench_options"] == {"mode": "faulty"} and newest["limit"] == 6
    shot(page, tmp_path, "failed")
    page.goto(f"{catalogue_app.url}/benchmarks")
    assert page.locator('tr[data-ref="faulty"] .cat-failed').all_inner_texts() == ["leak", "nop", "oracle"]  # kept until they pass
    shot(page, tmp_path, "list-failed")


def test_prove_its_ports_runs_conform_from_a_recipe_and_the_page_shows_the_proof(catalogue_app, fake_model, page, tmp_path):
    fake_model.use(f"{PLAYER}:respond")
    page.goto(f"{catalogue_app.url}/agents/scripted")
    task = page.locator('tr[data-port="agent.task/v1"]')
    assert task.get_attribute("data-state") == "offered" and task.locator("a.cat-job").count() == 0  # the fixture's own proof, no job
    prove_ports(page, fake_model.openai_base_url)
    wait_reloaded(page, 'tr[data-port="agent.task/v1"] a.cat-job')
    task = page.locator('tr[data-port="agent.task/v1"]')
    cells = task.locator("td").all_inner_texts()
    assert task.get_attribute("data-state") == "offered" and cells[2] == "3/3" and cells[5] == "fake-model" and cells[7] == "local"
    [record] = started(catalogue_app.env)
    assert record["title"] == "Prove its ports: scripted" and record["code"] == 0 and record["args"][:2] == ["conform", "--from-run"]
    recipe = json.loads(Path(record["args"][2]).read_text())
    assert recipe == {"kind": "conform", "participant": "scripted", "model": "fake-model", "provider": "openai-compatible",
                      "base_url": fake_model.openai_base_url, "ports": ["agent.task/v1"], "unsandboxed": True}  # the rest at its default
    agent = json.loads((Path(catalogue_app.env["NULLIUS_CATALOGUE"]) / "agents" / "scripted" / "agent.json").read_text())
    assert task.locator("a.cat-job").inner_text() == agent["proven"]["agent.task/v1"]["job"]  # what conform wrote, on the page
    shot(page, tmp_path, "proven")

    fake_model.use(f"{PLAYER}:respond_wrongly")  # every check fails: the claim is taken back
    prove_ports(page, fake_model.openai_base_url)
    wait_reloaded(page, 'tr[data-port="agent.task/v1"][data-state="not proven"]')
    newest = page.locator(".cat-started li").first
    assert "exit 1" in newest.inner_text() and "scripted agent.task/v1: NOT proven 0/3" in newest.inner_text()
    shot(page, tmp_path, "taken-back")


def prove_ports(page, base_url: str) -> None:
    form = page.locator("#prove-ports form")
    for box in form.locator("input[type=checkbox][name^='port.']").all():
        box.set_checked(box.get_attribute("name") == "port.agent.task/v1")
    form.locator("#model").fill("fake-model")
    form.locator("#provider").fill("openai-compatible")
    form.locator("#base_url").fill(base_url)
    form.locator("#backend").select_option("local")
    form.locator("#unsandboxed").check()
    form.locator("button[type=submit]").click()


class Book:
    """A RunBook that records what it is asked to start, and starts nothing: which commands get the app's keys."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, list[str], bool]] = []
        self.started: dict[str, object] = {}

    async def start(self, title: str, args: list[str], keys: bool = True, jobs: list[str] | None = None) -> object:
        self.asked.append((title, args, keys))
        return type("Entry", (), {"id": f"r{len(self.asked)}"})()


def post_in_process(env: dict[str, str], monkeypatch, path: str, data: dict) -> tuple[int, dict, Book]:
    """The app's own server in this process (its RunBook a Book), asked one POST from its own page."""
    from nullius_app.server import make_app
    from nullius_app.state import AppState

    for name, value in env.items():
        monkeypatch.setenv(name, value)
    state = AppState.for_this_machine()
    book = state.runs = Book()  # type: ignore[assignment]

    async def ask() -> tuple[int, dict]:
        server = TestServer(make_app(state), host="127.0.0.1")
        await server.start_server()
        state.origin = f"http://127.0.0.1:{server.port}"
        try:
            async with ClientSession() as session:
                reply = await session.post(state.origin + path, json=data, headers={"Origin": state.origin, "X-Nullius-Token": state.token})
                return reply.status, await reply.json()
        finally:
            await server.close()

    with ThreadPoolExecutor(1) as thread:  # a loop of its own: Playwright's sync API keeps one running in this thread
        status, body = thread.submit(asyncio.run, ask()).result()
    return status, body, book


@pytest.mark.parametrize(("bench", "options", "keys"), [
    ("humaneval", {}, False),  # no judge
    ("faulty", {"option.mode": "faulty"}, False),
    ("talk", {}, True),  # its judge is asked under the default (judged=yes)
    ("talk", {"option.judged": "no"}, False),
    ("tau2", {}, False),  # tau2's judge only with evaluation=all_with_nl_assertions or nl_assertions
    ("tau2", {"option.evaluation": "nl_assertions"}, True),
])
def test_control_checks_are_handed_no_key_unless_the_benchmark_is_judged(catalogue_env, monkeypatch, bench, options, keys):
    status, body, book = post_in_process(catalogue_env, monkeypatch, f"/benchmarks/{bench}/prove", options)
    assert status == 200, body
    [(title, args, handed)] = book.asked
    assert title == f"Run control checks: {bench}" and args[:2] == ["prove", "--from-run"] and handed is keys
    assert ("with the app's keys" in body["said"]) is keys


def test_a_form_that_cannot_become_a_command_starts_nothing(catalogue_env, monkeypatch):
    status, body, book = post_in_process(catalogue_env, monkeypatch, "/benchmarks/faulty/prove", {"limit": "0"})
    assert status == 400 and body["said"] == "limit: expected a positive number, found 0" and book.asked == []
    status, body, book = post_in_process(catalogue_env, monkeypatch, "/benchmarks/faulty/prove", {"option.mode": "nosuch"})
    assert status == 400 and body["said"] == "option mode: 'nosuch' is not a value it allows" and book.asked == []
    status, body, book = post_in_process(catalogue_env, monkeypatch, "/agents/scripted/conform", {"model": "m"})
    assert status == 400 and body["said"] == "tick at least one port to prove" and book.asked == []
    status, body, book = post_in_process(catalogue_env, monkeypatch, "/benchmarks/faulty/use-bundled", {})
    assert status == 400 and "faulty is not a user copy over a plugin's entry" in body["said"] and book.asked == []
