"""Long work is never silent: an install and a download that go on say `state=running seconds=N` at a steady pace.

The pace is 30 s; NULLIUS_PROGRESS_EVERY sets it to 0.2 s here. Each test
holds the slow thing (a file the server sends half of) until the run has
said the line, then lets it end: no sleep decides anything.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

from conftest import ROOT
from file_server import file_server, run_releasing

from nullius_core.fsutil import read_json_lines

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
