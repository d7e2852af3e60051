"""The job viewer in a real browser, over jobs of real runs (viewer_world.py): the list, a job's summary and grid, a trial's records."""

from __future__ import annotations

import json
import shutil
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from app_world import shot
from viewer_world import KEY


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=120) as reply:
            return reply.status, reply.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def result_of(jobs: Path, job: str, trial: str | None = None) -> dict:
    return json.loads(((jobs / job / trial) if trial else (jobs / job)).joinpath("result.json").read_text())


def no_key(page) -> None:
    """The provider's key is in the app's environment (as a user's would be); no page ever shows it."""
    assert KEY not in page.content()


def test_the_job_list_shows_every_job_newest_first_and_says_which_cannot_be_read(viewer_app, viewer_world, page, tmp_path):
    page.goto(viewer_app.url + "/jobs")
    page.wait_for_selector("table.jobs")
    shot(page, tmp_path, "jobs")
    rows = {r.locator("td").nth(1).inner_text(): r for r in page.locator("table.jobs tbody tr").all()}
    assert {"he-oracle", "he-nop", "gsm-a", "gsm-b", "tool", "talk", "faulty", "broken"} <= set(rows)
    started = [r.locator("td").nth(2).inner_text() for r in page.locator("table.jobs tbody tr").all()]
    assert started == sorted(started, reverse=True)  # newest first
    cells = rows["he-oracle"].locator("td").all_inner_texts()
    assert cells[3:] == ["humaneval · test", "oracle", "–", "finished", "5 / 5", "1.0000"]
    gsm = rows["gsm-b"].locator("td").all_inner_texts()
    assert gsm[4:] == ["reference", "fake-model", "finished", "8 / 8", "0.7500"]
    broken = rows["broken"].inner_text()
    assert "cannot be read: result.json: not JSON" in broken and "Traceback" not in page.content()
    no_key(page)


def test_a_jobs_summary_its_grid_and_its_trials(viewer_app, viewer_world, page, tmp_path):
    jobs = viewer_world["jobs"]
    summary = result_of(jobs, "gsm-b")["standard"]
    page.goto(viewer_app.url + "/jobs/gsm-b")
    page.wait_for_selector("svg.grid")
    shot(page, tmp_path, "job-gsm-b")
    boxes = page.locator(".summary").inner_text()
    low, high = summary["mean_ci95"]
    assert "6 passed" in boxes and "2 failed" in boxes and "0.7500" in boxes
    assert f"95% interval {low:.4f} to {high:.4f}" in boxes
    assert "any attempt: 0.7500 over 4 units, 2 attempts each; 3 passed" in boxes
    hat = page.locator(".box", has_text="pass^k").locator("tr").all_inner_texts()
    assert [r.split("\t") for r in hat[1:]] == [["1", "0.7500", "–"], ["2", "0.7500", "0.7500"]]
    assert f"${summary['cost']['as_served_usd']:,.6f}" in boxes and "priced as fake-model (2026-11-15)" in boxes
    config = page.locator("table.config").inner_text()
    assert "gsm8k" in config and "reference" in config and "fake-model" in config and "local" in config
    assert "reasoning_effort=default" in config  # the agent's options, defaults included
    # the grid: a column a unit, a cell an attempt, coloured by outcome; u0002 failed both times
    assert page.locator("svg.grid rect.cell").count() == 8
    assert page.locator("svg.grid rect.o-passed").count() == 6 and page.locator("svg.grid rect.o-failed").count() == 2
    titles = page.locator("svg.grid rect.o-failed title").all_text_contents()
    assert titles == ["u0002 · attempt 1: failed, reward 0", "u0002 · attempt 2: failed, reward 0"]
    trials = [r.split("\t") for r in page.locator("table.trials tbody tr").all_inner_texts()]
    assert [t[:6] for t in trials][:2] == [["u0000r1", "u0000", "1", "passed", "1.0000", ""], ["u0000r2", "u0000", "2", "passed", "1.0000", ""]]
    page.locator("svg.grid a:has(rect.o-failed)").first.click()
    page.wait_for_url("**/jobs/gsm-b/u0002r1")
    assert "failed" in page.locator(".summary").inner_text()
    no_key(page)


