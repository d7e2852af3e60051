"""A run a person can read: failures named by one table, a provider that does not answer said at once, the summary, `view`."""

from __future__ import annotations

import json
import re
import socket
from pathlib import Path

from conftest import ROOT
from test_agent_runs import env, run_agent, trials  # noqa: F401 - env is a fixture

from nullius_core import failures
from nullius_core.testing import run_cli


def _closed_port() -> int:
    with socket.socket() as sock:  # bound, then closed: nothing listens there
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _result(job: Path) -> dict:
    return json.loads((job / "result.json").read_text())


def test_a_dead_provider_is_said_at_its_first_call_and_stops_the_run_after_three_units(env, tmp_path):  # noqa: F811
    dead = f"http://127.0.0.1:{_closed_port()}/v1"
    args = ["run", "faulty", "scripted", "--model", "fake-1", "--provider", "openai-compatible", "--base-url", dead, "--unsandboxed",
            "--option", "mode=ask", "--limit", "6", "-j", "1", "--job-name", "dead"]
    result = run_cli(args, env)
    assert result.code == 1, result.output
    lines = result.stderr.splitlines()
    said = next(i for i, line in enumerate(lines) if "stage=provider state=failing" in line)
    first_unit = next(i for i, line in enumerate(lines) if "stage=unit " in line)
    assert said < first_unit  # said when the relay saw the call fail, before the unit ended
    assert "status=502" in lines[said] and "kind=ApiConnectionError" in lines[said] and dead in lines[said]
    assert sum("stage=provider" in line for line in lines) == 1  # one reason, said once
    job = tmp_path / "jobs" / "dead"
    found = trials(job)
    assert len(found) == 3 and {t["exception_info"]["exception_type"] for t in found.values()} == {"ApiConnectionError"}
    summary = _result(job)["standard"]
    assert summary["state"] == "stopped" and "3 units in a row failed with ApiConnectionError" in summary["reason"]
    assert summary["left_out"] == 3 and summary["in_mean"] == 0 and summary["errors_by_phase"] == {"provider": 3}
    assert re.search(r"units\s+0 passed, 0 failed, 3 left out, 3 not run \(of 6 planned\)", result.stderr)
    assert f"nullius run --resume {job}" in result.stderr and "--retry-errors" not in result.stderr  # plain --resume runs them
    assert "Traceback" not in result.output


def test_a_provider_answering_500_is_left_out_of_the_mean_and_stops_the_run_after_three_units(env, fake_model, tmp_path):  # noqa: F811
    fake_model.use({"rules": [{"reply": {"fault": {"status": 500, "body": {"error": {"message": "internal error"}}}}}]})
    result = run_agent(env, fake_model, "ask", "--limit", "6", "-j", "1", "--job-name", "five")
    assert result.code == 1, result.output
    said = [line for line in result.stderr.splitlines() if "stage=provider state=failing" in line]
    assert len(said) == 1 and "status=500" in said[0] and "kind=ApiInternalServerError" in said[0], said
    job = tmp_path / "jobs" / "five"
    found = trials(job)
    assert len(found) == 3 and {t["exception_info"]["exception_type"] for t in found.values()} == {"ApiInternalServerError"}
    assert {t["standard"]["outcome"] for t in found.values()} == {"error"}
    summary = _result(job)["standard"]
    assert summary["state"] == "stopped" and "3 units in a row failed with ApiInternalServerError" in summary["reason"]
    assert summary["left_out"] == 3 and summary["in_mean"] == 0 and summary["errors_by_phase"] == {"provider": 3}
    assert f"nullius run --resume {job}" in result.stderr and "Traceback" not in result.output


def test_a_rate_limited_unit_is_left_out_of_the_mean(env, fake_model, tmp_path):  # noqa: F811
    fake_model.use({"rules": [
        {"when": {"contains": "Say charlie"}, "reply": {"fault": {"status": 429, "retry_after": 1}}},
        {"when": {"contains": "Say alpha"}, "reply": {"text": "alpha"}},
        {"when": {"contains": "Say bravo"}, "reply": {"text": "bravo"}},
    ]})
    result = run_agent(env, fake_model, "ask", "--limit", "3", "--job-name", "r")
    assert result.code == 0, result.output
    job = tmp_path / "jobs" / "r"
    assert {k: v["standard"]["outcome"] for k, v in trials(job).items()} == {"u0000": "passed", "u0001": "passed", "u0002": "rate_limited"}
    written = _result(job)
    summary = written["standard"]
    assert summary["mean"] == 1.0 and summary["in_mean"] == 2 and summary["left_out"] == 1  # not 2 of 3
    assert summary["passed"] == 2 and summary["errors"] == {"ApiRateLimitError": 1}
    assert written["stats"]["evals"]["scripted__fake-1__test"]["metrics"] == [{"mean": 1.0}]  # Harbor's mean leaves it out too
    assert re.search(r"units\s+2 passed, 0 failed, 1 left out \(of 3 planned\)", result.stderr)
    assert re.search(r"error\s+1 x ApiRateLimitError \(provider\)", result.stderr)
    assert re.search(r"mean\s+1\.0000 over 2", result.stderr)


