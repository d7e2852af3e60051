"""Where an environment's packages come from besides PyPI: another index, a wheel served by URL, the upstream at its own lock.

The wheels are built here and served by a real HTTP server on the loopback
(an index of them in the simple repository API's HTML, too); the upstream is
a git repository made here, its uv.lock made by uv itself (resolving on
PyPI, as an upstream's maintainers do).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import sysconfig
import tomllib
from pathlib import Path

import pytest
from file_server import file_server

from nullius_core.testing import run_cli

# A first install makes a venv and uv installs into it: generous, so that a loaded machine is never what fails the test.
INSTALL_SECONDS = 900

DRIVER = '''
import importlib, json, sys
from importlib import metadata

NAMES = sys.argv[1].split(",")

def installed(name):
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None

for line in sys.stdin:
    request = json.loads(line)
    op = request["op"]
    if op == "units":
        reply = {"units": ["u0"]}
    elif op == "setup":
        reply = {"prompt": "What is installed?"}
    elif op == "oracle":
        said = {n: installed(n) for n in NAMES}
        saying = [getattr(importlib.import_module(n), "SAID", None) for n in NAMES if said[n]]  # a wheel made here says where from
        if any(saying):
            said["said"] = next(s for s in saying if s)
        reply = {"answer": json.dumps(said)}
    else:
        reply = {"reward": 1.0, "passed": True, "detail": json.loads(request["answer"] or "{}")}
    sys.stdout.write(json.dumps(reply) + "\\n")
    sys.stdout.flush()
'''


def benchmark(tmp_path: Path, nullius_env: dict[str, str], install: dict, names: list[str], upstream: dict | None = None) -> dict[str, str]:
    """A catalogue of one benchmark, `src`, whose driver has `install` and reports the versions of `names` it imports from."""
    folder = tmp_path / "catalogue" / "benchmarks" / "src"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "driver.py").write_text(DRIVER)
    (folder / "benchmark.json").write_text(json.dumps({"name": "Sources", "summary": "A fixture: where packages come from.", "harness": "standard"}))
    (folder / "upstream-settings.json").write_text(json.dumps({"settings": []}))
    standard = {
        "schema": "nullius.standard/v1", "needs": ["agent.task/v1"], "upstream": upstream or {"pypi": "tinywheel", "version": "0.1.0"},
        "datasets": {"test": {"units": 1}},
        "driver": {"command": ["{install}/.venv/bin/python", "{here}/driver.py", ",".join(names)], "install": install},
        "controls": {"nop": {"source": "nullius", "from": "empty"}, "oracle": {"source": "nullius", "from": "what is installed"}},
    }
    (folder / "standard.json").write_text(json.dumps(standard, indent=2))
    return {**nullius_env, "NULLIUS_CATALOGUE": str(tmp_path / "catalogue"), "NULLIUS_JOBS_DIR": str(tmp_path / "jobs")}


def detail(env: dict[str, str], job: str) -> dict:
    return json.loads((Path(env["NULLIUS_JOBS_DIR"]) / job / "u0" / "verifier" / "score.json").read_text())["detail"]


def drivers(env: dict[str, str]) -> Path:
    return Path(env["XDG_DATA_HOME"]) / "nullius" / "standard" / "drivers" / "src"


def build_wheel(tmp_path: Path, name: str = "tinywheel", version: str = "0.1.0", said: str = "from the wheel", needs: tuple[str, ...] = ()) -> Path:
    """A wheel of package `name` (whose SAID is `said`, needing `needs`), built by pip from a project made here."""
    project = tmp_path / f"{name}-src"
    (project / name).mkdir(parents=True)
    (project / name / "__init__.py").write_text(f"SAID = {said!r}\n")
    (project / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools>=61"]\nbuild-backend = "setuptools.build_meta"\n\n'
        f'[project]\nname = "{name}"\nversion = "{version}"\ndependencies = {json.dumps(list(needs))}\n'
    )
    out = tmp_path / "dist"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation", "-w", str(out), str(project)],
                   check=True, capture_output=True, text=True)
    [wheel] = out.glob(f"{name}-{version}-*.whl")
    return wheel


def test_a_wheel_served_by_url_installs_when_its_sha256_matches_and_is_refused_when_not(nullius_env, tmp_path):
    wheel = build_wheel(tmp_path)
    body = wheel.read_bytes()
    pin = hashlib.sha256(body).hexdigest()
    with file_server() as server:
        url = server.serve(f"/wheels/{wheel.name}", body)
        env = benchmark(tmp_path, nullius_env, {"wheels": [{"url": url, "sha256": pin}]}, ["tinywheel"])
        assert run_cli(["check"], env).code == 0
        ran = run_cli(["run", "src", "oracle", "--job-name", "w"], env, timeout=INSTALL_SECONDS)
        assert ran.code == 0, ran.output
        assert detail(env, "w") == {"tinywheel": "0.1.0", "said": "from the wheel"}
        assert server.asked == [f"/wheels/{wheel.name}"]
        other = hashlib.sha256(b"another wheel").hexdigest()
        env = benchmark(tmp_path, nullius_env, {"wheels": [{"url": url, "sha256": other}]}, ["tinywheel"])
        refused = run_cli(["run", "src", "oracle", "--job-name", "r"], env, timeout=INSTALL_SECONDS)
    assert refused.code == 2, refused.output
    assert "Traceback" not in refused.output
    [line] = [line for line in refused.stderr.splitlines() if line.startswith("nullius: ")]
    assert line.startswith("nullius: run refused: the driver's environment of src cannot be installed: ")
    assert wheel.name in line and url in line and f"its sha256 is {pin}, but the pin is {other}" in line
    # the refused environment left nothing; the good one stays
    assert len([p for p in drivers(env).iterdir() if p.is_dir()]) == 1


def simple_index(server, wheel: Path) -> str:
    """An index of one project, the wheel's, in the simple repository API's HTML (PEP 503): the index's URL."""
    project = wheel.name.split("-")[0]
    server.serve(f"/files/{wheel.name}", wheel.read_bytes())
    link = f'<a href="/files/{wheel.name}#sha256={hashlib.sha256(wheel.read_bytes()).hexdigest()}">{wheel.name}</a>'
    server.serve(f"/simple/{project}/", f"<!DOCTYPE html><html><body>{link}</body></html>".encode(), content_type="text/html")
    return server.url("/simple")


