"""The bm25 capability: its definition, the process over JSON lines, and the cap.memory/v1 kit driving it.

capability.py runs on this interpreter (the dev venv), whose packages must be
the versions capability.json pins (rank-bm25==0.2.2, numpy==2.4.6): the first
test checks that. The kit's driver runs on the machine's python3, as a run
starts it.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from nullius_cap_bm25 import plugin

from nullius_core.testing import isolated_env, make_session

FOLDER = plugin.CATALOGUE / "capabilities" / "bm25"
CAPABILITY = FOLDER / "capability.py"
DEFINITION = json.loads((FOLDER / "capability.json").read_text())

def _kit_driver() -> Path:
    """The memory kit's driver, where the installed session's port says its kit is."""
    port = make_session(isolated_env(Path(tempfile.mkdtemp()))).ports.get("cap.memory/v1")
    return port.kit_folder / "driver.py"


KIT_DRIVER = _kit_driver()


# the definition


def test_every_pin_is_exact_and_is_what_the_tests_run():
    pins = dict(p.split("==") for p in DEFINITION["install"]["pip"])
    assert set(pins) == {"rank-bm25", "numpy"}
    for name, version in pins.items():
        assert importlib.metadata.version(name) == version, f"{name}: pip install {name}=={version} into the dev venv"


def test_the_definition():
    assert DEFINITION["schema"] == "nullius.capability/v1" and DEFINITION["kind"] == "memory"
    assert DEFINITION["upstream"] == {"pypi": "rank-bm25", "version": "0.2.2"}
    assert DEFINITION["install"]["python"] == "3.11"
    assert DEFINITION["start"] == ["{install}/.venv/bin/python", "{here}/capability.py"]
    assert DEFINITION["options"]["top_k"] == {
        "summary": "how many sessions a recall returns", "values": ["1", "2", "3", "5"], "default": "2"}
    assert set(DEFINITION["proven"]) == {"cap.memory/v1"}  # proven by its kit, which reads no model


def test_capability_is_in_the_catalogue(nullius_session):
    entry = nullius_session().catalogue.get("capability", "bm25")
    assert entry is not None, "is nullius-cap-bm25 installed (./dev setup)?"
    assert entry.origin == "bm25"
    assert entry.file.parent == FOLDER


def test_nullius_check_and_list(nullius_cli):
    checked = nullius_cli("check", str(plugin.CATALOGUE), in_process=True)
    assert checked.code == 0 and "ok" in checked.stdout, checked.output
    listed = nullius_cli("list", "--json", in_process=True)
    assert listed.code == 0, listed.output
    (capability,) = [c for c in json.loads(listed.stdout)["capabilities"] if c["ref"] == "bm25"]
    assert set(capability["offers"]) == {"cap.memory/v1"}


def test_the_package_ships_the_capability():
    shipped = sorted(p.name for p in FOLDER.iterdir() if p.name != "__pycache__")
    assert shipped == ["capability.json", "capability.py"]


# the process


class Process:
    """A JSON-lines process: `send(obj)` writes one request line and reads one reply line."""

    def __init__(self, argv: list[str], env: dict[str, str], stderr: Path) -> None:
        self.stderr = stderr
        self.log = stderr.open("w")
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log,
                                     text=True, env=env)

    def line(self, text: str) -> dict:
        assert self.proc.stdin and self.proc.stdout
        self.proc.stdin.write(text + "\n")
        self.proc.stdin.flush()
        reply = self.proc.stdout.readline()
        assert reply.endswith("\n"), "no reply line"
        obj = json.loads(reply)
        assert isinstance(obj, dict)
        return obj

    def send(self, request: dict) -> dict:
        return self.line(json.dumps(request))

    def close(self) -> int:
        assert self.proc.stdin
        self.proc.stdin.close()
        code = self.proc.wait(timeout=10)
        self.log.close()
        return code


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NULLIUS_") and k not in ("PYTHONPATH", "PYTHONHOME")}
    return {**env, **extra}


class Starter:
    """Starts the capability (on this interpreter) and the kit's driver (on the machine's python3)."""

    def __init__(self, logs: Path) -> None:
        self.logs = logs
        self.made: list[Process] = []

    def capability(self, top_k: str | None = None) -> Process:
        env = clean_env(**({"NULLIUS_OPTION_TOP_K": top_k} if top_k is not None else {}))
        return self._start([sys.executable, str(CAPABILITY)], env)

    def kit(self) -> Process:
        env = clean_env()
        env.pop("VIRTUAL_ENV", None)
        return self._start([machine_python(), str(KIT_DRIVER)], env)

    def _start(self, argv: list[str], env: dict[str, str]) -> Process:
        self.made.append(Process(argv, env, self.logs / f"process-{len(self.made)}.log"))
        return self.made[-1]


@pytest.fixture
def start(tmp_path):
    starter = Starter(tmp_path)
    yield starter
    for p in starter.made:
        if p.proc.poll() is None:
            assert p.close() == 0


def machine_python() -> str:
    """The first python3 on PATH outside Nullius's own environment, as a run picks it."""
    for folder in os.environ.get("PATH", "").split(os.pathsep):
        candidate = Path(folder) / "python3"
        if candidate.is_file() and os.access(candidate, os.X_OK) and not str(candidate).startswith(sys.prefix):
            return str(candidate)
    return sys.executable