def test_an_errored_jobs_grid_names_each_exception(viewer_app, viewer_world, page, tmp_path):
    page.goto(viewer_app.url + "/jobs/faulty")
    page.wait_for_selector("svg.grid")
    shot(page, tmp_path, "job-faulty")
    assert page.locator("svg.grid rect.o-error").count() == 5 and page.locator("svg.grid rect.o-passed").count() == 7
    errors = page.locator("svg.grid rect.o-error title").all_text_contents()
    assert "u0004: error · VerifierTimeoutError" in errors and "u0001: error · EnvironmentSetupError" in errors
    box = page.locator(".box", has_text="Outcomes").inner_text()
    assert "VerifierError\t2" in box and "by phase: driver 1, setup 1, verifier 3" in box
    assert "mode=faulty" in page.locator("table.config").inner_text()
    assert "no model was called (a control)" in page.locator(".box", has_text="Cost").inner_text()
    page.goto(viewer_app.url + "/jobs/faulty/u0004")
    page.wait_for_selector("#exception")
    shot(page, tmp_path, "trial-faulty-u0004")
    exception = (viewer_world["jobs"] / "faulty" / "u0004" / "exception.txt").read_text()
    assert page.locator("#exception ~ pre").first.inner_text().strip() == exception.strip()
    assert "VerifierTimeoutError: driver op 'score' timed out" in page.locator("#exception ~ p.bad").first.inner_text()
    assert "Not scored." in page.content()


def test_a_trials_trajectory_tool_call_timeline_relay_calls_and_verifier(viewer_app, viewer_world, page, tmp_path):
    jobs = viewer_world["jobs"]
    page.goto(viewer_app.url + "/jobs/gsm-a/u0000")
    page.wait_for_selector("ol.steps")
    shot(page, tmp_path, "trial-gsm-a-u0000")
    steps = page.locator("li.step")
    assert [s.locator(".badge").inner_text() for s in steps.all()] == ["user", "tool call", "agent"]
    assert "Janet’s ducks lay 16 eggs per day" in steps.nth(0).inner_text()
    tool = steps.nth(1)
    assert tool.locator("code.fn").inner_text() == "write_file notes.txt"
    assert json.loads(tool.locator("pre.args").inner_text()) == {"path": "notes.txt", "content": "16 - 3 - 4 = 9; 9 * 2 = 18\n"}
    assert tool.locator("pre.result").inner_text() == "wrote 27 characters to notes.txt"
    assert steps.nth(2).locator(".message").inner_text().endswith("#### 18")
    # the timeline: every model call as the relay timed it and every tool call, each with its details on hover
    trace = json.loads((jobs / "gsm-a" / "u0000" / "agent" / "trace.json").read_text())
    whole = page.locator("svg.timeline").first
    whole.screenshot(path=str(tmp_path / "screenshots" / "timeline-gsm-a-u0000.png"))
    titles = whole.locator("g.mark title").all_text_contents()
    for call in trace["model_calls"]:
        assert any(f"model call {call['id']}: fake-model, status 200" in t for t in titles), titles
    assert any("tool call call_fake1_0: write_file notes.txt (edit), completed" in t for t in titles)
    assert {"setup", "agent start", "agent", "verifier"} <= {t.split(":")[0] for t in titles}
    if page.locator("svg.timeline").count() == 2:  # the calls, drawn wider, where they take a small part of the trial
        page.locator("svg.timeline").nth(1).screenshot(path=str(tmp_path / "screenshots" / "timeline-gsm-a-u0000-wider.png"))
    # the relay's calls, and each call's request and reply as recorded
    calls = [json.loads(line) for line in (jobs / "gsm-a" / "u0000" / "agent" / "calls.jsonl").read_text().splitlines()]
    rows = page.locator("#calls-agent ~ table.calls tr.call")
    assert rows.count() == len(calls) == 2
    first = rows.nth(0).inner_text()
    assert "openai-chat" in first and "fake-model" in first and "tool_calls" in first and str(calls[0]["usage"]["input"]) in first
    page.locator("#calls-agent ~ table.calls tr.bodies summary").first.click()
    pair = page.locator("#calls-agent ~ table.calls tr.bodies .pair").first
    pair.wait_for()
    request, reply = pair.locator("pre").all_inner_texts()
    assert "Janet’s ducks" in request and json.loads(request)["model"] == "fake-model"
    assert json.loads(reply)["choices"][0]["message"]["tool_calls"][0]["function"]["name"] == "write_file"
    links = page.locator("#calls-agent ~ p.muted").first.locator("a")
    assert links.all_inner_texts() == ["agent/calls.jsonl", ".work/relay/bodies.jsonl"]
    status, whole = get(viewer_app.url + "/jobs/gsm-a/u0000/record/.work/relay/bodies.jsonl")
    assert status == 200 and whole == (jobs / "gsm-a" / "u0000" / ".work" / "relay" / "bodies.jsonl").read_text()
    page.locator("#calls-agent").scroll_into_view_if_needed()
    shot(page, tmp_path, "trial-gsm-a-u0000-calls-open")
    # the verifier's output, and score.json's reward, passed and detail
    verifier = page.locator("#verifier ~ table.config").first.inner_text()
    assert "1.0" in verifier and "true" in verifier and '"upstream_is_correct": true' in verifier
    stdout = (jobs / "gsm-a" / "u0000" / "verifier" / "test-stdout.txt").read_text()
    assert page.locator("#verifier ~ pre").first.inner_text().strip() == stdout.strip()
    no_key(page)


