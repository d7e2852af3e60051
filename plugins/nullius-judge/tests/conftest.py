"""The judge's tests share one home (its installs in the session's STANDARD_DIR) and make small fixture jobs by real runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nullius_core.testing import isolated_env, run_cli

KEY = "sk-upstream-held-by-the-relay-judge-0123456789"
RUBRIC = {"dimensions": [
    {"name": "correctness", "title": "Correctness", "max_score": 10, "description": "Does the answer solve the problem, edge cases included?"},
    {"name": "code_quality", "title": "Code quality", "max_score": 5, "description": "Is the code clear and idiomatic?"},
]}


@pytest.fixture(scope="module")
def home(tmp_path_factory, nullius_installs):
    root = tmp_path_factory.mktemp("judge")
    env = {**isolated_env(root, standard_dir=nullius_installs), "OPENAI_COMPATIBLE_API_KEY": KEY, "ANTHROPIC_API_KEY": KEY}
    return env, root


def oracle_job(env, name: str) -> Path:
    """A HumanEval job of two trials by the oracle control: real answers, real rewards, no model."""
    result = run_cli(["run", "humaneval", "oracle", "--limit", "2", "--job-name", name], env, timeout=900)
    assert result.code == 0, result.output
    return Path(env["NULLIUS_JOBS_DIR"]) / name


def write_rubric(root: Path, name: str, rubric: dict | None = None) -> Path:
    path = root / name
    path.write_text(json.dumps(rubric or RUBRIC))
    return path


def judge_args(fake, model: str = "fake-judge") -> list[str]:
    return ["--judge", "reference", "--model", model, "--provider", "openai-compatible", "--base-url", fake.openai_base_url, "--unsandboxed"]


def assess(env, job: Path, fake, *extra: str, model: str = "fake-judge"):
    return run_cli(["assess", str(job), *judge_args(fake, model), *extra], env, timeout=900)


def evals(trial: Path) -> dict[int, dict]:
    return {int(p.stem.rsplit("_", 1)[1]): json.loads(p.read_text()) for p in trial.glob("assessment_eval_*.json")}


def summary(folder: Path) -> dict:
    return json.loads((folder / "assessment_summary.json").read_text())
