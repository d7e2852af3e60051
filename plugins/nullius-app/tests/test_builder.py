"""The builder in a real browser: a run chosen in the form, its exact commands shown, started, followed on Runs, reloaded and run again."""

from __future__ import annotations

import json
import re

from builder_world import (  # noqa: F401 - pytest finds fixtures by name
    choose_benchmark,
    commands,
    edit_definition,
    job_row,
    jobs_dir,
    look,
    plan_settled,
    recipes_dir,
    world,
    world_env,
)

from nullius_core.recipes import compile_run, read

FINISHED = 180_000  # ms: a small run on a busy machine


def watch_done(page) -> None:
    """Keep every value the Runs page shows in each job's done cell, as it changes (and a mark that the page was never reloaded)."""
    page.evaluate("""() => {
      window.__seen = [];
      window.__same_page = true;
      const keep = () => document.querySelectorAll('tr[data-job] [data-field="done"]').forEach((el) => window.__seen.push(el.textContent));
      keep();
      new MutationObserver(keep).observe(document.body, {subtree: true, childList: true, characterData: true});
    }""")


def test_the_humaneval_oracle_built_in_the_form_runs_and_finishes_on_the_runs_page_then_reloads(world, page, tmp_path):
    choose_benchmark(page, world, "humaneval")
    page.check('input[name="participants"][value="oracle"]')
    page.fill("#limit", "5")
    plan_settled(page)
    recipe_file = recipes_dir(world) / "humaneval-1.json"
    assert commands(page) == [f"nullius run --from-run {recipe_file} --job-name humaneval-1-test-oracle"]
    assert page.inner_text("#problems") == ""
    look(page, tmp_path, "builder-humaneval-oracle")

    page.click("#run-recipe")
    page.wait_for_selector("#started li[data-run]")
    assert "started 1 job" in page.inner_text("#said")
    saved = json.loads(recipe_file.read_text())
    assert saved == {"name": "humaneval-1", "benchmark": "humaneval", "datasets": ["test"], "others": ["oracle"], "backend": "local",
                     "limit": 5, "repeat": 1, "concurrency": 4, "machines": 1}
    assert [j.name for j in compile_run(read(recipe_file, "run"))] == ["humaneval-1-test-oracle"]  # as the CLI reads it

    page.click("text=Follow them on Runs")
    page.wait_for_url("**/runs")
    watch_done(page)
    row = job_row(page, "humaneval-1-test-oracle")
    section = page.locator("section.run", has=row)
    section.locator('header [data-field="state"]:text("finished")').wait_for(timeout=FINISHED)  # the command ended, status 0
    assert row.locator('[data-field="state"]').inner_text() == "finished"
    assert row.locator('[data-field="done"]').inner_text() == "5 of 5"
    assert row.locator('[data-field="passed"]').inner_text() == "5"
    assert row.locator('[data-field="errored"]').inner_text() == "0"
    assert page.evaluate("window.__same_page")  # updated in place, never reloaded
    seen = [int(text.split(" of ")[0]) for text in page.evaluate("window.__seen")]
    assert seen == sorted(seen) and seen[-1] == 5  # units counted as they ended, never back
    assert "--job-name humaneval-1-test-oracle" in section.locator("pre.command").inner_text()
    assert row.locator("a").get_attribute("href") == "/jobs/humaneval-1-test-oracle"
    result = json.loads((jobs_dir(world) / "humaneval-1-test-oracle" / "result.json").read_text())
    assert result["standard"]["state"] == "finished" and result["standard"]["passed"] == 5
    look(page, tmp_path, "runs-humaneval-oracle-finished")

    # The saved recipe, drawn again in the form: its jobs exist now, so the plan says a run would be refused.
    page.goto(world.url + "/build")
    page.locator("section.recipes tr", has=page.locator("code", has_text=re.compile("^humaneval-1$"))).locator("a", has_text="Load").click()
    page.wait_for_selector("form#builder")
    plan_settled(page)
    assert page.is_checked('input[name="participants"][value="oracle"]')
    assert page.input_value("#limit") == "5" and page.input_value("#name") == "humaneval-1"
    assert commands(page) == [f"nullius run --from-run {recipe_file} --job-name humaneval-1-test-oracle"]
    assert "humaneval-1-test-oracle exists already" in page.inner_text("#warnings")
    look(page, tmp_path, "builder-recipe-reloaded")

    # Run again under another name.
    page.fill("#name", "again")
    plan_settled(page)
    assert commands(page) == [f"nullius run --from-run {recipes_dir(world) / 'again.json'} --job-name again-test-oracle"]
    assert page.inner_text("#warnings") == ""
    page.click("#run-recipe")
    page.locator('#started li[data-run] .state:text("finished")').wait_for(timeout=FINISHED)


def test_two_participants_on_two_machines_compile_to_the_jobs_the_standard_names(world, page, tmp_path):
    choose_benchmark(page, world, "humaneval")
    page.fill("#name", "pair")
    page.check('input[name="participants"][value="nop"]')
    page.check('input[name="participants"][value="oracle"]')
    page.fill("#machines", "2")
    page.fill("#limit", "1")
    plan_settled(page)
    names = ["pair-test-nop-shard-1of2", "pair-test-nop-shard-2of2", "pair-test-oracle-shard-1of2", "pair-test-oracle-shard-2of2"]
    recipe_file = recipes_dir(world) / "pair.json"
    assert commands(page) == [f"nullius run --from-run {recipe_file} --job-name {name}" for name in names]
    assert page.inner_text("#run-recipe") == "Run 4 jobs"
    assert page.locator("#jobs tbody tr").all_inner_texts()[0].split("\t") == ["pair-test-nop-shard-1of2", "test", "nop", "1/2"]
    look(page, tmp_path, "builder-four-jobs")

    page.click("#run-recipe")
    page.wait_for_selector("#started li[data-run] >> nth=3")
    page.goto(world.url + "/runs")
    for name in names:
        job_row(page, name).locator('[data-field="state"]:text("finished")').wait_for(timeout=FINISHED)
        config = json.loads((jobs_dir(world) / name / "config.json").read_text())
        assert config["standard"]["launch"] == name.rsplit("-shard-", 1)[0]  # a job's shards are one launch, for merge
    look(page, tmp_path, "runs-four-jobs")


