"""A unit's attempts combined (jobs/attempts.py): a part solved in any attempt, the unit's reward the fraction solved."""

from nullius_core.jobs.attempts import combined


def trial(unit, attempt, reward, passed, parts=None, error=None, n=None):
    own = {"unit": unit, "attempt": attempt, "passed": passed}
    if parts is not None:
        own["parts"] = {"by": "test", "parts": [{"test": i + 1, "reward": r} for i, r in enumerate(parts)]}
        if n is not None:
            own["parts"]["n"] = n
    return {
        "task_name": unit,
        "trial_name": f"{unit}r{attempt}",
        "standard": own,
        "verifier_result": None if reward is None else {"rewards": {"reward": reward}},
        "exception_info": None if error is None else {"exception_type": error, "exception_message": "", "exception_traceback": ""},
    }


def test_parts_solved_in_either_attempt_make_the_units_reward():
    trials = [
        # a: test 1 right in attempt 1, test 2 right in attempt 2: both solved, though neither attempt passed
        trial("a", 1, 0.5, False, [1, 0]), trial("a", 2, 0.5, False, [0, 1]),
        # b: test 1 right once, test 2 never: half
        trial("b", 1, 0.5, False, [1, 0]), trial("b", 2, 0.0, False, [0, 0]),
        # c: the second attempt errored unscored (it solved nothing); the first passed
        trial("c", 1, 1.0, True, [1]), trial("c", 2, None, None, error="AgentError"),
        # d: an attempt outside the agent's doing is left out; the other failed
        trial("d", 1, 0.0, False, [0]), trial("d", 2, None, None, error="ApiRateLimitError"),
    ]
    out = combined(trials, "pass")
    assert out["rule"] == "any" and out["units"] == 4 and (out["k"], out["most"]) == (1, 2)
    by = out["by_unit"]
    assert by["a"] == {"attempts": 2, "reward": 1.0, "parts": [1.0, 1.0], "passed": True}
    assert by["b"] == {"attempts": 2, "reward": 0.5, "parts": [1.0, 0.0], "passed": False}
    assert by["c"] == {"attempts": 2, "reward": 1.0, "parts": [1.0], "passed": True}
    assert by["d"] == {"attempts": 1, "reward": 0.0, "parts": [0.0], "passed": False}
    assert out["mean"] == (1.0 + 0.5 + 1.0 + 0.0) / 4 and out["passed"] == 2


def test_without_parts_a_unit_passes_when_any_attempt_passes_and_n_weighs():
    plain = [trial("a", 1, 0.0, False), trial("a", 2, 1.0, True), trial("b", 1, 0.0, False), trial("b", 2, 0.0, False)]
    out = combined(plain, "pass")
    assert out["mean"] == 0.5 and out["passed"] == 1 and out["by_unit"]["a"] == {"attempts": 2, "reward": 1.0, "passed": True}
    weighed = [trial("a", 1, 1.0, True, [1], n=3), trial("a", 2, 0.0, False, [0], n=3),
               trial("b", 1, 0.0, False, [0], n=1), trial("b", 2, 0.0, False, [0], n=1)]
    assert combined(weighed, "score")["mean"] == 0.75 and "passed" not in combined(weighed, "score")


def test_one_attempt_per_unit_is_not_combined():
    assert combined([trial("a", 1, 1.0, True), trial("b", 1, 0.0, False)], "pass") is None
    assert combined([], "pass") is None
