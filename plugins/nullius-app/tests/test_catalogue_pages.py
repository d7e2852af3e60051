"""The catalogue in a real browser: the lists, a benchmark's page (its proofs per dataset, what fits it), an agent's page, Use bundled entry."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from app_world import App, shot
from catalogue_world import ROOT, catalogue, catalogue_app, catalogue_env, listed, started, wait_reloaded  # noqa: F401


def test_the_catalogue_lists_every_definition_with_its_proofs(catalogue_app, page, tmp_path):
    listing = listed(catalogue_app.env)
    for section, kind in (("benchmarks", "benchmark"), ("agents", "agent"), ("capabilities", "capability")):
        page.goto(f"{catalogue_app.url}/{section}")
        rows = page.locator("#catalogue tbody tr")
        assert sorted(rows.evaluate_all("rows => rows.map(r => r.dataset.ref)")) == sorted(r["ref"] for r in listing[section])
        assert page.locator("#add").get_attribute("href") == f"/add?type={kind}"
        shot(page, tmp_path, section)
    page.goto(f"{catalogue_app.url}/benchmarks")
    humaneval = page.locator('tr[data-ref="humaneval"]')
    assert humaneval.locator(".cat-passed").all_inner_texts() == ["units", "leak", "nop", "oracle"]  # its shipped proofs
    assert "plugin humaneval (nullius-bench-humaneval" in humaneval.inner_text()
    faulty = page.locator('tr[data-ref="faulty"]')
    assert faulty.locator(".cat-not-proven").count() == 4 and "user catalogue" in faulty.inner_text()
    humaneval.locator("a").first.click()
    page.wait_for_url("**/benchmarks/humaneval")
    page.goto(f"{catalogue_app.url}/agents")
    reference = page.locator('tr[data-ref="reference"]')
    assert set(reference.locator(".cat-passed").all_inner_texts()) == {"agent.task/v1", "agent.workspace/v1", "agent.tools/v1",
                                                                       "agent.conversation/v1"}


def test_humanevals_page_shows_its_proofs_per_dataset_and_what_fits_it(catalogue_app, page, tmp_path):
    page.goto(f"{catalogue_app.url}/benchmarks/humaneval")
    assert page.locator("h1").inner_text() == "HumanEval"
    assert "plugin humaneval (nullius-bench-humaneval 0.1.0)" in page.locator(".cat-source").inner_text()
    row = next(b for b in listed(catalogue_app.env)["benchmarks"] if b["ref"] == "humaneval")
    records = row["records"]["test"]
    table = page.locator('table[data-dataset="test"]')
    assert table.locator("tbody tr").evaluate_all("rows => rows.map(r => [r.dataset.check, r.dataset.state])") == [
        ["units", "passed"], ["leak", "passed"], ["nop", "passed"], ["oracle", "passed"]]
    oracle = table.locator('tr[data-check="oracle"]')
    cells = oracle.locator("td").all_inner_texts()
    assert cells[2:8] == [records["oracle"]["passed"], "1", "at least 1", str(records["oracle"]["units"]), records["oracle"]["date"],
                          records["oracle"]["job"]]
    assert oracle.locator("a.cat-job").get_attribute("href") == f"/jobs/{records['oracle']['job']}"  # into the viewer
    assert table.locator('tr[data-check="nop"] td').nth(4).inner_text() == "at most 0"
    fit = page.locator("#fit")
    fits = fit.locator(".cat-fits").first.inner_text()
    for agent in ("reference", "codex", "claude", "scripted"):
        assert agent in fits
    assert "nop, oracle" in fits
    assert "It asks no judge, so it is handed no key." in page.locator("#control-checks").inner_text()
    assert "Its environments declare no licence." in page.locator("#licences").inner_text()
    shot(page, tmp_path, "humaneval")
    # a benchmark that needs what the fixture agent lacks: its page says why it does not fit
    page.goto(f"{catalogue_app.url}/benchmarks/tau2")
    refused = page.locator("#fit li", has_text="scripted").inner_text()
    assert "scripted: missing port agent.conversation/v1" in refused
    assert "Judge" in page.locator(".cat-facts").inner_text() and "asked only when evaluation is" in page.locator(".cat-facts").inner_text()
    shot(page, tmp_path, "tau2")


def test_an_agents_page_shows_each_ports_proof_and_the_benchmarks_it_runs(catalogue_app, page, tmp_path):
    page.goto(f"{catalogue_app.url}/agents/reference")
    proof = next(a for a in listed(catalogue_app.env)["agents"] if a["ref"] == "reference")["offers"]["agent.tools/v1"]
    tools = page.locator('tr[data-port="agent.tools/v1"]')
    assert tools.get_attribute("data-state") == "offered"
    cells = tools.locator("td").all_inner_texts()
    assert cells[2] == proof["passed"] and cells[3] == "v2" and cells[5] == "fake-model" and cells[6] == proof["date"]
    assert cells[7] == proof["backend"]
    assert sorted(cells[4].split("\n")) == ["chain 1/1", "decoys 1/1", "retry 1/1"]
    assert tools.locator("a.cat-job").get_attribute("href") == f"/jobs/{proof['job']}"
    browser = page.locator('tr[data-port="agent.browser/v1"]')
    assert browser.get_attribute("data-state") == "not proven" and "the port has no kit yet" in browser.inner_text()
    runs = page.locator("#runs .cat-fits").first.inner_text()
    assert "humaneval" in runs and "gsm8k" in runs and "faulty" in runs
    form = page.locator("#prove-ports form")
    assert form.locator("input[type=checkbox][name^='port.']").evaluate_all("boxes => boxes.map(b => b.name)") == [
        "port.agent.task/v1", "port.agent.workspace/v1", "port.agent.tools/v1", "port.agent.conversation/v1"]  # the kits that run
    assert "agent.browser/v1: cannot be proven yet (the port has no kit yet)" in form.inner_text()
    shot(page, tmp_path, "reference")
    page.goto(f"{catalogue_app.url}/capabilities/bm25")
    memory = page.locator('tr[data-port="cap.memory/v1"]')
    assert memory.get_attribute("data-state") == "offered" and "v1" in memory.inner_text()
    shot(page, tmp_path, "bm25")


def test_use_bundled_entry_brings_back_the_plugins_own_entry(app_env, tmp_path, page):
    """A user copy of a plugin's benchmark (as an older Nullius made): the page says what it shadows, and Use bundled entry ends that."""
    dist = tmp_path / "dist"
    pip_target(dist, ROOT / "examples" / "benchmark-plugin-template")
    user = Path(app_env["XDG_CONFIG_HOME"]) / "nullius" / "catalogue"
    shutil.copytree(dist / "nullius_bench_example" / "catalogue" / "benchmarks" / "example-arith", user / "benchmarks" / "example-arith")
    env = {**app_env, "PYTHONPATH": str(dist)}
    app = App(env, tmp_path)
    try:
        page.goto(f"{app.url}/benchmarks/example-arith")
        source = page.locator(".cat-source")
        assert "user catalogue" in source.inner_text() and "plugin example-bench (nullius-bench-example 0.1.0)" in source.inner_text()
        shot(page, tmp_path, "user-copy")
        page.locator("#use-bundled button").click()
        wait_reloaded(page, ".cat-source:not(:has(#use-bundled))")
        assert page.locator(".cat-source dd").first.inner_text() == "plugin example-bench (nullius-bench-example 0.1.0)"
        assert "Use bundled entry: example-arith" in page.locator(".cat-started").inner_text()
        shot(page, tmp_path, "bundled")
        assert not (user / "benchmarks" / "example-arith").exists()
        assert any((aside / "benchmarks" / "example-arith").is_dir() for aside in (user / ".set-aside").iterdir())  # set aside, not deleted
        [record] = started(env)
        assert record["args"] == ["use-bundled", "example-arith"] and record["code"] == 0  # the command, on the Runs page's record
    finally:
        app.stop()