def test_a_recipe_the_cli_refuses_shows_the_clis_own_words(world, page, tmp_path):
    choose_benchmark(page, world, "humaneval")
    page.fill("#name", "keyless")
    page.check('input[name="participants"][value="reference"]')
    page.fill("#model", "gpt-5-mini")
    page.select_option("#provider", "openai")
    page.fill("#limit", "1")
    plan_settled(page)
    page.check('input[name="unsandboxed"]')  # the consent shows once an agent is chosen on the local backend
    plan_settled(page)
    assert json.loads(json.dumps(commands(page))) == [f"nullius run --from-run {recipes_dir(world) / 'keyless.json'} --job-name keyless-test-reference"]
    page.click("#run-recipe")
    words = page.locator("#started pre.words")
    words.wait_for(timeout=FINISHED)
    said = words.inner_text()
    assert said.startswith("nullius: run refused: provider 'openai' needs its key: set OPENAI_API_KEY")
    assert page.locator("#started .state").inner_text() == "refused"
    look(page, tmp_path, "builder-refused")

    page.goto(world.url + "/runs")
    section = page.locator("section.run").first
    assert section.locator('header [data-field="state"]').inner_text() == "refused"
    assert section.locator('[data-field="said"]').inner_text() == said
    assert section.locator('tr[data-job="keyless-test-reference"] [data-field="state"]').inner_text() == "not started"
    look(page, tmp_path, "runs-refused")


def test_the_form_offers_what_the_definition_declares_and_only_the_options_that_apply(world, world_env, page, tmp_path):
    choose_benchmark(page, world, "tau2")
    # Setups: No agent · Original; the paper's models as choices; Like the leaderboard, with what it fixes.
    assert page.locator('input[name="participants"][value="original"]').count() == 1
    assert page.get_attribute("#simulator-model", "placeholder") == "gpt-4.1-2025-04-14"
    assert page.get_attribute("#judge-model", "placeholder") == "gpt-4o-mini"
    page.check('input[name="participants"][value="original"]')
    page.check('input[name="model_choice"][value="paper"]')
    plan_settled(page)
    assert page.locator("#model-paper option").all_inner_texts()[0] == "gpt-4.1-2025-04-14 (its default)"
    assert page.is_disabled("#simulator-model") and page.is_disabled("#judge-model")
    page.check('input[name="model_choice"][value="leaderboard"]')
    plan_settled(page)
    assert page.is_disabled("#bo-evaluation")
    assert "The leaderboard sets it: all" in page.inner_text('[data-bench-option="evaluation"]')
    assert "at least 4 attempts" in page.inner_text(".board")
    # Served by under each model field on OpenRouter, cleared when its model changes.
    page.check('input[name="model_choice"][value="any"]')
    page.select_option("#provider", "openrouter")
    page.fill("#model", "openai/gpt-4.1")
    page.fill("#served-model", "openai, azure")
    page.fill("#served-judge", "openai")
    plan_settled(page)
    assert page.is_visible("#served-simulator") and page.is_visible("#served-judge")
    look(page, tmp_path, "builder-tau2-openrouter")
    page.fill("#model", "openai/gpt-4.1-mini")
    assert page.input_value("#served-model") == "" and page.input_value("#served-judge") == "openai"
    page.fill("#served-model", "openai")
    page.fill("#name", "board")
    plan_settled(page)
    page.click("#save-recipe")
    page.wait_for_selector("#said.ok")
    saved = json.loads((recipes_dir(world) / "board.json").read_text())
    assert saved["served_by"] == {"model": ["openai"], "judge": ["openai"]} and saved["others"] == ["original"]
    assert saved["provider"] == "openrouter" and saved["model"] == "openai/gpt-4.1-mini"

    # A benchmark's options: a select for values, a pattern checked, offered only where they apply.
    edit_definition(world_env, "faulty", {
        "depth": {"summary": "How deep the slow mode sleeps.", "values": ["1", "2"], "default": "1", "when": {"mode": ["slow"]}},
        "temperature": {"summary": "The answerer's temperature.", "pattern": "[0-9.]+", "setups": ["original"]},
    }, setups={"original": {"summary": "The fixture's own answerer.", "models": ["m"]}})
    choose_benchmark(page, world, "faulty")
    page.check('input[name="participants"][value="oracle"]')
    plan_settled(page)
    assert page.locator("#bo-mode option").count() == 9
    assert page.is_disabled("#bo-depth")
    assert "applies only when mode is slow" in page.inner_text('[data-bench-option="depth"] .why')
    assert "setting of the original setup(s)" in page.inner_text('[data-bench-option="temperature"] .why')
    page.select_option("#bo-mode", "slow")
    plan_settled(page)
    assert page.is_enabled("#bo-depth")
    page.fill("#bo-delay", "soon")
    plan_settled(page)
    assert "option delay: 'soon' is not allowed (a value matching [0-9]+(\\.[0-9]+)?)" in page.inner_text("#problems")
    assert page.is_disabled("#run-recipe")
    look(page, tmp_path, "builder-options")
    page.fill("#bo-delay", "0.1")
    plan_settled(page)
    assert page.inner_text("#problems") == "" and re.search(r"--job-name faulty-1-test-oracle$", commands(page)[0])
