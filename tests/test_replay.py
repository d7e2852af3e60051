"""`nullius replay JOB` and `nullius rescore JOB`: real GSM8K runs of the reference agent on the scripted fake model.

A job is recorded once with a fake model that is stopped before any replay,
and the key is left out of the replay's environment: a replay that reached
a provider, or asked for a key, would fail. A prompt change (a user
catalogue's copy of GSM8K whose instruction differs) makes the replay
diverge at the first call, naming the field; a scorer change (a copy whose
score differs) makes rescore give new rewards.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import ROOT

from nullius_core.testing import isolated_env, run_cli
from nullius_core.testing.fake_model import running_fake_model

PLAYER = "nullius_agent_reference.player"
KEY = "sk-upstream-held-by-the-relay-0123456789"
GSM8K = ROOT / "plugins" / "nullius-bench-gsm8k" / "nullius_bench_gsm8k" / "catalogue" / "benchmarks" / "gsm8k"
INSTRUCTION = "Show your reasoning, then end"


def model_args(fake) -> list[str]:
    return ["--model", "fake-model", "--provider", "openai-compatible", "--base-url", fake.openai_base_url, "--unsandboxed"]


def record(env: dict, fake, jobs: Path, name: str, limit: int = 3) -> Path:
    result = run_cli(["run", "gsm8k", "reference", *model_args(fake), "--limit", str(limit), "--job-name", name, "--jobs-dir", str(jobs)], env)
    assert result.code == 0, result.output
    return jobs / name


@pytest.fixture(scope="module")
def world(tmp_path_factory, nullius_installs):
    """A home, and a GSM8K job recorded with a fake model that is gone once the job is: nothing answers its URL after."""
    root = tmp_path_factory.mktemp("replay")
    env = {**isolated_env(root, standard_dir=nullius_installs), "OPENAI_COMPATIBLE_API_KEY": KEY}
    with running_fake_model(f"{PLAYER}:respond") as fake:
        fake.use({"default": {"text": "#### 18"}})  # right for u0000 alone
        job = record(env, fake, root / "jobs", "source")
    keyless = {k: v for k, v in env.items() if k != "OPENAI_COMPATIBLE_API_KEY"}
    return env, keyless, job, root


def trials(job: Path) -> dict[str, dict]:
    return {p.parent.name: json.loads(p.read_text()) for p in sorted(job.glob("u*/result.json"))}


def rewards(job: Path) -> dict[str, float | None]:
    return {n: ((t.get("verifier_result") or {}).get("rewards") or {}).get("reward") for n, t in trials(job).items()}


def calls(trial: Path) -> list[dict]:
    return [json.loads(line) for line in (trial / "agent" / "calls.jsonl").read_text().splitlines()]


def user_catalogue(root: Path, name: str, old: str, new: str) -> Path:
    """A user catalogue whose GSM8K is the plugin's but for one line of its driver."""
    catalogue = root / name
    copy = catalogue / "benchmarks" / "gsm8k"
    if not copy.exists():
        shutil.copytree(GSM8K, copy)
        driver = copy / "driver.py"
        text = driver.read_text()
        assert old in text
        driver.write_text(text.replace(old, new))
    return catalogue