def test_every_unit_erroring_for_a_reason_not_the_agents_ends_failed_not_finished(nullius_env, tmp_path):
    local = {**nullius_env, "NULLIUS_CATALOGUE": str(ROOT / "tests" / "fixtures" / "catalogue"), "NULLIUS_JOBS_DIR": str(tmp_path)}
    broken = run_cli(["run", "faulty", "oracle", "--bench-option", "mode=broken", "--limit", "3", "--job-name", "b"], local)
    assert broken.code == 1, broken.output
    summary = _result(tmp_path / "b")["standard"]
    assert summary["state"] == "failed" and "EnvironmentSetupError x3 (setup)" in summary["reason"]
    assert "stage=done state=failed" in broken.stderr
    # its setup errors run again only with --retry-errors, and the advice says so; a relative job path is the job
    assert f"when it is fixed: nullius run --resume {tmp_path / 'b'} --retry-errors" in broken.stderr, broken.stderr
    again = run_cli(["run", "--resume", "b", "--retry-errors"], local, cwd=tmp_path)
    assert again.code == 1 and str(tmp_path / "b") in again.stderr and "Traceback" not in again.output, again.output
    # one unit of three failing its setup is that unit's record; the run finished
    some = run_cli(["run", "faulty", "oracle", "--bench-option", "mode=faulty", "--limit", "3", "--job-name", "s"], local)
    assert some.code == 0, some.output
    assert _result(tmp_path / "s")["standard"]["state"] == "finished"
    # the errored unit's cause is on the console, with its trial
    unit = next(line for line in some.stderr.splitlines() if "unit=u0001" in line)
    assert "outcome=error:EnvironmentSetupError" in unit and "this unit's setup fails on purpose" in unit and str(tmp_path / "s" / "u0001") in unit
    # and `view` shows the summary and that trial's conversation
    shown = run_cli(["view", str(tmp_path / "s")], local)
    assert shown.code == 0, shown.output
    assert re.search(r"units\s+1 passed, 0 failed, 2 errored \(of 3 planned\)", shown.stdout)  # u0002: the driver dies in score
    assert "--- u0001 ---" in shown.stdout and "[exception]\nEnvironmentSetupError" in shown.stdout
    other = run_cli(["view", str(tmp_path / "s"), "--trial", "u0000"], local)
    assert "--- u0000 ---" in other.stdout and "[user]\nSay alpha." in other.stdout and '"passed": true' in other.stdout
    missing = run_cli(["view", str(tmp_path / "nothing")], local)
    assert missing.code == 2 and "is not a job" in missing.stderr and "Traceback" not in missing.output


HALF_BACKEND = '''
from nullius_core.plugins import BackendSpec

class Half:
    name = "half"
    async def start(self, context): pass
    def record(self): return {"name": "half"}
    async def prepare_unit(self, workspace, home): raise AssertionError("no unit may start")
    async def close(self): pass

def nullius_register_backends(registry):
    registry.add(BackendSpec(name="half", summary="lacks use_environment, open_room, capability_launch", factory=Half, isolates=False))
'''


def test_a_backend_lacking_a_method_the_engine_calls_is_refused_before_any_unit(nullius_env, tmp_path):
    (tmp_path / "half_backend.py").write_text(HALF_BACKEND)
    half = {**nullius_env, "PYTHONPATH": str(tmp_path), "NULLIUS_CATALOGUE": str(ROOT / "tests" / "fixtures" / "catalogue"),
           "NULLIUS_JOBS_DIR": str(tmp_path / "jobs")}
    result = run_cli(["-p", "half_backend", "run", "faulty", "oracle", "--backend", "half", "--limit", "2", "--job-name", "h"], half)
    assert result.code == 2, result.output
    assert "lacks what the engine calls: use_environment, open_room, capability_launch" in result.stderr
    assert not (tmp_path / "jobs" / "h").exists() and "Traceback" not in result.output


def test_every_failure_kind_the_code_names_is_in_the_table():
    """The table is the one place: a kind raised anywhere in the core or the bundled plugins has its row."""
    patterns = [r'TrialError\(\s*"(\w+)"', r'CapabilityFailed\(\s*"(\w+)"', r'failure(?:, outcome\.message)? = "(\w+)"',
                r'(?<![\w.])error_info\(\s*"(\w+)"', r'EnvironmentProblem\([^\n]*"(\w+Error)"', r'OP_EXCEPTION = (\{[^}]*\})',
                r'kind = "(\w+Error)"', r'else "(\w+Error)"']
    named: set[str] = set()
    for path in [*(ROOT / "nullius_core").rglob("*.py"), *(ROOT / "nullius_plugins").rglob("*.py")]:
        text = path.read_text()
        for pattern in patterns:
            for found in re.findall(pattern, text):
                named |= set(re.findall(r'"(\w+Error)"', found)) if found.startswith("{") else {found}
    assert len(named) >= 16, named  # the scan finds them (it would pass on nothing otherwise)
    assert named - set(failures.KINDS) == set()
    assert set(failures.CALL_FAILURES.values()) <= set(failures.KINDS)


def test_the_table_decides_the_mean_and_the_reruns():
    def result(kind: str | None, reward: float | None = None) -> dict:
        return {"exception_info": {"exception_type": kind} if kind else None,
                "verifier_result": {"rewards": {"reward": reward}} if reward is not None else None}

    assert failures.in_mean(result(None, 1.0)) and failures.in_mean(result("AgentTimeoutError", 0.0))
    assert failures.in_mean(result("EnvironmentSetupError")) and not failures.in_mean(result("ApiRateLimitError"))
    assert not failures.in_mean(result("AgentAuthenticationError")) and not failures.in_mean(result("CancelledError"))
    assert not failures.stands_on_resume(result("ApiConnectionError"), retry_errors=False)  # says nothing of the agent: runs again
    assert failures.stands_on_resume(result("VerifierError"), retry_errors=False)
    assert not failures.stands_on_resume(result("VerifierError"), retry_errors=True)
    assert failures.kind_of("SomethingNewError").phase is failures.Phase.INFRASTRUCTURE  # unknown: counted, never dropped
