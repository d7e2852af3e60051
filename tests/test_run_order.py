"""A run checks everything that needs no install before it installs, clones or downloads anything.

Here the agent and the driver both have environments to install; a run that
cannot go (its dataset cannot be had, its provider has no key, its backend
does not start) is refused before either install starts, and says so once.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest
from conftest import ROOT

from nullius_core.testing import run_cli

FIXTURES = ROOT / "tests" / "fixtures" / "catalogue"
TEMPLATE = ROOT / "examples" / "benchmark-plugin-template" / "nullius_bench_example" / "catalogue" / "benchmarks" / "example-arith"
PROBLEMS = TEMPLATE / "data" / "problems.jsonl"
INSTALL = {"pip": ["six==1.16.0"]}  # never installed here: every run below is refused first


def catalogue(tmp_path: Path, dataset: dict | None = None, upstream: dict | None = None) -> Path:
    """The template's benchmark `arith` (its driver with an environment to install) and the scripted agent, with one too."""
    root = tmp_path / "catalogue"
    bench = root / "benchmarks" / "arith"
    shutil.copytree(TEMPLATE, bench)
    path = bench / "standard.json"
    standard = json.loads(path.read_text())
    standard["driver"]["install"] = INSTALL
    if dataset is not None:
        standard["datasets"]["test"] = dataset
    if upstream is not None:
        standard["upstream"] = upstream
    path.write_text(json.dumps(standard))
    agent = root / "agents" / "scripted"
    shutil.copytree(FIXTURES / "agents" / "scripted", agent)
    definition = json.loads((agent / "agent.json").read_text())
    (agent / "agent.json").write_text(json.dumps({**definition, "install": INSTALL}))
    return root


def run_agent(env: dict[str, str], *extra: str):
    args = ["run", "arith", "scripted", "--model", "m", "--unsandboxed", "--limit", "1", *extra]
    return run_cli(args, env)


def refused_before_installing(result, said: str) -> None:
    assert result.code == 2, result.output
    assert "Traceback" not in result.output
    assert "state=start" not in result.stderr, result.stderr  # no agent, driver, clone or download began
    [line] = [x for x in result.stderr.splitlines() if x.startswith("nullius: ")]
    assert line.startswith(f"nullius: run refused: {said}"), line
    assert "stage=refused" not in result.stderr  # the refusal is said once


@pytest.fixture
def agent_env(nullius_env):
    return {**nullius_env, "OPENAI_COMPATIBLE_API_KEY": "sk-any", "OPENAI_BASE_URL": ""}


def test_a_dataset_missing_from_the_benchmarks_folder_refuses_before_any_install(agent_env, tmp_path):
    root = catalogue(tmp_path)
    (root / "benchmarks" / "arith" / "data" / "problems.jsonl").unlink()
    env = {**agent_env, "NULLIUS_CATALOGUE": str(root)}
    result = run_agent(env, "--provider", "openai-compatible", "--base-url", "http://127.0.0.1:9/v1")
    refused_before_installing(result, "dataset arith/test: ")
    assert "is missing from the benchmark's folder" in result.stderr
    assert not (Path(env["XDG_DATA_HOME"]) / "nullius" / "standard" / "agents").exists()


def test_an_upstream_that_cannot_be_cloned_refuses_before_any_install(agent_env, tmp_path):
    """No clone, no cache, and a repository that does not answer: known at once (`git ls-remote`), not after the installs."""
    nowhere = tmp_path / "no-such-repository"
    pin = hashlib.sha256(PROBLEMS.read_bytes()).hexdigest()
    root = catalogue(tmp_path, dataset={"path": "data/problems.jsonl", "sha256": pin, "units": 5},
                     upstream={"repository": str(nowhere), "tested": "0" * 40})
    env = {**agent_env, "NULLIUS_CATALOGUE": str(root)}
    result = run_agent(env, "--provider", "openai-compatible", "--base-url", "http://127.0.0.1:9/v1")
    refused_before_installing(result, "dataset arith/test is not in the cache and its upstream cannot be had (cannot clone ")
    assert f"seed it with: nullius data add arith/test FILE (a file whose sha256 is {pin})" in result.stderr
    # seeded, the same run gets past the dataset (and is then refused for its key, still before any install)
    assert run_cli(["data", "add", "arith", str(PROBLEMS)], env).code == 0
    again = run_agent({**env, "OPENAI_API_KEY": ""}, "--provider", "openai")
    refused_before_installing(again, "provider 'openai' needs its key")


def test_a_missing_key_refuses_before_any_install(agent_env, tmp_path):
    env = {**agent_env, "NULLIUS_CATALOGUE": str(catalogue(tmp_path)), "OPENAI_API_KEY": ""}
    result = run_agent(env, "--provider", "openai")
    refused_before_installing(result, "provider 'openai' needs its key: set OPENAI_API_KEY")


def test_a_pair_that_does_not_fit_refuses_before_any_install(agent_env, tmp_path):
    root = catalogue(tmp_path)
    path = root / "benchmarks" / "arith" / "standard.json"
    standard = json.loads(path.read_text())
    path.write_text(json.dumps({**standard, "needs": ["agent.task/v1", "agent.tools/v1"]}))
    env = {**agent_env, "NULLIUS_CATALOGUE": str(root)}
    result = run_agent(env, "--provider", "openai-compatible", "--base-url", "http://127.0.0.1:9/v1")
    refused_before_installing(result, "scripted cannot run arith: missing port agent.tools/v1")
