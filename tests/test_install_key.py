"""A version runs its own code: an environment is keyed on everything that makes it.

Two versions of one benchmark whose upstreams differ only in their commit
(a real git repository, made here) install the upstream's project into the
driver's environment; each version's run must import its own commit's code.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from nullius_core.testing import run_cli

# A first install makes a venv and builds the project (uv fetches its build
# backend): generous, so that a loaded machine is never what fails the test.
INSTALL_SECONDS = 900

DRIVER = '''
import json, os, sys
import forkproj  # the upstream's project, installed into the driver's environment

def handle(request):
    op = request["op"]
    if op == "units":
        return {"units": ["u0"]}
    if op == "setup":
        return {"prompt": "Who are you?"}
    if op == "oracle":
        return {"answer": forkproj.WHO}
    if op == "score":
        ok = request["answer"] == forkproj.WHO
        return {"reward": float(ok), "passed": ok, "detail": {"who": forkproj.WHO, "upstream": os.environ["NULLIUS_UPSTREAM"]}}
    return {"error": f"unknown op {op!r}"}

for line in sys.stdin:
    sys.stdout.write(json.dumps(handle(json.loads(line))) + "\\n")
    sys.stdout.flush()
'''


def git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.org"}
    done = subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True)
    return done.stdout.strip()


def upstream_with_two_commits(root: Path) -> tuple[Path, str, str]:
    """A repository whose project says who it is: "first" at one commit, "second" at the next."""
    repo = root / "upstream"
    (repo / "forkproj").mkdir(parents=True)
    git(repo, "init", "--quiet")
    (repo / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools>=61"]\nbuild-backend = "setuptools.build_meta"\n\n'
        '[project]\nname = "forkproj"\nversion = "0.0.0"\n'
    )
    commits = []
    for who in ("first", "second"):
        (repo / "forkproj" / "__init__.py").write_text(f"WHO = {who!r}\n")
        git(repo, "add", "-A")
        git(repo, "commit", "--quiet", "-m", who)
        commits.append(git(repo, "rev-parse", "HEAD"))
    return repo, commits[0], commits[1]


@pytest.fixture
def env(nullius_env, tmp_path):
    repo, first, second = upstream_with_two_commits(tmp_path)
    folder = tmp_path / "catalogue" / "benchmarks" / "forked"
    folder.mkdir(parents=True)
    (folder / "driver.py").write_text(DRIVER)
    (folder / "benchmark.json").write_text(json.dumps({"name": "Forked", "summary": "A fixture: a fork as a version.", "harness": "standard"}))
    (folder / "upstream-settings.json").write_text(json.dumps({"settings": []}))
    standard = {
        "schema": "nullius.standard/v1",
        "needs": ["agent.task/v1"],
        "upstream": {"repository": str(repo), "tested": first},
        "datasets": {"test": {"units": 1}},
        "driver": {"command": ["{install}/.venv/bin/python", "{here}/driver.py"], "install": {"project": {}}},
        "controls": {"nop": {"source": "nullius", "from": "empty"}, "oracle": {"source": "adapter", "from": "the project's WHO"}},
        "versions": {"default": "main", "main": {}, "fork1": {"upstream": {"repository": str(repo), "tested": second}}},
    }
    (folder / "standard.json").write_text(json.dumps(standard, indent=2))
    return {**nullius_env, "NULLIUS_CATALOGUE": str(tmp_path / "catalogue"), "NULLIUS_JOBS_DIR": str(tmp_path / "jobs"), "FIRST": first, "SECOND": second}


def said(env: dict[str, str], job: str) -> dict:
    return json.loads((Path(env["NULLIUS_JOBS_DIR"]) / job / "u0" / "verifier" / "score.json").read_text())["detail"]


def test_two_versions_differing_only_in_their_commit_each_run_their_own_code(env):
    assert run_cli(["check"], env).code == 0
    main = run_cli(["run", "forked", "oracle", "--job-name", "main"], env, timeout=INSTALL_SECONDS)
    assert main.code == 0, main.output
    assert said(env, "main")["who"] == "first"
    fork = run_cli(["run", "forked@fork1", "oracle", "--job-name", "fork1"], env, timeout=INSTALL_SECONDS)
    assert fork.code == 0, fork.output
    assert "stage=install driver=forked state=start" in fork.stderr  # its own environment, not the default's
    assert said(env, "fork1")["who"] == "second"
    assert said(env, "fork1")["upstream"].endswith(env["SECOND"])
    again = run_cli(["run", "forked", "oracle", "--job-name", "again"], env, timeout=INSTALL_SECONDS)
    assert again.code == 0 and "stage=install driver=forked state=cached" in again.stderr
    assert said(env, "again")["who"] == "first"
    # each environment says what made it
    drivers = Path(env["XDG_DATA_HOME"]) / "nullius" / "standard" / "drivers" / "forked"
    made = [json.loads((d / ".nullius-installed").read_text()) for d in sorted(drivers.iterdir()) if d.is_dir()]
    assert sorted(m["upstream_commit"] for m in made) == sorted([env["FIRST"], env["SECOND"]])
    assert all(m["python"]["path"] and m["python"]["version"] for m in made)


def test_a_python_on_path_that_does_not_run_is_passed_over(tmp_path, monkeypatch):
    """A pyenv shim for a version that is not pyenv's global is on PATH and fails when run; pyenv's own copy is the one."""
    import sys

    from nullius_core.run.install import find_python

    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    others = sorted({".".join(p.name.split(".")[:2]) for p in pyenv.glob("3.*")} - {f"{sys.version_info[0]}.{sys.version_info[1]}"})
    if not others:
        pytest.skip(f"no Python but this one under {pyenv}: nothing to find past a broken one")
    version = others[0]
    shims = tmp_path / "shims"
    shims.mkdir()
    broken = shims / f"python{version}"
    broken.write_text("#!/bin/sh\necho 'pyenv: command not found' >&2\nexit 127\n")
    broken.chmod(0o755)
    monkeypatch.setenv("PATH", f"{shims}{os.pathsep}{os.environ['PATH']}")
    found = find_python(version)
    assert Path(found.path) != broken and Path(found.path).is_relative_to(pyenv)
    assert found.version.startswith(version + ".")


NO_DEPS_DRIVER = '''
import json, sys
from importlib import metadata

def installed(name):
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None

for line in sys.stdin:
    op = json.loads(line)["op"]
    if op == "units":
        reply = {"units": ["u0"]}
    elif op == "setup":
        reply = {"prompt": "What is installed?"}
    elif op == "oracle":
        reply = {"answer": json.dumps({n: installed(n) for n in ("requests", "urllib3", "idna")})}
    else:
        got = json.loads(json.loads(line)["answer"] or "{}")
        ok = got == {"requests": "2.34.2", "urllib3": None, "idna": "3.20"}
        reply = {"reward": float(ok), "passed": ok, "detail": got}
    sys.stdout.write(json.dumps(reply) + "\\n")
    sys.stdout.flush()
'''


def test_no_deps_installs_a_package_without_its_declared_dependencies(nullius_env, tmp_path):
    """`install.no_deps`: uv pip install --no-deps of each pin, after `pip`; a pin that is not name==version is refused."""
    folder = tmp_path / "catalogue" / "benchmarks" / "nodeps"
    folder.mkdir(parents=True)
    (folder / "driver.py").write_text(NO_DEPS_DRIVER)
    (folder / "benchmark.json").write_text(json.dumps({"name": "No deps", "summary": "A fixture: install.no_deps.", "harness": "standard"}))
    (folder / "upstream-settings.json").write_text(json.dumps({"settings": []}))
    standard = {
        "schema": "nullius.standard/v1", "needs": ["agent.task/v1"], "upstream": {"pypi": "requests", "version": "2.34.2"},
        "datasets": {"test": {"units": 1}},
        "driver": {"command": ["{install}/.venv/bin/python", "{here}/driver.py"],
                   "install": {"pip": ["idna==3.20"], "no_deps": ["requests==2.34.2"]}},
        "controls": {"nop": {"source": "nullius", "from": "empty"}, "oracle": {"source": "nullius", "from": "what is installed"}},
    }
    (folder / "standard.json").write_text(json.dumps(standard))
    env = {**nullius_env, "NULLIUS_CATALOGUE": str(tmp_path / "catalogue"), "NULLIUS_JOBS_DIR": str(tmp_path / "jobs")}
    assert run_cli(["check"], env).code == 0
    ran = run_cli(["run", "nodeps", "oracle", "--job-name", "o"], env, timeout=INSTALL_SECONDS)
    assert ran.code == 0, ran.output
    detail = json.loads((tmp_path / "jobs" / "o" / "u0" / "verifier" / "score.json").read_text())["detail"]
    assert detail == {"requests": "2.34.2", "urllib3": None, "idna": "3.20"}  # requests' own urllib3 was not pulled in
    standard["driver"]["install"]["no_deps"] = ["requests>=2"]
    (folder / "standard.json").write_text(json.dumps(standard))
    refused = run_cli(["check"], env)
    assert refused.code == 2 and "$.driver.install.no_deps[0]: expected a pinned requirement (name==version), found 'requests>=2'" in refused.output