def test_a_rate_limited_unit_and_its_refused_call(viewer_app, viewer_world, page, tmp_path):
    page.goto(viewer_app.url + "/jobs/limited")
    page.wait_for_selector("svg.grid")
    assert page.locator("svg.grid rect.o-rate_limited title").all_text_contents() == ["u0001: rate limited · ApiRateLimitError"]
    assert "1 left out (not the agent's doing)" in page.locator(".box", has_text="Mean").inner_text()
    page.goto(viewer_app.url + "/jobs/limited/u0001")
    page.wait_for_selector("table.calls")
    shot(page, tmp_path, "trial-limited-u0001")
    call = page.locator("#calls-agent ~ table.calls tr.call.failed")
    assert call.count() == 1 and "429" in call.inner_text()
    assert "error: code rate_limit_exceeded" in page.locator("#calls-agent ~ table.calls tr.bodies").first.inner_text()
    failed = page.locator("svg.timeline g.mark:has(rect.bar.model.failed) title").first.text_content()
    assert failed.startswith("model call ") and "status 429" in failed
    assert "ApiRateLimitError: the agent's last model call got 429" in page.locator("#exception ~ p.bad").inner_text()


def test_a_tool_call_a_notice_and_the_agents_own_stop(viewer_app, page, tmp_path):
    page.goto(viewer_app.url + "/jobs/tool/u0000")
    page.wait_for_selector("ol.steps")
    shot(page, tmp_path, "trial-tool-u0000")
    badges = page.locator("li.step .badge").all_inner_texts()
    assert badges == ["user", "tool call", "agent", "notice", "agent"]
    assert page.locator("li.step.s-system .message").inner_text() == "model metadata not found"
    assert page.locator("li.step.s-tool pre.result").inner_text() == '{"found": true}'
    assert "the agent stopped: end_turn" in page.content()
    # the timeline's tool call, as Nullius saw it start and end
    assert page.locator("svg.timeline rect.bar.tool").count() >= 1


