"""`nullius improve BENCH AGENT --tasks ...`: the issue's Done-when, with the kernel's own commands and real Nullius runs.

Three GSM8K tasks, the reference agent, the fake model as both the agent's
model and the improver (each through a relay: the rollouts' runs' own, and the
improver's route). The base harness answers wrongly; the INV proposal's
checklist makes the agent answer right, the contrast says it mitigates, compose
adopts it; after the freeze the judge scores base1 (0) and the final (1).
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from improve_world import IMPROVER, key_in, world  # noqa: F401 - world is a fixture
from nullius_core.testing import run_cli

pytestmark = pytest.mark.skipif(importlib.util.find_spec("nanorsi") is None,
                                reason="the nanoRSI kernel (package nanorsi of nullius-rsi) is not installed here")
TASKS = ("u0000", "u0001", "u0002")


def nanorsi(ws: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "nanorsi.cli", "-C", str(ws), *args], env=env, capture_output=True, text=True,
                          timeout=600)


@pytest.fixture(scope="module")
def improved(world, tmp_path_factory):
    env, fake, root = world
    ws = tmp_path_factory.mktemp("improve") / "ws"
    IMPROVER.seen.clear()
    done = run_cli(["improve", "gsm8k", "reference", "--tasks", ",".join(TASKS), "--model", "fake-model", "--provider", "openai-compatible",
                    "--base-url", fake.openai_base_url, "--unsandboxed", "--mode", "agg", "--k", "1", "--workspace", str(ws)], env)
    assert done.code == 0, done.output[-4000:]
    report = nanorsi(ws, env, "report", "--json")
    assert report.returncode == 0, report.stderr
    return env, ws, done, json.loads(report.stdout)


def test_improve_runs_the_recursion_over_three_tasks_and_reports_decisions_contrasts_and_scores(improved):
    env, ws, done, report = improved
    assert report["frozen"] is True and [t["task"] for t in report["tasks"]] == list(TASKS)
    for task in report["tasks"]:
        assert task["done"] and task["chosen"] == "agg1"
        verdicts = {c["candidate"]: c["verdict"] for c in task["contrasts"]}
        assert verdicts["inv1"] == "mitigates" and verdicts["dom1"] == "neutral"
        assert [d["decision"] for d in task["decisions"]] == ["adopt"] and task["decisions"][0]["edits"] == ["inv1"]
        assert (task["base_score"], task["final_score"], task["outcome"]) == (0.0, 1.0, "win")
    assert report["means"] == {"n": 3, "base": 0.0, "final": 1.0} and report["win_tie_loss"] == [3, 0, 0]
    assert {"propose INV", "propose DOM", "contrast", "compose", "lesson"} <= set(IMPROVER.seen)
    assert "task u0000:" in done.stdout and "nanoRSI report" in done.stdout  # the kernel's report, printed at the end


def test_each_rollout_is_a_held_nullius_job_and_only_the_judged_ones_are_scored(improved):
    env, ws, done, report = improved
    jobs = sorted(ws.rglob("jobs/rollout/config.json"))
    assert len(jobs) == 3 * 4  # base1, inv1, dom1, agg1 for each task
    outcomes = {}
    for config in jobs:
        trial = next(config.parent.glob("*/result.json"))
        label = json.loads((config.parent / "config.json").read_text())["standard"]["variant"]["name"]
        outcomes[(trial.parent.name, label)] = json.loads(trial.read_text())["standard"]["outcome"]
    for task in TASKS:
        assert outcomes[(task, "base1")] == "failed" and outcomes[(task, "agg1")] == "passed"  # judged after the freeze
        assert outcomes[(task, "inv1")] == "held" and outcomes[(task, "dom1")] == "held"  # never scored: nothing asked it


def test_the_budget_and_usage_match_the_improver_relays_record(improved):
    env, ws, done, report = improved
    calls = [json.loads(line) for line in (ws / "improver-relay" / "calls.jsonl").read_text().splitlines()]
    assert calls and {c["route"] for c in calls} == {"improver"} and {c["status"] for c in calls} == {200}
    usage = report["usage"]["improver"]
    assert report["budget"]["improver_calls"] == usage["calls"] == len(calls)
    assert usage["input_tokens"] == sum(c["usage"]["input"] for c in calls)
    assert usage["output_tokens"] == sum(c["usage"]["output"] for c in calls)
    assert report["budget"]["rollouts"] == 12


def test_the_ledger_verifies_and_the_key_is_nowhere_in_the_workspace(improved):
    env, ws, done, report = improved
    verified = nanorsi(ws, env, "verify")
    assert verified.returncode == 0 and "ledger ok" in verified.stdout
    assert "ledger ok" in done.stdout
    assert key_in(ws) == []  # the rollouts' jobs, the ledger, the improver relay's record
    config = (ws / "nanorsi.toml").read_text()
    key_file = config.split("api_key_file = ")[1].split("\n")[0].strip('"')
    assert not Path(key_file).is_relative_to(ws) and not Path(key_file).exists()  # the route's token, gone with its relay


def test_a_seq_run_stopped_by_its_budget_goes_on_when_run_again(world, tmp_path):
    env, fake, root = world
    ws = tmp_path / "ws"
    args = ["improve", "gsm8k", "reference", "--tasks", "u0001", "--model", "fake-model", "--provider", "openai-compatible",
            "--base-url", fake.openai_base_url, "--unsandboxed", "--mode", "seq", "--k", "1", "--workspace", str(ws), "--max-rollouts", "2"]
    stopped = run_cli(args, env)
    assert stopped.code == 3, stopped.output[-3000:]  # the kernel's budget stop, said, the experiment kept
    assert "the budget ran out" in stopped.stderr
    port = (ws / "improver-relay" / "port").read_text()
    config = ws / "nanorsi.toml"
    config.write_text(config.read_text().replace("max_rollouts = 2", "max_rollouts = 20"))
    again = run_cli(args, env)  # the same workspace: no new experiment, evolve goes on
    assert again.code == 0, again.output[-3000:]
    assert (ws / "improver-relay" / "port").read_text() == port  # the kernel's pinned base_url still reaches the improver's route
    report = json.loads(nanorsi(ws, env, "report", "--json").stdout)
    assert report["run"]["mode"] == "seq" and report["budget"]["exhausted"] == 1
    task = report["tasks"][0]
    assert task["chosen"] == "c1" and (task["base_score"], task["final_score"]) == (0.0, 1.0)
    assert nanorsi(ws, env, "verify").returncode == 0


def test_a_task_the_benchmark_lacks_refuses_the_experiment_before_any_workspace(world, tmp_path):
    env, fake, root = world
    done = run_cli(["improve", "gsm8k", "reference", "--tasks", "u0000,u9999", "--model", "fake-model", "--provider", "openai-compatible",
                    "--base-url", fake.openai_base_url, "--unsandboxed", "--workspace", str(tmp_path / "ws")], env)
    assert done.code == 2 and "improve refused" in done.stderr and "no unit u9999 in dataset test" in done.stderr
    assert "Traceback" not in done.output and not (tmp_path / "ws").exists()