def pip_target(target: Path, *sources: Path) -> None:
    """Plugin distributions installed for real into a folder of their own, for PYTHONPATH (as tests/conftest.py does)."""
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation", "--target", str(target),
                    *map(str, sources)], check=True, capture_output=True, text=True, timeout=600)


def test_a_page_whose_command_fails_says_the_commands_own_words(app_env, tmp_path, page):
    """Two plugins shipping one benchmark key: `nullius list` refuses, and the page says its words, never a traceback."""
    dist = tmp_path / "dist"
    plugins = ROOT / "tests" / "fixtures" / "plugins"
    pip_target(dist, plugins / "nullius-fixture-plugin", plugins / "nullius-fixture-conflict")
    app = App({**app_env, "PYTHONPATH": str(dist)}, tmp_path)
    try:
        said = subprocess.run([sys.executable, "-m", "nullius_core", "list", "--json"], env=app.env, capture_output=True, text=True)
        assert said.returncode == 2 and "conflict: benchmark 'fixture-tools'" in said.stderr
        response = page.goto(f"{app.url}/benchmarks")
        assert response.status == 502
        text = page.locator("#failed").inner_text()
        assert "nullius list --json" in text and said.stderr.strip().splitlines()[-1] in text and "Traceback" not in page.content()
        shot(page, tmp_path, "failed")
    finally:
        app.stop()
