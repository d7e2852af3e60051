"""`nullius assess` on real fixture jobs (HumanEval's oracle, --limit 2), the reference agent as the judge, the scripted judge as its model."""

from __future__ import annotations

import json
import statistics

from conftest import KEY, RUBRIC, assess, evals, judge_args, oracle_job, summary, write_rubric

from nullius_core.testing import files_holding, processes_under
from nullius_core.testing.fake_model import running_fake_model
from nullius_judge.rubric import parse

PLAYER = "nullius_judge.player"


def _cluster(trial_summary: dict, fingerprint: str) -> dict:
    return next(c for c in trial_summary["clusters"] if c["rubric_fingerprint"] == fingerprint)


def test_one_garbage_reply_of_three_is_ungraded_and_left_out_of_the_mean(home):
    env, root = home
    job = oracle_job(env, "garbage")
    result_before = (job / "result.json").read_bytes()
    rubric = write_rubric(root, "rubric-garbage.json")
    with running_fake_model(f"{PLAYER}:respond_garbage_second") as fake:
        result = assess(env, job, fake, "--rubric", str(rubric), "--eval-repetitions", "3", "--max-concurrent-eval", "3")
    assert result.code == 0, result.output
    leaned = 0
    for trial in (job / "u0000", job / "u0001"):
        found = evals(trial)
        assert sorted(found) == [1, 2, 3]
        bad = found[2]
        assert bad["graded"] is False and bad["normalized_score"] is None and bad["dimensions"] == []
        assert bad["ungraded_reason"] == "the reply holds no JSON object"
        good = [found[1]["normalized_score"], found[3]["normalized_score"]]
        assert all(isinstance(v, float) and 0 < v <= 1 for v in good)
        cluster = summary(trial)["clusters"][0]
        assert cluster["graded"] == [1, 3] and cluster["ungraded"] == [{"index": 2, "reason": bad["ungraded_reason"]}]
        assert cluster["normalized_score"]["n"] == 2
        assert cluster["normalized_score"]["mean"] == statistics.fmean(good)  # never a zero among them
        assert cluster["normalized_score"]["std"] == statistics.stdev(good)
        assert cluster["normalized_score"]["min"] == min(good) and cluster["normalized_score"]["max"] == max(good)
        scores = [next(d["score"] for d in found[i]["dimensions"] if d["name"] == "correctness") for i in (1, 3)]
        assert cluster["dimensions"]["correctness"]["mean"] == statistics.fmean(scores)
        leaned += good[0] != good[1]
    assert leaned  # the two graded evaluations differ, so the std is over real spread
    assert (job / "result.json").read_bytes() == result_before  # nothing Harbor reads is rewritten
    top = summary(job)
    assert top["dominant"]["normalized_score"]["n"] == 2  # the mean over the two trials' means
    assert "1 ungraded" in result.stdout


def test_a_changed_rubric_is_another_cluster_never_averaged_and_the_larger_then_newer_dominates(home):
    env, root = home
    job = oracle_job(env, "clusters")
    first = write_rubric(root, "rubric-a.json")
    changed = json.loads(json.dumps(RUBRIC))
    changed["dimensions"][1]["description"] = "Is the code clear, idiomatic and documented?"
    second = write_rubric(root, "rubric-b.json", changed)
    a, b = parse(RUBRIC, "a").fingerprint(), parse(changed, "b").fingerprint()
    assert a != b
    trial = job / "u0000"
    with running_fake_model(f"{PLAYER}:respond") as fake:
        assert assess(env, job, fake, "--rubric", str(first), "--eval-repetitions", "2").code == 0
        assert assess(env, job, fake, "--rubric", str(second), "--eval-repetitions", "1").code == 0
        found = summary(trial)
        assert len(found["clusters"]) == 2
        assert _cluster(found, a)["evals"] == [1, 2] and _cluster(found, b)["evals"] == [3]
        only_a = [evals(trial)[i]["normalized_score"] for i in (1, 2)]
        assert _cluster(found, a)["normalized_score"]["mean"] == statistics.fmean(only_a)
        assert found["dominant"]["rubric_fingerprint"] == a  # the larger cluster
        assert assess(env, job, fake, "--rubric", str(second), "--eval-repetitions", "1").code == 0
        found = summary(trial)
        assert found["dominant"]["rubric_fingerprint"] == b  # two each: the newer wins the tie
    assert {e["rubric_fingerprint"] for e in evals(trial).values()} == {a, b}
    clusters = {c["rubric_fingerprint"]: c for c in summary(job)["clusters"]}
    assert set(clusters) == {a, b} and clusters[a]["n_trials"] == 2