def test_packages_named_for_an_index_come_from_it_what_they_need_from_pypi_and_a_second_install_from_uvs_cache(nullius_env, tmp_path):
    """six 1.16.0 is on PyPI too: the index's (which says so, and needs idna 3.7, from PyPI) is the one installed.

    The environment is byte-compiled by its installer (the machine may set
    PYTHONDONTWRITEBYTECODE, as here), holds no pip, and uv's cache is the one
    UV_CACHE_DIR names: a second environment of the same packages (another
    digest) takes the wheel from it, not from the index again.
    """
    wheel = build_wheel(tmp_path, "six", "1.16.0", said="from the index", needs=("idna==3.7",))
    cache = tmp_path / "uv-cache"
    with file_server() as server:
        index = simple_index(server, wheel)
        install = {"indexes": [{"url": index, "packages": ["six==1.16.0"]}]}
        env = {**benchmark(tmp_path, nullius_env, install, ["six", "idna"]), "UV_CACHE_DIR": str(cache), "PYTHONDONTWRITEBYTECODE": "1"}
        assert run_cli(["check"], env).code == 0
        ran = run_cli(["run", "src", "oracle", "--job-name", "i"], env, timeout=INSTALL_SECONDS)
        assert ran.code == 0, ran.output
        assert detail(env, "i") == {"six": "1.16.0", "idna": "3.7", "said": "from the index"}
        env = benchmark(tmp_path, {**env}, {**install, "python": "3.11"}, ["six", "idna"])  # the same packages, another digest
        again = run_cli(["run", "src", "oracle", "--job-name", "again"], env, timeout=INSTALL_SECONDS)
        assert again.code == 0 and "stage=install driver=src state=start" in again.stderr, again.output
        assert detail(env, "again") == {"six": "1.16.0", "idna": "3.7", "said": "from the index"}
    assert server.asked.count(f"/files/{wheel.name}") == 1, server.asked  # the second install's wheel came from uv's cache
    assert any(cache.rglob("six*")), f"nothing of six in {cache}: UV_CACHE_DIR was not uv's cache"
    for folder in (p for p in drivers(env).iterdir() if p.is_dir()):
        [site] = (folder / ".venv" / "lib").glob("python3.*/site-packages")
        assert list((site / "six" / "__pycache__").glob("__init__.cpython-3*.pyc")), f"{folder}: six was not byte-compiled"
        assert not (folder / ".venv" / "bin" / "pip").exists() and not (site / "pip").exists()


