"""A dataset fetched: from a URL only http(s), from an upstream only its own files, and nothing but the checked file left in the cache.

The URL is served by a real HTTP server on the loopback, in a thread of the test.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from conftest import ROOT

from nullius_core.testing import run_cli

TEMPLATE = ROOT / "examples" / "benchmark-plugin-template" / "nullius_bench_example" / "catalogue" / "benchmarks" / "example-arith"
PROBLEMS = (TEMPLATE / "data" / "problems.jsonl").read_bytes()


class Files(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        if self.path == "/cut/problems.jsonl":
            # says the whole file's length, sends a tenth of it and hangs up
            self.send_response(200)
            self.send_header("Content-Length", str(len(PROBLEMS)))
            self.end_headers()
            self.wfile.write(PROBLEMS[: len(PROBLEMS) // 10])
            self.wfile.flush()
            self.close_connection = True
            return
        body = {"/good/problems.jsonl": PROBLEMS, "/wrong/problems.jsonl": PROBLEMS + b"\n"}.get(self.path)
        if body is None:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args) -> None:
        pass


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Files)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    thread.join(timeout=30)


def catalogue_with(tmp_path: Path, url: str) -> Path:
    """A catalogue whose one benchmark is the template's, its dataset at `url`."""
    root = tmp_path / "catalogue"
    folder = root / "benchmarks" / "arith"
    shutil.copytree(TEMPLATE, folder)
    path = folder / "standard.json"
    standard = json.loads(path.read_text())
    dataset = standard["datasets"]["test"]
    del dataset["path"]
    dataset["url"] = url
    path.write_text(json.dumps(standard))
    (folder / "data" / "problems.jsonl").unlink()
    return root


def cache(env: dict[str, str]) -> Path:
    return Path(env["XDG_DATA_HOME"]) / "nullius" / "standard" / "datasets"


def files_in(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()) if folder.exists() else []


def test_a_download_leaves_only_the_checked_file(nullius_env, tmp_path, server):
    env = {**nullius_env, "NULLIUS_CATALOGUE": str(catalogue_with(tmp_path, f"{server}/good/problems.jsonl"))}
    result = run_cli(["run", "arith", "oracle", "--job-name", "a"], env)
    assert result.code == 0, result.output
    assert "stage=install dataset=arith/test state=done" in result.stderr
    pin = hashlib.sha256(PROBLEMS).hexdigest()
    assert files_in(cache(env)) == [f"arith/test/{pin}/problems.jsonl"]
    again = run_cli(["run", "arith", "oracle", "--job-name", "b"], env)
    assert again.code == 0 and "stage=install dataset=arith/test state=cached" in again.stderr


@pytest.mark.parametrize("where, said", [
    ("wrong", "its sha256 is "),
    ("cut", "bytes short"),
    ("missing", "HTTP Error 404"),
])
def test_a_failed_download_leaves_nothing(nullius_env, tmp_path, server, where, said):
    url = f"{server}/{where}/problems.jsonl"
    env = {**nullius_env, "NULLIUS_CATALOGUE": str(catalogue_with(tmp_path, url))}
    result = run_cli(["run", "arith", "oracle"], env)
    assert result.code == 2, result.output
    assert "Traceback" not in result.output
    [line] = [line for line in result.stderr.splitlines() if line.startswith("nullius: ")]
    assert line.startswith("nullius: run refused: ") and said in line and url in line
    assert files_in(cache(env)) == []
    assert not (cache(env) / "arith").exists()


def test_a_dataset_the_upstream_links_outside_its_clone_is_refused(nullius_env, tmp_path):
    """A hostile upstream's data file is a link to this machine's file (here with the pinned content: still not the upstream's)."""
    import os
    import subprocess

    outside = tmp_path / "outside" / "problems.jsonl"
    outside.parent.mkdir()
    outside.write_bytes(PROBLEMS)
    repo = tmp_path / "upstream"
    (repo / "data").mkdir(parents=True)
    (repo / "data" / "problems.jsonl").symlink_to(outside)
    who = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.org"}
    for argv in (["init", "--quiet"], ["add", "-A"], ["commit", "--quiet", "-m", "data"]):
        subprocess.run(["git", *argv], cwd=repo, check=True, capture_output=True, env={**os.environ, **who})
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, check=True, capture_output=True, text=True).stdout.strip()
    root = catalogue_with(tmp_path, "https://unused.invalid/x")
    path = root / "benchmarks" / "arith" / "standard.json"
    standard = json.loads(path.read_text())
    standard["upstream"] = {"repository": str(repo), "tested": commit}
    standard["datasets"]["test"] = {"path": "data/problems.jsonl", "sha256": hashlib.sha256(PROBLEMS).hexdigest(), "units": 5}
    path.write_text(json.dumps(standard))
    env = {**nullius_env, "NULLIUS_CATALOGUE": str(root)}
    result = run_cli(["run", "arith", "oracle"], env)
    assert result.code == 2, result.output
    assert result.stderr.splitlines()[-1] == (
        f"nullius: run refused: dataset arith/test: data/problems.jsonl in the upstream is {outside}, outside its clone; refused"
    )
    assert files_in(cache(env)) == []


@pytest.mark.parametrize("sized", [True, False], ids=["content-length", "no-content-length"])
def test_a_long_download_says_its_bytes_while_it_goes(nullius_env, tmp_path, sized):
    """The server holds the file's second half until the run has said `state=downloading`: no sleep, the line must come while it waits."""
    from file_server import file_server, run_releasing

    half = len(PROBLEMS) // 2
    with file_server() as server:
        url = server.serve("/slow/problems.jsonl", PROBLEMS, held=half, sized=sized)
        env = {**nullius_env, "NULLIUS_CATALOGUE": str(catalogue_with(tmp_path, url)), "NULLIUS_PROGRESS_EVERY": "0.2"}
        result = run_releasing(["run", "arith", "oracle", "--job-name", "slow"], env, server, when="state=downloading")
    assert result.code == 0, result.output
    [said, *_] = [line for line in result.stderr.splitlines() if "state=downloading" in line]
    fields = dict(word.split("=", 1) for word in said.split()[1:])
    assert fields["stage"] == "install" and fields["dataset"] == "arith/test"
    assert 0 <= int(fields["bytes"]) <= half  # what had come when it was said: never the held half
    assert fields.get("of") == (str(len(PROBLEMS)) if sized else None)
    assert said.index("state=downloading") < result.stderr.index("stage=install dataset=arith/test state=done")
    progress = [json.loads(line) for line in (Path(env["NULLIUS_JOBS_DIR"]) / "slow" / "progress.jsonl").read_text().splitlines()]
    downloading = [p for p in progress if p.get("state") == "downloading"]
    assert downloading and downloading[0]["dataset"] == "arith/test" and downloading[0]["bytes"] == int(fields["bytes"])
    assert files_in(cache(env)) == [f"arith/test/{hashlib.sha256(PROBLEMS).hexdigest()}/problems.jsonl"]
