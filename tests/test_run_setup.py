"""What a run settles before its units: the driver's environment, the pinned data; and a score's parts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import ROOT

from nullius_core.secret_names import looks_secret, without_secrets
from nullius_core.testing import run_cli

CATALOGUE = ROOT / "tests" / "fixtures" / "catalogue"
WORDS = CATALOGUE / "benchmarks" / "installed" / "data" / "words.txt"


@pytest.fixture
def env(nullius_env, tmp_path):
    return {**nullius_env, "NULLIUS_CATALOGUE": str(CATALOGUE), "NULLIUS_JOBS_DIR": str(tmp_path / "jobs")}


def test_a_dataset_that_cannot_be_fetched_says_which_file_to_seed(env, tmp_path):
    result = run_cli(["run", "installed", "oracle"], env)
    assert result.code == 2
    assert "cannot download http://127.0.0.1:9/words.txt" in result.stderr
    assert "seed it with: nullius data add installed/test FILE (a file whose sha256 is" in result.stderr
    wrong = tmp_path / "wrong.txt"
    wrong.write_text("four\n")
    refused = run_cli(["data", "add", "installed/test", str(wrong)], env)
    assert refused.code == 2
    assert "its sha256 is " in refused.stderr and "but the pin is " in refused.stderr
    added = run_cli(["data", "add", "installed", str(WORDS)], env)
    assert added.code == 0, added.output
    cached = Path(added.stdout.split(": ", 1)[1].split(" (sha256")[0])
    assert cached.is_relative_to(Path(env["XDG_DATA_HOME"]) / "nullius" / "standard" / "datasets" / "installed" / "test")


def test_the_drivers_environment_is_installed_once_per_digest(env, tmp_path):
    assert run_cli(["data", "add", "installed", str(WORDS)], env).code == 0
    first = run_cli(["run", "installed", "oracle", "--job-name", "a"], env)
    assert first.code == 0, first.output
    assert "stage=install driver=installed state=start" in first.stderr
    assert "stage=install driver=installed state=done" in first.stderr
    second = run_cli(["run", "installed", "oracle", "--job-name", "b"], env)
    assert "stage=install driver=installed state=cached" in second.stderr
    detail = json.loads((tmp_path / "jobs" / "b" / "u0000" / "verifier" / "score.json").read_text())["detail"]
    assert detail["six"] == "1.16.0"
    drivers = Path(env["XDG_DATA_HOME"]) / "nullius" / "standard" / "drivers" / "installed"
    [digest] = [p for p in drivers.iterdir() if p.is_dir()]
    assert detail["python"] == str(digest / ".venv" / "bin" / "python")
    assert (digest / ".nullius-installed").exists()
    config = json.loads((tmp_path / "jobs" / "b" / "config.json").read_text())["standard"]
    assert config["driver"]["command"][0] == str(digest / ".venv" / "bin" / "python")


def test_names_like_secrets_are_kept_from_installers_and_drivers():
    assert looks_secret("OPENAI_API_KEY") and looks_secret("GH_TOKEN") and looks_secret("db_password")
    assert not looks_secret("PATH") and not looks_secret("NULLIUS_DATASET")
    assert not looks_secret("SSH_AUTH_SOCK") and not looks_secret("DBUS_SESSION_BUS_ADDRESS") and not looks_secret("XAUTHORITY")
    assert without_secrets({"PATH": "/bin", "ANTHROPIC_API_KEY": "x", "HOME": "/h"}) == {"PATH": "/bin", "HOME": "/h"}


def test_a_score_benchmark_leaves_scores_and_weighs_its_parts(env, tmp_path):
    result = run_cli(["run", "scored", "oracle", "--job-name", "s"], env)
    assert result.code == 0, result.output
    job = tmp_path / "jobs" / "s"
    summary = json.loads((job / "result.json").read_text())
    std = summary["standard"]
    assert "passed" not in std and std["scored"] == 3
    # weighed by parts: (3 + 1 + 1) / (4 + 2 + 6), not the mean of the three rewards
    assert std["mean"] == pytest.approx(5 / 12)
    assert summary["stats"]["evals"]["oracle__test"]["metrics"] == [{"mean": pytest.approx((0.75 + 0.5 + 1 / 6) / 3)}]
    assert summary["stats"]["evals"]["oracle__test"]["pass_at_k"] == {}
    assert std["parts"] == {"topic": {"even": pytest.approx(2 / 6), "odd": pytest.approx(3 / 6)}}
    trial = json.loads((job / "u0000" / "result.json").read_text())
    assert trial["standard"]["outcome"] == "scored" and "passed" not in trial["standard"]
    prove = run_cli(["prove", "scored", "--json"], {**env, "NULLIUS_CATALOGUE": str(_copy(tmp_path))})
    checks = json.loads(prove.stdout)["test"]
    assert checks["oracle"]["ok"] and checks["oracle"]["passed"].startswith("mean 0.4")


def _copy(tmp_path: Path) -> Path:
    import shutil

    target = tmp_path / "catalogue"
    shutil.copytree(CATALOGUE, target)
    return target