def test_a_replay_of_an_unchanged_setup_diverges_nowhere_and_gives_the_same_rewards_with_no_provider_and_no_key(world):
    _, keyless, source, root = world
    assert rewards(source) == {"u0000": 1.0, "u0001": 0.0, "u0002": 0.0}
    out = root / "jobs" / "replayed"
    result = run_cli(["replay", str(source), "-o", str(out), "-j", "2"], keyless)
    assert result.code == 0, result.output
    assert rewards(out) == rewards(source)
    for name, trial in trials(out).items():
        assert trial["standard"]["replay"] == {"replayed": 1, "live": 0}
        recorded = calls(source / name)
        replayed = calls(out / name)
        assert [c["replayed"] for c in replayed] == [c["id"] for c in recorded]
        assert [c["usage"] for c in replayed] == [c["usage"] for c in recorded]
        assert all(c["cost"]["as_served_usd"] == 0.0 for c in replayed)
    verdict = json.loads((out / "result.json").read_text())["standard"]["replay"]
    assert verdict["line"] == "replayed: 3 units, 0 diverged, rewards equal: yes"
    assert verdict["rewards_equal"] is True and verdict["source"] == str(source.resolve())
    config = json.loads((out / "config.json").read_text())["standard"]
    assert config["replay_of"]["job"] == str(source.resolve()) and config["replay_of"]["live"] is False
    assert config["replay_of"]["job_id"] == json.loads((source / "config.json").read_text())["standard"]["job_id"]
    assert "replay     replayed: 3 units, 0 diverged, rewards equal: yes" in result.stderr  # the run-end summary
    shown = run_cli(["view", str(out)], keyless)
    assert "rewards equal: yes" in shown.output
    # the replay is itself replayable: its records were sealed as any run's
    again = run_cli(["replay", str(out), "-o", str(root / "jobs" / "replayed-again")], keyless)
    assert again.code == 0 and rewards(root / "jobs" / "replayed-again") == rewards(source), again.output


def test_a_replay_after_a_prompt_change_names_the_first_differing_call_and_field(world):
    _, keyless, source, root = world
    catalogue = user_catalogue(root, "prompt-changed", INSTRUCTION, "Think step by step, then end")
    out = root / "jobs" / "diverged"
    result = run_cli(["replay", str(source), "-o", str(out)], {**keyless, "NULLIUS_CATALOGUE": str(catalogue)})
    assert result.code == 0, result.output
    for name, trial in trials(out).items():
        assert trial["exception_info"]["exception_type"] == "ReplayDiverged" and trial["standard"]["outcome"] == "diverged"
        assert trial.get("verifier_result") is None  # the unit ended there, unscored
        diverged = trial["standard"]["replay"]["diverged"]
        assert diverged["route"] == name and diverged["index"] == 0 and diverged["differing"] == 1
        assert diverged["source_call"] == calls(source / name)[0]["id"]
        [field] = diverged["diff"]
        assert field["path"] == "messages[1].content"
        assert "Show your reasoning" in field["old"] and "Think step by step" in field["new"]
        assert "messages[1].content" in trial["exception_info"]["exception_message"]
    summary = json.loads((out / "result.json").read_text())["standard"]
    assert summary["replay"]["line"] == "replayed: 3 units, 3 diverged, rewards equal: no"
    assert summary["replay"]["diverged_trials"]["u0001"] == "call 0 of u0001: messages[1].content"
    assert summary["errors"] == {"ReplayDiverged": 3} and summary["in_mean"] == 0
    assert "stage=unit i=1 of=3 unit=u0000 outcome=error:ReplayDiverged" in result.stderr or "ReplayDiverged" in result.stderr