def test_a_package_its_index_lacks_is_refused_not_taken_from_pypi(nullius_env, tmp_path):
    """idna 3.7 is on PyPI, not on the index named for it: the run is refused, saying uv's reason, and leaves nothing."""
    wheel = build_wheel(tmp_path, "six", "1.16.0", said="from the index")
    with file_server() as server:
        index = simple_index(server, wheel)
        env = benchmark(tmp_path, nullius_env, {"indexes": [{"url": index, "packages": ["idna==3.7"]}]}, ["idna"])
        refused = run_cli(["run", "src", "oracle", "--job-name", "r"], env, timeout=INSTALL_SECONDS)
    assert refused.code == 2, refused.output
    assert "Traceback" not in refused.output
    assert f"nullius: run refused: the driver's environment of src cannot be installed: uv pip install from {index} failed" in refused.stderr
    assert "idna" in refused.stderr.split(f"uv pip install from {index} failed", 1)[1]  # uv's own words, the tail of what it said
    assert [p for p in drivers(env).iterdir() if p.is_dir()] == []


def git(repo: Path, *args: str) -> str:
    who = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.org"}
    return subprocess.run(["git", *args], cwd=repo, env={**os.environ, **who}, check=True, capture_output=True, text=True).stdout.strip()


def locked_upstream(tmp_path: Path) -> tuple[Path, str, dict[str, str]]:
    """A repository whose project needs six (>=1.15) and, for its extra `idn`, idna (>=3): its uv.lock pins both as of 2024.

    six 1.17.0 and idna 3.7 and later were released after 2024; pip, left to
    the project's own ranges, would install those.
    """
    repo = tmp_path / "upstream"
    (repo / "lockproj").mkdir(parents=True)
    (repo / "lockproj" / "__init__.py").write_text("WHO = 'locked'\n")
    (repo / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools>=61"]\nbuild-backend = "setuptools.build_meta"\n\n'
        '[project]\nname = "lockproj"\nversion = "0.0.0"\nrequires-python = ">=3.9"\ndependencies = ["six>=1.15"]\n\n'
        '[project.optional-dependencies]\nidn = ["idna>=3"]\n'
    )
    uv = Path(sysconfig.get_path("scripts")) / "uv"
    assert uv.exists(), f"{uv} is missing: uv is a dependency of nullius-core (pip install -e .)"
    subprocess.run([str(uv), "lock", "--exclude-newer", "2024-01-01T00:00:00Z"], cwd=repo, check=True, capture_output=True, text=True,
                   env={**os.environ, "UV_CACHE_DIR": str(tmp_path / "uv-cache")})
    pins = {p["name"]: p["version"] for p in tomllib.loads((repo / "uv.lock").read_text())["package"]}
    git(repo, "init", "--quiet")
    git(repo, "add", "-A")
    git(repo, "commit", "--quiet", "-m", "locked")
    return repo, git(repo, "rev-parse", "HEAD"), pins


def test_a_locked_project_installs_at_its_lock_files_pins_with_its_extras(nullius_env, tmp_path):
    repo, commit, pins = locked_upstream(tmp_path)
    assert pins["six"] == "1.16.0" and pins["idna"] == "3.6"  # older than what PyPI serves now (six 1.17.0, idna 3.7 on)
    install = {"project": {"locked": True}, "extras": ["idn"]}
    env = benchmark(tmp_path, nullius_env, install, ["lockproj", "six", "idna"], upstream={"repository": str(repo), "tested": commit})
    assert run_cli(["check"], env).code == 0
    ran = run_cli(["run", "src", "oracle", "--job-name", "l"], env, timeout=INSTALL_SECONDS)
    assert ran.code == 0, ran.output
    assert detail(env, "l") == {"lockproj": "0.0.0", "six": pins["six"], "idna": pins["idna"]}


def test_without_uv_a_python_environment_says_what_to_install(tmp_path, monkeypatch):
    from nullius_core.run import install

    monkeypatch.setenv("PATH", str(tmp_path))  # no uv on PATH
    monkeypatch.setattr(install, "OWN_SCRIPTS", tmp_path)  # nor beside Nullius's own interpreter
    with pytest.raises(install.InstallError) as refused:
        install.uv_program()
    assert "Python environments are installed with uv" in str(refused.value) and "(pip install uv)" in str(refused.value)


def test_installers_are_handed_no_secret_and_no_activated_venv(monkeypatch):
    from nullius_core.run.install import installer_env

    monkeypatch.setenv("OPENAI_API_KEY", "sk-never")
    monkeypatch.setenv("UV_INDEX_MIRROR_PASSWORD", "never")
    monkeypatch.setenv("VIRTUAL_ENV", "/somewhere/.venv")
    monkeypatch.setenv("UV_CACHE_DIR", "/shared/uv-cache")
    env = installer_env()
    assert "OPENAI_API_KEY" not in env and "UV_INDEX_MIRROR_PASSWORD" not in env and "VIRTUAL_ENV" not in env
    assert env["UV_CACHE_DIR"] == "/shared/uv-cache" and env["PATH"] == os.environ["PATH"]
