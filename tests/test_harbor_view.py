"""Harbor's viewer shows what Nullius records: asked of Harbor 0.25.0's own viewer app and models, in their venv.

The environment type is the real backend's (a local run is never shown as
docker), cost and tokens come from the relay, the score's detail is in the
Verifier tab, each phase's time is its own (an errored trial's is not all
setup), and a tool call is named by its real name where the agent's ACP
record has one.
"""

from __future__ import annotations

import json
import subprocess
from datetime import datetime
from pathlib import Path

import pytest
from conftest import ROOT
from harbor.venv import ensure_harbor_python

from nullius_core.jobs.harbor import environment_of
from nullius_core.testing import run_cli

CATALOGUE = ROOT / "tests" / "fixtures" / "catalogue"
VIEW = ROOT / "tests" / "harbor" / "view_job.py"
VALIDATE = ROOT / "tests" / "harbor" / "validate_job.py"
KEY = "sk-upstream-held-by-the-relay-0123456789"
USAGE = {"input_tokens": 1000, "cached_tokens": 600, "output_tokens": 100}
ONE = (400 * 2.0 + 600 * 0.5 + 100 * 10.0) / 1e6  # the test's price of one call of fake-1, as served


@pytest.fixture(scope="module")
def harbor_python() -> Path:
    return ensure_harbor_python()


@pytest.fixture
def env(nullius_env, tmp_path):
    env = {**nullius_env, "NULLIUS_CATALOGUE": str(CATALOGUE), "NULLIUS_JOBS_DIR": str(tmp_path / "jobs"), "OPENAI_COMPATIBLE_API_KEY": KEY}
    prices = Path(env["XDG_CONFIG_HOME"]) / "nullius" / "prices.json"
    prices.parent.mkdir(parents=True, exist_ok=True)
    prices.write_text(json.dumps({"version": 1, "prices": {"fake-1": {
        "input": 2.0, "output": 10.0, "cache_read": 0.5, "cache_write": 2.5, "as_of": "2026-12-01", "source": "this test"}}}))
    return env


def run_agent(env, fake_model, mode, job, *extra):
    args = ["run", "faulty", "scripted", "--model", "fake-1", "--provider", "openai-compatible", "--base-url", fake_model.openai_base_url,
            "--unsandboxed", "--option", f"mode={mode}", "--job-name", job, *extra]
    return run_cli(args, env)


def view(python: Path, jobs: Path, job: str) -> dict:
    done = subprocess.run([str(python), str(VIEW), str(jobs), job], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def valid(python: Path, job: Path) -> None:
    done = subprocess.run([str(python), str(VALIDATE), str(job)], capture_output=True, text=True, timeout=300)
    report = json.loads(done.stdout)
    assert report["ok"], json.dumps(report["errors"][:3], indent=1)


def moment(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def test_the_viewer_shows_the_backend_the_cost_the_detail_the_phases_and_the_tools(env, fake_model, tmp_path, harbor_python):
    fake_model.use({"default": {"text": "alpha", "usage": USAGE}})
    assert run_agent(env, fake_model, "costly", "v", "--limit", "2").code == 0
    jobs = tmp_path / "jobs"
    valid(harbor_python, jobs / "v")
    shown = view(harbor_python, jobs, "v")
    assert shown["job"]["environment_type"] is None  # not "docker": the local backend is no Harbor environment type
    assert shown["config"]["environment"]["import_path"] == "nullius.backends:local"
    assert shown["job"]["total_cost_usd"] == pytest.approx(2 * ONE)
    assert (shown["job"]["total_input_tokens"], shown["job"]["total_cached_input_tokens"]) == (2 * 400, 2 * 600)
    first = shown["trials"]["u0000"]
    assert first["summary"]["cost_usd"] == pytest.approx(ONE) and first["total_cost_usd"] == pytest.approx(ONE)
    stdout = first["verifier_output"]["stdout"]
    assert stdout.startswith("reward: 1.0\npassed: true\ndetail:\n") and json.loads(stdout.split("detail:\n", 1)[1]) == {"expected": "alpha"}
    assert first["tools"] == ["Read"]  # Claude's adapter's name for it, not the title "Read the notes"
    phases = first["phases"]
    order = [phases["environment_setup"], phases["agent_setup"], phases["agent_execution"], phases["verifier"]]
    assert all(p is not None for p in order), phases
    ends = [moment(first["started_at"])] + [x for p in order for x in (moment(p["started_at"]), moment(p["finished_at"]))]
    assert ends == sorted(ends) and ends[-1] <= moment(first["finished_at"])
    assert moment(phases["agent_setup"]["finished_at"]) > moment(phases["agent_setup"]["started_at"])  # the agent's start is its setup


def test_an_errored_trials_time_is_the_phase_it_failed_in_and_a_title_names_a_tool_without_a_name(env, fake_model, tmp_path, harbor_python):
    fake_model.use({"default": {"text": "alpha", "usage": USAGE}})
    assert run_agent(env, fake_model, "garbage", "g", "--limit", "1").code == 0
    assert run_agent(env, fake_model, "tool", "t", "--limit", "1").code == 0
    jobs = tmp_path / "jobs"
    for job in ("g", "t"):
        valid(harbor_python, jobs / job)
    failed = view(harbor_python, jobs, "g")["trials"]["u0000"]
    assert failed["summary"]["error_type"] == "AgentProtocolError"
    phases = failed["phases"]
    assert phases["verifier"] is None  # never scored
    assert moment(phases["agent_execution"]["finished_at"]) == moment(failed["finished_at"])  # the failure ends the agent's phase
    assert moment(phases["environment_setup"]["finished_at"]) <= moment(phases["agent_setup"]["started_at"])
    assert view(harbor_python, jobs, "t")["trials"]["u0000"]["tools"] == ["lookup"]  # no name in its record: its title


def test_a_docker_unit_is_harbors_docker_and_any_other_backend_names_itself(harbor_python):
    check = (
        "import json, sys; from harbor.models.trial.config import EnvironmentConfig;"
        "print(json.dumps([EnvironmentConfig.model_validate(json.loads(a)).type for a in sys.argv[1:]], default=lambda t: t.value))"
    )
    shapes = [environment_of("docker"), environment_of("local"), environment_of("someone-elses")]
    done = subprocess.run([str(harbor_python), "-c", check, *map(json.dumps, shapes)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == ["docker", None, None]
    assert shapes[2] == {"import_path": "nullius.backends:someone-elses"}
