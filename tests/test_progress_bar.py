"""The bar a terminal shows while the units run: done of planned, the mean reward so far, and the time left at the run's pace."""

from __future__ import annotations

import io
import json

from nullius_core.run.progress import Progress
from nullius_core.run.progress_bar import Pace, duration


def unit(progress: Progress, i: int, name: str, reward: float | None, seconds: float, **more) -> None:
    progress.stage("unit", i=i, of=4, unit=name, outcome="passed" if reward else "failed", reward=reward, seconds=seconds, **more)


def test_the_bar_shows_the_running_mean_and_the_time_left(tmp_path):
    stream = io.StringIO()
    progress = Progress(stream, bar=True)
    progress.concurrency = 2
    progress.stage("units", n=4, job="j")
    assert "0/4" in progress.bar_text() and "mean" not in progress.bar_text() and "left" not in progress.bar_text()
    unit(progress, 1, "u0000", 1.0, 10.0)
    unit(progress, 2, "u0001", 0.0, 30.0)
    # 2 trials to go, at 20 s each, 2 at a time: 20 s
    text = progress.bar_text()
    assert "[nullius] units" in text and "2/4" in text and "mean 0.5000" in text and "about 20 s left" in text, text
    progress.stage("unit", unit="u0002", state="running", seconds=30.0, doing="agent_execution")
    text = progress.bar_text()
    assert "2/4" in text and "u0002 running 30.0 s (agent_execution)" in text, text
    progress.stage("unit", i=3, of=4, unit="u0003", outcome="error:AgentTimeoutError", seconds=600.0, cause="the agent ran out of time",
                   trial="/jobs/j/u0003")
    text = progress.bar_text()
    assert "3/4" in text and "mean 0.5000" in text and "about 4 min left" in text, text  # the last one at (10 + 30 + 600) / 3 s
    progress.attach(tmp_path / "progress.jsonl")
    progress.stage("done", state="finished", job="j")
    progress.close()
    printed = stream.getvalue()
    # above the bar: only the errored unit's line; the others, and the running one, are the bar's; the record keeps them all
    assert "stage=unit i=3 of=4 unit=u0003 outcome=error:AgentTimeoutError" in printed and "stage=unit i=1 " not in printed
    assert "state=running" not in printed
    records = [json.loads(line) for line in (tmp_path / "progress.jsonl").read_text().splitlines()]
    assert [r["stage"] for r in records] == ["units", "unit", "unit", "unit", "unit", "done"]
    assert records[3] == {**records[3], "unit": "u0002", "state": "running", "seconds": 30.0}


def test_without_a_terminal_there_is_no_bar_and_every_line_is_said():
    stream = io.StringIO()
    progress = Progress(stream, bar=False)
    progress.stage("units", n=4)
    unit(progress, 1, "u0000", 1.0, 1.5)
    progress.stage("unit", unit="u0001", state="running", seconds=30.0, doing="verifier")
    assert progress.bar_text() is None
    lines = [line.rsplit(" at=", 1)[0] for line in stream.getvalue().splitlines()]
    assert lines == ["[nullius] stage=units n=4", "[nullius] stage=unit i=1 of=4 unit=u0000 outcome=passed reward=1.0 seconds=1.5",
                     "[nullius] stage=unit unit=u0001 state=running seconds=30.0 doing=verifier"]


def test_a_refusal_is_kept_for_the_record_and_never_said():
    stream = io.StringIO()
    progress = Progress(stream, bar=False)
    progress.record("refused", reason="no benchmark named 'nope'")
    assert stream.getvalue() == ""


def test_the_pace_of_a_resumed_run_counts_from_the_trials_that_stood():
    pace = Pace(total=10, concurrency=4)
    assert pace.mean is None and pace.left is None and pace.left_text() == ""
    pace.add(7, None, 12.0)  # 6 stood; an errored trial: timed, not scored
    assert pace.done == 7 and pace.mean is None and pace.left == 3 * 12.0 / 3
    pace.add(8, 0.25, 4.0)
    assert pace.mean_text() == "mean 0.2500" and pace.left_text() == "about 8 s left"  # 2 to go at 8 s, both at once
    assert [duration(s) for s in (0.2, 45, 89.6, 600, 5399, 5400, 12600)] == ["1 s", "45 s", "90 s", "10 min", "90 min", "1.5 h", "3.5 h"]