def test_live_after_divergence_hands_the_diverged_call_to_the_runs_model(world, tmp_path):
    env, _, _, root = world
    catalogue = user_catalogue(root, "prompt-changed", INSTRUCTION, "Think step by step, then end")
    with running_fake_model(f"{PLAYER}:respond") as fake:
        fake.use({"default": {"text": "#### 18"}})
        source = record(env, fake, tmp_path, "live-source", limit=2)
        fake.clear()
        fake.use({"default": {"text": "#### 3"}})  # the live model answers otherwise (u0001's answer): the rewards show who answered
        out = tmp_path / "live"
        live = {**env, "NULLIUS_CATALOGUE": str(catalogue)}
        unnamed = run_cli(["replay", str(source), "-o", str(out), "--live-after-divergence"], live)
        assert unnamed.code == 2 and f"give --base-url {fake.openai_base_url} to send this machine's key there" in unnamed.stderr
        result = run_cli(["replay", str(source), "-o", str(out), "--live-after-divergence", "--base-url", fake.openai_base_url], live)
        assert result.code == 0, result.output
        assert len(fake.requests) == 2  # each unit's first call, diverged, went to the model; nothing else did
        assert all("Think step by step" in r.body["messages"][1]["content"] for r in fake.requests)
        assert all(r.headers.get("authorization") == f"Bearer {KEY}" for r in fake.requests)  # the key, read as for a run
    assert rewards(out) == {"u0000": 0.0, "u0001": 1.0}  # the recorded replies gave 1.0 and 0.0
    for name, trial in trials(out).items():
        assert trial.get("exception_info") is None and trial["standard"]["outcome"] in ("passed", "failed")
        note = trial["standard"]["replay"]
        assert note["replayed"] == 0 and note["live"] == 1 and note["diverged"]["diff"][0]["path"] == "messages[1].content"
        assert [c.get("live") for c in calls(out / name)] == [True]
    config = json.loads((out / "config.json").read_text())["standard"]
    assert config["replay_of"]["live"] is True


def test_a_handed_job_chooses_neither_the_backend_nor_the_consent(world, tmp_path):
    """A job's record is evidence, not an instruction: one that says local and unsandboxed replays in a sandbox."""
    _, keyless, source, root = world
    handed = tmp_path / "handed"
    shutil.copytree(source, handed, symlinks=True)
    config = json.loads((source / "config.json").read_text())
    assert config["standard"]["backend"]["name"] == "local" and config["standard"]["unsandboxed"] is True
    sandboxed = run_cli(["replay", str(handed), "-o", str(tmp_path / "sandboxed")], keyless)
    assert sandboxed.code == 0, sandboxed.output
    assert "the job ran on local, which is not a sandbox: replaying on bwrap" in sandboxed.stderr
    replayed = json.loads((tmp_path / "sandboxed" / "config.json").read_text())["standard"]
    assert replayed["backend"]["name"] == "bwrap" and replayed["unsandboxed"] is False
    assert rewards(tmp_path / "sandboxed") == rewards(source)
    refused = run_cli(["replay", str(handed), "-o", str(tmp_path / "never"), "--backend", "local"], keyless)
    assert refused.code == 2 and "give --unsandboxed to consent" in refused.stderr and not (tmp_path / "never").exists()
    mine = run_cli(["replay", str(handed), "-o", str(tmp_path / "mine"), "--unsandboxed"], keyless)
    assert mine.code == 0 and json.loads((tmp_path / "mine" / "config.json").read_text())["standard"]["backend"]["name"] == "local"


def test_replay_refuses_what_is_not_a_replayable_job(world, tmp_path):
    _, keyless, source, root = world
    refused = run_cli(["replay", str(tmp_path)], keyless)
    assert refused.code == 2 and "is not a job" in refused.stderr and "Traceback" not in refused.output
    old = tmp_path / "old"
    shutil.copytree(source, old, symlinks=True)
    for sealed in old.glob("u*/.work/relay/replay.jsonl"):
        sealed.unlink()  # a job recorded before replay's records
    refused = run_cli(["replay", str(old), "-o", str(tmp_path / "never")], keyless)
    assert refused.code == 2 and "Traceback" not in refused.output
    assert "recorded without what replay needs" in refused.stderr and "replay.jsonl" in refused.stderr
    assert not (tmp_path / "never").exists()
    taken = run_cli(["replay", str(source), "-o", str(source)], keyless)
    assert taken.code == 2 and "is not empty" in taken.stderr