def test_a_conversation_shows_its_simulated_user_and_its_judge(viewer_app, viewer_world, page, tmp_path):
    jobs = viewer_world["jobs"]
    page.goto(viewer_app.url + "/jobs/talk/u0000")
    page.wait_for_selector("ol.steps")
    shot(page, tmp_path, "trial-talk-u0000")
    assert page.locator("li.step .badge").all_inner_texts() == ["user", "agent", "simulated user", "agent"]
    judge = page.locator("#calls-judge ~ table.calls").first.locator("tr.call")
    simulator = page.locator("#calls-simulator ~ table.calls").first.locator("tr.call")
    assert judge.count() == 1 and "judge-official" in judge.inner_text()
    assert simulator.count() == 2 and "sim-official" in simulator.nth(0).inner_text()
    lanes = page.locator("svg.timeline").first.locator("text.lane").all_text_contents()
    assert {"phases", "model calls", "judge calls", "simulated user"} <= set(lanes)
    assert page.locator("svg.timeline rect.bar.judge").count() >= 1 and page.locator("svg.timeline rect.bar.simulator").count() >= 2
    page.locator("#calls-judge ~ table.calls tr.bodies summary").first.click()
    request = page.locator("#calls-judge ~ table.calls tr.bodies .pair pre").first.inner_text()
    body = next(json.loads(line) for line in (jobs / "talk" / "u0000" / ".work" / "relay-judge" / "bodies.jsonl").read_text().splitlines())
    assert json.loads(request) == body["request"]
    routes = result_of(jobs, "talk")["standard"]["routes"]
    page.goto(viewer_app.url + "/jobs/talk")
    spent = page.locator(".box", has_text="other routes").inner_text()
    assert f"judge\t{routes['judge']['calls']}" in spent and f"simulated user\t{routes['simulator']['calls']}" in spent
    no_key(page)


def test_big_files_are_shown_in_part_with_their_size(viewer_app, viewer_world, page, tmp_path):
    jobs = viewer_world["jobs"]
    big = jobs / "big-stdout"
    if not big.exists():
        shutil.copytree(jobs / "tool", big, symlinks=True)
    lines = "".join(f"line {i:06d} of the check's output\n" for i in range(12000))  # about 400 KiB
    (big / "u0000" / "verifier" / "test-stdout.txt").write_text(lines)
    page.goto(viewer_app.url + "/jobs/big-stdout/u0000")
    page.wait_for_selector("#verifier")
    page.locator("#verifier").scroll_into_view_if_needed()
    shot(page, tmp_path, "trial-big-stdout")
    size = page.locator("#verifier ~ p.size").first.inner_text()
    assert size.startswith(f"verifier/test-stdout.txt · {len(lines) / 1024:.1f} KiB: its first ") and "KiB shown" in size
    shown = page.locator("#verifier ~ pre").first.inner_text()
    assert shown.startswith("line 000000") and "line 011999" not in shown and len(shown) <= 64 * 1024
    page.locator("#verifier ~ p.size a").first.click()  # the whole file
    assert page.locator("body").inner_text().rstrip().endswith("line 011999 of the check's output")
    page.screenshot(path=str(tmp_path / "screenshots" / "whole-record.png"))  # its top: the whole is 12,000 lines tall