def session(sid: str, date: str, *lines: str) -> dict:
    turns = [{"role": "user" if i % 2 == 0 else "assistant", "text": line} for i, line in enumerate(lines)]
    return {"id": sid, "date": date, "turns": turns, "text": "\n".join(f"{t['role']}: {t['text']}" for t in turns)}


SESSIONS = [
    session("a", "2025-03-01", "The printer on the second floor is jammed again.", "I'll call the repair shop."),
    session("b", "2025-03-02", "Remember that the boiler service is on Friday.", "Noted, Friday it is."),
    session("c", "2025-03-03", "The wifi password for the warehouse is otter-lamp-42.", "Saved."),
    session("d", "2025-03-04", "Lunch on Thursday is at the noodle bar.", "Booked a table for six."),
    session("e", "2025-03-05", "The guest wifi in the office is down until Monday.", "I'll tell visitors."),
    session("f", "2025-03-06", "Parking at the warehouse is closed this weekend.", "I'll pass that on."),
]


def add_all(p: Process, sessions: list[dict]) -> None:
    for i, s in enumerate(sessions, 1):
        reply = p.send({"op": "add", "session": s})
        assert reply["ok"] is True and reply["trace"]["stored"] == s["id"] and reply["trace"]["sessions"] == i, reply


def test_the_right_session_ranks_first(start):
    p = start.capability()
    add_all(p, SESSIONS)
    reply = p.send({"op": "recall", "question": "What is the wifi password for the warehouse?"})
    assert set(reply) == {"memory", "trace"}
    hits = reply["trace"]["hits"]
    assert [h["id"] for h in hits][0] == "c" and len(hits) == 2  # top_k defaults to 2
    assert reply["trace"]["top_k"] == 2 and reply["trace"]["sessions"] == 6
    assert hits[0]["score"] >= hits[1]["score"] and all(isinstance(h["score"], float) for h in hits)
    assert hits[0]["date"] == "2025-03-03"
    assert reply["memory"].startswith("session c (2025-03-03):\n" + SESSIONS[2]["text"])
    assert "otter-lamp-42" in reply["memory"]
    other = p.send({"op": "recall", "question": "When is the boiler service?"})
    assert other["trace"]["hits"][0]["id"] == "b"


@pytest.mark.parametrize("top_k, n", [("1", 1), ("3", 3), ("5", 5)])
def test_top_k_is_honoured(start, top_k, n):
    p = start.capability(top_k)
    add_all(p, SESSIONS)
    reply = p.send({"op": "recall", "question": "the wifi at the warehouse, the office, the printer, the noodle bar"})
    assert reply["trace"]["top_k"] == int(top_k)
    assert len(reply["trace"]["hits"]) == n
    assert reply["memory"].count("session ") == n


def test_an_empty_memory_and_no_shared_word(start):
    p = start.capability()
    reply = p.send({"op": "recall", "question": "Anything?"})
    assert reply == {"memory": "", "trace": {"hits": [], "sessions": 0, "top_k": 2}}
    add_all(p, SESSIONS[:2])
    reply = p.send({"op": "recall", "question": "zebra xylophone"})  # no session shares a word: no hit
    assert reply["memory"] == "" and reply["trace"]["hits"] == []


def test_adding_an_id_again_replaces_it(start):
    p = start.capability("1")
    add_all(p, SESSIONS)
    reply = p.send({"op": "add", "session": session("c", "2025-04-01", "The warehouse wifi password is now heron-desk-7.")})
    assert reply["ok"] is True and reply["trace"]["replaced"] is True and reply["trace"]["sessions"] == 6
    recalled = p.send({"op": "recall", "question": "What is the wifi password for the warehouse?"})
    assert "heron-desk-7" in recalled["memory"] and "otter-lamp-42" not in recalled["memory"]


