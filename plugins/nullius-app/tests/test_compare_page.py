"""Compare in a real browser: two jobs picked from the list, `nullius compare --json`'s figures and Pareto picture, refusals."""

from __future__ import annotations

import json
import subprocess
import sys

from app_world import App, shot
from viewer_world import KEY


def compare_json(env: dict, jobs, a: str, b: str, out) -> dict:
    done = subprocess.run([sys.executable, "-m", "nullius_core", "compare", str(jobs / a), str(jobs / b), "--out", str(out), "--json"],
                          env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_two_jobs_ticked_in_the_list_are_compared_unit_by_unit(viewer_app, viewer_world, page, tmp_path):
    page.goto(viewer_app.url + "/jobs")
    page.locator('input[name="job"][value="gsm-a"]').check()
    page.locator('input[name="job"][value="gsm-b"]').check()
    page.get_by_role("button", name="Compare the two ticked").click()
    page.wait_for_url("**/compare?a=gsm-b&b=gsm-a")  # the list is newest first: A is the upper one ticked
    assert "A (gsm-b) better on 2, B (gsm-a) better on 1" in page.locator("p.verdict").inner_text()
    page.get_by_role("link", name="swap A and B").click()
    page.wait_for_url("**/compare?a=gsm-a&b=gsm-b")
    page.wait_for_selector("img.pareto")
    page.wait_for_function("document.querySelector('img.pareto').complete")
    shot(page, tmp_path, "compare-gsm-a-gsm-b")
    [paired] = compare_json(viewer_world["env"], viewer_world["jobs"], "gsm-a", "gsm-b", tmp_path / "cmp")["paired"]
    verdict = page.locator("p.verdict").inner_text()
    assert verdict == (f"On {paired['units']} units: A (gsm-a) better on {paired['wins']}, B (gsm-b) better on "
                       f"{paired['losses']}, tied on {paired['ties']}.")
    assert (paired["wins"], paired["losses"], paired["ties"]) == (1, 2, 1)
    difference = page.locator(".box", has_text="Mean difference").inner_text()
    low, high = paired["ci95"]
    assert f"{paired['mean_difference']:+.4f}" in difference and f"95% interval {low:+.4f} to {high:+.4f}" in difference
    mcnemar = page.locator(".box", has_text="McNemar").inner_text()
    assert "p = 1" in mcnemar and "only A passed 1, only B passed 2" in mcnemar
    # a cell a unit, coloured by who did better, its rewards on hover
    cells = page.locator("svg.grid rect.cell")
    assert cells.count() == 4
    titles = page.locator("svg.grid rect.cell title").all_text_contents()
    assert titles == ["u0000: A 1 passed, B 1 passed: tied", "u0001: A 0 failed, B 1 passed: B better",
                      "u0002: A 1 passed, B 0 failed: A better", "u0003: A 0 failed, B 1 passed: B better"]
    assert page.locator("svg.grid rect.cmp-b").count() == 2 and page.locator("svg.grid rect.cmp-a").count() == 1
    units = [r.split("\t") for r in page.locator("details table.trials tbody tr").all_inner_texts()]
    assert units[1][:4] == ["u0001", "0.0000 ✗", "1.0000 ✓", "B"] and units[1][5].split() == ["u0001r1", "u0001r2"]
    # the Pareto picture nullius compare drew, shown as it drew it
    assert page.evaluate("document.querySelector('img.pareto').naturalWidth") > 300
    rows = page.locator("table.trials").nth(1).inner_text()
    assert "cost, tokens" in rows and "2026-11-15" in rows
    page.locator("img.pareto").scroll_into_view_if_needed()
    page.locator("img.pareto").screenshot(path=str(tmp_path / "screenshots" / "pareto.png"))
    assert KEY not in page.content()


def test_a_pass_fail_pair_of_controls(viewer_app, page, tmp_path):
    page.goto(viewer_app.url + "/compare?a=he-oracle&b=he-nop")
    page.wait_for_selector("p.verdict")
    shot(page, tmp_path, "compare-controls")
    assert "better on 5" in page.locator("p.verdict").inner_text()
    assert "p = 0.0625" in page.locator(".box", has_text="McNemar").inner_text()  # 2 · (1/2)^5
    assert page.locator("svg.grid rect.cmp-a").count() == 5


def test_jobs_on_other_units_are_refused_in_the_commands_own_words(viewer_app, page, tmp_path):
    page.goto(viewer_app.url + "/compare?a=gsm-a&b=he-nop")
    page.wait_for_selector("p.said")
    shot(page, tmp_path, "compare-refused")
    assert page.locator("p.said").inner_text().startswith("compare refused: the jobs share no units")
    assert page.locator("p.verdict").count() == 0
    page.goto(viewer_app.url + "/jobs")
    page.locator('input[name="job"][value="gsm-a"]').check()
    page.get_by_role("button", name="Compare the two ticked").click()
    page.wait_for_selector("p.said")
    assert page.locator("p.said").inner_text() == "Tick two jobs to compare: 1 ticked."


def test_without_the_report_plugin_the_page_says_what_is_missing(viewer_world, page, tmp_path):
    blocked = App({**viewer_world["env"], "NULLIUS_DISABLE_PLUGINS": "report"}, tmp_path)
    try:
        page.goto(blocked.url + "/compare?a=gsm-a&b=gsm-b")
        page.wait_for_selector(".missing")
        shot(page, tmp_path, "compare-without-the-plugin")
        said = page.locator(".missing").inner_text()
        assert said == ("`nullius compare` comes with the plugin nullius-report, which is installed but blocked: "
                        "blocked by -p no: or NULLIUS_DISABLE_PLUGINS")
        assert page.locator("p.verdict").count() == 0 and page.locator("img.pareto").count() == 0
    finally:
        blocked.stop()