def test_rescore_reproduces_the_rewards_then_gives_a_changed_scorers_naming_its_source(world):
    _, keyless, source, root = world
    same = root / "jobs" / "rescored"
    result = run_cli(["rescore", str(source), "-o", str(same), "--json"], keyless)
    assert result.code == 0, result.output
    assert rewards(same) == rewards(source)
    said = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    assert [(x["trial"], x["reward"]) for x in said] == [("u0000", 1.0), ("u0001", 0.0), ("u0002", 0.0)]
    config = json.loads((same / "config.json").read_text())["standard"]
    assert config["rescore_of"]["job"] == str(source.resolve()) and config["job_id"] != json.loads((source / "config.json").read_text())["standard"]["job_id"]
    assert json.loads((same / "result.json").read_text())["standard"]["rescore"]["rescored"] == 3
    # a scorer that takes any number as right: every trial passes, from what it recorded, with no model and no agent run
    catalogue = user_catalogue(root, "scorer-changed", "passed = given != INVALID_ANS and same_number(given, gold)",
                               "passed = given != INVALID_ANS")
    changed = root / "jobs" / "rescored-changed"
    result = run_cli(["rescore", str(source), "-o", str(changed)], {**keyless, "NULLIUS_CATALOGUE": str(catalogue)})
    assert result.code == 0, result.output
    assert rewards(changed) == {"u0000": 1.0, "u0001": 1.0, "u0002": 1.0}
    assert rewards(source) == {"u0000": 1.0, "u0001": 0.0, "u0002": 0.0}  # the source is untouched
    assert "rescored from " + str(source.resolve()) in result.stderr


def test_rescore_refuses_a_trial_that_kept_nothing_to_score_and_rescores_the_rest(world, tmp_path):
    _, keyless, source, _ = world
    copy = tmp_path / "damaged"
    shutil.copytree(source, copy, symlinks=True)
    (copy / "u0001" / "verifier" / "score-input.json").unlink()
    shutil.rmtree(copy / "u0001" / ".work" / "workspace")
    out = tmp_path / "out"
    result = run_cli(["rescore", str(copy), "-o", str(out), "--json"], keyless)
    assert result.code == 0, result.output
    said = {x["trial"]: x for x in map(json.loads, (line for line in result.stdout.splitlines() if line.startswith("{")))}
    assert said["u0000"]["reward"] == 1.0 and said["u0002"]["reward"] == 0.0
    assert said["u0001"]["reward"] is None and "workspace is not in the trial" in said["u0001"]["error"]
    assert "workspace is not in the trial" in trials(out)["u0001"]["standard"]["not_rescored"]
    note = json.loads((out / "result.json").read_text())["standard"]["rescore"]
    assert note["rescored"] == 2 and list(note["not_rescored"]) == ["u0001"]
    refused = run_cli(["rescore", str(tmp_path / "nothing-here")], keyless)
    assert refused.code == 2 and "is not a job" in refused.stderr and "Traceback" not in refused.output
    refused = run_cli(["rescore", str(source), "-o", str(tmp_path / "never"), "--bench-option", "nope=1"], keyless)
    assert refused.code == 2 and "gsm8k has no option 'nope'" in refused.stderr and not (tmp_path / "never").exists()
    refused = run_cli(["rescore", str(source), "-o", str(tmp_path / "never"), "--judge-model", "judge-x"], keyless)
    assert refused.code == 2 and "asked no judge" in refused.stderr and not (tmp_path / "never").exists()
    # someone else's job whose record is a link out of it is not copied, nor read through
    secret = tmp_path / "secret"
    secret.write_text("this machine's own secret\n")
    linked = tmp_path / "linked"
    shutil.copytree(source, linked, symlinks=True)
    (linked / "u0000" / "agent" / "trajectory.json").unlink()
    (linked / "u0000" / "agent" / "trajectory.json").symlink_to(secret)
    refused = run_cli(["rescore", str(linked), "-o", str(tmp_path / "never")], keyless)
    assert refused.code == 2 and "leads out of" in refused.stderr and "trajectory.json" in refused.stderr, refused.output
    assert not (tmp_path / "never").exists() and "Traceback" not in refused.output
