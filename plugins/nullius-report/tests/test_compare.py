"""`nullius compare` on real jobs: the table against the jobs' own records, paired stats by hand, the pictures, refusals."""

import json
import xml.etree.ElementTree as ET

import pytest

from nullius_core.testing import run_cli


def compare(jobs, *args):
    return run_cli(["compare", *args], jobs["env"])


def records(job):
    return {p.parent.name: json.loads(p.read_text()) for p in job.glob("*/result.json")}


@pytest.fixture(scope="module")
def a_and_b(jobs, tmp_path_factory):
    """`nullius compare a b --json`, once for the tests that read it."""
    done = compare(jobs, str(jobs["a"]), str(jobs["b"]), "--out", str(tmp_path_factory.mktemp("out")), "--json")
    assert done.code == 0, done.output
    return json.loads(done.stdout)


def test_the_table_holds_the_jobs_own_figures(jobs, a_and_b):
    data = a_and_b
    rows = {r["job"]: r for r in data["rows"]}
    for name in ("a", "b"):
        trials = records(jobs[name])
        job = json.loads((jobs[name] / "result.json").read_text())
        row = rows[name]
        assert row["trials"] == len(trials) and row["quality_source"] == "reward"
        assert row["reward"]["mean"] == pytest.approx(job["standard"]["mean"])
        costs = [t["agent_result"]["metadata"]["cost"]["first_run_usd"] for t in trials.values()]
        assert row["cost"]["mean"] == pytest.approx(sum(costs) / len(costs))
        assert sum(costs) == pytest.approx(job["standard"]["cost"]["first_run_usd"])
        tokens = [t["agent_result"]["n_input_tokens"] + t["agent_result"]["n_output_tokens"] for t in trials.values()]
        assert row["tokens"]["mean"] == pytest.approx(sum(tokens) / len(tokens))
        assert row["tokens"]["std"] is not None and row["pricing_as_of"] == "2026-11-15"
        assert (row["model"], row["effort"], row["variant"]) == ("fake-model", "", "")
    assert rows["a"]["reward"]["mean"] == 0.5 and rows["b"]["reward"]["mean"] == 0.75


def test_paired_statistics_by_hand(a_and_b):
    [paired] = a_and_b["paired"]
    # a passes u0000, u0002; b (twice each) passes u0000, u0001, u0003: differences per unit 0, -1, +1, -1
    assert (paired["units"], paired["wins"], paired["losses"], paired["ties"]) == (4, 1, 2, 1)
    assert paired["mean_difference"] == pytest.approx(-0.25)
    # s of (0, -1, 1, -1) = sqrt(2.75/3); t(0.975, 3) = 3.182446 (Student's t table)
    half = 3.182446 * (2.75 / 3) ** 0.5 / 2
    assert paired["ci95"] == pytest.approx([-0.25 - half, -0.25 + half], abs=1e-5)
    assert paired["mcnemar"] == {"only_a": 1, "only_b": 2, "p": 1.0}
    # b has two attempts a unit: its clustered SE by unit, by hand: mean 0.75 over 8; residual sums per unit
    # 0.5, -1.5, 0.5, 0.5 -> sqrt(4/3 * 3) / 8 = 0.25
    assert paired["clustered"]["b"] == {"observations": 8, "mean": 0.75, "se": pytest.approx(0.25)}
    assert paired["clustered"]["a"]["se"] is None  # one observation a unit: no clustering to do


def test_each_unit_paired(a_and_b):
    [paired] = a_and_b["paired"]
    # a: one trial a unit; b: each unit's reward the mean of its two attempts, passed when most of them passed
    got = {u["unit"]: (u["a"], u["b"], u["passed_a"], u["passed_b"]) for u in paired["by_unit"]}
    assert got == {"u0000": (1.0, 1.0, True, True), "u0001": (0.0, 1.0, False, True),
                   "u0002": (1.0, 0.0, True, False), "u0003": (0.0, 1.0, False, True)}
    assert {(u["benchmark"], u["dataset"]) for u in paired["by_unit"]} == {("gsm8k", "test")}
    wins = sum(1 for u in paired["by_unit"] if u["a"] > u["b"])
    losses = sum(1 for u in paired["by_unit"] if u["a"] < u["b"])
    assert (wins, losses) == (paired["wins"], paired["losses"])


