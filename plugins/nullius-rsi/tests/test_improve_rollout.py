"""`nullius improve rollout` and `nullius improve judge`: a rollout is a one-unit Nullius run whose score waits for the freeze."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from nullius_core.testing import processes_under

from improve_world import key_in, nullius_rsi, rollout_request, world  # noqa: F401 - world is a fixture


@pytest.fixture(scope="module")
def base_rollout(world):
    env, fake, root = world
    folder = root / "rollouts" / "base1"
    folder.mkdir(parents=True)
    harness = {"systemprompt.md": "HARNESS-MARKER: show the working, then the number.\n",
               "skills/carry/SKILL.md": "Carry the tens when adding.\nAdd column by column.\n"}
    request = rollout_request(folder, fake.openai_base_url, harness=harness)
    done = nullius_rsi(["improve", "rollout"], env, REQUEST=request, RESULT=folder / "result.json")
    assert done.code == 0, done.output
    return env, folder, json.loads((folder / "result.json").read_text())


def _trial(job: Path) -> Path:
    trials = [p.parent for p in job.glob("*/result.json")]
    assert len(trials) == 1
    return trials[0]


def test_a_rollout_is_a_one_unit_job_with_the_harness_where_the_agent_reads_it(base_rollout):
    env, folder, result = base_rollout
    assert result["ok"] is True and result["error"] is None and result["delivered"] is True
    job = Path(result["job"])
    trial = _trial(job)
    assert trial.name == "u0000"
    config = json.loads((job / "config.json").read_text())["standard"]
    assert config["variant"]["files"] == ["workspace/AGENTS.md", "workspace/.agents/skills/carry/SKILL.md"]
    assert config["out_of_scope"] and "u0000" not in config["out_of_scope"]
    first = json.loads((trial / ".work" / "relay" / "bodies.jsonl").read_text().splitlines()[0])["request"]
    system = first["messages"][0]["content"]
    assert "HARNESS-MARKER" in system  # AGENTS.md, where the reference agent reads it
    assert "HARNESS-MARKER" in (trial / ".work" / "workspace" / "AGENTS.md").read_text()
    assert (trial / ".work" / "workspace" / ".agents" / "skills" / "carry" / "SKILL.md").read_text().startswith(
        "---\nname: carry\ndescription: Carry the tens when adding.\n---\n")
    assert "carry: Carry the tens when adding." in system  # the harness's skill, listed from its description line


def test_the_result_is_the_contracts_field_by_field(base_rollout):
    env, folder, result = base_rollout
    assert set(result) == {"ok", "delivered", "trajectory", "deliverables", "usage", "error", "job"}
    assert isinstance(result["ok"], bool) and isinstance(result["delivered"], bool) and isinstance(result["trajectory"], str)
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in result["deliverables"].items())
    assert set(result["usage"]) == {"calls", "input_tokens", "output_tokens"} and all(type(v) is int for v in result["usage"].values())
    assert result["error"] is None and isinstance(result["job"], str)


def test_a_rollout_leaves_its_answer_and_workspace_changes_as_deliverables_and_its_usage(base_rollout):
    env, folder, result = base_rollout
    assert "#### 18" in result["deliverables"]["answer.md"]
    patch = result["deliverables"]["changes.patch"]
    assert "notes.md" in patch and "working: 18" in patch and "AGENTS.md" not in patch
    assert result["usage"] == {"calls": 2, "input_tokens": result["usage"]["input_tokens"], "output_tokens": result["usage"]["output_tokens"]}
    assert result["usage"]["input_tokens"] > 0 and result["usage"]["output_tokens"] > 0
    assert "write_file" in result["trajectory"] and "#### 18" in result["trajectory"]
    matched = json.loads((folder / "config.json").read_text())
    assert matched["model"] == "fake-model" and matched["participant"] == "reference" and matched["backend"] == "local"
    assert matched["runner"]["base_url"] and matched["variant"]["name"] == "base1"
    assert matched["agent"]["version"] == "0.1.0" and matched["agent"]["options"] == {"reasoning_effort": "default"}


def test_the_rollouts_run_scores_nothing_its_trial_is_held(base_rollout):
    env, folder, result = base_rollout
    trial = _trial(Path(result["job"]))
    record = json.loads((trial / "result.json").read_text())
    assert record.get("verifier_result") is None and record["exception_info"]["exception_type"] == "ScoreHeld"
    assert record["standard"]["outcome"] == "held"
    assert not (trial / "verifier" / "reward.txt").exists() and not (trial / "verifier" / "score.json").exists()
    held = json.loads((trial / "verifier" / "held.json").read_text())
    assert "#### 18" in held["answer"] and held["dir"] == ".work/workspace"
    summary = json.loads((Path(result["job"]) / "result.json").read_text())["standard"]
    assert summary["in_mean"] == 0 and summary["left_out"] == 1 and summary["errors"] == {"ScoreHeld": 1}  # a held score is no 0


def test_the_key_is_in_no_file_of_the_rollout(base_rollout):
    env, folder, result = base_rollout
    assert key_in(folder) == []


def test_the_judge_scores_the_held_trial_after_the_fact(base_rollout, tmp_path):
    env, folder, result = base_rollout
    request = tmp_path / "judge-request.json"
    request.write_text(json.dumps({"task": {"id": "u0000"}, "label": "base1", "rollout_dir": str(folder), "result": result}))
    done = nullius_rsi(["improve", "judge"], env, JUDGE_REQUEST=request, JUDGE_RESULT=tmp_path / "judged.json")
    assert done.code == 0, done.output
    judged = json.loads((tmp_path / "judged.json").read_text())
    assert (judged["n_passed"], judged["n_criteria"]) == (1, 1) and judged["detail"]["reward"] == 1.0
    trial = _trial(Path(result["job"]))
    record = json.loads((trial / "result.json").read_text())
    assert record["exception_info"] is None and record["standard"]["outcome"] == "passed"
    assert (trial / "verifier" / "reward.txt").read_text() == "1\n"
    assert json.loads((Path(result["job"]) / "result.json").read_text())["standard"]["mean"] == 1.0
    again = nullius_rsi(["improve", "judge"], env, JUDGE_REQUEST=request, JUDGE_RESULT=tmp_path / "again.json")
    assert again.code == 0 and json.loads((tmp_path / "again.json").read_text())["n_passed"] == 1  # a scored trial is read, not scored twice


def _closed_port() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}/v1"


def test_a_crashed_rollout_is_ok_false_with_its_error_and_the_judge_leaves_it_ungraded(world, tmp_path):
    env, fake, root = world
    request = rollout_request(tmp_path, _closed_port(), label="inv1")  # no provider there: the agent's calls all fail
    done = nullius_rsi(["improve", "rollout"], env, REQUEST=request, RESULT=tmp_path / "result.json")
    assert done.code == 0, done.output
    result = json.loads((tmp_path / "result.json").read_text())
    assert result["ok"] is False and result["delivered"] is False and result["job"]
    assert result["error"].startswith("ApiConnectionError")
    judge_request = tmp_path / "judge-request.json"
    judge_request.write_text(json.dumps({"task": {"id": "u0000"}, "label": "inv1", "rollout_dir": str(tmp_path), "result": result}))
    judged = nullius_rsi(["improve", "judge"], env, JUDGE_REQUEST=judge_request, JUDGE_RESULT=tmp_path / "judged.json")
    assert judged.code == 1 and "ungraded" in judged.stderr
    assert not (tmp_path / "judged.json").exists()  # no result: ungraded, never a zero


def test_a_runner_table_without_its_agent_is_a_failed_rollout_naming_the_field(world, tmp_path):
    env, fake, root = world
    request = rollout_request(tmp_path, fake.openai_base_url, agent=None)
    done = nullius_rsi(["improve", "rollout"], env, REQUEST=request, RESULT=tmp_path / "result.json")
    result = json.loads((tmp_path / "result.json").read_text())
    assert done.code == 0 and result["ok"] is False and result["error"] == "[runner] agent: expected a non-empty string, found null"
    assert result["job"] is None


def test_a_rollout_past_its_runner_timeout_stops_its_run_and_is_ok_false(world, tmp_path):
    env, fake, root = world
    request = rollout_request(tmp_path, fake.openai_base_url, label="dom1", timeout=8,
                              harness={"systemprompt.md": "SLOW-MARKER: the model will not answer in time.\n"})
    done = nullius_rsi(["improve", "rollout"], env, REQUEST=request, RESULT=tmp_path / "result.json")
    assert done.code == 0, done.output
    result = json.loads((tmp_path / "result.json").read_text())
    assert result["ok"] is False and result["delivered"] is False
    assert result["error"].startswith("CancelledError") or "stopped after 7.2 s" in result["error"]
    assert processes_under(tmp_path) == []  # the run stopped whole: no agent, driver or relay left


RUBRIC = {"dimensions": [{"name": "correctness", "title": "Correctness", "max_score": 10, "description": "Is the answer right?"},
                         {"name": "clarity", "title": "Clarity", "max_score": 4, "description": "Is the working shown?"}]}


def test_the_judge_adds_the_rubric_assessment_to_its_detail_never_to_the_score(world, tmp_path):
    env, fake, root = world
    rubric = tmp_path / "assessment_dimensions.json"
    rubric.write_text(json.dumps(RUBRIC))
    assess = ["--judge", "reference", "--model", "fake-model", "--eval-repetitions", "1", "--rubric", str(rubric),
              "--provider", "openai-compatible", "--base-url", fake.openai_base_url, "--unsandboxed"]
    folder = tmp_path / "rollout"
    folder.mkdir()
    request = rollout_request(folder, fake.openai_base_url, task="u0001", assess=assess)
    assert nullius_rsi(["improve", "rollout"], env, REQUEST=request, RESULT=folder / "result.json").code == 0
    result = json.loads((folder / "result.json").read_text())
    judge_request = tmp_path / "judge-request.json"
    judge_request.write_text(json.dumps({"task": {"id": "u0001"}, "label": "base1", "rollout_dir": str(folder), "result": result}))
    done = nullius_rsi(["improve", "judge"], env, JUDGE_REQUEST=judge_request, JUDGE_RESULT=tmp_path / "judged.json")
    assert done.code == 0, done.output
    judged = json.loads((tmp_path / "judged.json").read_text())
    assert (judged["n_passed"], judged["n_criteria"]) == (1, 1)  # the benchmark's own score
    assessed = judged["detail"]["assessment"]
    assert assessed["normalized_score"] == 1.0 and assessed["n"] == 1 and assessed["ungraded"] == 0 and assessed["judge_model"] == "fake-model"
    assert (Path(result["job"]) / "u0001" / "assessment_summary.json").is_file()
