"""Add in a real browser: the prompt for a coding assistant, for each type, with the skill and the user's writable catalogue; the skills it names."""

from __future__ import annotations

import json
import os
import re

import pytest
from app_world import shot
from catalogue_world import ROOT, catalogue, catalogue_app, catalogue_env, nullius  # noqa: F401

SKILLS = ("import-benchmark", "import-standard", "import-agent", "import-capability")


@pytest.mark.parametrize(("section", "kind", "skill", "folder"), [
    ("benchmarks", "benchmark", "/import-benchmark", "benchmarks"),
    ("agents", "agent", "/import-agent", "agents"),
    ("capabilities", "capability", "/import-capability", "capabilities"),
])
def test_add_from_a_list_page_writes_the_prompt_for_that_type(catalogue_app, page, tmp_path, section, kind, skill, folder):
    page.goto(f"{catalogue_app.url}/{section}")
    page.locator("#add").click()
    page.wait_for_url(f"**/add?type={kind}")
    assert page.locator(f'input[name=type][value="{kind}"]').is_checked()  # preselected from the page it was opened from
    assert page.locator("#prompt").count() == 0  # nothing to write until it has a name and a source
    page.locator("#name").fill("Some Thing")
    page.locator("#source").fill("https://github.com/example/some-thing")
    page.locator("#remark").fill("only its test split, please")
    page.locator("#add-form button[type=submit]").click()
    page.wait_for_selector("#prompt")
    prompt = page.locator("#prompt").inner_text()
    catalogue = json.loads(nullius(catalogue_app.env, "paths", "--json").stdout)["user catalogue"]["path"]
    assert catalogue == catalogue_app.env["NULLIUS_CATALOGUE"]
    assert prompt.startswith(f'Bring the {kind} "Some Thing" into Nullius, from https://github.com/example/some-thing.')
    assert f"Use the {skill} skill" in prompt
    assert f"{catalogue}/{folder}/<key>/" in prompt  # the user's writable catalogue
    assert "If you run on another machine than mine, work in a source checkout of Nullius" in prompt
    assert "My remark: only its test split, please" in prompt
    assert "Report the evidence" in prompt and "the gaps" in prompt
    assert (ROOT / ".claude" / "skills" / skill[1:] / "SKILL.md").is_file()
    assert page.locator(f'input[name=type][value="{kind}"]').is_checked()  # the form keeps what was asked
    shot(page, tmp_path, f"add-{kind}")


def test_add_offers_a_benchmark_through_the_nullius_standard(catalogue_app, page, tmp_path):
    page.goto(f"{catalogue_app.url}/add?type=benchmark")
    page.locator('input[name=type][value="standard"]').check()
    page.locator("#name").fill("GSM-Hard")
    page.locator("#source").fill("pypi:gsm-hard")
    page.locator("#add-form button[type=submit]").click()
    page.wait_for_selector("#prompt")
    prompt = page.locator("#prompt").inner_text()
    assert "Use the /import-standard skill." in prompt and "Harbor" not in prompt and "My remark" not in prompt
    assert "standard.json, benchmark.json, upstream-settings.json and driver.py" in prompt
    shot(page, tmp_path, "add-standard")


def test_the_skills_the_prompt_names_are_in_the_repository_and_name_real_commands_and_docs():
    commands = set(re.findall(r"^  ([a-z-]+) ", nullius(dict(os.environ), "--help").stdout.split("Commands:", 1)[1], re.M))
    for name in SKILLS:
        text = (ROOT / ".claude" / "skills" / name / "SKILL.md").read_text()
        front = text.split("---", 2)[1]
        assert re.search(rf"^name: {name}$", front, re.M) and re.search(r"^description: \S", front, re.M)
        for used in re.findall(r"\bnullius ([a-z][a-z-]+)", text):
            assert used in commands, f"{name}: nullius {used} is not a command"
        for doc in re.findall(r"docs/([a-z-]+\.md)", text):
            assert (ROOT / "docs" / doc).is_file(), f"{name}: docs/{doc}"
        for folder in re.findall(r"`(plugins/[a-z0-9-]*[a-z0-9])[`/]", text):
            assert (ROOT / folder).is_dir(), f"{name}: {folder}"
        for must in ("Evidence", "Gaps", "nullius check", "ls-remote"):
            assert must in text, f"{name} says nothing of {must}"
    assert "nullius prove KEY --limit 3" in (ROOT / ".claude" / "skills" / "import-standard" / "SKILL.md").read_text()
    assert "nullius conform KEY" in (ROOT / ".claude" / "skills" / "import-agent" / "SKILL.md").read_text()
