"""The rubric's model and fingerprint, and the reading of a judge's reply (the driver's grading module)."""

from __future__ import annotations

import hashlib
import importlib.util
import json
from pathlib import Path

import pytest
from conftest import RUBRIC

from nullius_judge.rubric import RubricError, parse

GRADING = Path(__file__).resolve().parents[1] / "nullius_judge" / "catalogue" / "benchmarks" / "judge" / "grading.py"
spec = importlib.util.spec_from_file_location("judge_grading", GRADING)
grading = importlib.util.module_from_spec(spec)
spec.loader.exec_module(grading)


def test_the_fingerprint_is_the_first_12_hex_of_the_sha256_of_the_sorted_json():
    expected = hashlib.sha256(json.dumps(RUBRIC, sort_keys=True, separators=(",", ":")).encode()).hexdigest()[:12]
    assert parse(RUBRIC, "r").fingerprint() == expected
    reordered = {"dimensions": [{k: d[k] for k in reversed(list(d))} for d in RUBRIC["dimensions"]]}
    assert parse(reordered, "r").fingerprint() == expected  # key order is not a change
    changed = json.loads(json.dumps(RUBRIC))
    changed["dimensions"][0]["max_score"] = 9
    assert parse(changed, "r").fingerprint() != expected
    assert parse(RUBRIC, "r").max_total == 15


@pytest.mark.parametrize("raw, says", [
    ({"dimensions": []}, "$.dimensions: expected at least one dimension"),
    ({"dimensions": [{"name": "a", "title": "A", "max_score": True, "description": "d"}]}, "$.dimensions[0].max_score: expected an integer, found true"),
    ({"dimensions": [{"name": "a", "title": "A", "max_score": -1, "description": "d"}]}, "$.dimensions[0].max_score: expected a positive integer"),
    ({"dimensions": [{"name": "Bad Name", "title": "A", "max_score": 1, "description": "d"}]}, "$.dimensions[0].name: expected a snake_case name"),
    ({"dimensions": [{"name": "a", "title": "A", "max_score": 1, "description": "d"}] * 2}, "$.dimensions[1].name: expected a name of its own"),
    ({"dimensions": [{"name": "a", "max_score": 1, "description": "d"}]}, "$.dimensions[0].title: required key missing"),
])
def test_a_bad_rubric_names_the_file_the_field_and_the_expectation(raw, says):
    with pytest.raises(RubricError) as caught:
        parse(raw, "bench/assessment_dimensions.json")
    assert f"bench/assessment_dimensions.json: {says}" in str(caught.value)


def _reply(**scores) -> str:
    return json.dumps({"dimensions": {k: {"score": v, "reasoning": "r"} for k, v in scores.items()}, "overall": "ok"})


def test_a_graded_reply_gives_the_normalized_score_over_the_sum_of_max_scores():
    graded = grading.grade("Here it is:\n```json\n" + _reply(correctness=7, code_quality=5.0) + "\n```", RUBRIC)
    assert graded["total"] == 12 and graded["max_total"] == 15 and graded["normalized_score"] == 12 / 15
    assert [d["score"] for d in graded["dimensions"]] == [7, 5] and graded["overall"] == "ok"


@pytest.mark.parametrize("answer, why", [
    ("", "the reply is empty"),
    ("It is fine.", "no JSON object"),
    ("{not json}", "does not parse"),
    (json.dumps({"scores": {}}), "no \"dimensions\" object"),
    (_reply(correctness=7), "leaves out dimension(s) code_quality"),
    (_reply(correctness=7, code_quality=1, style=2), "the rubric does not have: style"),
    (_reply(correctness=11, code_quality=1), "out of range 0..10"),
    (_reply(correctness=-1, code_quality=1), "out of range 0..10"),
    (_reply(correctness=7.5, code_quality=1), "expected an integer score, found 7.5"),
    (_reply(correctness="7", code_quality=1), "expected an integer score"),
])
def test_an_ungradable_reply_says_why(answer, why):
    with pytest.raises(grading.Ungraded) as caught:
        grading.grade(answer, RUBRIC)
    assert why in str(caught.value)


def test_the_internal_benchmark_checks_clean_and_the_judges_fit(home):
    from nullius_core.testing import run_cli

    env, _ = home
    checked = run_cli(["check", str(GRADING.parent)], env, in_process=True)
    assert checked.code == 0 and "ok: 1 definition checked" in checked.output, checked.output
    fit = run_cli(["fit", "judge", "--json"], env, in_process=True)
    assert fit.code == 0, fit.output
    assert {"claude", "codex", "reference"} <= set(json.loads(fit.stdout)["fits"])
