"""The cap.memory/v1 kit's driver, spoken to over JSON lines as Nullius does.

Its one check, recall-fact: setup gives twelve sessions, exactly one stating
the fact the question asks for, and a question that does not carry it; a
fresh seed per setup; the reference passing; an empty memory, a wrong
session and a memory that is everything failing; the right session passing.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

from nullius_core.testing import run_cli

KIT = ROOT / "nullius_plugins" / "ports_v1" / "kits" / "cap-memory-v1"
UNIT = "recall-fact"
SEEDLIKE = re.compile(r"[0-9a-fA-F]{16,}")  # a seed is 32 hex digits; nothing the driver sends carries half of one
CODE = re.compile(r"\b[A-Z][0-9]-[A-Z][0-9][A-Z]\b")
QUESTION = re.compile(r"What is the (.+) for the (.+)\?")


def machine_python() -> str:
    """The first python3 on PATH outside Nullius's own environment, as a run picks it."""
    for folder in os.environ.get("PATH", "").split(os.pathsep):
        candidate = Path(folder) / "python3"
        if candidate.is_file() and os.access(candidate, os.X_OK) and not str(candidate).startswith(sys.prefix):
            return str(candidate)
    return sys.executable


class Driver:
    """The kit's driver process: `call(op, **fields)` writes one request line and reads one reply line."""

    def __init__(self) -> None:
        env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")}
        self.proc = subprocess.Popen(
            [machine_python(), str(KIT / "driver.py")],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env,
        )

    def send(self, line: str) -> dict:
        assert self.proc.stdin and self.proc.stdout
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        reply_line = self.proc.stdout.readline()
        assert reply_line.endswith("\n"), "the driver gave no reply line"
        reply = json.loads(reply_line)
        assert isinstance(reply, dict)
        return reply

    def call(self, op: str, **fields) -> dict:
        return self.send(json.dumps({"op": op, "dataset": "checks", **fields}))

    def close(self) -> None:
        assert self.proc.stdin
        self.proc.stdin.close()
        assert self.proc.wait(timeout=120) == 0


@pytest.fixture
def driver():
    d = Driver()
    yield d
    d.close()


def setup(d: Driver, folder: str, verifier: str = "/tmp/verifier") -> dict:
    reply = d.call("setup", unit=UNIT, dir=folder, verifier=verifier)
    assert "error" not in reply, reply
    return reply


def score(d: Driver, folder: str, answer: str) -> dict:
    reply = d.call("score", unit=UNIT, dir=folder, answer=answer,
                   transcript=[{"role": "user", "text": "..."}, {"role": "agent", "text": answer}])
    assert "error" not in reply, reply
    assert isinstance(reply["reward"], float) and isinstance(reply["passed"], bool) and isinstance(reply["detail"], dict)
    assert reply["reward"] == (1.0 if reply["passed"] else 0.0)
    return reply


def produce(d: Driver, folder: str, question: str, memory: str) -> str:
    reply = d.call("produce", unit=UNIT, dir=folder, question=question, memory=memory,
                   base_url=None, key=None, model=None)
    assert set(reply) == {"answer"}, reply
    return reply["answer"]


def test_units_and_definition(driver, nullius_env):
    standard = json.loads((KIT / "standard.json").read_text())
    assert standard["kit"] == {"port": "cap.memory/v1", "kit_version": 1, "basic": [UNIT]}
    assert standard["family"] == "capability" and standard["datasets"]["checks"]["units"] == 1
    assert standard["driver"]["command"] == ["python3", "{here}/driver.py"]
    assert standard["controls"]["nop"]["source"] == standard["controls"]["oracle"]["source"] == "nullius"
    result = run_cli(["check", str(KIT / "standard.json")], nullius_env)
    assert result.code == 0, result.output

    assert driver.call("units") == {"units": [UNIT]}
    assert driver.call("units") == {"units": [UNIT]}
    assert "error" in driver.call("units", dataset="other")
    assert "error" in driver.call("setup", unit="nope", dir="/tmp")
    assert "error" in driver.call("frobnicate")
    assert "error" in driver.send("not json")
    assert driver.call("units") == {"units": [UNIT]}  # it goes on after errors


def test_setup_gives_twelve_sessions_one_with_the_fact(driver, tmp_path):
    folder = str(tmp_path / "a")
    unit = setup(driver, folder)
    assert set(unit) == {"sessions", "question"}
    sessions, question = unit["sessions"], unit["question"]
    value = driver.call("oracle", unit=UNIT, dir=folder)["answer"]
    assert CODE.fullmatch(value)

    assert len(sessions) == 12
    assert len({s["id"] for s in sessions}) == 12
    dates = [s["date"] for s in sessions]
    assert all(re.fullmatch(r"\d{4}-\d{2}-\d{2}", d) for d in dates) and dates == sorted(dates)
    for s in sessions:
        assert set(s) == {"id", "date", "turns", "text"}
        assert isinstance(s["id"], str) and s["id"]
        assert s["turns"] and all(set(t) == {"role", "text"} and t["role"] in ("user", "assistant") for t in s["turns"])
        assert s["text"] == "\n".join(f"{t['role']}: {t['text']}" for t in s["turns"])
    assert not any(SEEDLIKE.search(json.dumps(s)) for s in sessions) and not SEEDLIKE.search(question)

    holding = [s for s in sessions if value in s["text"]]
    assert len(holding) == 1  # exactly one session states the fact
    assert value not in question and not CODE.search(question)
    kind, place = QUESTION.fullmatch(question).groups()
    assert f"the {kind} for the {place} is {value}" in holding[0]["text"].lower().replace(value.lower(), value)

    # plausible distractors: the same kind of code at other depots, other codes at the same depot
    others = [s["text"] for s in sessions if s is not holding[0]]
    same_kind = [t for t in others if re.search(rf"the {kind} for the [a-z]+ depot is", t, re.IGNORECASE)]
    same_place = [t for t in others if re.search(rf"the [a-z ]+ code for the {place} is", t, re.IGNORECASE)]
    assert len(same_kind) >= 2 and len(same_place) >= 2
    assert all(CODE.search(t) and value not in t for t in same_kind + same_place)
    assert len([t for t in others if not CODE.search(t)]) >= 5  # chatter, with no code


