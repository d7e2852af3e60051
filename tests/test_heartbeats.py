"""Long work is never silent: an install, a download and a unit that go on say `state=running seconds=N` at a steady pace.

The pace is 30 s; NULLIUS_PROGRESS_EVERY sets it to 0.2 s here. Each test
holds the slow thing (a file the server sends half of, a model that has not
answered) until the run has said the line, then lets it end: no sleep
decides anything.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import shutil
import threading
from pathlib import Path

from conftest import ROOT
from file_server import file_server, run_acting, run_releasing

from nullius_core.fsutil import read_json_lines
from nullius_core.run.unit_watch import UnitWatch

FIXTURES = ROOT / "tests" / "fixtures" / "catalogue"
TEMPLATE = ROOT / "examples" / "benchmark-plugin-template" / "nullius_bench_example" / "catalogue" / "benchmarks" / "example-arith"
PROBLEMS = (TEMPLATE / "data" / "problems.jsonl").read_bytes()
FILE = b"weights " * 4096
PACE = {"NULLIUS_PROGRESS_EVERY": "0.2"}


def fields(line: str) -> dict[str, str]:
    return dict(word.split("=", 1) for word in line.split()[1:])


def arith(tmp_path: Path, dataset: dict | None = None, install: dict | None = None) -> Path:
    """A catalogue of the template's benchmark `arith`, its dataset or its driver's install changed."""
    root = tmp_path / "catalogue"
    folder = root / "benchmarks" / "arith"
    shutil.copytree(TEMPLATE, folder)
    standard = json.loads((folder / "standard.json").read_text())
    if dataset is not None:
        standard["datasets"]["test"] = dataset
    if install is not None:
        standard["driver"]["install"] = install
    (folder / "standard.json").write_text(json.dumps(standard))
    return root


def said_running(stderr: str, what: str) -> list[dict[str, str]]:
    """The `state=running` lines of `what` (`stage=install driver=arith`), said before its `state=done`."""
    lines = [fields(x) for x in stderr.splitlines() if x.startswith(f"[nullius] {what} state=running ")]
    assert lines, stderr
    assert stderr.index(f"{what} state=running") < stderr.index(f"{what} state=done")
    return lines


def test_an_install_that_goes_on_says_it_is_running(nullius_env, tmp_path):
    """The driver's environment waits on its prefetched file: the install says how long it has run until it comes."""
    with file_server() as server:
        url = server.serve("/big.bin", FILE, held=len(FILE) // 4)
        install = {"prefetch": [f"{url}#sha256={hashlib.sha256(FILE).hexdigest()}"]}
        env = {**nullius_env, **PACE, "NULLIUS_CATALOGUE": str(arith(tmp_path, install=install))}
        result = run_releasing(["run", "arith", "oracle", "--job-name", "i"], env, server, when="stage=install driver=arith state=running")
    assert result.code == 0, result.output
    [first, *_] = said_running(result.stderr, "stage=install driver=arith")
    assert float(first["seconds"]) >= 0.2 and list(first)[:4] == ["stage", "driver", "state", "seconds"]
    progress = read_json_lines(Path(env["NULLIUS_JOBS_DIR"]) / "i" / "progress.jsonl")
    assert any(p.get("driver") == "arith" and p.get("state") == "running" for p in progress)


def test_a_download_that_goes_on_says_it_is_running(nullius_env, tmp_path):
    with file_server() as server:
        url = server.serve("/problems.jsonl", PROBLEMS, held=len(PROBLEMS) // 2)
        dataset = {"url": url, "sha256": hashlib.sha256(PROBLEMS).hexdigest(), "units": 5}
        env = {**nullius_env, **PACE, "NULLIUS_CATALOGUE": str(arith(tmp_path, dataset=dataset))}
        result = run_releasing(["run", "arith", "oracle", "--job-name", "d"], env, server, when="stage=install dataset=arith/test state=running")
    assert result.code == 0, result.output
    said_running(result.stderr, "stage=install dataset=arith/test")


def test_a_unit_that_goes_on_says_what_it_is_doing(nullius_env, tmp_path, fake_model):
    """The model holds its answer until the run says the unit is running, in its agent's phase."""
    released = threading.Event()

    async def respond(request):
        await asyncio.to_thread(released.wait, 600)
        return {"text": "alpha"}

    fake_model.use(respond)
    catalogue = tmp_path / "catalogue"
    shutil.copytree(FIXTURES, catalogue)
    env = {**nullius_env, **PACE, "NULLIUS_CATALOGUE": str(catalogue), "OPENAI_COMPATIBLE_API_KEY": "sk-any"}
    args = ["run", "faulty", "scripted", "--model", "fake-1", "--provider", "openai-compatible", "--base-url", fake_model.openai_base_url,
            "--unsandboxed", "--limit", "1", "--job-name", "u"]
    try:
        result = run_acting(args, env, "stage=unit unit=u0000 state=running", released.set)
    finally:
        released.set()
    assert result.code == 0, result.output
    running = [fields(x) for x in result.stderr.splitlines() if "stage=unit unit=u0000 state=running" in x]
    assert running and running[0]["doing"] == "agent_execution" and float(running[0]["seconds"]) >= 0.2
    [ended] = [fields(x) for x in result.stderr.splitlines() if x.startswith("[nullius] stage=unit i=1 ")]
    assert ended["outcome"] == "passed" and float(ended["seconds"]) >= float(running[-1]["seconds"])
    progress = read_json_lines(Path(env["NULLIUS_JOBS_DIR"]) / "u" / "progress.jsonl")
    assert [p["stage"] for p in progress if p.get("state") != "running"] == ["relay", "units", "unit", "done"]  # the running lines aside


def test_each_unit_is_said_every_beat_from_its_own_start(monkeypatch):
    """The watch's clock driven by hand: a trial is said once it has run a whole beat, then at each beat after, with its phase."""
    from nullius_core.jobs.harbor import Phases
    from nullius_core.jobs.records import utcnow

    monkeypatch.setenv("NULLIUS_PROGRESS_EVERY", "30")
    now = [100.0]
    said: list[tuple] = []
    watch = UnitWatch(lambda stage, **f: said.append((stage, f["unit"], f["state"], f["seconds"], f.get("doing"))), clock=lambda: now[0])
    watch.began("u0000", "u0000")
    watch.phases("u0000", Phases(utcnow()))
    now[0] = 120.0
    watch.began("u0001r2", "u0001r2")
    for at in (129.0, 130.0, 149.0, 150.0):
        now[0] = at
        watch.tick()
    watch.ended("u0000")
    for at in (161.0, 180.0):
        now[0] = at
        watch.tick()
    assert said == [("unit", "u0000", "running", 30.0, "environment_setup"), ("unit", "u0001r2", "running", 30.0, None),
                    ("unit", "u0001r2", "running", 60.0, None)]