def test_a_rerun_appends_the_next_evaluations_and_leaves_the_old_byte_for_byte(home):
    env, root = home
    job = oracle_job(env, "rerun")
    rubric = write_rubric(root, "rubric-rerun.json")
    with running_fake_model(f"{PLAYER}:respond") as fake:
        assert assess(env, job, fake, "--rubric", str(rubric), "--eval-repetitions", "2").code == 0
        before = {p.name: p.read_bytes() for p in (job / "u0001").glob("assessment_eval_*.json")}
        calls_before = (job / "u0001" / "assessment" / "eval_1" / "calls.jsonl").read_bytes()
        assert sorted(before) == ["assessment_eval_1.json", "assessment_eval_2.json"]
        assert assess(env, job, fake, "--rubric", str(rubric), "--eval-repetitions", "1").code == 0
    after = {p.name: p.read_bytes() for p in (job / "u0001").glob("assessment_eval_*.json")}
    assert sorted(after) == ["assessment_eval_1.json", "assessment_eval_2.json", "assessment_eval_3.json"]
    assert all(after[name] == data for name, data in before.items())
    assert (job / "u0001" / "assessment" / "eval_1" / "calls.jsonl").read_bytes() == calls_before
    assert summary(job / "u0001")["clusters"][0]["evals"] == [1, 2, 3]


def test_judge_calls_are_priced_apart_and_an_unpriced_judge_is_null_with_a_warning(home):
    env, root = home
    job = oracle_job(env, "priced")
    trial_before = (job / "u0000" / "result.json").read_bytes()
    prices = root / "config" / "nullius" / "prices.json"
    prices.parent.mkdir(parents=True, exist_ok=True)
    prices.write_text(json.dumps({"version": 1, "prices": {"fake-judge-priced": {
        "input": 2.0, "output": 10.0, "cache_read": 0.2, "cache_write": 2.5, "as_of": "2026-12-01", "source": "the test's own price"}}}))
    rubric = write_rubric(root, "rubric-priced.json")
    with running_fake_model(f"{PLAYER}:respond") as fake:
        priced = assess(env, job, fake, "--rubric", str(rubric), "--eval-repetitions", "1", model="fake-judge-priced")
        unpriced = assess(env, job, fake, "--rubric", str(rubric), "--eval-repetitions", "1", model="fake-judge-unpriced")
    assert priced.code == 0 and unpriced.code == 0, priced.output + unpriced.output
    found = evals(job / "u0000")
    usage = found[1]["usage"]
    expected = (usage["n_input_tokens"] * 2.0 + usage["n_output_tokens"] * 10.0) / 1e6
    assert usage["n_input_tokens"] > 0 and abs(usage["cost_usd"] - expected) < 1e-9
    lines = (job / "u0000" / "assessment" / "eval_1" / "calls.jsonl").read_text().splitlines()
    assert lines and all(json.loads(line)["model_sent"] == "fake-judge-priced" for line in lines)
    assert {json.loads(line)["route"] for line in lines} == {"u0000-judge-1"}  # the judge's own route on its relay
    assert found[2]["usage"]["cost_usd"] is None and found[2]["graded"] is True  # unpriced: null, the assessment unharmed
    assert "has no price" in unpriced.stderr and "has no price" not in priced.stderr
    clusters = {c["judge_model"]: c for c in summary(job / "u0000")["clusters"]}
    assert clusters["fake-judge-priced"]["judge_cost_usd"] == usage["cost_usd"] and clusters["fake-judge-unpriced"]["judge_cost_usd"] is None
    assert (job / "u0000" / "result.json").read_bytes() == trial_before  # never added to the agent's (here: the control's) cost


def test_the_key_is_in_no_file_of_the_job_and_nothing_the_judge_started_outlives_assess(home):
    env, root = home
    job = oracle_job(env, "secret")
    rubric = write_rubric(root, "rubric-secret.json")
    with running_fake_model(f"{PLAYER}:respond") as fake:
        result = assess(env, job, fake, "--rubric", str(rubric), "--eval-repetitions", "2")
        assert result.code == 0, result.output
        assert fake.requests  # the judge's calls came through its relay to the model
        assert any(KEY in json.dumps(dict(r.headers)) for r in fake.requests)  # the relay, which holds the key, sent it to the provider...
    assert files_holding(job, KEY.encode()) == []  # ...and no file under the job holds it
    assert KEY not in result.output
    assert processes_under(job) == []