def test_bad_requests_are_errors_and_the_process_goes_on(start):
    p = start.capability()
    add_all(p, SESSIONS[:3])
    bad = [
        "not json",
        "[1, 2]",
        json.dumps({"op": "forget"}),
        json.dumps({"op": "add"}),
        json.dumps({"op": "add", "session": "text"}),
        json.dumps({"op": "add", "session": {**SESSIONS[0], "id": ""}}),
        json.dumps({"op": "add", "session": {**SESSIONS[0], "date": 20250301}}),
        json.dumps({"op": "add", "session": {**SESSIONS[0], "turns": [{"role": "user"}]}}),
        json.dumps({"op": "add", "session": {k: v for k, v in SESSIONS[0].items() if k != "text"}}),
        json.dumps({"op": "recall"}),
        json.dumps({"op": "recall", "question": "   "}),
        json.dumps({"op": "recall", "question": ["wifi"]}),
    ]
    for line in bad:
        reply = p.line(line)
        assert set(reply) == {"error"} and isinstance(reply["error"], str) and reply["error"], line
    reply = p.send({"op": "recall", "question": "What is the wifi password for the warehouse?"})
    assert reply["trace"]["sessions"] == 3 and reply["trace"]["hits"][0]["id"] == "c"  # the memory is kept
    assert p.close() == 0
    assert "[bm25] recall" in p.stderr.read_text()  # logs go to stderr, never stdout


def test_a_bad_top_k_is_every_replys_error(start):
    p = start.capability("zero")
    for request in ({"op": "add", "session": SESSIONS[0]}, {"op": "recall", "question": "printer"}):
        reply = p.send(request)
        assert set(reply) == {"error"} and "NULLIUS_OPTION_TOP_K" in reply["error"]
    assert "error" in start.capability("0").send({"op": "recall", "question": "printer"})


# the kit and the capability together


def run_unit(kit: Process, capability: Process, folder: str) -> tuple[dict, dict, dict]:
    """One unit as Nullius runs it: setup, add every session, recall the question, produce, score."""
    unit = kit.send({"op": "setup", "unit": "recall-fact", "dir": folder, "dataset": "checks", "verifier": folder + "/v"})
    assert set(unit) == {"sessions", "question"}, unit
    add_all(capability, unit["sessions"])
    recalled = capability.send({"op": "recall", "question": unit["question"]})
    assert "error" not in recalled, recalled
    produced = kit.send({"op": "produce", "unit": "recall-fact", "dir": folder, "dataset": "checks",
                         "question": unit["question"], "memory": recalled["memory"],
                         "base_url": None, "key": None, "model": None})
    assert produced == {"answer": recalled["memory"]}
    scored = kit.send({"op": "score", "unit": "recall-fact", "dir": folder, "dataset": "checks",
                       "answer": produced["answer"],
                       "transcript": [{"role": "user", "text": unit["question"]}, {"role": "agent", "text": produced["answer"]}]})
    assert "error" not in scored, scored
    return unit, recalled, scored


def test_the_kit_passes_with_bm25(start, tmp_path):
    kit = start.kit()
    assert kit.send({"op": "units", "dataset": "checks"}) == {"units": ["recall-fact"]}
    for i in range(5):  # a fresh capability per unit, as a run starts one
        folder = str(tmp_path / f"unit-{i}")
        unit, recalled, scored = run_unit(kit, start.capability(), folder)
        value = kit.send({"op": "oracle", "unit": "recall-fact", "dir": folder, "dataset": "checks"})["answer"]
        (right,) = [s["id"] for s in unit["sessions"] if value in s["text"]]
        assert recalled["trace"]["hits"][0]["id"] == right
        assert scored["passed"] is True and scored["reward"] == 1.0, scored
        assert scored["detail"]["selective"] is True and scored["detail"]["share"] < 0.35


def test_the_kit_fails_bm25_returning_too_much(start, tmp_path):
    kit = start.kit()
    _, recalled, scored = run_unit(kit, start.capability("5"), str(tmp_path / "unit"))
    assert len(recalled["trace"]["hits"]) == 5
    assert scored["passed"] is False and scored["detail"]["found"] is True and scored["detail"]["selective"] is False
    assert "not selective" in scored["detail"]["note"]
