"""`install.prefetch`: files downloaded ahead, first, checked by sha256, handed to the driver at {install}/prefetch/.

The files are served by a real HTTP server on the loopback, in a thread of the test.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from conftest import ROOT
from file_server import file_server, run_releasing

from nullius_core.testing import run_cli

# A first install makes a venv and uv installs into it: generous, so that a loaded machine is never what fails the test.
INSTALL_SECONDS = 900

MODEL = b"weights " * 4096  # 32 KiB
VOCAB = b"one\ntwo\nthree\n"

DRIVER = '''
import hashlib, json, os, sys

install = sys.argv[1]
folder = os.environ["NULLIUS_PREFETCH"]

def found():
    return {"folder": folder, "under_install": os.path.samefile(folder, os.path.join(install, "prefetch")),
            "files": {n: hashlib.sha256(open(os.path.join(folder, n), "rb").read()).hexdigest() for n in sorted(os.listdir(folder))}}

for line in sys.stdin:
    request = json.loads(line)
    op = request["op"]
    if op == "units":
        reply = {"units": ["u0"]}
    elif op == "setup":
        reply = {"prompt": "What was fetched ahead?"}
    elif op == "oracle":
        reply = {"answer": json.dumps(found())}
    else:
        reply = {"reward": 1.0, "passed": True, "detail": json.loads(request["answer"] or "{}")}
    sys.stdout.write(json.dumps(reply) + "\\n")
    sys.stdout.flush()
'''


def pinned(url: str, body: bytes) -> str:
    return f"{url}#sha256={hashlib.sha256(body).hexdigest()}"


def catalogue(tmp_path: Path, install: dict) -> Path:
    """A catalogue of one benchmark, `pre`, whose driver has `install` and reports what NULLIUS_PREFETCH holds."""
    root = tmp_path / "catalogue"
    folder = root / "benchmarks" / "pre"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "driver.py").write_text(DRIVER)
    (folder / "benchmark.json").write_text(json.dumps({"name": "Prefetch", "summary": "A fixture: install.prefetch.", "harness": "standard"}))
    (folder / "upstream-settings.json").write_text(json.dumps({"settings": []}))
    python = "{install}/.venv/bin/python" if install.get("pip") else "python3"
    standard = {
        "schema": "nullius.standard/v1", "needs": ["agent.task/v1"], "upstream": {"pypi": "six", "version": "1.16.0"},
        "datasets": {"test": {"units": 1}},
        "driver": {"command": [python, "{here}/driver.py", "{install}"], "install": install},
        "controls": {"nop": {"source": "nullius", "from": "empty"}, "oracle": {"source": "nullius", "from": "what was fetched"}},
    }
    (folder / "standard.json").write_text(json.dumps(standard, indent=2))
    return root


def environ(nullius_env: dict[str, str], tmp_path: Path, install: dict) -> dict[str, str]:
    return {**nullius_env, "NULLIUS_CATALOGUE": str(catalogue(tmp_path, install)), "NULLIUS_JOBS_DIR": str(tmp_path / "jobs")}


def drivers(env: dict[str, str]) -> Path:
    return Path(env["XDG_DATA_HOME"]) / "nullius" / "standard" / "drivers" / "pre"


def test_prefetched_files_come_first_and_reach_the_driver(nullius_env, tmp_path):
    with file_server() as server:
        model = server.serve("/models/model.bin", MODEL, held=len(MODEL) // 4)
        vocab = server.serve("/v1/vocab.txt?rev=2", VOCAB)
        install = {"pip": ["six==1.16.0"], "prefetch": [pinned(model, MODEL), pinned(vocab, VOCAB)]}
        env = {**environ(nullius_env, tmp_path, install), "NULLIUS_PROGRESS_EVERY": "0.2"}
        # what the environment's folder holds as each file is asked for: no venv yet, no uv step has run
        server.when_asked = lambda _: sorted(str(p.relative_to(drivers(env))) for p in drivers(env).rglob("*") if ".venv" in p.parts)
        assert run_cli(["check"], env).code == 0
        ran = run_releasing(["run", "pre", "oracle", "--job-name", "o"], env, server, when="state=downloading", timeout=INSTALL_SECONDS)
    assert ran.code == 0, ran.output
    assert server.asked == ["/models/model.bin", "/v1/vocab.txt?rev=2"]
    assert server.seen == {"/models/model.bin": [], "/v1/vocab.txt?rev=2": []}
    [folder] = [p for p in drivers(env).iterdir() if p.is_dir()]
    detail = json.loads((tmp_path / "jobs" / "o" / "u0" / "verifier" / "score.json").read_text())["detail"]
    assert detail == {
        "folder": str(folder / "prefetch"),
        "under_install": True,
        "files": {"model.bin": hashlib.sha256(MODEL).hexdigest(), "vocab.txt": hashlib.sha256(VOCAB).hexdigest()},
    }
    assert sorted(p.name for p in (folder / "prefetch").iterdir()) == ["model.bin", "vocab.txt"]  # no temporary file left
    assert (folder / ".venv").is_dir()  # the uv steps ran after
    # a prefetch file's download says its bytes while it goes, in the job's progress.jsonl too
    [said, *_] = [line for line in ran.stderr.splitlines() if "state=downloading" in line]
    assert "stage=install driver=pre " in said and "file=model.bin" in said and f"of={len(MODEL)}" in said
    progress = [json.loads(line) for line in (tmp_path / "jobs" / "o" / "progress.jsonl").read_text().splitlines()]
    assert any(p.get("state") == "downloading" and p.get("file") == "model.bin" for p in progress)
    assert json.loads((folder / ".nullius-installed").read_text())["install"]["prefetch"] == install["prefetch"]
    again = run_cli(["run", "pre", "oracle", "--job-name", "again"], env, timeout=INSTALL_SECONDS)
    assert again.code == 0 and "stage=install driver=pre state=cached" in again.stderr


def test_a_prefetched_file_whose_bytes_differ_is_refused_and_leaves_nothing(nullius_env, tmp_path):
    with file_server() as server:
        url = server.serve("/models/model.bin", MODEL + b"!")
        pin = hashlib.sha256(MODEL).hexdigest()
        env = environ(nullius_env, tmp_path, {"pip": ["six==1.16.0"], "prefetch": [f"{url}#sha256={pin}"]})
        ran = run_cli(["run", "pre", "oracle"], env, timeout=INSTALL_SECONDS)
    assert ran.code == 2, ran.output
    assert "Traceback" not in ran.output
    [line] = [line for line in ran.stderr.splitlines() if line.startswith("nullius: ")]
    found = hashlib.sha256(MODEL + b"!").hexdigest()
    assert line.startswith("nullius: run refused: the driver's environment of pre cannot be installed: ")
    assert url in line and f"its sha256 is {found}, but the pin is {pin}" in line
    assert "stage=install driver=pre state=failed" in ran.stderr
    assert [p.name for p in drivers(env).iterdir() if not p.name.endswith(".lock")] == []  # no folder, no file, no venv


PREFETCH_ERRORS = [
    (["http://127.0.0.1:9/model.bin"], 0, "expected URL#sha256=<64 lowercase hex digits>, found 'http://127.0.0.1:9/model.bin'"),
    ([f"http://127.0.0.1:9/model.bin#sha256={'A' * 64}"], 0, "expected URL#sha256=<64 lowercase hex digits>, found"),
    ([f"http://127.0.0.1:9/model.bin#sha256={'a' * 63}"], 0, "expected URL#sha256=<64 lowercase hex digits>, found"),
    ([f"file:///etc/passwd#sha256={'a' * 64}"], 0, "expected an http:// or https:// URL, found 'file:///etc/passwd'"),
    ([f"ftp://127.0.0.1/model.bin#sha256={'a' * 64}"], 0, "expected an http:// or https:// URL, found 'ftp://127.0.0.1/model.bin'"),
    ([f"http://127.0.0.1:9/#sha256={'a' * 64}"], 0, "expected a URL whose path ends in a file name, found 'http://127.0.0.1:9/'"),
    ([f"http://127.0.0.1:9/a/model.bin#sha256={'a' * 64}", f"http://127.0.0.1:9/b/model.bin#sha256={'b' * 64}"], 1,
     "expected a file name of its own, found 'model.bin', which prefetch[0] has too"),
]


@pytest.mark.parametrize("entries, index, said", PREFETCH_ERRORS, ids=["no-sha256", "upper-hex", "short-hex", "file", "ftp", "no-name", "same-name"])
def test_a_malformed_prefetch_entry_is_refused_before_anything_installs(nullius_env, tmp_path, entries, index, said):
    env = environ(nullius_env, tmp_path, {"pip": ["six==1.16.0"], "prefetch": entries})
    checked = run_cli(["check"], env, in_process=True)
    assert checked.code == 2, checked.output
    assert f"$.driver.install.prefetch[{index}]: {said}" in checked.output
    ran = run_cli(["run", "pre", "oracle"], env)
    assert ran.code == 2 and "Traceback" not in ran.output
    assert "run refused: the benchmark's definition is invalid" in ran.stderr
    assert f"$.driver.install.prefetch[{index}]: {said}" in ran.stderr
    assert "stage=install" not in ran.stderr and not drivers(env).exists()


def test_the_prefetch_entries_are_part_of_the_environments_digest():
    from nullius_core.definitions import Install
    from nullius_core.run.install import Makings, digest

    one = Install(prefetch=[f"https://example.org/model.bin#sha256={'a' * 64}"])
    other = Install(prefetch=[f"https://example.org/model.bin#sha256={'b' * 64}"])
    assert digest(Makings.of(one, None)) != digest(Makings.of(other, None))
    assert digest(Makings.of(one, None)) == digest(Makings.of(Install(prefetch=list(one.prefetch or [])), None))



CAPABILITY = '''
import json, os, sys

folder = os.environ["NULLIUS_PREFETCH"]
for line in sys.stdin:
    request = json.loads(line)
    if request["op"] == "add":
        reply = {"ok": True}
    else:  # its memory is the file fetched ahead, whatever the sessions said
        reply = {"memory": open(os.path.join(folder, "notes.txt"), encoding="utf-8").read(), "trace": {"prefetch": folder}}
    sys.stdout.write(json.dumps(reply) + "\\n")
    sys.stdout.flush()
'''


def test_a_capability_finds_its_prefetched_files_in_nullius_prefetch(nullius_env, tmp_path, fake_model):
    """A capability whose memory is a file its install fetched ahead: the recall benchmark's units pass only if it read it."""
    import re
    import shutil

    from test_capability_runs import KEY, reader

    root = tmp_path / "catalogue"
    shutil.copytree(ROOT / "tests" / "fixtures" / "catalogue" / "benchmarks" / "recall", root / "benchmarks" / "recall")
    rows = [json.loads(line) for line in (root / "benchmarks" / "recall" / "data" / "units.jsonl").read_text().splitlines()]
    depots = [re.search(r"for the (\w+) depot\?", row["question"]).group(1) for row in rows]
    notes = "".join(f"the gate code for the {depot} depot is {row['answer']}.\n" for depot, row in zip(depots, rows)).encode()
    folder = root / "capabilities" / "notes"
    folder.mkdir(parents=True)
    (folder / "capability.py").write_text(CAPABILITY)
    with file_server() as server:
        url = server.serve("/notes.txt", notes)
        (folder / "capability.json").write_text(json.dumps({
            "schema": "nullius.capability/v1", "name": "Notes", "summary": "A fixture: a memory fetched ahead.", "kind": "memory",
            "upstream": {"pypi": "notes", "version": "0.0.0"}, "install": {"prefetch": [pinned(url, notes)]},
            "start": ["python3", "{here}/capability.py"], "proven": {"cap.memory/v1": {"passed": "1/1"}},
        }))
        env = {**nullius_env, "NULLIUS_CATALOGUE": str(root), "NULLIUS_JOBS_DIR": str(tmp_path / "jobs"), "OPENAI_COMPATIBLE_API_KEY": KEY}
        fake_model.use(reader)
        args = ["run", "recall", "notes", "--model", "fake-reader", "--provider", "openai-compatible", "--base-url", fake_model.openai_base_url,
                "--job-name", "n"]
        ran = run_cli(args, env)
    assert ran.code == 0, ran.output
    outcomes = {p.parent.name: json.loads(p.read_text())["standard"]["outcome"] for p in (tmp_path / "jobs" / "n").glob("*/result.json")}
    assert outcomes == {f"u000{i}": "passed" for i in range(4)}
    [installed] = [p for p in (Path(env["XDG_DATA_HOME"]) / "nullius" / "standard" / "capabilities" / "notes" / "0.0.0").iterdir() if p.is_dir()]
    recall = [json.loads(line) for line in (tmp_path / "jobs" / "n" / "u0000" / "agent" / "capability.jsonl").read_text().splitlines()]
    assert any(e["msg"].get("trace", {}).get("prefetch") == str(installed / "prefetch") for e in recall if e["dir"] == "in")