def test_two_setups_differ(driver, tmp_path):
    here, there = str(tmp_path / "a"), str(tmp_path / "b")
    first, second = setup(driver, here), setup(driver, there)
    value = driver.call("oracle", unit=UNIT, dir=here)["answer"]
    other = driver.call("oracle", unit=UNIT, dir=there)["answer"]
    assert value != other
    assert [s["id"] for s in first["sessions"]] != [s["id"] for s in second["sessions"]]
    assert all(value not in s["text"] for s in second["sessions"])
    assert score(driver, there, other)["passed"] is True  # each setup keeps its own fact
    assert score(driver, there, value)["passed"] is False
    values = set()
    for _ in range(5):  # the same unit and dir: each setup a new seed, the last one scored
        setup(driver, here)
        values.add(driver.call("oracle", unit=UNIT, dir=here)["answer"])
    assert len(values) == 5


def test_oracle_passes_and_empty_fails(driver, tmp_path):
    folder = str(tmp_path / "a")
    setup(driver, folder)
    reply = score(driver, folder, "")  # nop
    assert reply["passed"] is False and reply["detail"]["found"] is False
    assert "not in the memory" in reply["detail"]["note"]
    answer = driver.call("oracle", unit=UNIT, dir=folder)["answer"]
    reply = score(driver, folder, answer)
    assert reply["passed"] is True and reply["detail"]["expected"] == answer
    assert score(driver, folder, answer.lower())["passed"] is True


def test_everything_fails_as_not_selective(driver, tmp_path):
    folder = str(tmp_path / "a")
    unit = setup(driver, folder)
    value = driver.call("oracle", unit=UNIT, dir=folder)["answer"]
    everything = "\n\n".join(s["text"] for s in unit["sessions"])
    reply = score(driver, folder, everything)
    assert reply["passed"] is False
    assert reply["detail"]["found"] is True and reply["detail"]["selective"] is False
    assert "not selective" in reply["detail"]["note"] and value == reply["detail"]["expected"]
    total = sum(len(s["text"]) for s in unit["sessions"])
    some = [s["text"] for s in unit["sessions"] if value in s["text"]]
    for text in sorted((s["text"] for s in unit["sessions"] if value not in s["text"]), key=len, reverse=True):
        if len("\n\n".join(some)) > 0.35 * total:
            break
        some.append(text)
    assert len(some) < 12
    reply = score(driver, folder, "\n\n".join(some))  # not everything, but more than 35% of it
    assert reply["passed"] is False and reply["detail"]["found"] is True and reply["detail"]["share"] > 0.35


def test_the_right_session_passes_and_a_wrong_one_fails(driver, tmp_path):
    folder = str(tmp_path / "a")
    unit = setup(driver, folder)
    value = driver.call("oracle", unit=UNIT, dir=folder)["answer"]
    (right,) = [s for s in unit["sessions"] if value in s["text"]]
    answer = produce(driver, folder, unit["question"], f"session {right['id']} ({right['date']}):\n{right['text']}")
    reply = score(driver, folder, answer)
    assert reply["passed"] is True and reply["detail"]["selective"] is True and reply["detail"]["share"] < 0.2
    wrong = next(s for s in unit["sessions"] if CODE.search(s["text"]) and value not in s["text"])
    reply = score(driver, folder, produce(driver, folder, unit["question"], wrong["text"]))
    assert reply["passed"] is False and reply["detail"]["distractor_codes_in_memory"] == 1
    two = produce(driver, folder, unit["question"], wrong["text"] + "\n\n" + right["text"])
    assert score(driver, folder, two)["passed"] is True  # a distractor beside the fact is allowed


def test_produce_and_score_refuse_what_is_not_theirs(driver, tmp_path):
    folder = str(tmp_path / "a")
    assert "error" in driver.call("score", unit=UNIT, dir=folder, answer="x", transcript=[])  # no setup, no seed
    assert "error" in driver.call("oracle", unit=UNIT, dir=folder)
    setup(driver, folder)
    assert produce(driver, folder, "q", "") == ""
    assert "error" in driver.call("produce", unit=UNIT, dir=folder, question="q", base_url=None, key=None, model=None)
    assert "error" in driver.call("produce", unit=UNIT, dir=folder, question="q", memory=["a"])
    assert "error" in driver.call("score", unit=UNIT, dir=folder, answer=None, transcript=[])
