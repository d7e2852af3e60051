"""The gsm8k driver, started for real on the machine's python3 and spoken to over JSON lines.

NULLIUS_DATASET is the pinned test.jsonl the plugin ships (data/test.jsonl),
checked against the pin.
"""

import hashlib
import json
import os
import queue
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parents[1] / "nullius_bench_gsm8k" / "catalogue" / "benchmarks" / "gsm8k"
STANDARD = json.loads((HERE / "standard.json").read_text())
DATASET = STANDARD["datasets"]["test"]
REPO = Path(__file__).resolve().parents[3]
UNIT_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


@pytest.fixture(scope="module")
def seed():
    found = HERE / DATASET["path"].removeprefix("{here}/")
    assert hashlib.sha256(found.read_bytes()).hexdigest() == DATASET["sha256"], f"{found} is not the pinned file"
    return found


@pytest.fixture(scope="module")
def rows(seed):
    return [json.loads(line) for line in seed.read_text(encoding="utf-8").splitlines() if line.strip()]


def machine_python3():
    """The machine's python3, as Nullius starts a driver without install: never the test's own venv."""
    for folder in os.environ.get("PATH", "").split(os.pathsep):
        candidate = Path(folder) / "python3"
        if folder and not folder.startswith(sys.prefix) and os.access(candidate, os.X_OK):
            return str(candidate)
    return shutil.which("python3") or sys.executable


class Driver:
    """One driver process: a request per line in, a reply per line out."""

    def __init__(self, dataset, cwd):
        argv = [machine_python3() if part == "python3" else part.replace("{here}", str(HERE))
                for part in STANDARD["driver"]["command"]]
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(cwd),
               "NULLIUS_DATASET": str(dataset), "NULLIUS_UPSTREAM": "", "NULLIUS_VERSION": ""}
        self.err = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.err,
                                     env=env, cwd=cwd, text=True, bufsize=1)
        self.lines = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def send(self, text, timeout=30):
        self.proc.stdin.write(text + "\n")
        self.proc.stdin.flush()
        line = self.lines.get(timeout=timeout)
        if line is None:
            self.err.seek(0)
            pytest.fail(f"the driver died; its stderr:\n{self.err.read().decode()[-3000:]}")
        reply = json.loads(line)
        assert isinstance(reply, dict), line
        return reply

    def call(self, op, **fields):
        return self.send(json.dumps({"op": op, **fields}))

    def score(self, unit, answer):
        return self.call("score", unit=unit, dir=".", answer=answer, transcript=[], dataset="test")

    def close(self):
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.err.close()


@pytest.fixture(scope="module")
def driver(seed, tmp_path_factory):
    running = Driver(seed, tmp_path_factory.mktemp("scratch"))
    yield running
    running.close()


def gold(row):
    return row["answer"].rsplit("#### ", 1)[1].strip().replace(",", "")


def test_units_are_the_1319_problems_the_same_twice(driver):
    first = driver.call("units", dataset="test")["units"]
    second = driver.call("units", dataset="test")["units"]
    assert first == second == [f"u{i:04d}" for i in range(DATASET["units"])]
    assert len(set(first)) == 1319 and all(UNIT_ID.match(unit) for unit in first)


def test_every_oracle_answer_passes(driver, rows):
    began = time.monotonic()
    failed = []
    for i, row in enumerate(rows):
        unit = f"u{i:04d}"
        answer = driver.call("oracle", unit=unit, dir=".", dataset="test")["answer"]
        assert answer == row["answer"]
        reply = driver.score(unit, answer)
        if not (reply["passed"] is True and reply["reward"] == 1.0 and reply["detail"]["upstream_is_correct"]):
            failed.append((unit, reply))
    took = time.monotonic() - began
    print(f"\n1319 oracle answers (oracle + score) in one driver process: {took:.2f} s")
    assert failed == []


def test_setup_asks_for_the_final_line_and_hides_the_solution(driver, rows):
    for i in (0, 1, 500, 1318):
        prompt = driver.call("setup", unit=f"u{i:04d}", dir=".", dataset="test")["prompt"]
        assert prompt.startswith(rows[i]["question"])
        assert "#### <number>" in prompt
        assert rows[i]["answer"] not in prompt


def test_empty_answer_fails(driver):
    reply = driver.score("u0000", "")
    assert reply["passed"] is False and reply["reward"] == 0.0
    assert reply["detail"]["extracted"] == "[invalid]"


def test_the_last_number_rule(driver, rows):
    assert gold(rows[0]) == "18"
    reply = driver.score("u0000", "She sells 9 eggs at $2 each. The answer is 18.")
    assert reply["passed"] is True and reply["detail"]["rule"] == "last number (adapter)"
    assert reply["detail"]["upstream_is_correct"] is False  # the upstream alone finds no "#### "
    assert driver.score("u0000", "The answer is 17.")["passed"] is False
    assert driver.score("u0000", "It is 18, or is it 19?")["passed"] is False


def test_commas_as_the_upstream_handles_them(driver, rows):
    unit, number = next((f"u{i:04d}", gold(r)) for i, r in enumerate(rows) if len(gold(r)) >= 5 and gold(r).isdigit())
    with_commas = f"{int(number):,}"
    assert "," in with_commas
    upstream = driver.score(unit, f"So the total is:\n#### {with_commas}")
    assert upstream["passed"] is True and upstream["detail"]["upstream_is_correct"] is True, upstream
    fallback = driver.score(unit, f"The total is ${with_commas}.")
    assert fallback["passed"] is True and fallback["detail"]["extracted"] == number, fallback


def test_the_upstream_rule_wins_and_reads_the_first_match(driver):
    first = driver.score("u0000", "#### 17\nNo wait, 18.\n#### 18")
    assert first["passed"] is False and first["detail"]["extracted"] == "17"
    assert driver.score("u0000", "Working... the last number here is 3\n#### 18")["passed"] is True


def test_equal_decimals_pass_and_the_upstream_verdict_is_kept(driver):
    reply = driver.score("u0000", "#### 18.0")
    assert reply["passed"] is True and reply["detail"]["upstream_is_correct"] is False
    assert driver.score("u0000", "#### 18.")["passed"] is True
    assert driver.score("u0000", "#### 18")["detail"]["upstream_is_correct"] is True


def test_wrong_numbers_fail(driver):
    for answer in ("#### 19", "#### -18", "#### 1.8", "#### 180", "The answer is 81"):
        reply = driver.score("u0000", answer)
        assert reply["passed"] is False and reply["reward"] == 0.0, (answer, reply)


def test_scores_do_not_depend_on_order(driver):
    seen = [driver.score(unit, answer)["passed"] for unit, answer in
            [("u0000", "#### 18"), ("u1318", "#### 18"), ("u0000", "#### 18"), ("u0000", "#### 3"), ("u0000", "#### 18")]]
    assert seen == [True, False, True, False, True]


def test_bad_requests_are_errors_and_the_driver_goes_on(driver):
    assert "error" in driver.call("frobnicate")
    assert "error" in driver.send("this is not JSON")
    assert "error" in driver.send("null")
    assert "error" in driver.call("oracle", unit="u1319", dir=".")
    assert "error" in driver.score("x", "#### 1")
    assert len(driver.call("units")["units"]) == 1319


def test_without_a_dataset_ops_are_errors(tmp_path):
    lonely = Driver("", tmp_path)
    try:
        assert "NULLIUS_DATASET" in lonely.call("units")["error"]
    finally:
        lonely.close()