def test_a_bad_rubric_is_refused_naming_the_file_and_field_and_nothing_is_added(home):
    env, root = home
    job = oracle_job(env, "bad-rubric")
    bad = root / "bad-rubric.json"
    bad.write_text(json.dumps({"dimensions": [{"name": "correctness", "title": "C", "max_score": "10", "description": "d"}]}))
    with running_fake_model(f"{PLAYER}:respond") as fake:
        result = assess(env, job, fake, "--rubric", str(bad))
        missing = assess(env, job, fake)
    assert result.code == 2, result.output
    assert str(bad) in result.stderr and "$.dimensions[0].max_score" in result.stderr and "Traceback" not in result.output
    assert missing.code == 2 and "no assessment_dimensions.json" in missing.stderr and "--rubric" in missing.stderr
    assert list(job.glob("*/assessment_eval_*.json")) == []
    assert not (job / ".work" / "assess").exists() or list((job / ".work" / "assess").iterdir()) == []  # and no half-made run


def test_criteria_from_a_folder_reach_the_judge_and_an_out_of_range_score_is_ungraded(home):
    env, root = home
    job = oracle_job(env, "criteria")
    rubric = write_rubric(root, "rubric-criteria.json")
    criteria = root / "criteria"
    criteria.mkdir()
    (criteria / "u0000.md").write_text("Unit zero: the function must handle an empty list without raising.\n")
    (criteria / "assessment_criteria.md").write_text("Every other unit: the code must be a complete function.\n")
    with running_fake_model(f"{PLAYER}:respond_out_of_range") as fake:
        result = assess(env, job, fake, "--rubric", str(rubric), "--criteria-dir", str(criteria), "--eval-repetitions", "1",
                        "--include-trajectory")
        prompts = [json.dumps(r.body) for r in fake.requests]
    assert result.code == 0, result.output
    assert any("Unit zero: the function must handle an empty list" in p for p in prompts)
    assert any("Every other unit: the code must be a complete function." in p for p in prompts)
    for trial in ("u0000", "u0001"):
        found = evals(job / trial)[1]
        assert found["graded"] is False and "out of range 0..10" in found["ungraded_reason"]
        assert summary(job / trial)["clusters"][0]["normalized_score"] == {"n": 0, "mean": None, "std": None, "min": None, "max": None}
    assert summary(job)["dominant"] is None  # no graded evaluation: no mean at all, never a zero
    assert all(evals(job / t)[1]["include_trajectory"] for t in ("u0000", "u0001"))
    shown = list(job.glob(".work/assess/*/materials/u0000/files/*"))
    assert {p.name for p in shown} >= {"trajectory.json", "changes.patch", "answer.txt", "assessment_criteria.md", "assessment_dimensions.json"}
    copies = [p for p in job.glob(".work/assess/*/run/u0000-judge-1/.work/workspace/*") if p.is_file()]  # the judge's copy: read-only
    assert copies and all(not p.stat().st_mode & 0o222 for p in copies)


def test_sigterm_to_assess_ends_the_judge_and_everything_it_started(home):
    """A judge held mid-call (the model never answers) and `nullius assess` sent SIGTERM: nothing it started lives on."""
    import signal
    import subprocess
    import sys
    import threading

    env, root = home
    job = oracle_job(env, "killed")
    rubric = write_rubric(root, "rubric-killed.json")
    asked, release = threading.Event(), threading.Event()

    def hold(request):
        asked.set()
        release.wait(120)
        return None

    with running_fake_model(hold) as fake:
        args = [sys.executable, "-m", "nullius_core", "assess", str(job), *judge_args(fake), "--rubric", str(rubric)]
        child = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            assert asked.wait(300), "the judge never called its model"
            assert processes_under(job)  # the judge (its agent, the driver) is alive now
            child.send_signal(signal.SIGTERM)
            out, err = child.communicate(timeout=300)
        finally:
            release.set()
            if child.poll() is None:
                child.kill()
    assert child.returncode == 130, out + err  # cancelled, as a run is
    assert list(job.glob("*/assessment_eval_*.json")) == []  # a cancelled evaluation is none: nothing appended
    assert processes_under(job) == []
    assert files_holding(job, KEY.encode()) == []
