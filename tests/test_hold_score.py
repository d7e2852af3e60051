"""`nullius run --hold-score` and `nullius score JOB`: no unit scored by the run, each scored later from what it kept.

Real runs of the fixture benchmark `faulty` (its driver misbehaves on
purpose, unit by unit) under the oracle control: a held job scored after the
fact must give the rewards a plain run gives, and a score that fails later
leaves its trial held, never a 0.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nullius_core.testing import run_cli

ROOT = Path(__file__).resolve().parent.parent
CATALOGUE = ROOT / "tests" / "fixtures" / "catalogue"


@pytest.fixture
def env(nullius_env):
    return {**nullius_env, "NULLIUS_CATALOGUE": str(CATALOGUE)}


def trials(job: Path) -> dict[str, dict]:
    return {p.parent.name: json.loads(p.read_text()) for p in sorted(job.glob("*/result.json"))}


def kinds(job: Path) -> dict[str, str | None]:
    return {name: (t.get("exception_info") or {}).get("exception_type") for name, t in trials(job).items()}


def rewards(job: Path) -> dict[str, float | None]:
    return {name: ((t.get("verifier_result") or {}).get("rewards") or {}).get("reward") for name, t in trials(job).items()}


def test_a_held_run_scores_nothing_and_score_gives_what_a_plain_run_gives(env, tmp_path):
    common = ["--bench-option", "mode=workspace", "--limit", "3", "--jobs-dir", str(tmp_path)]
    plain = run_cli(["run", "faulty", "oracle", "--job-name", "plain", *common], env)
    held = run_cli(["run", "faulty", "oracle", "--hold-score", "--job-name", "held", *common], env)
    assert plain.code == 0 and held.code == 0, plain.output + held.output
    job = tmp_path / "held"
    assert kinds(job) == {"u0000": "ScoreHeld", "u0001": "ScoreHeld", "u0002": "ScoreHeld"}
    for name, record in trials(job).items():
        assert record["standard"]["outcome"] == "held" and record.get("verifier_result") is None
        assert not (job / name / "verifier" / "reward.txt").exists()
        kept = json.loads((job / name / "verifier" / "held.json").read_text())
        assert kept["dir"] == ".work/workspace" and kept["answer"]
    summary = json.loads((job / "result.json").read_text())["standard"]
    assert summary["in_mean"] == 0 and summary["left_out"] == 3 and summary["errors"] == {"ScoreHeld": 3}

    scored = run_cli(["score", str(job), "--json"], env)
    assert scored.code == 0, scored.output
    lines = [json.loads(line) for line in scored.stdout.splitlines()]
    assert [(x["trial"], x["outcome"]) for x in lines] == [("u0000", "passed"), ("u0001", "passed"), ("u0002", "passed")]
    assert rewards(job) == rewards(tmp_path / "plain") == {"u0000": 1.0, "u0001": 1.0, "u0002": 1.0}
    assert kinds(job) == {"u0000": None, "u0001": None, "u0002": None}
    assert all((job / n / "verifier" / "reward.txt").read_text() == "1\n" for n in ("u0000", "u0001", "u0002"))
    after = json.loads((job / "result.json").read_text())["standard"]
    assert after["mean"] == 1.0 and after["in_mean"] == 3 and after["passed"] == 3 and after["errors"] == {}
    again = run_cli(["score", str(job)], env)
    assert again.code == 0 and "no held trial to score" in again.stderr


def test_a_score_that_fails_later_leaves_its_trial_held_and_the_others_scored(env, tmp_path):
    held = run_cli(["run", "faulty", "oracle", "--hold-score", "--bench-option", "mode=faulty", "--limit", "6", "-j", "2",
                    "--job-name", "f", "--jobs-dir", str(tmp_path)], env)
    assert held.code == 0, held.output
    job = tmp_path / "f"
    assert kinds(job) == {"u0000": "ScoreHeld", "u0001": "EnvironmentSetupError", "u0002": "ScoreHeld", "u0003": "OracleError",
                          "u0004": "ScoreHeld", "u0005": "ScoreHeld"}
    scored = run_cli(["score", str(job), "--json"], env)
    assert scored.code == 1, scored.output  # some could not be scored: said, and the exit status says so
    said = {x["trial"]: x for x in map(json.loads, scored.stdout.splitlines())}
    assert said["u0000"]["reward"] == 1.0
    assert "the driver exited (status 3) during op 'score'" in said["u0002"]["error"]
    assert "no reply within 2 s" in said["u0004"]["error"] and "finite number" in said["u0005"]["error"]
    assert kinds(job) == {"u0000": None, "u0001": "EnvironmentSetupError", "u0002": "ScoreHeld", "u0003": "OracleError",
                          "u0004": "ScoreHeld", "u0005": "ScoreHeld"}
    assert rewards(job)["u0002"] is None and rewards(job)["u0005"] is None  # held still, never read as 0
    summary = json.loads((job / "result.json").read_text())["standard"]
    assert summary["in_mean"] == 3 and summary["errors"]["ScoreHeld"] == 3  # u0000 and the two errors; three still held


def test_score_refuses_a_folder_that_is_not_a_job(env, tmp_path):
    refused = run_cli(["score", str(tmp_path)], env)
    assert refused.code == 2 and "is not a job" in refused.stderr and "Traceback" not in refused.output
