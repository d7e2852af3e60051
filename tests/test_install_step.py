"""`./dev installs` (tests/installs.py): a test that needs the installs and finds them absent fails naming the step;
a pass over rows already made says one line; long work says it still runs."""

from __future__ import annotations

import json

import pytest

from tests import installs


@pytest.fixture
def elsewhere(tmp_path, monkeypatch):
    """The installs' folder (and so the stamp beside it) in this test's own tmp folder."""
    monkeypatch.setenv(installs.INSTALLS_VARIABLE, str(tmp_path / "standard"))
    return tmp_path


def test_a_missing_stamp_fails_the_test_naming_the_step(elsewhere):
    with pytest.raises(pytest.fail.Exception, match=r"not here .*run \./dev installs \(\./dev test runs it first\)"):
        installs.need()


def test_a_stamp_of_other_pins_fails_naming_the_step(elsewhere):
    installs.stamp_file().write_text(json.dumps({"fingerprint": "other", "made": []}))
    with pytest.raises(pytest.fail.Exception, match=r"other pins .*run \./dev installs"):
        installs.need()


def test_a_row_not_made_is_named_with_the_step_that_makes_it(elsewhere, monkeypatch):
    monkeypatch.setattr(installs, "table", lambda: [])
    installs.stamp_file().write_text(json.dumps({"fingerprint": installs.fingerprint([]), "made": ["harbor"]}))
    installs.need("harbor")
    with pytest.raises(pytest.fail.Exception, match=r"'docker-base' is not among those made: run \./dev installs docker-base"):
        installs.need("docker-base")


def _row(name, here, make):
    return installs.Row(name=name, what=f"the {name}", pins={"v": 1}, make=make, here=lambda: here)


def test_a_row_already_here_says_nothing_and_one_being_made_says_its_start_and_time(capsys):
    made = []
    rows = [_row("warm", True, lambda progress: made.append("warm")), _row("cold", False, lambda progress: made.append("cold"))]
    assert installs.make_all(rows) == []
    out = capsys.readouterr().out
    assert sorted(made) == ["cold", "warm"]  # a row already here is still made: its install checks its own digest
    assert "warm" not in out
    assert "./dev installs: cold (the cold) ...\n" in out and "./dev installs: cold: done in 0 s\n" in out


def test_long_work_says_it_still_runs(capsys, monkeypatch):
    import threading

    monkeypatch.setattr(installs, "BEAT", 0.05)
    beat_seen = threading.Event()

    def slow(progress):
        # the heartbeat's own line is the event waited for: never a fixed sleep
        while not beat_seen.is_set():
            beat_seen.wait(0.01)
            if "still going" in capsys.readouterr().out:
                beat_seen.set()

    assert installs.make_all([_row("slow", False, slow)]) == []
    assert beat_seen.is_set()


def test_a_failing_row_is_said_and_the_others_still_made(capsys):
    def broken(progress):
        raise RuntimeError("the registry said no")

    made = []
    rows = [_row("bad", False, broken), _row("good", False, lambda progress: made.append("good"))]
    assert installs.make_all(rows) == ["bad"]
    assert made == ["good"]
    assert "bad: FAILED after 0 s: the registry said no" in capsys.readouterr().out