def test_a_running_job_and_records_of_shapes_not_expected_are_said_never_a_traceback(viewer_app, viewer_world, page, tmp_path):
    jobs = viewer_world["jobs"]
    odd = jobs / "odd-records"
    if not odd.exists():
        shutil.copytree(jobs / "tool", odd, symlinks=True)
        (odd / "result.json").unlink()  # the run has not written its summary yet
        (odd / "u0002" / "result.json").unlink()  # a trial still running
        (odd / "u0001" / "result.json").write_text("[1, 2")  # a trial's record cut short
        config = json.loads((odd / "config.json").read_text())
        config["standard"]["options"] = "not an object"
        config["standard"]["planned_trials"].append("u0009")  # planned, never started
        (odd / "config.json").write_text(json.dumps(config))
        (odd / "u0000" / "agent" / "trace.json").write_text(json.dumps({"model_calls": "none", "tool_calls": [{"id": "t9", "started": "yesterday"}]}))
    page.goto(viewer_app.url + "/jobs")
    row = page.locator("table.jobs tbody tr", has_text="odd-records").inner_text()
    assert "starting (no result.json yet)" in row and "– / 4" in row
    page.goto(viewer_app.url + "/jobs/odd-records")
    page.wait_for_selector("svg.grid")
    shot(page, tmp_path, "job-odd-records")
    assert [page.locator(f"svg.grid rect.o-{o}").count() for o in ("passed", "failed", "running", "unreadable", "not_run")] == [1, 0, 1, 1, 1]
    problems = page.locator(".problems").inner_text()
    assert "result.json: not here" in problems and "u0001/result.json: not JSON" in problems
    assert "Benchmark options\tnone" in page.locator("table.config").inner_text()
    for trial in ("u0000", "u0001", "u0002"):
        page.goto(viewer_app.url + f"/jobs/odd-records/{trial}")
        page.wait_for_selector("ol.steps")  # each trial's trajectory is shown whatever else is odd
        assert "Traceback" not in page.content() and page.locator("li.step").count() == 5
    assert "u0002/result.json: not here" in page.locator(".problems").inner_text()
    shot(page, tmp_path, "trial-running")
    # a summary of a shape nothing foresaw: the page says which job and what it found
    strange = jobs / "odd-summary"
    if not strange.exists():
        shutil.copytree(jobs / "tool", strange, symlinks=True)
        result = json.loads((strange / "result.json").read_text())
        result["standard"]["cost"]["unknown_trials"] = 3
        (strange / "result.json").write_text(json.dumps(result))
    status, html = get(viewer_app.url + "/jobs/odd-summary")
    assert status == 500 and "odd-summary" in html and "TypeError" in html and "Traceback" not in html
    page.goto(viewer_app.url + "/jobs/odd-summary")
    shot(page, tmp_path, "job-cannot-be-shown")
    assert "hold something the viewer did not expect" in page.locator(".problems").inner_text()


@pytest.mark.parametrize("path", [
    "/jobs/%2e%2e", "/jobs/..%2f..%2fetc", "/jobs/%2fetc", "/jobs/planted/..%2f..%2fetc",
    "/jobs/planted/u0000/record/..%2f..%2fconfig.json", "/jobs/planted/u0000/record/.work/workspace/.git/config",
    "/jobs/planted/u0000/calls/agent/..%2f..", "/jobs/outside", "/jobs/outside/u0000", "/jobs/planted/u0000/record/exception.txt",
    "/jobs/planted/u0000/record/verifier/test-stdout.txt", "/jobs/planted/leak", "/compare/pareto.svg?a=..&b=planted",
])
def test_paths_from_a_request_never_leave_the_jobs_folder(viewer_app, viewer_world, tmp_path, path):
    jobs = viewer_world["jobs"]
    outside = jobs.parent / "outside-the-jobs"
    secret = "a file outside the jobs folder: never served"
    if not (jobs / "planted").exists():
        outside.mkdir(exist_ok=True)
        (outside / "secret.txt").write_text(secret + "\n")
        shutil.copytree(jobs / "tool", outside / "job", symlinks=True)  # a job's shape, outside
        shutil.copytree(jobs / "tool", jobs / "planted", symlinks=True)
        trial = jobs / "planted" / "u0000"
        (trial / "verifier" / "test-stdout.txt").unlink()
        (trial / "verifier" / "test-stdout.txt").symlink_to(outside / "secret.txt")
        (trial / "exception.txt").symlink_to(outside / "secret.txt")
        (jobs / "planted" / "leak").symlink_to(outside / "job" / "u0000")
        (jobs / "outside").symlink_to(outside / "job")
    status, body = get(viewer_app.url + path)
    assert status == 404 and secret not in body, (status, body[:300])
    page_status, html = get(viewer_app.url + "/jobs/planted/u0000")  # the trial itself shows, its planted links not followed
    assert page_status == 200 and secret not in html
    listing = get(viewer_app.url + "/jobs")[1]
    assert ">planted<" in listing and ">outside<" not in listing and secret not in listing