def test_the_pictures_and_the_terminal_table(jobs, tmp_path):
    out = tmp_path / "out"
    done = compare(jobs, str(jobs["a"]), str(jobs["b"]), "--out", str(out))
    assert done.code == 0, done.output
    assert "Jobs compared" in done.stdout and "McNemar exact" in done.stdout and "A better on 1" in done.stdout
    assert (out / "pareto.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    svg = ET.parse(out / "pareto.svg").getroot()
    assert svg.tag.endswith("svg")
    text = (out / "pareto.svg").read_text()
    assert text.count("<path") > 4 and "a reference fake-model" in text  # the points and their labels
    front = {r["job"]: (r["front_cost"], r["front_tokens"]) for r in json.loads((out / "compare.json").read_text())["rows"]}
    # b scores higher at a lower cost and fewer tokens a trial (a's tool call costs a second request): b alone is on both
    assert front == {"a": (False, False), "b": (True, True)}


def test_refusals_name_what_differs(jobs, tmp_path):
    disjoint = compare(jobs, str(jobs["odd"]), str(jobs["even"]), "--out", str(tmp_path / "o"))
    assert disjoint.code == 2 and "share no units" in disjoint.stderr and "Traceback" not in disjoint.output
    differ = compare(jobs, str(jobs["a"]), str(jobs["c"]), "--out", str(tmp_path / "o"))
    assert differ.code == 2 and "unit sets differ: 2 of 4 units" in differ.stderr, differ.output
    one = compare(jobs, str(jobs["a"]), "--out", str(tmp_path / "o"))
    assert one.code == 2 and "two jobs or more" in one.stderr


def test_an_unpriced_model_is_unknown_cost_with_a_warning(jobs, tmp_path):
    from nullius_report.compare import rows_of
    from nullius_report.records import load_trials

    trials = load_trials([jobs["c"]])
    assert all(t.economics.cost_usd is None and "cost unknown" in t.economics.warning for t in trials)
    [row] = rows_of(trials)
    assert row.cost.mean is None and row.cost_unknown == 2 and row.tokens.mean > 0


def _assess(trial, score):
    """An assessment_summary.json in the judge plugin's shape: clusters, and the dominant one named."""
    cluster = {"judge_model": "judge-1", "rubric_fingerprint": "abc123def456", "evals": [1, 2, 3], "graded": [1, 2],
               "normalized_score": {"n": 2, "mean": score, "std": 0.1, "min": score - 0.05, "max": score + 0.05}}
    other = {**cluster, "judge_model": "judge-0", "graded": [1], "normalized_score": {"n": 1, "mean": 0.0}}
    (trial / "assessment_summary.json").write_text(json.dumps(
        {"trial": trial.name, "clusters": [other, cluster], "dominant": {"judge_model": "judge-1", "rubric_fingerprint": "abc123def456"}}))


def test_quality_is_the_judges_score_where_every_trial_was_assessed(jobs, tmp_path):
    import shutil

    for name in ("a", "b"):
        shutil.copytree(jobs[name], tmp_path / name, symlinks=True)
    scores = {"u0000": 0.9, "u0001": 0.5, "u0002": 0.7, "u0003": 0.3}
    for unit, score in scores.items():
        _assess(tmp_path / "a" / unit, score)
    for trial in (tmp_path / "b").glob("u000[0-2]r*"):  # b's u0003 is not assessed: b stays on reward
        _assess(trial, 0.6)
    done = compare(jobs, str(tmp_path / "a"), str(tmp_path / "b"), "--out", str(tmp_path / "out"), "--json")
    assert done.code == 0, done.output
    rows = {r["job"]: r for r in json.loads(done.stdout)["rows"]}
    assert rows["a"]["quality_source"] == "assessment"
    assert rows["a"]["quality"]["mean"] == pytest.approx(sum(scores.values()) / 4)  # the dominant cluster's, not judge-0's
    assert rows["b"]["quality_source"] == "reward" and rows["b"]["quality"]["mean"] == 0.75


def test_a_score_with_parts_weighs_as_the_jobs_own_mean():
    from nullius_report.compare import figure

    # a trial of 3 parts solved and one of 1 part failed: the job's mean (standard.md) is (3*1 + 1*0) / 4
    f = figure([1.0, 0.0], [3.0, 1.0])
    assert f.mean == 0.75 and f.std == pytest.approx(0.5 ** 0.5) and f.n == 2


def test_a_malformed_record_names_the_file_and_the_field(jobs, tmp_path):
    import shutil

    for name in ("a", "b"):
        shutil.copytree(jobs[name], tmp_path / name, symlinks=True)
    path = tmp_path / "a" / "u0001" / "result.json"
    record = json.loads(path.read_text())
    record["verifier_result"]["rewards"]["reward"] = "high"
    path.write_text(json.dumps(record))
    done = compare(jobs, str(tmp_path / "a"), str(tmp_path / "b"), "--out", str(tmp_path / "o"))
    assert done.code == 2 and "Traceback" not in done.output
    assert f"{path}: $.verifier_result.rewards.reward: expected a number, found 'high'" in done.stderr, done.stderr


def test_each_variant_and_effort_is_a_row_of_its_own(jobs, tmp_path):
    """The variants plugin's record (standard.variant: name, digest, reasoning_effort): a changed variant or effort is
    another configuration, never averaged with the first."""
    import shutil

    for name in ("a", "b"):
        shutil.copytree(jobs[name], tmp_path / name, symlinks=True)
    for path in (tmp_path / "b").glob("*/result.json"):
        record = json.loads(path.read_text())
        first = path.parent.name.endswith("r1")
        record["standard"]["variant"] = {"name": "terse" if first else "verbose", "digest": "d1" if first else "d2",
                                         "reasoning_effort": "high" if first else ""}
        path.write_text(json.dumps(record))
    done = compare(jobs, str(tmp_path / "a"), str(tmp_path / "b"), "--out", str(tmp_path / "o"), "--json")
    assert done.code == 0, done.output
    rows = {(r["job"], r["variant"], r["effort"]): r["trials"] for r in json.loads(done.stdout)["rows"]}
    assert rows == {("a", "", ""): 4, ("b", "terse", "high"): 4, ("b", "verbose", ""): 4}
    exported = run_cli(["export", str(tmp_path / "b" / "u0000r1"), "--to", str(tmp_path / "e")], jobs["env"])
    metrics = json.loads((tmp_path / "e" / "b__u0000r1" / "metrics.json").read_text())
    assert exported.code == 0 and (metrics["variant"], metrics["variant_digest"], metrics["reasoning_effort"]) == ("terse", "d1", "high")
